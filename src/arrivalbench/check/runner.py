"""`arrivalbench check`: the user's pipeline over the user's log, against its own full refresh.

The differential oracle is what lets `check` work on any pipeline without a reference: the
same pipeline (or dbt model) run once over the complete log, each event once, in a fresh
database (`dbt run --full-refresh` for dbt) gives the expected table; `--oracle FILE.sql`
gives a batch query over the complete log instead. Every schedule of the suite that the log can
carry is replayed; a hazard the log gives nothing to work with (schema evolution without
`--evolving-column`, a backfill without a day of several events) is skipped with the reason.
With an arrival column, the full refresh sees each event with its first arrival time, which
differs between schedules: it is recomputed per distinct set of first arrivals.

Engines: a SQL pipeline runs on `--engine` (DuckDB, SQLite or PostgreSQL), and so does every
piece of SQL the user gives: the full refresh is the same script on the same engine, and an
`--oracle` query runs there too (as `CREATE TABLE ... AS <query>` over the complete log), so
a PostgreSQL pipeline is judged by PostgreSQL's own semantics, never by DuckDB's reading of
it. Batch and landing modes run on every engine (a landing table on SQLite is a bare name: it
has no schemas); dbt projects run on dbt-duckdb or dbt-postgres (the harness's server, a
database and role per replay), refused up front on SQLite.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import queue
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from arrivalbench import __version__
from arrivalbench.cache import default_cache_dir
from arrivalbench.check.delivery import MODES, Mode, Static, arrival_base, first_arrivals
from arrivalbench.check.jobs import LogFile, SqlCheckJob
from arrivalbench.check.log import LogColumns, resolved_hint
from arrivalbench.check.parse_time import estimate, ticking
from arrivalbench.check.sources import SourceFile, check_read, read_sources
from arrivalbench.check.verdict import comparing
from arrivalbench.engines import DEFAULT_ENGINE, Limits, engine_info, get_engine, oracle_engine
from arrivalbench.engines.common import scratch_parent
from arrivalbench.errors import CheckInputError, UnknownNameError, UsageError
from arrivalbench.grade import artifact_sha256
from arrivalbench.logs import Log
from arrivalbench.replay import ReplayResult, RunError
from arrivalbench.sandbox import Sandbox
from arrivalbench.schedules import REGISTRY, Schedule
from arrivalbench.seeds import derive_seed
from arrivalbench.verdict import Record, Verdict, judge

CHECK_SCHEDULES: tuple[str, ...] = tuple(n for n in REGISTRY if n != "snapshot")
"""The suite's schedules but the snapshot (with one log, it is single_batch)."""
STARTUP_TIMEOUT = 600.0
"""check's default worker start limit: parsing a dbt project on a loaded 2-core machine took
over 120 s (grade's limit), which was then misreported as a project that does not parse."""
ORACLE_TABLE = "arrivalbench_oracle"
"""The table an --oracle query fills on an engine other than DuckDB."""


@dataclass(frozen=True)
class CheckConfig:
    """Everything one check needs; exactly one of `pipeline` and `dbt_project` is set."""

    log: str
    columns: LogColumns
    seed: int
    limits: Limits
    pipeline: Path | None = None
    source_table: str | None = None
    target: str | None = None
    dbt_project: Path | None = None
    model: str | None = None
    source: str | None = None
    mode: Mode | None = None
    schedules: str | None = None
    oracle: Path | None = None
    ignore_columns: tuple[str, ...] = ()
    engine: str = DEFAULT_ENGINE
    startup_timeout: float = STARTUP_TIMEOUT
    """How long a worker may take to start a job, parsing the dbt project included."""
    sources: tuple[SourceFile, ...] = ()
    """Several sources (`--source NAME=PATH`, check.sources); empty: the one source `log`,
    named `source` (dbt) or `source_table` (SQL), with `columns`."""
    select: str | None = None
    """dbt: `--select` in dbt's syntax (default `+MODEL`)."""
    vars: str | None = None
    """dbt: `--vars`, a YAML or JSON mapping, for every dbt invocation."""
    workers: int = 1
    """Schedules replayed at once, each in a worker process of its own (a dbt project is copied
    and parsed once per worker)."""
    with_tests: bool = False
    """dbt: run the project's data tests on the selection after each delivery (reported beside
    the verdicts, in the record's `dbt_tests`)."""

    @property
    def files(self) -> tuple[SourceFile, ...]:
        """Every source of the check, the one-source form included."""
        if self.sources:
            return self.sources
        return (SourceFile(self.source or self.source_table or "", self.log, self.columns),)

    @property
    def is_dbt(self) -> bool:
        return self.dbt_project is not None

    @property
    def resolved_mode(self) -> Mode:
        return self.mode or ("landing" if self.is_dbt else "batch")


