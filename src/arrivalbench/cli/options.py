"""The options several commands share, each declared once with its default and its check.

A command names an option by its type (`SuiteDirOpt`, `SeedOpt`, `EngineOpt`, the limit
options...); the option's callback does the work every command used to repeat by hand
(`--suite-dir` puts its folders on the suite path, `--seed` is checked against the seed range,
`--engine` against the engine registry). Where `check` keeps other defaults than `grade`, since
it runs the user's own code on the user's own log, that is `CHECK_LIMITS` below, one declared
difference. This module imports only Typer at start-up: `arrivalbench --help` stays fast.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from arrivalbench.engines import DEFAULT_ENGINE, Limits, check_engine, engine_info
from arrivalbench.errors import UsageError
from arrivalbench.seeds import DEFAULT_SEED, SEED_RANGE, is_seed

if TYPE_CHECKING:
    from arrivalbench.seeds import PrivateSeed

__all__ = ["CHECK_LIMITS", "DEFAULT_ENGINE", "DEFAULT_LIMITS", "DEFAULT_SEED"]

# --- engines: every rule of the CLI that names an engine is here ---------------------------------


def is_default_engine(engine: str) -> bool:
    """Whether output may leave the engine unsaid (the oracle's engine, the one of old runs)."""
    return engine_info(engine).authored


def _engine(value: str | None) -> str | None:
    """Every --engine is checked here, before the command runs (None: the option's absence)."""
    return None if value is None else check_engine(value)


def _engine_option(help: str) -> Any:
    return typer.Option("--engine", help=help, callback=_engine)


EngineOpt = Annotated[
    str,
    _engine_option(
        "Engine the pipelines run on: duckdb, sqlite or postgres (the oracle is always "
        "DuckDB's; reference scripts are transpiled from DuckDB SQL)."
    ),
]
CheckEngineOpt = Annotated[
    str,
    _engine_option(
        "Engine the pipeline runs on: duckdb, sqlite or postgres; its full refresh and "
        "an --oracle query run there too (dbt projects: duckdb only)."
    ),
]
RunEngineOpt = Annotated[
    str | None,
    _engine_option(
        "duckdb, sqlite or postgres. A run is graded on the engine its manifest records; "
        "an --engine that differs is refused."
    ),
]
GenerateEngineOpt = Annotated[
    str | None,
    _engine_option(
        "SQL dialect the prompts name and engine the scripts run on: duckdb (default), "
        "sqlite or postgres; recorded in the run, which grade-run grades on it. With "
        "--rerun-no-artifact: the run's own."
    ),
]


def check_run_engine(run: Any, engine: str | None) -> None:
    """Refuse an --engine that contradicts the run's manifest: a run's engine is its own."""
    recorded = str(run.manifest.get("engine", DEFAULT_ENGINE))
    if engine is not None and engine != recorded:
        raise UsageError(
            f"--engine {engine}: {run.path} was made for {recorded} (its manifest says so) and "
            f"is graded on {recorded}; drop --engine, or make a new run with --engine {engine}."
        )


# --- checks of plain values -----------------------------------------------------------------------


def _check_seed(param: typer.CallbackParam, value: int | None) -> int | None:
    """Every --seed is checked here, before the command runs."""
    if value is not None and not is_seed(value):
        raise UsageError(
            f"{param.opts[0]} {value}: a seed is {SEED_RANGE}; give one in that range."
        )
    return value


def at_least(
    minimum: int, hint: str = ""
) -> Callable[[typer.CallbackParam, int | None], int | None]:
    """An option callback refusing a count below `minimum` (None, the option's absence, passes)."""

    def check(param: typer.CallbackParam, value: int | None) -> int | None:
        if value is not None and value < minimum:
            raise UsageError(f"{param.opts[0]} {value}: must be at least {minimum}{hint}.")
        return value

    return check


def positive_seconds(param: typer.CallbackParam, value: float) -> float:
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"{param.opts[0]} {value}: must be a positive number of seconds.")
    return value


class TaskIds(tuple[str, ...]):
    """The task ids of a --tasks option, in the order given, each once."""


def _task_ids(value: str) -> TaskIds | None:
    """Task ids of a comma-separated --tasks (None when empty); one of only commas is an error."""
    if not value:
        return None
    ids = TaskIds(dict.fromkeys(t.strip() for t in value.split(",") if t.strip()))
    if not ids:
        raise UsageError(
            f"--tasks {value!r}: names no task; give comma-separated task ids "
            "(arrivalbench tasks lists them), or leave it out for all."
        )
    return ids


def new_run_dir(param: typer.CallbackParam, value: Path | None) -> Path | None:
    """--out of a command that makes a new run: a new or empty folder, so nothing there is mixed in."""
    from arrivalbench.store import check_new_run_path

    if value is not None:
        check_new_run_path(value, param.opts[0])
    return value


def _use_suite(value: list[Path] | None) -> list[Path] | None:
    """Put the --suite-dir folders, then ARRIVALBENCH_SUITE_PATH's, on this process's suite path."""
    from arrivalbench.spec import use_suite_dirs

    use_suite_dirs(value or ())
    return value


# --- the shared options ---------------------------------------------------------------------------

SuiteDirOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--suite-dir",
        help="A folder of your own task folders, added to the built-in suite (repeatable; "
        "also ARRIVALBENCH_SUITE_PATH, colon-separated).",
        callback=_use_suite,
    ),
]
TaskOpt = Annotated[str, typer.Option("--task", "-t", help="Task id (see: arrivalbench tasks).")]
TasksOpt = Annotated[
    TaskIds | None,
    typer.Option(
        "--tasks",
        help="Comma-separated task ids (default: all).",
        parser=_task_ids,
        metavar="<str>",
    ),
]
PipelineOpt = Annotated[Path, typer.Option("--pipeline", "-p", help="The pipeline's SQL file.")]
SEED_HELP = (
    "Public base seed (0 to 2**63 - 1): the visible log, and the hidden logs without a seed file."
)


