"""The command line: one Typer app, each command a thin call into the modules that do the work."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from arrivalbench.engines import Limits
from arrivalbench.errors import ArrivalBenchError, PipelineInputError, UsageError
from arrivalbench.seeds import (
    DEFAULT_SEED,
    GATE_SEED_COUNT,
    SEED_RANGE,
    gate_seeds,
    is_seed,
    resolve_seed_file,
)
from arrivalbench.terminal import text

if TYPE_CHECKING:
    from rich.table import Table

    from arrivalbench.seeds import PrivateSeed

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Grade incremental SQL pipelines by replaying them under adversarial delivery schedules.",
)
out = Console()
err = Console(stderr=True)
VERDICT_STYLE = {"PASS": "green", "FAIL": "bold red", "ERROR": "bold yellow"}


def _check_seed(param: typer.CallbackParam, value: int | None) -> int | None:
    """Every --seed is checked here, before the command runs."""
    if value is not None and not is_seed(value):
        raise UsageError(
            f"{param.opts[0]} {value}: a seed is {SEED_RANGE}; give one in that range."
        )
    return value


def _at_least(
    minimum: int, hint: str = ""
) -> Callable[[typer.CallbackParam, int | None], int | None]:
    """An option callback refusing a count below `minimum` (None, the option's absence, passes)."""

    def check(param: typer.CallbackParam, value: int | None) -> int | None:
        if value is not None and value < minimum:
            raise UsageError(f"{param.opts[0]} {value}: must be at least {minimum}{hint}.")
        return value

    return check


def _task_list(option: str, value: str | None) -> list[str] | None:
    """Task ids of a comma-separated option (None when absent or empty); one of only commas is an error."""
    if not value:
        return None
    ids = list(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
    if not ids:
        raise UsageError(
            f"{option} {value!r}: names no task; give comma-separated task ids "
            "(arrivalbench tasks lists them), or leave it out for all."
        )
    return ids


def _new_run_dir(param: typer.CallbackParam, value: Path | None) -> Path | None:
    """--out of a command that makes a new run: a new or empty folder, so nothing there is mixed in."""
    from arrivalbench.store import check_new_run_path

    if value is not None:
        check_new_run_path(value, param.opts[0])
    return value


TaskOpt = Annotated[str, typer.Option("--task", "-t", help="Task id (see: arrivalbench tasks).")]
DEFAULT_LIMITS = Limits()
STATEMENT_TIMEOUT_HELP = "Seconds per statement before it is interrupted."
MEMORY_LIMIT_HELP = (
    "Memory limit per replay on every engine (and its disk on PostgreSQL), e.g. 1GB."
)
REPLAY_TIMEOUT_HELP = "Seconds of wall time per replay of a whole schedule."
StatementTimeoutOpt = Annotated[float, typer.Option(help=STATEMENT_TIMEOUT_HELP)]
MemoryLimitOpt = Annotated[str, typer.Option(help=MEMORY_LIMIT_HELP)]
ReplayTimeoutOpt = Annotated[float, typer.Option(help=REPLAY_TIMEOUT_HELP)]
SeedOpt = Annotated[
    int,
    typer.Option(
        "--seed",
        help="Public base seed (0 to 2**63 - 1): the visible log, and the hidden logs without a "
        "seed file.",
        callback=_check_seed,
    ),
]
WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers",
        "-w",
        help="Parallel workers (default: one per core).",
        callback=_at_least(1, "; leave it out for one per core"),
    ),
]
JobsOpt = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        "-j",
        help="Tasks checked in parallel (default: one per core).",
        callback=_at_least(1, "; leave it out for one per core"),
    ),
]
SeedFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--seed-file",
        help="Seed file of an official run: the hidden logs descend from its secret "
        "(default: $ARRIVALBENCH_SEED_FILE; make one with 'arrivalbench new-seed').",
    ),
]


def _secret(seed_file: Path | None) -> PrivateSeed | None:
    """The private seed of --seed-file or $ARRIVALBENCH_SEED_FILE; None for a public (development) seed."""
    return resolve_seed_file(seed_file)


def _run_secret(run: Any, seed_file: Path | None) -> PrivateSeed | None:
    """The secret a stored run needs: its own for a private run, none for a development run.

    $ARRIVALBENCH_SEED_FILE is read only for a private run; an explicit --seed-file given to a
    development run is refused, since it is most likely meant for another run.
    """
    from arrivalbench.seeds import read_seed_file
    from arrivalbench.store import RunStoreError

    commitment = run.seed_commitment
    try:
        if commitment is None:
            private = read_seed_file(seed_file) if seed_file is not None else None
        else:
            fix = f"pass the seed file this run was made with (commitment {commitment[:12]}…)"
            private = resolve_seed_file(seed_file, fix)
    except ArrivalBenchError as exc:
        raise RunStoreError(f"{run.path}: {exc}") from None
    run.check_secret(private)
    return private


def _run_kind(run: Any) -> str:
    """One line saying whether a run is official (private seed) or a development run."""
    commitment = run.seed_commitment
    if commitment is None:
        return (
            f"development run: public base seed {run.manifest.get('base_seed')}, so anyone can "
            "rebuild its hidden logs; not an official result (see README, 'Official runs')"
        )
    return f"private run: hidden logs from the secret of seed commitment {commitment[:12]}…"


def _engine(value: str) -> str:
    from arrivalbench.engines import ENGINES
    from arrivalbench.errors import UnknownNameError

    if value not in ENGINES:
        raise UnknownNameError("engine", value, ENGINES)
    return value


EngineOpt = Annotated[
    str,
    typer.Option(
        "--engine",
        help="Engine the pipelines run on: duckdb, sqlite or postgres (the oracle is always "
        "DuckDB's; reference scripts are transpiled from DuckDB SQL).",
        callback=_engine,
    ),
]


def _optional_engine(value: str | None) -> str | None:
    return None if value is None else _engine(value)


RunEngineOpt = Annotated[
    str | None,
    typer.Option(
        "--engine",
        help="duckdb, sqlite or postgres. A run is graded on the engine its manifest records; "
        "an --engine that differs is refused.",
        callback=_optional_engine,
    ),
]


def _check_run_engine(run: Any, engine: str | None) -> None:
    """Refuse an --engine that contradicts the run's manifest: a run's engine is its own."""
    recorded = str(run.manifest.get("engine", "duckdb"))
    if engine is not None and engine != recorded:
        raise UsageError(
            f"--engine {engine}: {run.path} was made for {recorded} (its manifest says so) and "
            f"is graded on {recorded}; drop --engine, or make a new run with --engine {engine}."
        )


SuiteDirOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--suite-dir",
        help="A folder of your own task folders, added to the built-in suite (repeatable; "
        "also ARRIVALBENCH_SUITE_PATH, colon-separated).",
    ),
]


NoCacheOpt = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        help="Grade every verdict afresh, neither reading nor writing the verdict cache "
        "($ARRIVALBENCH_CACHE_DIR, default ~/.cache/arrivalbench).",
    ),
]


def _cache_dir(no_cache: bool) -> Path | None:
    """The verdict cache's folder, or None with --no-cache (see cache.py); a bad
    ARRIVALBENCH_CACHE_MAX_MB is one line here, before any worker starts."""
    from arrivalbench.cache import VerdictCache

    return None if no_cache else VerdictCache().root


