"""Parallel grading of a run directory: every ungraded (cell, schedule), on a local pool or Ray.

A unit of work is one cell with the schedules it still lacks. Workers grade units and send back
verdict rows; the parent appends them to the run's journal as they arrive (fsynced), so a sweep
killed at any moment loses at most the units in flight, and a rerun resumes where it stopped.
A private run is graded only with its secret (store.RunDir.check_secret). The user's suite
folders travel in the SweepConfig, so a worker finds the same tasks as the parent whatever
environment it inherited.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arrivalbench.cache import VerdictCache
from arrivalbench.engines import DEFAULT_ENGINE, Limits, get_engine
from arrivalbench.errors import UsageError
from arrivalbench.grade import Grader
from arrivalbench.pool import MAX_RESTARTS
from arrivalbench.schedules import get_kind, graded_schedules
from arrivalbench.seeds import PrivateSeed
from arrivalbench.spec import SuiteDirs, get_task, user_suite_dirs
from arrivalbench.store import Cell, RunDir, RunStoreError, run_limits, verdict_row

MAX_POOL_RESTARTS = MAX_RESTARTS


@dataclass(frozen=True)
class Unit:
    cell: Cell
    script: str
    schedules: tuple[str, ...]


@dataclass(frozen=True)
class SweepConfig:
    seed: int
    limits: Limits
    schedules: str | None  # None: the task's default set; "all"; or a comma list (never fewer)
    private: PrivateSeed | None = None
    suite_dirs: tuple[Path, ...] = ()  # the user's suite folders, as the parent resolved them
    cache_dir: Path | None = None  # the verdict cache (see cache.py); None: grade everything
    engine: str = DEFAULT_ENGINE  # the run's engine (manifest), which every cell is graded on

    @classmethod
    def from_manifest(
        cls,
        manifest: dict[str, Any],
        private: PrivateSeed | None = None,
        suite_dirs: tuple[Path, ...] = (),
        cache_dir: Path | None = None,
        limits: Limits | None = None,
    ) -> SweepConfig:
        """The settings of a stored run; `limits` as RunDir.limits chose them (default: the
        manifest's, which may only tighten the harness's)."""
        config = manifest.get("config", {})
        if limits is None:
            limits = run_limits(config, "manifest.json")
        return cls(
            seed=int(manifest["base_seed"]),
            limits=limits,
            schedules=config.get("schedules"),
            private=private,
            suite_dirs=suite_dirs,
            cache_dir=cache_dir,
            engine=str(manifest.get("engine", DEFAULT_ENGINE)),
        )


def plan(run: RunDir, config: SweepConfig) -> list[Unit]:
    """Units for every cell with an artifact and at least one schedule not yet graded."""
    done = run.done()
    units = []
    for cell in run.cells():
        if cell.artifact_sha256 is None:
            continue
        wanted = graded_schedules(run.task(cell.task, config.suite_dirs), config.schedules)
        pending = tuple(s for s in wanted if (*cell.key, s) not in done)
        if pending:
            units.append(
                Unit(cell=cell, script=run.artifact(cell.artifact_sha256), schedules=pending)
            )
    return units


_GRADER: Grader | None = None


def grade_unit(unit: Unit, config: SweepConfig) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(verdict row, timing row) per schedule of the unit; one Grader per worker process."""
    global _GRADER
    if (
        _GRADER is None
        or _GRADER.seed != config.seed
        or _GRADER.limits != config.limits
        or _GRADER.private != config.private
        or _GRADER.suite_dirs != config.suite_dirs
        or (_GRADER.cache.root if _GRADER.cache else None) != config.cache_dir
        or _GRADER.engine_name != config.engine
    ):
        if _GRADER is not None:
            _GRADER.close()
        _GRADER = Grader(
            seed=config.seed,
            limits=config.limits,
            private=config.private,
            cache=VerdictCache(config.cache_dir) if config.cache_dir is not None else None,
            suite_dirs=config.suite_dirs,
            engine_name=config.engine,
        )
    task = get_task(unit.cell.task, config.suite_dirs)
    record, timings = _GRADER.judge_all(
        task,
        unit.script,
        unit.schedules,
        where=f"artifact {unit.cell.artifact_sha256}",
        empty_is_error=True,
    )
    out = []
    commitment = config.private.commitment if config.private is not None else None
    for schedule, entry in record.verdicts.items():
        hidden = get_kind(schedule).log_kind == "hidden"
        row = verdict_row(
            unit.cell, schedule, config.seed, entry, seed_commitment=commitment if hidden else None
        )
        timing = {
            "arm": unit.cell.arm,
            "task": unit.cell.task,
            "sample": unit.cell.sample,
            "schedule": schedule,
            **timings[schedule],
        }
        out.append((row, timing))
    return out