def seed_option(help: str = SEED_HELP) -> Any:
    return typer.Option("--seed", help=help, callback=_check_seed)


SeedOpt = Annotated[int, seed_option()]
SeedFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--seed-file",
        help="Seed file of an official run: the hidden logs descend from its secret "
        "(default: $ARRIVALBENCH_SEED_FILE; make one with 'arrivalbench new-seed').",
    ),
]


def json_option(help: str) -> Any:
    return typer.Option("--json", help=help)


RecordJsonOpt = Annotated[bool, json_option("Print the verdict record as JSON.")]
WorkersOpt = Annotated[
    int | None,
    typer.Option(
        "--workers",
        "-w",
        help="Parallel workers (default: one per core).",
        callback=at_least(1, "; leave it out for one per core"),
    ),
]
JobsOpt = Annotated[
    int | None,
    typer.Option(
        "--jobs",
        "-j",
        help="Tasks checked in parallel (default: one per core).",
        callback=at_least(1, "; leave it out for one per core"),
    ),
]
NewRunOpt = Annotated[
    Path, typer.Option("--out", "-o", help="New run directory.", callback=new_run_dir)
]
RunOpt = Annotated[Path, typer.Argument(help="A run directory.")]
NoCacheOpt = Annotated[
    bool,
    typer.Option(
        "--no-cache",
        help="Grade every verdict afresh, neither reading nor writing the verdict cache "
        "($ARRIVALBENCH_CACHE_DIR, default ~/.cache/arrivalbench).",
    ),
]
JunitOpt = Annotated[
    Path | None,
    typer.Option("--junit-xml", help="Also write JUnit XML here: one testcase per schedule."),
]
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
        callback=_fail_on,
    ),
]

# --- limits ---------------------------------------------------------------------------------------

DEFAULT_LIMITS = Limits()
"""What grade, explain and the gate allow a replay of a suite task."""
CHECK_LIMITS = Limits(
    statement_timeout=60.0, memory_limit="2GB", replay_timeout=600.0, max_script_bytes=10_000_000
)
"""What `check` allows instead: it runs the user's own pipeline (or dbt run) on the user's own
log, which may be far larger than a task's, so each bound is looser."""

STATEMENT_TIMEOUT_HELP = "Seconds per statement before it is interrupted."
MEMORY_LIMIT_HELP = (
    "Memory limit per replay on every engine (and its disk on PostgreSQL), e.g. {example}."
)
REPLAY_TIMEOUT_HELP = "Seconds of wall time per replay of a whole schedule."
_RUN_LIMIT = " Default: the run's manifest, which may only tighten the harness's default of {}."

StatementTimeoutOpt = Annotated[float, typer.Option(help=STATEMENT_TIMEOUT_HELP)]
MemoryLimitOpt = Annotated[
    str, typer.Option(help=MEMORY_LIMIT_HELP.format(example=DEFAULT_LIMITS.memory_limit))
]
ReplayTimeoutOpt = Annotated[float, typer.Option(help=REPLAY_TIMEOUT_HELP)]
MaxScriptBytesOpt = Annotated[int, typer.Option(help="Largest pipeline accepted, in bytes.")]
CheckStatementTimeoutOpt = Annotated[
    float, typer.Option(help="Seconds per statement (per dbt run) before it is stopped.")
]
CheckMemoryLimitOpt = Annotated[
    str, typer.Option(help=MEMORY_LIMIT_HELP.format(example=CHECK_LIMITS.memory_limit))
]
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
        "--memory-limit",
        help=MEMORY_LIMIT_HELP.format(example=DEFAULT_LIMITS.memory_limit)
        + _RUN_LIMIT.format(DEFAULT_LIMITS.memory_limit),
    ),
]
RunReplayTimeoutOpt = Annotated[
    float | None,
    typer.Option(
        "--replay-timeout",
        help=REPLAY_TIMEOUT_HELP + _RUN_LIMIT.format(f"{DEFAULT_LIMITS.replay_timeout:g} s"),
    ),
]


def limit_flags(
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


# --- helpers of the values above ------------------------------------------------------------------


def secret(seed_file: Path | None) -> PrivateSeed | None:
    """The private seed of --seed-file or $ARRIVALBENCH_SEED_FILE; None for a public (development) seed."""
    from arrivalbench.seeds import resolve_seed_file

    return resolve_seed_file(seed_file)


def cache_dir(no_cache: bool) -> Path | None:
    """The verdict cache's folder, or None with --no-cache (see cache.py); a bad
    ARRIVALBENCH_CACHE_MAX_MB is one line here, before any worker starts."""
    from arrivalbench.cache import VerdictCache

    return None if no_cache else VerdictCache().root


def suite_flags(suite_dir: list[Path] | None) -> str:
    """The --suite-dir flags a printed follow-up command needs, as the user gave them."""
    import shlex

    return "".join(f" --suite-dir {shlex.quote(str(d))}" for d in suite_dir or ())


def read_pipeline(path: Path, max_bytes: int | None = None) -> str:
    """The text of a --pipeline file, or a PipelineInputError saying what is wrong with the file."""
    from arrivalbench.errors import PipelineInputError

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


def suite_dir_of(task: Any) -> str | None:
    """The --suite-dir a printed replay command needs for `task`: None for a built-in task."""
    from arrivalbench.spec import SUITE_DIR

    home = task.folder.parent
    return None if home == SUITE_DIR.resolve() else str(home)