def use_suite(suite_dir: list[Path] | None) -> None:
    """Put the --suite-dir folders, then ARRIVALBENCH_SUITE_PATH's, on this process's suite path."""
    from arrivalbench.spec import use_suite_dirs

    use_suite_dirs(suite_dir or ())


def suite_flags(suite_dir: list[Path] | None) -> str:
    """The --suite-dir flags a printed follow-up command needs, as the user gave them."""
    import shlex

    return "".join(f" --suite-dir {shlex.quote(str(d))}" for d in suite_dir or ())


def read_pipeline(path: Path, max_bytes: int | None = None) -> str:
    """The pipeline's text, or a PipelineInputError saying what is wrong with the file."""
    if not path.exists():
        raise PipelineInputError(f"{path}: pipeline file not found; pass the path of a .sql file.")
    if not path.is_file():
        raise PipelineInputError(f"{path}: is not a file; pass the path of a .sql file.")
    size = path.stat().st_size
    if max_bytes is not None and size > max_bytes:
        raise PipelineInputError(
            f"{path}: the pipeline has {size:,} bytes, more than the {max_bytes:,} allowed; "
            "shorten it or raise --max-script-bytes."
        )
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise PipelineInputError(
            f"{path}: not UTF-8 (byte {exc.start}: {exc.reason}); save the pipeline as UTF-8."
        ) from None
    except OSError as exc:
        raise PipelineInputError(f"{path}: cannot read the pipeline ({exc.strerror}).") from None


@app.command()
def tasks(
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable list.")] = False,
    show_hash: Annotated[
        bool, typer.Option("--hash", help="Print the suite's content hash.")
    ] = False,
    suite_dir: SuiteDirOpt = None,
) -> None:
    """List the tasks (built-in and --suite-dir) with mode, difficulty, scenario and declared hazards."""
    from rich.table import Table

    from arrivalbench.spec import SUITE_DIR, load_suite, suite_hash, user_suite_dirs

    use_suite(suite_dir)
    if show_hash:
        out.print(suite_hash(), highlight=False)
        return
    suite = load_suite()
    if as_json:
        rows = [
            {
                "id": t.id,
                "mode": t.spec.mode,
                "difficulty": t.spec.difficulty,
                "scenario": t.spec.scenario,
                "order_sensitive": t.spec.order_sensitive,
                "hazards": list(t.spec.hazards),
                "controls": [{"file": c.file, "fails": list(c.fails)} for c in t.spec.controls],
                "suite_dir": str(t.folder.parent),
            }
            for t in suite.values()
        ]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    mine = bool(user_suite_dirs())
    table = Table(title=f"{len(suite)} tasks")
    for col in ("id", "mode", "difficulty", "scenario", "hazards", "controls"):
        table.add_column(col)
    if mine:
        table.add_column("suite dir", overflow="fold")
    for t in suite.values():
        where = "built-in" if t.folder.parent == SUITE_DIR.resolve() else str(t.folder.parent)
        table.add_row(
            *map(
                text,
                (
                    t.id,
                    t.spec.mode,
                    t.spec.difficulty,
                    t.spec.scenario,
                    ", ".join(t.spec.hazards),
                    str(len(t.spec.controls)),
                    *([where] if mine else []),
                ),
            )
        )
    out.print(table)


def _detail(entry: dict[str, Any]) -> str:
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


FAIL_ON = ("fail", "error", "any", "never")


def _fail_on(value: str) -> str:
    if value not in FAIL_ON:
        raise UsageError(f"--fail-on {value}: give one of {', '.join(FAIL_ON)}.")
    return value


FailOnOpt = Annotated[
    str,
    typer.Option(
        "--fail-on",
        help="Exit 1 when any schedule FAILs (fail), ERRORs (error), either (any); never: exit 0.",
        callback=lambda value: _fail_on(value),
    ),
]
JunitOpt = Annotated[
    Path | None,
    typer.Option("--junit-xml", help="Also write JUnit XML here: one testcase per schedule."),
]


def _write_junit(record: dict[str, Any], suite: str, path: Path) -> None:
    from arrivalbench.check.junit import junit_xml

    try:
        junit_xml(record, suite, path)
    except OSError as exc:
        raise UsageError(f"--junit-xml {path}: cannot write ({exc.strerror}).") from None


def _exit_on(record: dict[str, Any], fail_on: str) -> None:
    """Exit 1 when a verdict the --fail-on policy names occurred."""
    seen = {e["verdict"] for e in record["verdicts"].values()}
    wanted = {"fail": {"FAIL"}, "error": {"ERROR"}, "any": {"FAIL", "ERROR"}}.get(fail_on, set())
    if seen & wanted:
        raise typer.Exit(1)


@app.command()
def grade(
    task: TaskOpt,
    pipeline: Annotated[Path, typer.Option("--pipeline", "-p", help="The pipeline's SQL file.")],
    schedules: Annotated[
        str | None,
        typer.Option(
            help="'all', or comma-separated schedule names; default: snapshot, benign, declared hazards."
        ),
    ] = None,
    seed: SeedOpt = DEFAULT_SEED,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the verdict record as JSON.")
    ] = False,
    schedule_file: Annotated[
        Path | None,
        typer.Option(help="Replay one schedule from a file written by 'arrivalbench schedule'."),
    ] = None,
    statement_timeout: StatementTimeoutOpt = DEFAULT_LIMITS.statement_timeout,
    memory_limit: MemoryLimitOpt = DEFAULT_LIMITS.memory_limit,
    replay_timeout: ReplayTimeoutOpt = DEFAULT_LIMITS.replay_timeout,
    max_script_bytes: Annotated[
        int, typer.Option(help="Largest pipeline accepted, in bytes.")
    ] = 1_000_000,
    seed_file: SeedFileOpt = None,
    suite_dir: SuiteDirOpt = None,
    fail_on: FailOnOpt = "never",
    junit: JunitOpt = None,
    no_cache: NoCacheOpt = False,
    engine: EngineOpt = "duckdb",
) -> None:
    """Grade one pipeline of a task: PASS, FAIL or ERROR per schedule."""
    from arrivalbench.spec import SUITE_DIR, get_task

    use_suite(suite_dir)
    limits = Limits(
        statement_timeout=statement_timeout,
        memory_limit=memory_limit,
        replay_timeout=replay_timeout,
        max_script_bytes=max_script_bytes,
    )
    the_task = get_task(task)
    script = read_pipeline(pipeline, limits.max_script_bytes)
    private = _secret(seed_file)
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

    cache_dir = _cache_dir(no_cache)
    cache = VerdictCache(cache_dir) if cache_dir is not None else None
    with Grader(
        seed=seed, limits=limits, private=private, cache=cache, engine_name=engine
    ) as grader:
        record, _ = grader.grade(the_task, script, names, where=str(pipeline), prebuilt=prebuilt)
    if junit is not None:
        _write_junit(record, f"arrivalbench grade {the_task.id}", junit)
    if as_json:
        sys.stdout.write(dumps(record))
        _exit_on(record, fail_on)
        return
    from rich.table import Table

    table = Table(title=text(title))
    table.add_column("schedule")
    table.add_column("verdict")
    table.add_column("detail", overflow="fold")
    for name, entry in record["verdicts"].items():
        verdict = entry["verdict"]
        table.add_row(text(name), text((verdict, VERDICT_STYLE[verdict])), text(_detail(entry)))
    out.print(table)
    bad = [n for n, e in record["verdicts"].items() if e["verdict"] != "PASS"]
    if bad:
        out.print("Replay one of these with:", style="dim")
        secret = private is not None and get_kind(bad[0]).log_kind == "hidden"
        home = the_task.folder.parent
        command = replay_command(
            the_task.id,
            bad[0],
            seed,
            str(pipeline),
            limits,
            schedule_file=None if schedule_file is None else str(schedule_file),
            seed_file=private.path if secret else None,
            suite_dir=None if home == SUITE_DIR.resolve() else str(home),
            engine=engine,
        )
        out.print(text("  " + command), soft_wrap=True)
    _print_diagnoses(the_task, script, record, prebuilt, grader, pipeline, seed, schedule_file)
    _exit_on(record, fail_on)