def validate(config: CheckConfig) -> None:
    """Refuse a combination of options that cannot work, before anything is read."""
    if (config.pipeline is None) == (config.dbt_project is None):
        raise UsageError("check: give either --pipeline P.sql or --dbt-project DIR, not both.")
    several = bool(config.sources)
    if several and config.source_table:
        raise UsageError(
            f"--source-table {config.source_table} is for --log; with --source NAME=PATH each "
            "NAME is the table the pipeline reads."
        )
    if config.pipeline is not None:
        needed = [("--target", config.target)]
        if not several:
            needed.insert(0, ("--source-table", config.source_table))
        for flag, value in needed:
            if not value:
                raise UsageError(f"check --pipeline needs {flag}.")
        for flag, value in (("--model", config.model), ("--source", config.source)):
            if value:
                raise UsageError(f"check: {flag} is for --dbt-project; with --pipeline give none.")
    else:
        needed = [("--model", config.model)]
        if not several:
            needed.append(("--source", config.source))
        for flag, value in needed:
            if not value:
                raise UsageError(f"check --dbt-project needs {flag}.")
        for flag, value in (("--source-table", config.source_table), ("--target", config.target)):
            if value:
                raise UsageError(
                    f"check: {flag} is for --pipeline; a dbt model's source is --source "
                    "SOURCE.TABLE and its target is the model's relation."
                )
    if not config.is_dbt:
        for flag, value in (
            ("--select", config.select),
            ("--vars", config.vars),
            ("--with-tests", config.with_tests or None),
        ):
            if value:
                raise UsageError(f"check: {flag} is for --dbt-project; with --pipeline give none.")
    if config.vars is not None:
        _check_vars(config.vars)
    if config.workers < 1:
        raise UsageError(f"--workers {config.workers}: give 1 or more (schedules run at once).")
    if config.target and "." in config.target:
        raise UsageError(
            f"--target {config.target}: give the table's name alone; the pipeline's tables live "
            "in its database's default schema."
        )
    if config.source_table and "." in config.source_table and config.resolved_mode == "batch":
        raise UsageError(
            f"--source-table {config.source_table}: in batch mode the delivery is a TEMP table, "
            "which has no schema; give the name alone, or use --mode landing."
        )
    if several and not config.is_dbt:
        for file in config.sources:
            if "." in file.name and config.resolved_mode == "batch":
                raise UsageError(
                    f"--source {file.name}={file.where}: in batch mode the delivery is a TEMP "
                    "table, which has no schema; name the table alone, or use --mode landing."
                )
    if config.mode is not None and config.mode not in MODES:
        raise UsageError(f"--mode {config.mode}: give batch or landing.")
    engine = engine_info(config.engine)
    if engine.dbt_adapter is None and config.is_dbt:
        raise UsageError(
            f"check --dbt-project runs dbt-duckdb or dbt-postgres; --engine {config.engine} is "
            "for --pipeline P.sql (use --engine duckdb or postgres for the dbt project)."
        )
    if not engine.schemas and config.source_table and "." in config.source_table:
        raise UsageError(
            f"--source-table {config.source_table}: {engine.label} has no schemas; give the "
            "landing table's name alone."
        )
    if config.oracle is not None and not config.oracle.is_file():
        raise CheckInputError(
            f"--oracle {config.oracle}: file not found{resolved_hint(config.oracle)}; pass a "
            ".sql query."
        )


