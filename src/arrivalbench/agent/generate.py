"""`arrivalbench generate`: run the repair loop for every (arm, task, sample) and write a run directory.

Layout while generating (see docs/run-format.md for the finished run):

    OUT/generation.json                         the settings; a resume must match them
    OUT/transcripts/<arm>/<task>/<sample>.json  one per finished cell, written atomically
    OUT/artifacts/<sha256>.sql                  every final script

A transcript is written only once its cell is finished, so a killed generate resumes by running
the cells that have none. When every cell has one, the cells and the manifest are written and
`arrivalbench grade-run OUT` can grade the run.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from arrivalbench.agent.loop import TURNS, CellResult, repair_loop
from arrivalbench.agent.models import MAX_TOKENS, Model
from arrivalbench.agent.prompts import (
    ARMS,
    arm_role,
    arm_sha256,
    build_prompt,
    check_arm,
    check_engine,
)
from arrivalbench.agent.tool_agent import (
    DEFAULT_SCAFFOLD,
    AgentCellResult,
    Budgets,
    agent_arm_sha256,
    agent_loop,
    agent_prompt,
    cell_from_transcript,
    check_scaffold,
)
from arrivalbench.agent.tools import ToolPool as GraderPool  # the loop's pool, plus the query tool
from arrivalbench.engines import DEFAULT_ENGINE, Limits, get_engine
from arrivalbench.errors import UnknownNameError, UsageError
from arrivalbench.seeds import DEFAULT_SEED
from arrivalbench.spec import Task, get_task, load_suite, suite_hash, task_folders
from arrivalbench.store import (
    ROLES,
    SUPERSEDED,
    TRANSCRIPTS,
    Cell,
    RunDir,
    RunStoreError,
    check_name,
    check_run_path,
    check_sample,
    create_suite_run,
)


def transcript_path(out: Path, arm: str, task: str, sample: int) -> Path:
    return RunDir(out).transcript_path(arm, task, sample)


def save_transcript(out: Path, result: CellResult) -> None:
    """Write a finished cell: its script (if any) first, then its transcript, which marks it done."""
    run = RunDir(out)
    path = run.transcript_path(result.arm, result.task, result.sample)  # names checked first
    if result.script is not None:
        run.write_artifact(result.script)
    run.write_transcript(result.arm, result.task, result.sample, result.transcript())
    assert path.is_file()


def load_transcripts(out: Path) -> list[CellResult]:
    results = []
    run = RunDir(out)
    for path in run._files(TRANSCRIPTS):
        if len(path.relative_to(run.inside(TRANSCRIPTS)).parts) != 3 or path.suffix != ".json":
            continue
        try:
            results.append(cell_from_transcript(json.loads(run.read_bytes(path))))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise RunStoreError(
                f"{path}: unreadable transcript ({exc}); delete it to generate that cell again."
            ) from None
    return results


def cell_of(result: CellResult) -> Cell:
    return Cell(
        arm=result.arm,
        task=result.task,
        sample=result.sample,
        artifact_sha256=result.artifact_sha256,
        no_artifact_reason=result.no_artifact_reason,
        snapshot_by_turn=result.snapshot_by_turn,
        tokens=result.tokens,
        stop_reason=result.stop_reason,
        prompt_sha256=result.prompt_sha256,
        served_model=result.served_model,
    )


def write_run(
    out: Path,
    results: list[CellResult],
    *,
    model: str,
    seed: int,
    limits: Limits,
    turns: int,
    config: dict[str, Any] | None = None,
    seed_commitment: str | None = None,
    run: int = 1,
    role: str | None = None,
    runs: dict[str, int] | None = None,
    engine: str = DEFAULT_ENGINE,
    scaffold: str = DEFAULT_SCAFFOLD,
    budgets: Budgets | None = None,
) -> RunDir:
    """Finish a generated run: cells.parquet and the manifest, from finished cells.

    Each arm's `arm_info` names its `role` (a prompt arm's own, or `role` for imported arms) and
    the replicate `run` it belongs to (`runs[arm]`, else `run`), which the analysis reads to
    choose the arms of its tests. The manifest records `engine`, the engine the scripts were
    written for: grade-run grades every cell on it.
    """
    agent = scaffold != DEFAULT_SCAFFOLD
    arm_info: dict[str, dict[str, Any]] = {
        r.arm: {
            "model": model,
            "prompt_arm": r.arm if r.arm in ARMS else None,
            "prompt_sha256": (
                (agent_arm_sha256 if agent else arm_sha256)(r.arm, engine)
                if r.arm in ARMS
                else None
            ),
            "turns": turns,
            "role": role or (arm_role(r.arm) if r.arm in ARMS else "model"),
            "run": (runs or {}).get(r.arm, run),
        }
        for r in results
    }
    if agent:  # a loop arm's entry is the one older versions wrote: no scaffold key means loop
        for info in arm_info.values():
            info.update(scaffold=scaffold, budgets=(budgets or Budgets()).config())
    return create_suite_run(
        Path(out),
        cells=[cell_of(r) for r in results],
        artifacts={r.artifact_sha256: r.script for r in results if r.script is not None},  # type: ignore[misc]
        seed=seed,
        limits=limits,
        config=config,
        arm_info=arm_info,
        seed_commitment=seed_commitment,
        engine=engine,
    )


def _plan(
    model: Model,
    arms: list[str],
    k: int,
    task_ids: list[str],
    turns: int,
    seed: int,
    max_tokens: int,
    seed_commitment: str | None,
    run: int = 1,
    engine: str = DEFAULT_ENGINE,
    scaffold: str = DEFAULT_SCAFFOLD,
    budgets: Budgets | None = None,
) -> dict[str, Any]:
    sha = agent_arm_sha256 if scaffold != DEFAULT_SCAFFOLD else arm_sha256
    plan = {
        "model": model.name,
        "arms": arms,
        "k": k,
        "tasks": task_ids,
        "turns": turns,
        "seed": seed,
        "max_tokens": max_tokens,
        "suite_hash": suite_hash(),
        "prompt_sha256": {arm: sha(arm, engine) for arm in arms},
    }
    if scaffold != DEFAULT_SCAFFOLD:  # absent for the loop: older plans still match
        plan["scaffold"] = scaffold
        plan["budgets"] = (budgets or Budgets()).config()
    if engine != DEFAULT_ENGINE:  # absent on DuckDB: older plans still match
        plan["engine"] = engine
    if seed_commitment is not None:  # absent, not null, for a public run: older plans still match
        plan["seed_commitment"] = seed_commitment
    if run != 1:  # likewise: a first run's plan is the one older versions wrote
        plan["run"] = run
    return plan


def generate(
    model: Model,
    *,
    arms: Iterable[str],
    k: int,
    out: Path,
    task_ids: list[str] | None = None,
    turns: int = TURNS,
    seed: int = DEFAULT_SEED,
    limits: Limits | None = None,
    concurrency: int = 4,
    max_tokens: int = MAX_TOKENS,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
    seed_commitment: str | None = None,
    run: int = 1,
    engine: str = DEFAULT_ENGINE,
    cache_dir: Path | None = None,
    scaffold: str = DEFAULT_SCAFFOLD,
    budgets: Budgets | None = None,
) -> RunDir:
    """Generate every missing cell, then write the run. Resumes a generation interrupted in `out`.

    The agent's snapshot checks use the public `seed` only; `seed_commitment` makes the run
    private (its hidden logs are graded later, from the secret, by grade-run). `run` is the
    replicate index recorded in arm_info (2 for an independent re-run of the same arms).
    `engine` is the SQL dialect the prompts name, the engine the snapshot checks run on, and the
    run's engine in its manifest. `cache_dir`: the verdict cache the snapshot checks read and
    fill (None: every check runs). `scaffold` is `loop` (the repair loop) or `agent` (tools
    query, test and submit under `budgets`; tool_agent.py).
    """
    out = Path(out)
    check_run_path(out)
    arms = [check_arm(a) for a in dict.fromkeys(arms)]
    check_engine(engine)
    check_scaffold(scaffold)
    budgets = budgets or Budgets()
    if k < 1 or turns < 1 or concurrency < 1 or run < 1 or max_tokens < 1:
        raise UsageError(
            f"-k {k}, --turns {turns}, --concurrency {concurrency}, --run {run}, "
            f"--max-tokens {max_tokens}: each must be at least 1."
        )
    if not task_ids and hasattr(model, "default_tasks"):
        task_ids = model.default_tasks()
    tasks = (
        [get_task(t) for t in dict.fromkeys(task_ids)] if task_ids else list(load_suite().values())
    )
    if hasattr(model, "check_tasks"):
        model.check_tasks([t.id for t in tasks])
    for task in tasks:  # before any model call
        task.check_seed(seed, private=seed_commitment is not None)
    prompts = {
        (arm, t.id): (
            agent_prompt(t, arm, engine, budgets)
            if scaffold != DEFAULT_SCAFFOLD
            else build_prompt(t, arm, engine)
        )
        for arm in arms
        for t in tasks
    }  # a leak stops us here
    limits = limits or Limits()
    plan = _plan(
        model,
        arms,
        k,
        [t.id for t in tasks],
        turns,
        seed,
        max_tokens,
        seed_commitment,
        run,
        engine,
        scaffold,
        budgets,
    )
    if (out / "manifest.json").exists():
        raise RunStoreError(
            f"{out}: this run is complete; grade it with 'arrivalbench grade-run {out}' or choose a new --out."
        )
    plan_path = RunDir(out).plan_path
    if plan_path.exists():
        previous = json.loads(RunDir(out).read_bytes(plan_path))
        if previous.get("engine", DEFAULT_ENGINE) != engine:  # a DuckDB plan has no engine key
            raise UsageError(
                f"{out}: an interrupted generation on {previous.get('engine', DEFAULT_ENGINE)} is "
                f"here; resume it with --engine {previous.get('engine', DEFAULT_ENGINE)} or choose a "
                "new --out."
            )
        if (
            previous.get("scaffold", DEFAULT_SCAFFOLD) != scaffold
        ):  # a loop plan has no scaffold key
            raise UsageError(
                f"{out}: an interrupted generation with --scaffold "
                f"{previous.get('scaffold', DEFAULT_SCAFFOLD)} is here; resume it with that "
                "scaffold or choose a new --out."
            )
        changed = sorted(key for key in plan if previous.get(key) != plan[key])
        if changed:
            raise UsageError(
                f"{out}: an interrupted generation with other {', '.join(changed)} is here; "
                "resume it with the same options or choose a new --out."
            )
    else:
        RunDir(out).write_bytes(
            plan_path, (json.dumps(plan, indent=2, sort_keys=True) + "\n").encode()
        )
    todo = [
        (arm, task, sample)
        for arm in arms
        for task in tasks
        for sample in range(k)
        if not transcript_path(out, arm, task.id, sample).exists()
    ]
    done = len(arms) * len(tasks) * k - len(todo)
    if done:
        log(f"resuming: {done} cells already generated, {len(todo)} to go")
    get_engine(engine)  # a server engine starts (or fails to) before any model call
    graders = GraderPool(seed, limits, engine, cache_dir)
    cell = cell_runner(graders, model, scaffold, budgets, turns, max_tokens)

    async def one(arm: str, task: Task, sample: int, gate: asyncio.Semaphore) -> None:
        async with gate:
            result = await cell(task, prompts[(arm, task.id)], sample)
            save_transcript(out, result)
            if result.leak:
                log(f"LEAK, cell aborted: {result.leak}")
            log(f"{arm} {task.id} #{sample}: {outcome_line(result)}")

    async def main() -> None:
        gate = asyncio.Semaphore(concurrency)
        await asyncio.gather(*(one(arm, task, sample, gate) for arm, task, sample in todo))

    try:
        asyncio.run(main())
    finally:
        graders.close()
    results = load_transcripts(out)
    expected = {(arm, t.id, s) for arm in arms for t in tasks for s in range(k)}
    results = [r for r in results if (r.arm, r.task, r.sample) in expected]
    return write_run(
        out,
        results,
        model=model.name,
        seed=seed,
        limits=limits,
        turns=turns,
        config={"generation": plan},
        seed_commitment=seed_commitment,
        run=run,
        engine=engine,
        scaffold=scaffold,
        budgets=budgets,
    )


def outcome_line(result: CellResult) -> str:
    """How a cell ended, for the progress log."""
    why = f" ({result.no_artifact_reason})" if result.no_artifact_reason else ""
    if isinstance(result, AgentCellResult):
        usage = result.usage()
        return (
            f"{result.end_reason} after {len(result.turns)} model call(s), "
            f"{usage['tool_calls']} tool call(s), {usage['tests']} test(s){why}"
        )
    outcome = result.turns[-1].snapshot if result.turns else "no reply"
    return f"{outcome} after {len(result.turns)} turn(s){why}"


def cell_runner(
    graders: GraderPool,
    model: Model,
    scaffold: str,
    budgets: Budgets,
    turns: int,
    max_tokens: int,
) -> Callable[[Task, Any, int], Awaitable[CellResult]]:
    """One cell of `scaffold` with its checks (and queries) in threads on `graders`."""

    async def check(task: Task, script: str) -> dict[str, Any]:
        return await asyncio.to_thread(graders.snapshot, task, script)

    async def query(task: Task, sql: str) -> tuple[str, str, str]:
        return await asyncio.to_thread(graders.query, task, sql)

    async def cell(task: Task, prompt: Any, sample: int) -> CellResult:
        if scaffold != DEFAULT_SCAFFOLD:
            return await agent_loop(
                task, prompt, sample, model, check, query, budgets, max_tokens=max_tokens
            )
        return await repair_loop(
            task, prompt, sample, model, check, turns=turns, max_tokens=max_tokens
        )

    return cell


def import_scripts(
    folder: Path,
    *,
    arm: str,
    out: Path,
    seed: int = DEFAULT_SEED,
    limits: Limits | None = None,
    seed_commitment: str | None = None,
    role: str = "human",
    run: int = 1,
    engine: str = DEFAULT_ENGINE,
) -> RunDir:
    """A folder of scripts as an arm: `<task>.sql` is sample 0, `<task>.<n>.sql` (or `<task>/<n>.sql`) sample n.

    The arm's role is `human` unless `role` says otherwise (e.g. `reference` for hand-written
    baselines, `model` for scripts a model wrote elsewhere). `engine` is the engine the scripts
    are written for, recorded as the run's.
    """
    if role not in ROLES:
        raise UnknownNameError("role", role, ROLES)
    folder = Path(folder)
    check_run_path(Path(out))
    check_name("arm", arm, where="--arm")
    if not folder.is_dir():
        raise UsageError(f"{folder}: not a folder; give a folder of <task>.sql files.")
    known = set(task_folders())
    results = []
    for path in sorted([*folder.glob("*.sql"), *folder.glob("*/*.sql")]):
        relative = path.relative_to(folder)
        if path.is_symlink() or (len(relative.parts) > 1 and path.parent.is_symlink()):
            raise UsageError(
                f"{path}: a symlink; import-scripts reads the folder's own files only, never "
                "what a link points to: copy the script into the folder."
            )
        parts = (
            relative.parts[0].removesuffix(".sql").split(".")
            if len(relative.parts) == 1
            else [relative.parts[0], relative.stem]
        )
        task_id, sample_text = parts[0], parts[1] if len(parts) > 1 else "0"
        if task_id not in known or len(parts) > 2:
            raise UsageError(
                f"{path}: name it <task>.sql, <task>.<sample>.sql or <task>/<sample>.sql "
                f"with a task of the suite ('arrivalbench tasks' lists them; tasks of your own need "
                "--suite-dir DIR)."
            )
        check_name("task", task_id, where=str(path))
        sample = check_sample(sample_text, where=str(path))
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
            with os.fdopen(fd, "rb") as handle:
                script = handle.read().decode("utf-8")
        except UnicodeDecodeError:
            raise UsageError(f"{path}: not UTF-8 text; save the script as UTF-8.") from None
        results.append(
            CellResult(
                task=task_id,
                arm=arm,
                sample=sample,
                model="human",
                temperature=0.0,
                prompt_sha256=None,
                system="",
                user="",
                script=script if script.strip() else None,
                no_artifact_reason=None if script.strip() else "empty",
            )
        )
    if not results:
        raise UsageError(f"{folder}: no .sql files; name them <task>.sql or <task>.<sample>.sql.")
    seen: set[tuple[str, int]] = set()
    for r in results:
        if (r.task, r.sample) in seen:
            raise UsageError(
                f"{folder}: two scripts for task {r.task} sample {r.sample}; keep one."
            )
        seen.add((r.task, r.sample))
    limits = limits or Limits()
    run = write_run(
        out,
        results,
        model="human",
        seed=seed,
        limits=limits,
        turns=0,
        config={"imported_from": str(folder.resolve())},
        seed_commitment=seed_commitment,
        role=role,
        run=run,
        engine=engine,
    )
    for r in results:
        save_transcript(out, r)
    return run


def rerun_no_artifact(
    model: Model,
    *,
    out: Path,
    reason: str,
    max_tokens: int,
    concurrency: int = 4,
    task_ids: list[str] | None = None,
    log: Callable[[str], None] = lambda line: print(line, file=sys.stderr),
    engine: str | None = None,
    cache_dir: Path | None = None,
) -> tuple[RunDir, int]:
    """Ask the model again for the cells of a finished generated run that have no script for `reason`.

    Typically `truncated` with a higher `max_tokens`: the paper's cap cut some cells off. Each
    chosen cell runs the whole repair loop again with the run's prompts, turns and seed; its
    earlier transcript moves to transcripts-superseded/ (nothing is deleted), the new one takes
    its place, and cells.parquet and the manifest (`config.reruns`) are rewritten. A cell that
    now has a script has no verdicts yet: `grade-run` grades it. `task_ids` limits it to those
    tasks. The cells are asked and checked on the run's engine; an `engine` that differs from it
    is refused. Returns the run and the number of cells asked again.
    """
    out = Path(out)
    run = RunDir.open(out)
    manifest = run.manifest
    plan = manifest["config"].get("generation")
    if not isinstance(plan, dict) or "model" not in plan:
        raise UsageError(
            f"{out}: not a run written by 'arrivalbench generate'; --rerun-no-artifact asks the "
            "model of a generated run again."
        )
    recorded = str(manifest.get("engine", DEFAULT_ENGINE))
    if engine is not None and engine != recorded:
        raise UsageError(
            f"--engine {engine}: {out} was generated for {recorded} (its manifest says so); its "
            f"cells are asked again on {recorded}: drop --engine."
        )
    engine = recorded
    if model.name != plan["model"]:
        raise UsageError(
            f"--model {model.name!r}: {out} was generated with {plan['model']!r}; re-run its cells "
            "with the same model (a second model is a new run)."
        )
    if max_tokens < 1 or concurrency < 1:
        raise UsageError(
            f"--max-tokens {max_tokens}, --concurrency {concurrency}: each must be at least 1."
        )
    cells = run.cells()
    chosen = [
        c
        for c in cells
        if c.artifact_sha256 is None
        and c.no_artifact_reason == reason
        and (not task_ids or c.task in task_ids)
    ]
    if not chosen:
        present = Counter(c.no_artifact_reason for c in cells if c.artifact_sha256 is None)
        shown = ", ".join(f"{r} ({n})" for r, n in sorted(present.items(), key=str)) or "none"
        raise UsageError(
            f"--rerun-no-artifact {reason}: no cell of {out} lacks a script for that reason; "
            f"reasons present: {shown}."
        )
    scaffold = str(plan.get("scaffold", DEFAULT_SCAFFOLD))
    budgets = Budgets(**plan["budgets"]) if "budgets" in plan else Budgets()
    sha = agent_arm_sha256 if scaffold != DEFAULT_SCAFFOLD else arm_sha256
    for arm in sorted({c.arm for c in chosen}):
        if arm not in ARMS or plan.get("prompt_sha256", {}).get(arm) != sha(arm, engine):
            raise UsageError(
                f"{out}: arm {arm!r} was generated with other prompt texts than the installed "
                "ones; re-run it with the ArrivalBench version that generated it."
            )
    tasks = {t: get_task(t) for t in sorted({c.task for c in chosen})}
    seed, turns = manifest["base_seed"], plan["turns"]
    get_engine(engine)

    # the model's snapshot checks under the limits the run was generated (and is graded) with
    graders = GraderPool(seed, run.limits(), engine, cache_dir)
    results: dict[tuple[str, str, int], CellResult] = {}
    runner = cell_runner(graders, model, scaffold, budgets, turns, max_tokens)

    async def one(cell: Cell, gate: asyncio.Semaphore) -> None:
        async with gate:
            task = tasks[cell.task]
            prompt = (
                agent_prompt(task, cell.arm, engine, budgets)
                if scaffold != DEFAULT_SCAFFOLD
                else build_prompt(task, cell.arm, engine)
            )
            result = await runner(task, prompt, cell.sample)
            results[cell.key] = result
            why = result.no_artifact_reason or (result.turns[-1].snapshot if result.turns else "")
            log(f"{cell.arm} {cell.task} #{cell.sample}: {reason} -> {why}")

    async def main() -> None:
        gate = asyncio.Semaphore(concurrency)
        await asyncio.gather(*(one(cell, gate) for cell in chosen))

    with run.lock():
        try:
            asyncio.run(main())
        finally:
            graders.close()
        for key, result in sorted(results.items()):
            old = run.transcript_path(*key)
            if old.exists():
                keep = run.superseded_dir(key[0], key[1])
                keep.mkdir(parents=True, exist_ok=True)
                n = 1 + len(list(keep.glob(f"{key[2]}.*.json")))
                run.write_bytes(
                    run.inside(SUPERSEDED, key[0], key[1], f"{key[2]}.{n}.json"),
                    run.read_bytes(old),
                )
            save_transcript(out, result)
        run.write_cells(
            [cell_of(results[c.key]) if c.key in results else c for c in cells],
        )
        manifest["config"].setdefault("reruns", []).append(
            {
                "no_artifact_reason": reason,
                "max_tokens": max_tokens,
                "cells": [list(key) for key in sorted(results)],
            }
        )
        run.write_manifest(manifest)
    return run, len(results)