def _print_diagnoses(
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
    from arrivalbench.explain import SENTENCES, diagnose_schedule, explain_command
    from arrivalbench.spec import SUITE_DIR

    failed = [n for n, e in record["verdicts"].items() if e["verdict"] == "FAIL"]
    if not failed:
        return
    from arrivalbench.sandbox import Sandbox

    out.print("Diagnosis:", style="dim")
    with Sandbox() as sandbox:
        for name in failed:
            built, log = (prebuilt or {}).get(name) or grader.schedule(the_task, name)
            labels = diagnose_schedule(
                the_task, script, built, log, grader.limits, sandbox, grader.engine_name
            ) or ["unclassified"]
            sentence = SENTENCES[labels[0]].split(":")[0].rstrip(".")
            out.print(text(f"  {name}: {', '.join(labels)}: {sentence}."), soft_wrap=True)
    home = the_task.folder.parent
    private = grader.private
    command = explain_command(
        the_task.id,
        str(schedule_file) if schedule_file is not None else failed[0],
        seed,
        str(pipeline),
        seed_file=private.path if private is not None else None,
        suite_dir=None if home == SUITE_DIR.resolve() else str(home),
        engine=grader.engine_name,
    )
    out.print("Explain one with:", style="dim")
    out.print(text("  " + command), soft_wrap=True)


def _positive_seconds(param: typer.CallbackParam, value: float) -> float:
    import math

    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"{param.opts[0]} {value}: must be a positive number of seconds.")
    return value


@app.command()
def explain(
    task: TaskOpt,
    pipeline: Annotated[Path, typer.Option("--pipeline", "-p", help="The pipeline's SQL file.")],
    schedule_name: Annotated[
        str,
        typer.Option(
            "--schedule",
            "-s",
            help="The failing schedule: a name, or a file written by 'arrivalbench schedule' "
            "(or by explain --out).",
        ),
    ],
    seed: SeedOpt = DEFAULT_SEED,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    out_path: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Write the minimal schedule here, to replay with grade --schedule-file.",
        ),
    ] = None,
    budget_seconds: Annotated[
        float,
        typer.Option(help="Seconds the shrinking may take.", callback=_positive_seconds),
    ] = 60.0,
    max_replays: Annotated[
        int,
        typer.Option(help="Replays the shrinking may make.", callback=_at_least(1)),
    ] = 5000,
    seed_file: SeedFileOpt = None,
    suite_dir: SuiteDirOpt = None,
    engine: EngineOpt = "duckdb",
) -> None:
    """Explain a FAIL: the smallest failing delivery, the first batch that diverged, the mistake."""
    from arrivalbench.spec import SUITE_DIR, get_task

    use_suite(suite_dir)
    the_task = get_task(task)
    limits = Limits()
    script = read_pipeline(pipeline, limits.max_script_bytes)
    private = _secret(seed_file)
    from arrivalbench.explain import explain as explain_schedule
    from arrivalbench.explain.render import render
    from arrivalbench.grade import replay_command
    from arrivalbench.schedules import build_schedule, load_schedule_file, schedule_to_json

    if Path(schedule_name).suffix == ".json" or Path(schedule_name).is_file():
        built, log = load_schedule_file(schedule_name, the_task, private)
        seed = built.seed
    else:
        built, log = build_schedule(the_task, schedule_name, seed, private)
    explanation = explain_schedule(
        the_task,
        script,
        built,
        log,
        limits,
        budget_seconds=budget_seconds,
        max_replays=max_replays,
        seed=seed,
        engine=engine,
    )
    if out_path is not None and explanation.minimal is not None:
        document = json.dumps(schedule_to_json(explanation.minimal, log), indent=1) + "\n"
        tmp = out_path.with_name(out_path.name + ".tmp")
        try:
            tmp.write_text(document, encoding="utf-8")
            tmp.replace(out_path)
        except OSError as exc:
            raise PipelineInputError(
                f"{out_path}: cannot write the minimal schedule ({exc.strerror})."
            ) from None
    if as_json:
        sys.stdout.write(json.dumps(explanation.to_json(), indent=1, ensure_ascii=False) + "\n")
        return
    hint = None
    if out_path is not None and explanation.minimal is not None:
        home = the_task.folder.parent
        hint = replay_command(
            the_task.id,
            built.name,
            seed,
            str(pipeline),
            schedule_file=str(out_path),
            seed_file=private.path if built.seed_commitment is not None and private else None,
            suite_dir=None if home == SUITE_DIR.resolve() else str(home),
            engine=engine,
        )
    render(explanation, out, hint)