def _check_vars(text: str) -> None:
    """--vars as dbt reads it (YAML, of which JSON is a part), refused here in one line rather
    than by dbt in the worker."""
    import yaml

    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at column {where.column + 1}" if where is not None else ""
        problem = getattr(exc, "problem", None) or "not YAML"
        raise CheckInputError(
            f"--vars {text!r}: not valid YAML or JSON ({problem}{at}); give a mapping, e.g. "
            "--vars '{start_date: 2026-01-01}'."
        ) from None
    if not isinstance(value, dict):
        raise CheckInputError(
            f"--vars {text!r}: is a {type(value).__name__}, not a mapping; give names and "
            "values, e.g. --vars '{start_date: 2026-01-01}'."
        )


def resolve(selection: str | None) -> list[str]:
    """--schedules: None or 'all' for every check schedule, or comma-separated names."""
    if selection is None or selection.strip() in ("", "all", "default"):
        return list(CHECK_SCHEDULES)
    names = list(dict.fromkeys(s.strip() for s in selection.split(",") if s.strip()))
    if not names:
        raise UsageError(f"--schedules {selection!r}: names no schedule; give 'all' or names.")
    for name in names:
        if name not in CHECK_SCHEDULES:
            raise UnknownNameError("schedule", name, CHECK_SCHEDULES)
    return names


def plan(log: Log, names: list[str], seed: int) -> tuple[dict[str, Schedule], dict[str, str]]:
    """The schedules to replay, and the skipped ones with the reason."""
    built: dict[str, Schedule] = {}
    skipped: dict[str, str] = {}
    for name in names:
        kind = REGISTRY[name]
        if kind.role.needs_evolving_column and not log.source.evolving_column:
            skipped[name] = (
                "needs --evolving-column: a column that is NULL early in the log and appears "
                "mid-stream"
            )
            continue
        schedule = kind.build(log, derive_seed("check", name, seed))
        if kind.role.is_hazard and not schedule.bites():
            skipped[name] = (
                f"this log gives it nothing to perturb ({dict(schedule.perturbation)}); "
                "a longer log, or one spanning more days, would"
            )
            continue
        built[name] = schedule
    return built, skipped


