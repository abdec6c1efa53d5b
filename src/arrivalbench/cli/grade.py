"""`arrivalbench grade`: one pipeline of a task, PASS, FAIL or ERROR per schedule, and for each
FAIL the mistake it is (explain's diagnosis) and the command that replays it."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from arrivalbench.cli.options import (
    DEFAULT_ENGINE,
    DEFAULT_LIMITS,
    DEFAULT_SEED,
    EngineOpt,
    FailOnOpt,
    JunitOpt,
    MaxScriptBytesOpt,
    MemoryLimitOpt,
    NoCacheOpt,
    PipelineOpt,
    RecordJsonOpt,
    ReplayTimeoutOpt,
    SeedFileOpt,
    SeedOpt,
    StatementTimeoutOpt,
    SuiteDirOpt,
    TaskOpt,
    cache_dir,
    read_pipeline,
    secret,
    suite_dir_of,
)
from arrivalbench.cli.output import out, verdict_table
from arrivalbench.engines import Limits
from arrivalbench.errors import UsageError
from arrivalbench.terminal import text


def detail(entry: dict[str, Any]) -> str:
    """A verdict's one-line detail: where an ERROR happened, or a FAIL's row counts."""
    if entry["verdict"] == "ERROR":
        where = f"batch {entry['batch']}" + (
            f", statement {entry['statement']}" if entry["statement"] else ""
        )
        message = entry["message"].splitlines()[0] if entry["message"] else ""
        return f"{entry['error_class']} at {where}: {message[:160]}"
    if entry["verdict"] == "FAIL":
        diff = entry["diff"]
        counts = ", ".join(f"{k} {v}" for k, v in diff["counts"].items() if v)
        return f"{counts}; right rows {diff['right_rows_share']:.1%}"
    return ""


def write_junit(record: dict[str, Any], suite: str, path: Path) -> None:
    from arrivalbench.check.junit import junit_xml

    try:
        junit_xml(record, suite, path)
    except OSError as exc:
        raise UsageError(f"--junit-xml {path}: cannot write ({exc.strerror}).") from None


def exit_on(record: dict[str, Any], fail_on: str) -> None:
    """Exit 1 when a verdict the --fail-on policy names occurred."""
    seen = {e["verdict"] for e in record["verdicts"].values()}
    wanted = {"fail": {"FAIL"}, "error": {"ERROR"}, "any": {"FAIL", "ERROR"}}.get(fail_on, set())
    if seen & wanted:
        raise typer.Exit(1)


def grade(
    task: TaskOpt,
    pipeline: PipelineOpt,
    schedules: Annotated[
        str | None,
        typer.Option(
            help="'all', or comma-separated schedule names; default: snapshot, benign, declared hazards."
        ),
    ] = None,
    seed: SeedOpt = DEFAULT_SEED,
    as_json: RecordJsonOpt = False,
    schedule_file: Annotated[
        Path | None,
        typer.Option(help="Replay one schedule from a file written by 'arrivalbench schedule'."),
    ] = None,
    statement_timeout: StatementTimeoutOpt = DEFAULT_LIMITS.statement_timeout,
    memory_limit: MemoryLimitOpt = DEFAULT_LIMITS.memory_limit,
    replay_timeout: ReplayTimeoutOpt = DEFAULT_LIMITS.replay_timeout,
    max_script_bytes: MaxScriptBytesOpt = DEFAULT_LIMITS.max_script_bytes,
    seed_file: SeedFileOpt = None,
    suite_dir: SuiteDirOpt = None,
    fail_on: FailOnOpt = "never",
    junit: JunitOpt = None,
    no_cache: NoCacheOpt = False,
    engine: EngineOpt = DEFAULT_ENGINE,
) -> None:
    """Grade one pipeline of a task: PASS, FAIL or ERROR per schedule."""
    from arrivalbench.spec import get_task

    limits = Limits(
        statement_timeout=statement_timeout,
        memory_limit=memory_limit,
        replay_timeout=replay_timeout,
        max_script_bytes=max_script_bytes,
    )
    the_task = get_task(task)
    script = read_pipeline(pipeline, limits.max_script_bytes)
    private = secret(seed_file)
    # The engine, Arrow and sqlglot load only now: a typo above is answered at once.
    from arrivalbench.grade import Grader, dumps, replay_command
    from arrivalbench.schedules import get_kind, load_schedule_file, resolve_schedules

    prebuilt = None
    if schedule_file is not None:
        schedule, log = load_schedule_file(str(schedule_file), the_task, private)
        names, prebuilt = [schedule.name], {schedule.name: (schedule, log)}
        seed = schedule.seed  # the record and the hint name the file's schedule, not --seed
        private = private if schedule.seed_commitment is not None else None
        title = f"{the_task.id} · {pipeline} · schedule file {schedule_file} (seed {seed})"
    else:
        names = resolve_schedules(the_task, schedules)
        title = f"{the_task.id} · {pipeline} · seed {seed}"
    if private is not None:
        title += f" · private seed {private.short}"
    from arrivalbench.cache import VerdictCache

    folder = cache_dir(no_cache)
    cache = VerdictCache(folder) if folder is not None else None
    with Grader(
        seed=seed, limits=limits, private=private, cache=cache, engine_name=engine
    ) as grader:
        record, _ = grader.grade(the_task, script, names, where=str(pipeline), prebuilt=prebuilt)
    if junit is not None:
        write_junit(record, f"arrivalbench grade {the_task.id}", junit)
    if as_json:
        sys.stdout.write(dumps(record))
        exit_on(record, fail_on)
        return
    out.print(verdict_table(title, record, detail))
    bad = [n for n, e in record["verdicts"].items() if e["verdict"] != "PASS"]
    if bad:
        out.print("Replay one of these with:", style="dim")
        hidden = private is not None and get_kind(bad[0]).log_kind == "hidden"
        command = replay_command(
            the_task.id,
            bad[0],
            seed,
            str(pipeline),
            limits,
            schedule_file=None if schedule_file is None else str(schedule_file),
            seed_file=private.path if hidden and private is not None else None,
            suite_dir=suite_dir_of(the_task),
            engine=engine,
        )
        out.print(text("  " + command), soft_wrap=True)
    print_diagnoses(the_task, script, record, prebuilt, grader, pipeline, seed, schedule_file)
    exit_on(record, fail_on)


def print_diagnoses(
    the_task: Any,
    script: str,
    record: dict[str, Any],
    prebuilt: dict[str, Any] | None,
    grader: Any,
    pipeline: Path,
    seed: int,
    schedule_file: Path | None,
) -> None:
    """One line per FAIL naming the mistake (explain's counterfactual diagnosis), and the command
    that explains it in full."""
    from arrivalbench.explain import SENTENCES, diagnosis_details, explain_command

    failed = [n for n, e in record["verdicts"].items() if e["verdict"] == "FAIL"]
    if not failed:
        return
    from arrivalbench.sandbox import Sandbox

    out.print("Diagnosis:", style="dim")
    with Sandbox() as sandbox:
        for name in failed:
            built, log = (prebuilt or {}).get(name) or grader.schedule(the_task, name)
            details = diagnosis_details(
                the_task, script, built, log, grader.limits, sandbox, grader.engine_name
            ) or {"unclassified": None}
            labels = ", ".join(f"{k} ({d})" if d else k for k, d in details.items())
            sentence = SENTENCES[next(iter(details))].split(":")[0].rstrip(".")
            out.print(text(f"  {name}: {labels}: {sentence}."), soft_wrap=True)
    private = grader.private
    command = explain_command(
        the_task.id,
        str(schedule_file) if schedule_file is not None else failed[0],
        seed,
        str(pipeline),
        seed_file=private.path if private is not None else None,
        suite_dir=suite_dir_of(the_task),
        engine=grader.engine_name,
    )
    out.print("Explain one with:", style="dim")
    out.print(text("  " + command), soft_wrap=True)