@app.command()
def check(
    log: Annotated[
        str,
        typer.Option(
            "--log", help="The event log: a .parquet, .csv or .json file, or FILE.duckdb:TABLE."
        ),
    ],
    key: Annotated[str, typer.Option("--key", help="The column that names an event (any type).")],
    event_time: Annotated[
        str, typer.Option("--event-time", help="The event-time column (a timestamp or date).")
    ],
    pipeline: Annotated[
        Path | None, typer.Option("--pipeline", "-p", help="The pipeline's SQL file.")
    ] = None,
    source_table: Annotated[
        str | None,
        typer.Option("--source-table", help="The table the pipeline reads deliveries from."),
    ] = None,
    target: Annotated[
        str | None, typer.Option("--target", help="The table the pipeline maintains.")
    ] = None,
    dbt_project: Annotated[
        Path | None, typer.Option("--dbt-project", help="A dbt project folder (never written).")
    ] = None,
    model: Annotated[str | None, typer.Option("--model", help="The dbt model to check.")] = None,
    source: Annotated[
        str | None,
        typer.Option("--source", help="The dbt source the deliveries fill: SOURCE.TABLE."),
    ] = None,
    entity_key: Annotated[
        str | None,
        typer.Option("--entity-key", help="Column whose events change one entity's state."),
    ] = None,
    evolving_column: Annotated[
        str | None,
        typer.Option(
            "--evolving-column",
            help="A column that is NULL early and appears mid-stream (enables schema_evolution).",
        ),
    ] = None,
    oracle: Annotated[
        Path | None,
        typer.Option(
            "--oracle", help="A batch query over the complete log (default: a full refresh)."
        ),
    ] = None,
    mode: Annotated[
        str | None,
        typer.Option(
            "--mode",
            help="batch: the source holds only the current delivery; landing: an append-only "
            "landing table (default: batch for --pipeline, landing for --dbt-project).",
        ),
    ] = None,
    arrival_column: Annotated[
        str | None,
        typer.Option(
            "--arrival-column", help="Stamp every delivered row's arrival time in this column."
        ),
    ] = None,
    ignore_column: Annotated[
        list[str] | None,
        typer.Option("--ignore-column", help="A target column left out of the comparison."),
    ] = None,
    schedules: Annotated[
        str | None, typer.Option(help="'all' (default), or comma-separated schedule names.")
    ] = None,
    seed: SeedOpt = DEFAULT_SEED,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the verdict record as JSON.")
    ] = False,
    junit: JunitOpt = None,
    statement_timeout: Annotated[
        float, typer.Option(help="Seconds per statement (per dbt run) before it is stopped.")
    ] = 60.0,
    memory_limit: Annotated[
        str,
        typer.Option(
            help="Memory limit per replay on every engine (and its disk on PostgreSQL), e.g. 2GB."
        ),
    ] = "2GB",
    replay_timeout: Annotated[
        float, typer.Option(help="Seconds of wall time per replay of a whole schedule.")
    ] = 600.0,
    engine: Annotated[
        str,
        typer.Option(
            "--engine",
            help="Engine the pipeline runs on: duckdb, sqlite or postgres; its full refresh and "
            "an --oracle query run there too (dbt projects: duckdb only).",
            callback=_engine,
        ),
    ] = "duckdb",
) -> None:
    """Check your own pipeline or dbt model on your own log: exit 0 all PASS, 1 a FAIL or ERROR."""
    from arrivalbench.check import Check, CheckConfig, LogColumns, exit_code
    from arrivalbench.grade import dumps

    limits = Limits(
        statement_timeout=statement_timeout,
        memory_limit=memory_limit,
        replay_timeout=replay_timeout,
        max_script_bytes=10_000_000,
    )
    config = CheckConfig(
        log=log,
        columns=LogColumns(key, event_time, entity_key, evolving_column, arrival_column),
        seed=seed,
        limits=limits,
        pipeline=pipeline,
        source_table=source_table,
        target=target,
        dbt_project=dbt_project,
        model=model,
        source=source,
        mode=mode,  # type: ignore[arg-type]
        schedules=schedules,
        oracle=oracle,
        ignore_columns=tuple(ignore_column or ()),
        engine=engine,
    )
    script = read_pipeline(pipeline, limits.max_script_bytes) if pipeline is not None else None
    started = time.monotonic()

    def progress(name: str, done: int, total: int, entry: dict[str, Any] | None) -> None:
        if entry is not None:
            verdict = entry["verdict"]
            err.print(
                text(
                    f"check: [{done}/{total}] {name}: ",
                    (verdict, VERDICT_STYLE[verdict]),
                    f" ({time.monotonic() - started:.1f} s)",
                )
            )

    record, _ = Check(config, on_progress=progress).run(script)
    if junit is not None:
        _write_junit(record, f"arrivalbench check {record['task']}", junit)
    if as_json:
        sys.stdout.write(dumps(record))
    else:
        _check_table(record)
    raise typer.Exit(exit_code(record))


def _check_table(record: dict[str, Any]) -> None:
    from rich.table import Table

    from arrivalbench.check.junit import summary

    title = f"{record['task']} · mode {record['mode']} · oracle {record['oracle']}"
    if record["engine"] != "duckdb":
        title += f" · {record['engine']} {record['engine_version']}"
    table = Table(title=text(title))
    table.add_column("schedule")
    table.add_column("verdict")
    table.add_column("detail", overflow="fold")
    for name, entry in record["verdicts"].items():
        verdict = entry["verdict"]
        table.add_row(text(name), text((verdict, VERDICT_STYLE[verdict])), text(summary(entry)))
    for name, reason in record["skipped"].items():
        table.add_row(text(name), text(("skipped", "dim")), text(reason))
    out.print(table)


@app.command()
def schedule(
    task: TaskOpt,
    schedule_name: Annotated[str, typer.Option("--schedule", "-s", help="Schedule name.")],
    seed: SeedOpt = DEFAULT_SEED,
    out_path: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the JSON here (default: stdout).")
    ] = None,
    seed_file: SeedFileOpt = None,
    suite_dir: SuiteDirOpt = None,
) -> None:
    """Build one schedule of a task and write it as JSON, to inspect or to replay with grade --schedule-file."""
    from arrivalbench.spec import get_task

    use_suite(suite_dir)
    the_task = get_task(task)
    from arrivalbench.schedules import build_schedule, schedule_to_json

    built, log = build_schedule(the_task, schedule_name, seed, _secret(seed_file))
    document = json.dumps(schedule_to_json(built, log), indent=1) + "\n"
    if out_path is None:
        sys.stdout.write(document)
        return
    tmp = out_path.with_name(out_path.name + ".tmp")
    try:
        tmp.write_text(document, encoding="utf-8")
        tmp.replace(out_path)
    except OSError as exc:
        raise PipelineInputError(
            f"{out_path}: cannot write the schedule ({exc.strerror})."
        ) from None
    err.print(
        text(
            f"wrote {out_path}: {len(built.deliveries)} deliveries, {built.delivered_rows()} rows, "
            f"perturbation {dict(built.perturbation)}"
        )
    )