def schedule_digest(schedule: Schedule, log_fingerprint: str) -> str:
    """sha256 of what a replay delivered: the schedule's rows, crashes and omitted columns, and
    the log's fingerprint (a user's schedule is not written to a file, so this stands for one)."""
    data = {
        "name": schedule.name,
        "seed": schedule.seed,
        "log": log_fingerprint,
        "deliveries": [
            [d.batch_id, list(d.rows), d.crash and [d.crash.slot, d.crash.of], list(d.omit_columns)]
            for d in schedule.deliveries
        ],
    }
    text = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def _project_sha256(project: Path) -> str:
    """sha256 over a dbt project's files (paths and bytes), target and logs left out."""
    digest = hashlib.sha256()
    for path in sorted(project.rglob("*")):
        parts = path.relative_to(project).parts
        if not path.is_file() or parts[0] in ("target", "logs", ".git", "dbt_packages"):
            continue
        if path.suffix in (".duckdb", ".wal"):
            continue
        digest.update(str(Path(*parts)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@dataclass
class Check:
    """One check: the log, the scratch folder, the runner of replays and oracles."""

    config: CheckConfig
    on_progress: Callable[[str, int, int, dict[str, Any] | None], None] = lambda *a: None
    on_status: Callable[[str], None] = lambda message: None
    """What the check is doing before its first schedule (e.g. "parsing the dbt project…")."""
    _scratch: str = field(default="", init=False)
    _sandboxes: list[Sandbox] = field(default_factory=list, init=False, repr=False)
    """One per worker (`workers`): schedules replay in parallel, one worker process each."""
    _landing: dict[str, str] = field(default_factory=dict, init=False)
    """Several sources of a SQL pipeline: the table each lands in (check.sources.check_read)."""

    def run(self, script: str | None) -> tuple[dict[str, Any], dict[str, Any]]:
        config = self.config
        validate(config)
        if config.sources and script is not None:
            self._landing = check_read(script, config.sources, engine_info(config.engine).dialect)
        names = resolve(config.schedules)
        get_engine(config.engine)  # a server engine starts here, before the worker that uses it
        self._scratch = tempfile.mkdtemp(
            prefix="arrivalbench-check-",
            dir=scratch_parent(config.workers * config.limits.memory_bytes),
        )
        self._sandboxes = [
            Sandbox(startup_seconds=config.startup_timeout) for _ in range(config.workers)
        ]
        try:
            return self._run(script, names)
        except KeyboardInterrupt:
            for sandbox in self._sandboxes:
                sandbox.abort()  # not close(): that would wait for the worker's current job
            raise
        finally:
            for sandbox in self._sandboxes:
                sandbox.close()
            shutil.rmtree(self._scratch, ignore_errors=True)

    def _run(self, script: str | None, names: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
        config = self.config
        mode = config.resolved_mode
        project = None
        sandbox = self._sandboxes[0]
        projects: dict[int, Any] = {}
        """Per worker (its sandbox's id), its own scratch copy of the dbt project, parsed there."""
        files = config.files
        sources = read_sources(files)
        log = sources.log
        if config.is_dbt:
            from arrivalbench.check.dbt import (
                ParseJob,
                check_project,
                copy_project,
                parsed_project,
            )

            assert config.dbt_project and config.model
            named = " ".join(f.name for f in files)
            adapter = engine_info(config.engine).dbt_adapter or "duckdb"
            check_project(config.dbt_project, named, adapter)  # bad input, before "parsing..."

            def parsed(index: int) -> Any:
                scratch = Path(self._scratch, f"worker{index}")
                scratch.mkdir()
                copied = copy_project(
                    config.dbt_project,  # type: ignore[arg-type]
                    config.model,  # type: ignore[arg-type]
                    named,
                    str(scratch),
                    config.limits,
                    adapter=adapter,
                )
                copied = dataclasses.replace(
                    copied,
                    select=config.select or "",
                    vars=config.vars or "",
                    with_tests=config.with_tests,
                )
                parse = ParseJob(copied, named, str(config.dbt_project), config.limits)
                result = self._sandboxes[index].run(parse)
                return parsed_project(copied, result, config.startup_timeout)

            times = default_cache_dir()
            expected = estimate(config.dbt_project, times)
            self.on_status(f"parsing the dbt project… {expected.describe()}")
            with (
                ticking(expected, self.on_status, times),
                ThreadPoolExecutor(len(self._sandboxes)) as pool,  # in parallel, one per worker
            ):
                found = list(pool.map(parsed, range(len(self._sandboxes))))
            projects = {id(one): p for one, p in zip(self._sandboxes, found, strict=True)}
            project = projects[id(sandbox)]
            oracle_tables = {name: table for name, _, table in project.relations}
            relations = tuple((name, name) for name in oracle_tables)
            target = config.model
        else:
            assert config.target
            oracle_tables = {f.name: self._landing.get(f.name, f.name) for f in files}
            relations = tuple(oracle_tables.items())
            target = config.target
        schedules, skipped = plan(log, names, config.seed)
        fingerprint = sources.fingerprint()
        log_file = LogFile.save(log, str(Path(self._scratch, "log.arrow")), sources.static)
        oracle_sql = None
        if config.oracle is not None:
            oracle_sql = config.oracle.read_text(encoding="utf-8")
        arrival = config.columns.arrival_column
        expected_cache: dict[str, pa.Table | RunError] = {}
        verdicts: dict[str, Verdict] = {}
        timings: dict[str, Any] = {}
        guard = threading.Lock()
        locks: dict[str, threading.Lock] = {}
        base = arrival_base(log)
        compared = comparing(target, log.key_column, config.ignore_columns)

        def job(schedule: Schedule | None, stamps: np.ndarray | None, sandbox: Sandbox) -> Any:
            if project is not None:
                from arrivalbench.check.dbt import DbtCheckJob

                return DbtCheckJob(
                    projects[id(sandbox)],
                    config.limits,
                    log_file,
                    schedule,
                    mode,
                    arrival,
                    stamps,
                    engine=config.engine,
                )
            assert script is not None and config.target
            return SqlCheckJob(
                script,
                config.limits,
                log_file,
                schedule,
                relations,
                config.target,
                mode,
                arrival,
                stamps,
                engine=config.engine,
            )

        def expected_for(schedule: Schedule, sandbox: Sandbox) -> pa.Table | RunError:
            stamps = first_arrivals(log, schedule, base) if arrival else None
            key = "" if stamps is None else hashlib.sha256(stamps.tobytes()).hexdigest()
            with guard:
                lock = locks.setdefault(key, threading.Lock())
            with lock:  # each full refresh once, while other workers replay
                if key not in expected_cache:
                    compute(key, stamps, sandbox)
            return expected_cache[key]

        def compute(key: str, stamps: np.ndarray | None, sandbox: Sandbox) -> None:
            if oracle_sql is not None and not engine_info(config.engine).authored:
                expected_cache[key] = self._engine_oracle(
                    oracle_sql, log_file, relations, stamps, sandbox
                )
            elif oracle_sql is not None:
                expected_cache[key] = self._query_oracle(
                    log, sources.static, oracle_tables, oracle_sql, stamps
                )
            else:
                started = time.perf_counter()
                result = sandbox.run(job(None, stamps, sandbox))
                expected_cache[key] = _table_or_error(result)
                with guard:
                    spent = timings.setdefault(
                        "full_refresh", {"wall_seconds": 0.0, "statement_seconds": 0.0, "runs": 0}
                    )
                    spent["wall_seconds"] += round(time.perf_counter() - started, 6)
                    spent["statement_seconds"] += round(result.statement_seconds, 6)
                    spent["runs"] += 1

        total = len(schedules)
        idle: queue.SimpleQueue[Sandbox] = queue.SimpleQueue()
        for one in self._sandboxes:
            idle.put(one)
        entries: dict[str, dict[str, Any]] = {}

        def replay(name: str, schedule: Schedule) -> None:
            sandbox = idle.get()  # a worker of its own while this schedule replays
            try:
                expected = expected_for(schedule, sandbox)
                started = time.perf_counter()
                result = sandbox.run(job(schedule, None, sandbox))
            finally:
                idle.put(sandbox)
            if result.empty_script:
                assert result.error is not None
                raise CheckInputError(
                    f"{config.pipeline}: {result.error.message}; give at least one statement."
                )
            verdict = judge(result, expected, compared)
            verdict = verdict.replayed(schedule_digest(schedule, fingerprint))
            entry = verdict.to_json()
            if result.beside and "dbt_tests" in result.beside:
                entry["dbt_tests"] = result.beside["dbt_tests"]
            with guard:
                verdicts[name] = verdict
                timings[name] = {  # the full refresh's own time is timings["full_refresh"]
                    "wall_seconds": round(time.perf_counter() - started, 6),
                    "statement_seconds": round(result.statement_seconds, 6),
                }
                entries[name] = entry
                self.on_progress(name, len(entries), total, entry)

        if len(self._sandboxes) == 1:
            for name, schedule in schedules.items():
                replay(name, schedule)
        else:
            pool = ThreadPoolExecutor(len(self._sandboxes))
            try:
                for future in [pool.submit(replay, *item) for item in schedules.items()]:
                    future.result()
            finally:
                pool.shutdown(wait=False, cancel_futures=True)
        verdicts = {name: verdicts[name] for name in schedules}  # the schedules' order
        timings = {
            **{name: timings[name] for name in schedules},
            **({"full_refresh": timings["full_refresh"]} if "full_refresh" in timings else {}),
        }
        dbt_tests = {n: entries[n]["dbt_tests"] for n in schedules if "dbt_tests" in entries[n]}
        if config.is_dbt:
            from arrivalbench.check.dbt import dbt_version

            assert config.dbt_project is not None
            sha = _project_sha256(config.dbt_project)
            extra: dict[str, Any] = {
                "model": config.model,
                "dbt_version": dbt_version(project.adapter if project else "duckdb"),
                "select": " ".join(project.selection()) if project else None,
            }
            if config.vars:
                extra["vars"] = config.vars
            if config.with_tests:
                extra["dbt_tests"] = dbt_tests
        else:
            assert script is not None
            sha = artifact_sha256(script)
            extra = {}
        engine = get_engine(config.engine)
        record = Record(
            task=target,
            artifact_sha256=sha,
            engine=engine.name,
            engine_version=engine.version,
            harness_version=__version__,
            seed=config.seed,
            verdicts=verdicts,
            extra={
                "mode": mode,
                "oracle": "full_refresh" if config.oracle is None else str(config.oracle),
                "skipped": skipped,
                "log_fingerprint": fingerprint,
                **extra,
            },
        )
        return record.to_json(), timings

    def _query_oracle(
        self,
        log: Log,
        static: Static,
        table_names: dict[str, str],
        sql: str,
        stamps: np.ndarray | None,
    ) -> pa.Table | RunError:
        """The user's --oracle query over the complete log (each event once, first arrivals),
        each source a table named `table_names[source]`."""
        from arrivalbench.check.delivery import delivered_tables

        arrival = self.config.columns.arrival_column
        complete = delivered_tables(log, np.arange(log.n), (), arrival, stamps, static)
        engine = oracle_engine()
        try:
            return engine.query({table_names[n]: t for n, t in complete.items()}, sql)
        except Exception as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CheckInputError(
                f"--oracle {self.config.oracle}: the query failed ({first})."
            ) from None

    def _engine_oracle(
        self,
        sql: str,
        log_file: LogFile,
        relations: tuple[tuple[str, str], ...],
        stamps: np.ndarray | None,
        sandbox: Sandbox,
    ) -> pa.Table:
        """The user's --oracle query over the complete log, run on the pipeline's engine in the
        sandbox (the source tables delivered once, as a batch)."""
        config = self.config
        engine = get_engine(config.engine)
        try:
            statements = engine.split(sql)
        except engine.errors as exc:  # PostgreSQL's parser (sqlglot) rejects the text
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise CheckInputError(
                f"--oracle {config.oracle}: does not parse as {config.engine} SQL ({first})."
            ) from None
        if len(statements) != 1:
            raise CheckInputError(
                f"--oracle {config.oracle}: holds {len(statements)} statements; give one query "
                "(a SELECT or WITH ... SELECT) over the source table."
            )
        job = SqlCheckJob(
            f"CREATE TABLE {ORACLE_TABLE} AS {statements[0].text}",
            config.limits,
            log_file,
            None,
            relations,
            ORACLE_TABLE,
            "batch",
            config.columns.arrival_column,
            stamps,
            engine=config.engine,
        )
        result = sandbox.run(job)
        if result.error is not None:
            raise CheckInputError(
                f"--oracle {config.oracle}: the query failed on {config.engine} "
                f"({result.error.message.strip().splitlines()[0] if result.error.message else result.error.error_class})."
            )
        assert result.target is not None
        return result.target


def _table_or_error(result: ReplayResult) -> pa.Table | RunError:
    if result.error is not None:
        return result.error
    assert result.target is not None
    return result.target


def exit_code(record: dict[str, Any]) -> int:
    """0 when every replayed schedule PASSes, 1 when any FAILs or ERRORs (skipped ones aside)."""
    return 0 if Record.from_json(record).passed else 1