Results = Iterator[list[tuple[dict[str, Any], dict[str, Any]]]]


def _local(units: list[Unit], config: SweepConfig, workers: int) -> Results:
    """Grade on the process pool (pool.as_completed: a pool whose worker died is replaced and its
    unfinished units resubmitted)."""
    from arrivalbench.pool import WorkersDied, as_completed

    if workers == 1:
        for unit in units:
            yield grade_unit(unit, config)
        return
    try:
        yield from as_completed(grade_unit, units, workers, config, restarts=MAX_POOL_RESTARTS)
    except WorkersDied as exc:
        raise RunStoreError(
            f"grading workers died {exc.restarts} times; graded results so far are kept, rerun to resume."
        ) from None


def _ray(units: list[Unit], config: SweepConfig, workers: int, address: str | None) -> Results:
    """The same units as Ray tasks, so a corpus can be graded on a cluster."""
    try:
        import ray
    except ImportError:
        raise UsageError(
            "the Ray executor needs Ray; install it with: pip install 'arrivalbench[ray]'"
        ) from None
    if not ray.is_initialized():
        ray.init(
            address=address,
            num_cpus=None if address else workers,
            include_dashboard=False,
            log_to_driver=False,
            ignore_reinit_error=True,
        )
    remote = ray.remote(num_cpus=1, max_retries=1)(grade_unit)
    config_ref = ray.put(config)
    pending = [remote.remote(unit, config_ref) for unit in units]
    while pending:
        done, pending = ray.wait(pending, num_returns=1)
        yield ray.get(done[0])


@dataclass
class SweepReport:
    units: int
    rows: int
    verdicts: Counter[str]
    seconds: float


def sweep(
    run: RunDir,
    workers: int | None = None,
    executor: str = "local",
    ray_address: str | None = None,
    on_result: Callable[[list[tuple[dict[str, Any], dict[str, Any]]]], None] | None = None,
    on_plan: Callable[[int], None] | None = None,
    private: PrivateSeed | None = None,
    suite_dirs: SuiteDirs = None,
    cache_dir: Path | None = None,
    limits: dict[str, Any] | None = None,
) -> SweepReport:
    """Grade everything still ungraded in the run, append as results arrive, then compact.

    A private run needs `private`, the secret it commits to; a development run takes none.
    `suite_dirs`: the user's suite folders (default: the process's, see spec.user_suite_dirs).
    `cache_dir`: a verdict cache to read and fill (None: every verdict is graded afresh).
    `limits`: explicit limit flags (statement_timeout, memory_limit, replay_timeout; None: not
    given) over the manifest's, which may only tighten the defaults (RunDir.limits).
    """
    manifest = run.manifest
    run.check_secret(private)
    dirs = user_suite_dirs(suite_dirs)
    for task_id, recorded in manifest.get("task_hashes", {}).items():
        task = run.task(task_id, dirs)
        task.check_seed(int(manifest["base_seed"]), private="seed_commitment" in manifest)
        current = task.content_hash()
        if current != recorded:
            raise RunStoreError(
                f"{run.path}: task '{task_id}' has changed since the run was made (content {recorded[:12]}…, "
                f"installed {current[:12]}…; suite {str(manifest.get('suite_hash'))[:12]}…); grade it with the "
                "matching suite, or make a new run."
            )
    if executor not in ("local", "ray"):
        raise UsageError(f"executor {executor!r}: expected 'local' or 'ray'.")
    config = SweepConfig.from_manifest(
        manifest, private, suite_dirs=dirs, cache_dir=cache_dir, limits=run.limits(limits)
    )
    get_engine(config.engine)  # a server engine starts here, so every worker shares it
    workers = workers or os.cpu_count() or 1
    started = time.perf_counter()
    counts: Counter[str] = Counter()
    rows = 0
    with run.lock():
        units = plan(run, config)
        if on_plan:
            on_plan(len(units))
        results = (
            _local(units, config, workers)
            if executor == "local"
            else _ray(units, config, workers, ray_address)
        )
        for result in results:
            run.append([r for r, _ in result], [t for _, t in result])
            rows += len(result)
            counts.update(r["verdict"] for r, _ in result)
            if on_result:
                on_result(result)
        run.compact()
    return SweepReport(
        units=len(units), rows=rows, verdicts=counts, seconds=time.perf_counter() - started
    )