@app.command()
def gate(
    task_ids: Annotated[
        str | None, typer.Option("--tasks", help="Comma-separated task ids (default: all).")
    ] = None,
    seed: SeedOpt = DEFAULT_SEED,
    matrix: Annotated[
        bool, typer.Option("--matrix", help="Also print each task's verdict matrix.")
    ] = False,
    jobs: JobsOpt = None,
    seed_file: SeedFileOpt = None,
    suite_dir: SuiteDirOpt = None,
    seed_count: Annotated[
        int,
        typer.Option(
            "--seeds",
            min=1,
            help="Gate at this many seeds: --seed and the next ones (a private seed gates one).",
        ),
    ] = GATE_SEED_COUNT,
    no_cache: NoCacheOpt = False,
    engine: EngineOpt = "duckdb",
) -> None:
    """Admissibility gate over the suite (built-in and --suite-dir) at several seeds; exits 1 when
    any task is rejected at any of them."""
    from rich.table import Table

    from arrivalbench.spec import get_task, load_suite

    use_suite(suite_dir)
    ids = _task_list("--tasks", task_ids)
    chosen = [get_task(t) for t in ids] if ids else list(load_suite().values())
    private = _secret(seed_file)
    from arrivalbench.gate import TaskGate, gate_suite, group_violations
    from arrivalbench.schedules import REGISTRY

    on = "" if engine == "duckdb" else f" on {engine} (the oracle stays DuckDB's)"
    if private is not None:
        out.print(f"hidden logs from the private seed {private.short}{on}", highlight=False)
    else:
        seeds = gate_seeds(seed_count, seed)
        out.print(f"gating at seeds {', '.join(map(str, seeds))}{on}", highlight=False)
    started = time.perf_counter()

    def report(result: TaskGate) -> None:
        mark = (
            ("admitted", "green")
            if result.admitted
            else (f"rejected ({len(result.violations)})", "bold red")
        )
        spec = result.task.spec
        out.print(
            text(
                mark,
                f" {spec.id} ({spec.mode}, {spec.difficulty}): "
                f"{len(spec.hazards)} hazards, {len(spec.controls)} controls",
            )
        )
        for group in group_violations(result.violations):
            out.print(text(f"      - {group}"), soft_wrap=True)
        if matrix:
            table = Table(show_header=True, box=None, padding=(0, 1))
            table.add_column("artifact")
            for s in result.schedules:
                table.add_column(REGISTRY[s].label)
            for artifact, verdicts in result.verdicts.items():
                cells = [text((verdicts[s], VERDICT_STYLE[verdicts[s]])) for s in result.schedules]
                name = artifact.removeprefix("controls/").removesuffix(".sql")
                table.add_row(text(name), *cells)
            out.print(table)

    import os

    results = gate_suite(
        chosen,
        seed=seed,
        jobs=jobs or os.cpu_count() or 1,
        on_task=report,
        private=private,
        seed_count=seed_count,
        cache_dir=_cache_dir(no_cache),
        engine=engine,
    )
    admitted = sum(r.admitted for r in results)
    summary = Table(title="gate summary")
    columns = ("tasks", "seeds", "admitted", "rejected", "golds", "controls", "violations")
    for col in (*columns, "seconds"):
        summary.add_column(col)
    summary.add_row(
        str(len(results)),
        str(max((len(r.seeds) for r in results), default=0)),
        str(admitted),
        str(len(results) - admitted),
        str(len(results)),
        str(sum(len(r.task.spec.controls) for r in results)),
        str(sum(len(r.violations) for r in results)),
        f"{time.perf_counter() - started:.1f}",
    )
    out.print(summary)
    out.print(composition(results), highlight=False)
    if admitted < len(results):
        raise typer.Exit(1)


@app.command()
def audit(
    task_ids: Annotated[
        str | None, typer.Option("--tasks", help="Comma-separated task ids (default: all).")
    ] = None,
    extra_seeds: Annotated[
        int | None,
        typer.Option(
            "--seeds",
            help="Seeds audited besides --seed, derived from ('audit', i) (default: 5).",
            callback=_at_least(0),
        ),
    ] = None,
    seed: Annotated[
        int,
        typer.Option(
            "--seed",
            help="Base seed (0 to 2**63 - 1): its visible and hidden logs are audited first.",
            callback=_check_seed,
        ),
    ] = DEFAULT_SEED,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable result.")] = False,
    jobs: JobsOpt = None,
    suite_dir: SuiteDirOpt = None,
) -> None:
    """Check each task's second oracle (oracle.py) against oracle.sql on the visible and hidden logs
    of several seeds; exits 1 when any task disagrees or has no oracle.py."""
    import math
    import os

    from rich.table import Table

    from arrivalbench.spec import get_task, load_suite

    use_suite(suite_dir)
    ids = _task_list("--tasks", task_ids)
    named = [get_task(t) for t in ids] if ids else []
    from arrivalbench.audit import (
        EXTRA_SEEDS,
        TaskAudit,
        audit_seeds,
        audit_suite,
        gated_seeds,
        load_python_oracle,
    )

    extra_seeds = EXTRA_SEEDS if extra_seeds is None else extra_seeds
    if ids:
        chosen = named
        for task in chosen:  # a task named on purpose must have a usable oracle.py: exit 2
            load_python_oracle(task)
    else:
        chosen = list(load_suite().values())
    seeds, gated = audit_seeds(extra_seeds, seed), gated_seeds(seed)
    started = time.perf_counter()
    results = audit_suite(chosen, seeds, gated, jobs=jobs or os.cpu_count() or 1)
    seconds = time.perf_counter() - started
    agreeing = sum(r.agrees for r in results)
    without = sum(r.error is not None for r in results)
    logs = sum(len(r.logs) for r in results)

    def kappa(value: float | None) -> str:
        return "n/a" if value is None or math.isnan(value) else f"{value:.3f}"

    if as_json:
        summary = {
            "tasks": len(results),
            "agree": agreeing,
            "disagree": len(results) - agreeing - without,
            "oracle_py_unusable": without,
            "logs": logs,
            "seconds": round(seconds, 1),
        }
        document = {
            "seeds": seeds,
            "gated_seeds": gated,
            "summary": summary,
            "tasks": [r.to_json() for r in results],
        }
        sys.stdout.write(json.dumps(document, indent=1, default=str) + "\n")
    else:
        table = Table(
            title=f"audit: oracle.py against oracle.sql, seeds {', '.join(map(str, seeds))}"
        )
        for col in ("task", "logs", "agree", "kappa", "first disagreement"):
            table.add_column(col, overflow="fold")

        def mark(result: TaskAudit) -> Any:
            agreed = sum(log.equal for log in result.logs)
            style = "green" if result.agrees else "bold red"
            return text((f"{agreed}/{len(result.logs)}", style))

        for r in results:
            first = text(r.first_disagreement or "")
            table.add_row(text(r.task_id), str(len(r.logs)), mark(r), kappa(r.kappa), first)
        out.print(table)
        summary_table = Table(title="audit summary")
        for col in ("tasks", "agree", "disagree", "no usable oracle.py", "logs", "seconds"):
            summary_table.add_column(col)
        summary_table.add_row(
            str(len(results)),
            str(agreeing),
            str(len(results) - agreeing - without),
            str(without),
            str(logs),
            f"{seconds:.1f}",
        )
        out.print(summary_table)
    if agreeing < len(results):
        raise typer.Exit(1)


@app.command("new-task")
def new_task_command(
    name: Annotated[str, typer.Argument(help="Task id: lower-case letters, digits, underscores.")],
    mode: Annotated[str, typer.Option(help="create, modify or repair.")] = "create",
    generator: Annotated[str, typer.Option(help="Log generator kind.")] = "sales",
    suite_dir: Annotated[
        Path | None,
        typer.Option(
            "--suite-dir",
            help="Folder to write the task into, created if missing "
            "(default: the first entry of ARRIVALBENCH_SUITE_PATH).",
        ),
    ] = None,
    builtin: Annotated[
        bool,
        typer.Option(
            "--builtin", help="Maintainers: write into the built-in suite of a source checkout."
        ),
    ] = False,
) -> None:
    """Scaffold a working task folder to edit, in a folder you name (see docs/task-authoring.md)."""
    import shlex

    from arrivalbench.scaffold import new_task, new_task_dir

    target = new_task_dir(suite_dir, builtin=builtin)
    folder = new_task(name, mode=mode, generator=generator, suite_dir=target)
    out.print(text(f"created {folder}"), soft_wrap=True)
    where = "" if builtin else f" --suite-dir {shlex.quote(str(target))}"
    out.print(text(f"check it with: arrivalbench gate{where} --tasks {name}"), soft_wrap=True)
    out.print(
        text(f"check its second oracle (oracle.py) with: arrivalbench audit{where} --tasks {name}"),
        soft_wrap=True,
    )


RunOpt = Annotated[Path, typer.Argument(help="A run directory.")]
_RUN_LIMIT = " Default: the run's manifest, which may only tighten the harness's default of {}."
RunStatementTimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--statement-timeout",
        help=STATEMENT_TIMEOUT_HELP + _RUN_LIMIT.format(f"{DEFAULT_LIMITS.statement_timeout:g} s"),
    ),
]
RunMemoryLimitOpt = Annotated[
    str | None,
    typer.Option(
        "--memory-limit", help=MEMORY_LIMIT_HELP + _RUN_LIMIT.format(DEFAULT_LIMITS.memory_limit)
    ),
]
RunReplayTimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--replay-timeout",
        help=REPLAY_TIMEOUT_HELP + _RUN_LIMIT.format(f"{DEFAULT_LIMITS.replay_timeout:g} s"),
    ),
]


def _limit_flags(
    statement_timeout: float | None, memory_limit: str | None, replay_timeout: float | None
) -> dict[str, Any]:
    """The explicit limit flags of grade-run and regrade (None: not given), checked now against
    the ceilings (engines.Limits) so a bad one is one line before anything runs."""
    flags = {
        "statement_timeout": statement_timeout,
        "memory_limit": memory_limit,
        "replay_timeout": replay_timeout,
    }
    Limits(**{k: v for k, v in flags.items() if v is not None})
    return flags


def _executor(value: str) -> str:
    if value not in ("local", "ray"):
        raise UsageError(f"--executor {value!r}: expected 'local' or 'ray'.")
    return value


@app.command("new-seed")
def new_seed(
    out_path: Annotated[
        Path, typer.Option("--out", "-o", help="The seed file to create (never overwritten).")
    ],
) -> None:
    """Write a fresh random secret (mode 0600) for official runs; keep it private, pass it with --seed-file."""
    from arrivalbench.seeds import SEED_FILE_ENV, write_seed_file

    private = write_seed_file(out_path)
    out.print(
        text(
            f"wrote {out_path} (seed commitment {private.commitment}); keep it secret and pass it "
            f"with --seed-file {out_path} or {SEED_FILE_ENV}={out_path}"
        ),
        soft_wrap=True,
    )


@app.command("make-corpus")
def make_corpus_command(
    out_dir: Annotated[
        Path, typer.Option("--out", "-o", help="New run directory.", callback=_new_run_dir)
    ],
    seed: SeedOpt = DEFAULT_SEED,
    task_ids: Annotated[
        str | None, typer.Option("--tasks", help="Comma-separated task ids (default: all).")
    ] = None,
    seed_file: SeedFileOpt = None,
    suite_dir: SuiteDirOpt = None,
    engine: EngineOpt = "duckdb",
) -> None:
    """Build the reference corpus (gold, controls, naive baselines) as a run directory, ungraded
    (on --engine: grade-run grades every cell on the run's engine)."""
    from arrivalbench.corpus import make_corpus

    use_suite(suite_dir)
    ids = _task_list("--tasks", task_ids)
    if ids:
        from arrivalbench.spec import get_task

        for task_id in ids:
            get_task(task_id)
    private = _secret(seed_file)
    run = make_corpus(
        out_dir,
        seed=seed,
        task_ids=ids,
        seed_commitment=private and private.commitment,
        engine=engine,
    )
    cells = run.cells()
    out.print(
        text(f"wrote {out_dir}: {len(cells)} cells in arms {', '.join(run.manifest['arms'])}")
    )
    out.print(text(_run_kind(run)))


@app.command()
def generate(
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            help="replay:PATH (a PATH holding {arm} reads one file per arm), or an Inspect model "
            "such as openai/gpt-4o or openai-api/local/NAME.",
        ),
    ],
    out_dir: Annotated[
        Path,
        typer.Option("--out", "-o", help="Run directory to write (an interrupted one is resumed)."),
    ],
    arm: Annotated[
        list[str],
        typer.Option(
            "--arm",
            "-a",
            help="Prompt arm: unhinted, hint, arch, hint_strong or arch_guarded (repeatable).",
        ),
    ] = ["unhinted"],  # noqa: B006
    k: Annotated[
        int,
        typer.Option(
            "-k",
            help="Samples per task (sample 0 at temperature 0, the rest at 1); the paper uses 5.",
            callback=_at_least(1),
        ),
    ] = 5,
    task_ids: Annotated[
        str | None, typer.Option("--tasks", help="Comma-separated task ids (default: all).")
    ] = None,
    turns: Annotated[
        int, typer.Option("--turns", help="Repair-loop turns per cell.", callback=_at_least(1))
    ] = 3,
    concurrency: Annotated[
        int,
        typer.Option("--concurrency", "-c", help="Cells in flight at once.", callback=_at_least(1)),
    ] = 4,
    max_retries: Annotated[
        int,
        typer.Option(
            "--max-retries", help="Provider retries per model call.", callback=_at_least(0)
        ),
    ] = 5,
    timeout: Annotated[
        int,
        typer.Option(
            "--timeout", help="Seconds per model call, retries included.", callback=_at_least(1)
        ),
    ] = 600,
    max_tokens: Annotated[
        int,
        typer.Option(
            "--max-tokens", help="Output cap per model call (turn).", callback=_at_least(1)
        ),
    ] = 8_000,
    run_index: Annotated[
        int,
        typer.Option(
            "--run",
            help="Replicate index recorded for these arms: 2 for an independent re-run.",
            callback=_at_least(1),
        ),
    ] = 1,
    rerun_reason: Annotated[
        str | None,
        typer.Option(
            "--rerun-no-artifact",
            metavar="REASON",
            help="In the finished run at --out, ask again for the cells without a script for "
            "this reason (e.g. truncated, with a higher --max-tokens); grade-run grades them.",
        ),
    ] = None,
    seed: SeedOpt = DEFAULT_SEED,
    seed_file: SeedFileOpt = None,
    suite_dir: SuiteDirOpt = None,
    engine: Annotated[
        str | None,
        typer.Option(
            "--engine",
            help="SQL dialect the prompts name and engine the scripts run on: duckdb (default), "
            "sqlite or postgres; recorded in the run, which grade-run grades on it. With "
            "--rerun-no-artifact: the run's own.",
            callback=_optional_engine,
        ),
    ] = None,
) -> None:
    """Let a model write each task's pipeline (snapshot repair loop) and store the scripts as a run."""
    from arrivalbench.agent.generate import generate as run_generate
    from arrivalbench.agent.generate import rerun_no_artifact
    from arrivalbench.agent.models import get_model

    use_suite(suite_dir)
    ids = _task_list("--tasks", task_ids)
    if rerun_reason is not None:
        again, n = rerun_no_artifact(
            get_model(model, max_retries=max_retries, timeout=timeout, arms=arm),
            out=out_dir,
            reason=rerun_reason,
            max_tokens=max_tokens,
            concurrency=concurrency,
            task_ids=ids,
            log=lambda line: err.print(text(line)),
            engine=engine,
        )
        missing = sum(c.artifact_sha256 is None for c in again.cells())
        out.print(
            text(
                f"re-ran {n} cells of {out_dir} ({missing} cells now without a script); "
                f"grade the new scripts with: arrivalbench grade-run {out_dir}"
                + suite_flags(suite_dir)
            ),
            soft_wrap=True,
        )
        return
    private = _secret(seed_file)
    run = run_generate(
        get_model(model, max_retries=max_retries, timeout=timeout, arms=arm),
        arms=arm,
        k=k,
        out=out_dir,
        task_ids=ids,
        turns=turns,
        seed=seed,
        concurrency=concurrency,
        max_tokens=max_tokens,
        log=lambda line: err.print(text(line)),
        seed_commitment=private and private.commitment,
        run=run_index,
        engine=engine or "duckdb",
    )
    cells = run.cells()
    missing = sum(c.artifact_sha256 is None for c in cells)
    out.print(
        text(
            f"wrote {out_dir}: {len(cells)} cells ({missing} without a script); "
            f"grade it with: arrivalbench grade-run {out_dir}{suite_flags(suite_dir)}"
        ),
        soft_wrap=True,
    )
    out.print(text(_run_kind(run)))