def _regraded_copy(
    run: RunDir,
    out: Path,
    workers: int | None,
    private: PrivateSeed | None,
    suite_dirs: SuiteDirs = None,
    limits: dict[str, Any] | None = None,
) -> RunDir:
    """Copy the run without verdicts to `out` and grade the copy; the caller holds the run's lock.

    The copy's manifest names the run it came from and the harness that graded it, and records
    the limits it was graded under (explicit `limits` flags included). The verdict cache is never
    used: re-grading exists to execute every artifact again.
    """
    from arrivalbench import __version__
    from arrivalbench.store import limits_config

    manifest = run.manifest
    graded_under = run.limits(limits)
    copy = run.copy_ungraded(
        out,
        amend={
            "regraded_from": {
                "path": str(run.path.resolve()),
                "harness_version": manifest.get("harness_version"),
                "engine_version": manifest.get("engine_version"),
            },
            "harness_version": __version__,
            "engine_version": get_engine(manifest.get("engine", DEFAULT_ENGINE)).version,
            "config": {**manifest["config"], **limits_config(graded_under)},
        },
    )
    sweep(
        copy,
        workers=workers,
        private=private,
        suite_dirs=suite_dirs,
        cache_dir=None,
        limits=limits_config(graded_under),
    )
    return copy


def regrade(
    run: RunDir,
    out: Path,
    workers: int | None = None,
    private: PrivateSeed | None = None,
    suite_dirs: SuiteDirs = None,
    limits: dict[str, Any] | None = None,
) -> RunDir:
    """Grade every stored artifact again into a new run at `out`; the stored verdicts are not touched."""
    run.check_secret(private)
    with run.lock():
        return _regraded_copy(run, Path(out), workers, private, suite_dirs, limits)


def _as_stored(row: dict[str, Any], stored: dict[str, Any]) -> dict[str, Any]:
    """A re-graded verdict row in the record format of the stored one (verdict.as_stored): a run
    graded before severity verifies on every byte it has."""
    import json

    from arrivalbench.verdict import as_stored, compact

    if row.get("record") is None or stored.get("record") is None:
        return row
    entry = as_stored(json.loads(row["record"]), json.loads(stored["record"]))
    return {**row, "record": compact(entry)}


def verify(
    run: RunDir,
    workers: int | None = None,
    private: PrivateSeed | None = None,
    out: Path | None = None,
    suite_dirs: SuiteDirs = None,
    limits: dict[str, Any] | None = None,
) -> list[str]:
    """Re-grade every stored artifact into a scratch copy and list verdict rows that differ, byte for byte.

    Holds the run's lock meanwhile, so it never races a sweep writing the same run. A private run
    needs `private`, the secret it commits to. With `out`, the re-graded copy is kept there.
    """
    import tempfile

    run.check_secret(private)
    with run.lock():
        stored = run.verdicts()
        with tempfile.TemporaryDirectory(prefix="arrivalbench-verify-") as scratch:
            copy = _regraded_copy(
                run, Path(out or Path(scratch) / "run"), workers, private, suite_dirs, limits
            )
            again = copy.verdicts()
    mismatches = []
    key = ("arm", "task", "sample", "schedule")
    old = {tuple(r[k] for k in key): r for r in stored.to_pylist()}
    new = {tuple(r[k] for k in key): r for r in again.to_pylist()}
    for k in sorted(old.keys() | new.keys()):
        if k not in new:
            mismatches.append(f"{'/'.join(map(str, k))}: stored but not reproduced")
        elif k not in old:
            mismatches.append(
                f"{'/'.join(map(str, k))}: reproduced but not stored (run not fully graded?)"
            )
        elif old[k] != (again_row := _as_stored(new[k], old[k])):
            fields = sorted(f for f in old[k] if old[k][f] != again_row[f])
            mismatches.append(f"{'/'.join(map(str, k))}: differs in {', '.join(fields)}")
    return mismatches