@app.command("import-scripts")
def import_scripts_command(
    folder: Annotated[
        Path, typer.Argument(help="Folder of <task>.sql or <task>.<sample>.sql files.")
    ],
    arm: Annotated[
        str, typer.Option("--arm", "-a", help="Arm name for these scripts, e.g. human.")
    ],
    out_dir: Annotated[
        Path, typer.Option("--out", "-o", help="New run directory.", callback=_new_run_dir)
    ],
    role: Annotated[
        str,
        typer.Option("--role", help="The arm's role: human, reference, model or intervention."),
    ] = "human",
    seed: SeedOpt = DEFAULT_SEED,
    seed_file: SeedFileOpt = None,
    suite_dir: SuiteDirOpt = None,
    engine: EngineOpt = "duckdb",
) -> None:
    """Store a folder of hand-written scripts as one arm of a new run, ready for grade-run (on
    --engine: the scripts are that engine's SQL, and grade-run grades them on it)."""
    from arrivalbench.agent.generate import import_scripts

    use_suite(suite_dir)
    private = _secret(seed_file)
    run = import_scripts(
        folder,
        arm=arm,
        out=out_dir,
        seed=seed,
        seed_commitment=private and private.commitment,
        role=role,
        engine=engine,
    )
    out.print(
        text(
            f"wrote {out_dir}: {len(run.cells())} cells in arm {arm}; "
            f"grade it with: arrivalbench grade-run {out_dir}{suite_flags(suite_dir)}"
        ),
        soft_wrap=True,
    )
    out.print(text(_run_kind(run)))


@app.command("import-inspect")
def import_inspect_command(
    log_dir: Annotated[
        Path,
        typer.Argument(
            help="Log folder (or one log file) of 'inspect eval arrivalbench/arrivalbench'."
        ),
    ],
    out_dir: Annotated[
        Path, typer.Option("--out", "-o", help="New run directory.", callback=_new_run_dir)
    ],
    verify_rows: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Re-grade every cell and compare with the scorer's kept verdicts; exit 1 if any differs.",
        ),
    ] = False,
    workers: WorkersOpt = None,
    seed_file: SeedFileOpt = None,
    suite_dir: SuiteDirOpt = None,
) -> None:
    """Store finished Inspect logs of the arrivalbench task as a run, keeping the scorer's verdicts."""
    from arrivalbench.agent.inspect_import import import_logs

    use_suite(suite_dir)
    private = _secret(seed_file)
    run, claims = import_logs(log_dir, out_dir, seed_commitment=private and private.commitment)
    cells = run.cells()
    missing = sum(c.artifact_sha256 is None for c in cells)
    kept = run.verdicts().num_rows
    out.print(
        text(
            f"wrote {out_dir}: {len(cells)} cells in arms {', '.join(run.manifest['arms'])} "
            f"({missing} without a script), {kept} verdicts kept from the scorer; grade what is "
            f"missing with: arrivalbench grade-run {out_dir}{suite_flags(suite_dir)}"
        ),
        soft_wrap=True,
    )
    out.print(text(f"scorer verdicts: {claims.summary()}"), soft_wrap=True)
    out.print(text(_run_kind(run)))
    if verify_rows:
        from arrivalbench.sweep import verify

        mismatches = [
            line
            for line in verify(run, workers=workers, private=private)
            if not line.endswith("reproduced but not stored (run not fully graded?)")
        ]
        for line in mismatches:
            out.print(text(line))
        if mismatches:
            out.print(f"{len(mismatches)} of {kept} kept verdicts differ", style="bold red")
            raise typer.Exit(1)
        out.print(f"all {kept} kept verdicts reproduced byte for byte", highlight=False)


def _summary_table(run: Any) -> Table:
    from rich.table import Table

    from arrivalbench.analysis.stats import arm_summaries, estimate, outcomes

    cells = run.cells()
    tasks = run.tasks()
    verdicts = run.verdicts()
    gap = estimate(outcomes(cells, verdicts, tasks), "gap")
    table = Table(title=text(f"{run.path}: rates over tasks"))
    for col in ("arm", "tasks", "cells", "snapshot-pass", "gap [95% CI]", "error", "all-in"):
        table.add_column(col, justify="right" if col not in ("arm",) else "left")
    pct = lambda x: "—" if x is None else f"{x:.1%}"  # noqa: E731
    for s in arm_summaries(cells, verdicts, tasks):
        table.add_row(
            text(s.arm),
            str(s.tasks),
            str(s.cells),
            pct(s.snapshot_pass),
            gap[s.arm].format(),
            pct(s.error),
            pct(s.all_in),
        )
    return table


@app.command("grade-run")
def grade_run(
    run_dir: RunOpt,
    workers: WorkersOpt = None,
    executor: Annotated[str, typer.Option(help="local or ray.", callback=_executor)] = "local",
    ray_address: Annotated[
        str | None, typer.Option(help="Ray cluster address (executor ray).")
    ] = None,
    seed_file: SeedFileOpt = None,
    suite_dir: SuiteDirOpt = None,
    with_explain: Annotated[
        bool,
        typer.Option(
            "--explain",
            help="Then diagnose every FAIL (one more replay each) into explanations.parquet.",
        ),
    ] = False,
    no_cache: NoCacheOpt = False,
    engine: RunEngineOpt = None,
    statement_timeout: RunStatementTimeoutOpt = None,
    memory_limit: RunMemoryLimitOpt = None,
    replay_timeout: RunReplayTimeoutOpt = None,
) -> None:
    """Grade every ungraded (cell, schedule) of a run directory, resuming where a sweep stopped,
    on the engine its manifest records."""
    from collections import Counter

    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from arrivalbench.store import RunDir
    from arrivalbench.sweep import sweep

    if ray_address is not None and executor != "ray":
        raise UsageError(
            f"--ray-address {ray_address!r} is for the Ray executor; add --executor ray, or drop it "
            "to grade on this machine."
        )
    use_suite(suite_dir)
    limits = _limit_flags(statement_timeout, memory_limit, replay_timeout)
    run = RunDir.open(run_dir)
    _check_run_engine(run, engine)
    private = _run_secret(run, seed_file)
    run.tasks()  # a task missing from the suite path is one line, before the progress bar
    run.limits(limits)  # and so is a manifest asking for looser limits than the harness's
    counts: Counter[str] = Counter()
    progress = Progress(
        TextColumn("[bold]grading"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("cells"),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[verdicts]}"),
        console=err,
        transient=False,
    )
    bar = progress.add_task("sweep", total=None, rate="", verdicts="")
    started = time.perf_counter()

    def planned(n: int) -> None:
        progress.update(bar, total=n)
        progress.start()  # only now, so an error before the plan is one line with no bar above it

    def arrived(result: list[Any]) -> None:
        counts.update(r["verdict"] for r, _ in result)
        done = progress.tasks[0].completed + 1
        rate = done / max(time.perf_counter() - started, 1e-9)
        shown = " ".join(f"{k} {counts[k]}" for k in ("PASS", "FAIL", "ERROR"))
        progress.update(bar, advance=1, rate=f"{rate:.1f} cells/s", verdicts=shown)

    try:
        report = sweep(
            run,
            workers=workers,
            executor=executor,
            ray_address=ray_address,
            on_result=arrived,
            on_plan=planned,
            private=private,
            cache_dir=_cache_dir(no_cache),
            limits=limits,
        )
    finally:
        if progress.live.is_started:
            progress.stop()
    out.print(
        f"graded {report.units} cells ({report.rows} verdicts) in {report.seconds:.1f} s",
        highlight=False,
    )
    out.print(text(_run_kind(run)))
    out.print(_summary_table(run))
    if with_explain:
        from arrivalbench.explain.diagnoses import EXPLANATIONS_FILE, explain_run

        added = explain_run(run, private)
        out.print(f"diagnosed {added} new FAIL verdicts into {EXPLANATIONS_FILE}", highlight=False)


@app.command()
def regrade(
    run_dir: RunOpt,
    verify_rows: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Re-execute into a scratch copy and compare with the stored rows; exit 1 if any differs.",
        ),
    ] = False,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Write the re-graded run here (a new folder); the stored run stays.",
            callback=_new_run_dir,
        ),
    ] = None,
    workers: WorkersOpt = None,
    seed_file: SeedFileOpt = None,
    suite_dir: SuiteDirOpt = None,
    engine: RunEngineOpt = None,
    statement_timeout: RunStatementTimeoutOpt = None,
    memory_limit: RunMemoryLimitOpt = None,
    replay_timeout: RunReplayTimeoutOpt = None,
) -> None:
    """Grade every stored artifact again: --verify compares with the stored verdicts, --out keeps a copy.

    The stored verdicts are never changed.
    """
    from arrivalbench.store import RunDir
    from arrivalbench.sweep import regrade as regrade_run
    from arrivalbench.sweep import verify

    use_suite(suite_dir)
    if not verify_rows and out_dir is None:
        raise UsageError(
            f"regrade {run_dir}: pass --verify to re-execute and compare with the stored verdicts, "
            "or --out NEW_RUN to write a re-graded copy; the stored verdicts are never changed."
        )
    limits = _limit_flags(statement_timeout, memory_limit, replay_timeout)
    run = RunDir.open(run_dir)
    _check_run_engine(run, engine)
    private = _run_secret(run, seed_file)
    run.limits(limits)
    if not verify_rows:
        assert out_dir is not None
        copy = regrade_run(run, out_dir, workers=workers, private=private, limits=limits)
        out.print(
            text(
                f"wrote {out_dir}: {copy.verdicts().num_rows} verdict rows re-graded from "
                f"{run_dir} (unchanged); compare with: arrivalbench summary {out_dir}"
            )
        )
        return
    mismatches = verify(run, workers=workers, private=private, out=out_dir, limits=limits)
    rows = run.verdicts().num_rows
    if mismatches:
        for line in mismatches:
            out.print(text(line))
        out.print(f"{len(mismatches)} of {rows} verdict rows differ", style="bold red")
        raise typer.Exit(1)
    out.print(f"all {rows} verdict rows reproduced byte for byte", highlight=False)


@app.command()
def summary(run_dir: RunOpt, suite_dir: SuiteDirOpt = None) -> None:
    """Print the per-arm rates of a graded run (read only)."""
    from arrivalbench.store import RunDir

    use_suite(suite_dir)
    run = RunDir.open(run_dir)
    # First: a task missing from the suite path or a damaged journal is one error line, with
    # nothing printed above it.
    table = _summary_table(run)
    out.print(text(_run_kind(run)))
    out.print(table)


@app.command("report")
def report_command(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(help="Graded run directories (several: compared and replicated)."),
    ],
    out_dir: Annotated[
        Path,
        typer.Option("--out", "-o", help="Folder for report.md, report.html, tables/, figures/."),
    ],
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples per interval.")] = 10_000,
    unit: Annotated[
        str, typer.Option(help="Bootstrap resampling unit: task or scenario.")
    ] = "task",
    arms: Annotated[
        str | None,
        typer.Option(
            "--arms",
            help="Arms the sign tests and the signature count, comma-separated (default: every model arm).",
        ),
    ] = None,
    runs: Annotated[
        str | None,
        typer.Option("--runs", help="Run indices the tests count, comma-separated (default: 1)."),
    ] = None,
    suite_dir: SuiteDirOpt = None,
) -> None:
    """Write the report of graded runs: tables and figures as Markdown, one HTML page, report.json, CSV and LaTeX (read only)."""
    from arrivalbench.analysis.roles import parse_arms, parse_runs
    from arrivalbench.report import write_report

    use_suite(suite_dir)
    files = write_report(
        run_dirs,
        out_dir,
        resamples=resamples,
        unit=unit,
        arms=parse_arms(arms),
        runs=parse_runs(runs),
    )
    out.print(text(f"wrote {files.html} (self-contained) and {files.markdown}"), soft_wrap=True)
    out.print(
        text(
            f"every table and test in {files.json}; tables as CSV (numbers) and LaTeX in "
            f"{files.tables}, figures as PNG in {files.figures}"
        ),
        soft_wrap=True,
    )


def composition(results: list[Any]) -> str:
    """Counts the suite is held to: modes, difficulty bands, scenarios, declarations, controls."""
    from collections import Counter

    from arrivalbench.spec import HAZARDS

    specs = [r.task.spec for r in results]
    modes = Counter(s.mode for s in specs)
    bands = Counter(s.difficulty for s in specs)
    declared = Counter(h for s in specs for h in s.hazards)
    lines = [
        "modes: " + ", ".join(f"{m} {modes[m]}" for m in ("create", "modify", "repair")),
        "difficulty: " + ", ".join(f"{d} {bands[d]}" for d in ("easy", "medium", "hard")),
        f"scenarios: {len({s.scenario for s in specs})}",
        "declared: " + ", ".join(f"{h} {declared[h]}" for h in HAZARDS),
        f"order-sensitive: {sum(s.order_sensitive for s in specs)}",
        f"negative controls: {sum(len(s.controls) for s in specs)}",
    ]
    return "\n".join(lines)


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C, so that sweeps stop their workers and journals stay whole."""
    raise KeyboardInterrupt


def main() -> None:
    """Console entry point: user errors become one line on stderr and exit code 2."""
    import signal

    signal.signal(signal.SIGTERM, _terminate)
    try:
        app()
    except ArrivalBenchError as exc:
        err.print(text(f"arrivalbench: error: {exc}"), soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        err.print("arrivalbench: interrupted", highlight=False)
        sys.exit(130)


if __name__ == "__main__":
    main()
