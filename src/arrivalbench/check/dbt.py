"""dbt projects: the user's incremental model run once per delivery, in-process, in the worker.

dbt-core and dbt-duckdb are the optional extra `arrivalbench[dbt]`. The project is copied to a
scratch folder (the user's folder is never written), and dbt reads a profile the harness writes
there (`--profiles-dir`: the user's profiles.yml is never read), pointing at one DuckDB file in
the scratch folder. dbt runs in the sandbox worker, in-process: the worker parses the project
once (ParseJob: a project that does not parse, a model or source that does not exist is bad
input) and keeps a `dbtRunner` holding the manifest. Each replay starts from a new file at the
same path (a new path would change the profile); per delivery the harness lands the batch in
the source's table and runs `dbt run --select SELECTION` (default `+MODEL`; about 0.2 s warm,
against seconds for the CLI), then with `--with-tests` `dbt test` on the same selection
(reported beside the verdict); the full refresh runs `--full-refresh` over every event once. A microbatch model's runs carry
the event-time window check.microbatch derives (`--event-time-start/--event-time-end`).
Every invocation names the profile's one target (`--target check`) and the user's `--vars`.
A crashed delivery lands, is not run (the crash hits before dbt commits), and lands again,
re-stamped.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import io
import os
import re
import shutil
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa
import yaml

from arrivalbench.check.delivery import Mode, arrival_base, delivered_tables, stamp
from arrivalbench.check.jobs import LogFile, full_refresh_schedule
from arrivalbench.engines import DUCKDB, Engine, Limits, Statement
from arrivalbench.engines.duckdb import DuckDBSession
from arrivalbench.errors import CheckInputError
from arrivalbench.replay import Heartbeat, ReplayResult, ResultCap, RunError

_RUNNERS: dict[str, Any] = {}
INSTALL_HINT = "install the dbt extra: pip install 'arrivalbench[dbt]'"
DATABASE_FILE = "replay.duckdb"
IGNORED = shutil.ignore_patterns("target", "logs", ".git", "*.duckdb", "*.duckdb.wal", ".venv")


def _runner() -> Any:
    try:
        from dbt.cli.main import dbtRunner
    except ImportError:
        raise CheckInputError(
            f"--dbt-project needs dbt-core and dbt-duckdb; {INSTALL_HINT}."
        ) from None
    return dbtRunner()


@dataclass(frozen=True)
class DbtProject:
    """A scratch copy of the user's project, with the harness's profile and what parse found."""

    scratch: str
    model: str
    source_relation: str
    """'schema.table' of the source the harness fills."""
    source_table: str
    """The source's table name alone (the table an --oracle query reads)."""
    model_relation: str
    """'schema.alias' of the model's relation: the target."""
    adapter: str = DUCKDB.name
    """The engine dbt runs on: duckdb (a file in the scratch folder) or postgres (the harness's
    private server: each replay's own database and role, named to dbt through PG_ENV)."""
    seeds: str = ""
    """The seeds the model depends on, directly or not, space-separated (a dbt selector): loaded
    by `dbt seed` into each replay's new database before its first delivery."""
    relations: tuple[tuple[str, str, str], ...] = ()
    """Per source the harness fills (the first is `source_relation`'s): (SOURCE.TABLE as given,
    its 'schema.table' as dbt resolves it, the table name alone)."""
    batch_size: str = ""
    """A microbatch model's batch_size ('' for any other strategy): check.microbatch."""
    lookback: int = 0
    """A microbatch model's lookback, in batches."""
    select: str = ""
    """`--select` in dbt's syntax, space-separated criteria; empty: `+MODEL` (the model and its
    parents)."""
    vars: str = ""
    """`--vars` as dbt takes it (a YAML or JSON mapping), passed to every dbt invocation."""
    with_tests: bool = False
    """`--with-tests`: `dbt test` on the selection after each delivery's run (DbtTests)."""

    def selection(self) -> list[str]:
        """The criteria handed to `--select` of every run and test."""
        return self.select.split() or [f"+{self.model}"]

    @property
    def microbatch(self) -> Any:
        from arrivalbench.check.microbatch import Microbatch

        return Microbatch(self.batch_size, self.lookback) if self.batch_size else None

    def landing(self) -> dict[str, str]:
        """Source name as given -> the relation its deliveries land in."""
        return {name: relation for name, relation, _ in self.relations}

    @property
    def project_dir(self) -> str:
        return os.path.join(self.scratch, "project")

    def args(self) -> list[str]:
        return [
            "--project-dir",
            self.project_dir,
            "--profiles-dir",
            os.path.join(self.scratch, "profiles"),
            "--target-path",
            os.path.join(self.scratch, "target"),
            "--log-path",
            os.path.join(self.scratch, "logs"),
            "--target",
            TARGET,
            *(["--vars", self.vars] if self.vars else []),
            "--log-level",
            "none",
            "--log-level-file",
            "none",
            "--no-use-colors",
            "--no-send-anonymous-usage-stats",
            "--no-version-check",
            "-q",
        ]

    @property
    def database(self) -> str:
        return os.path.join(self.scratch, DATABASE_FILE)


def _profile_name(project: Path) -> str:
    path = project / "dbt_project.yml"
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        first = str(exc).splitlines()[0]
        raise CheckInputError(f"{path}: cannot read the dbt project file ({first}).") from None
    if not isinstance(data, dict) or not isinstance(data.get("profile"), str):
        raise CheckInputError(f"{path}: names no 'profile:'; add one (any name).")
    return data["profile"]


TARGET = "check"
"""The one target of the profile the harness writes, named on every invocation (so neither
DBT_TARGET nor a profile's default moves it): `target.name` is "check" in the project's Jinja."""

PG_ENV = ("ARRIVALBENCH_DBT_HOST", "ARRIVALBENCH_DBT_ROLE", "ARRIVALBENCH_DBT_DATABASE")
"""The environment variables the harness's PostgreSQL profile reads (env_var): the server's
socket folder, the replay's role and database, set in the worker before each dbt invocation."""


def _profile_output(adapter: str, scratch: str, limits: Limits) -> dict[str, Any]:
    if adapter == DUCKDB.name:
        settings = {"threads": 1, "memory_limit": limits.memory_limit}
        path = os.path.join(scratch, DATABASE_FILE)
        return {"type": "duckdb", "path": path, "threads": 1, "settings": settings}
    host, role, database = (f"{{{{ env_var('{name}') }}}}" for name in PG_ENV)
    return {
        "type": "postgres",
        "host": host,
        "port": 5432,
        "user": role,
        "password": "",
        "dbname": database,
        "schema": "public",
        "threads": 1,
    }


def check_project(project: Path, source: str, adapter: str = DUCKDB.name) -> None:
    """What the user must fix before anything runs: dbt and the engine's adapter installed, a
    dbt project at `project`, every source named SOURCE.TABLE (`source`: space-separated)."""
    package = f"dbt-{adapter}"
    if importlib.util.find_spec("dbt") is None:
        raise CheckInputError(f"--dbt-project needs dbt-core and {package}; {INSTALL_HINT}.")
    if importlib.util.find_spec(f"dbt.adapters.{adapter}") is None:
        raise CheckInputError(
            f"--dbt-project with --engine {adapter} needs {package}, which is not installed; "
            f"{INSTALL_HINT}."
        )
    if not (project / "dbt_project.yml").is_file():
        from arrivalbench.check.log import resolved_hint

        what = "no dbt_project.yml there" if project.is_dir() else "folder not found"
        raise CheckInputError(
            f"--dbt-project {project}: {what}{resolved_hint(project)}; pass the folder of a dbt "
            "project."
        )
    for one in source.split():
        if one.count(".") != 1:
            raise CheckInputError(
                f"--source {one}: name the dbt source as SOURCE.TABLE (e.g. raw.orders), as in "
                "{{ source('raw', 'orders') }}."
            )


def copy_project(
    project: Path,
    model: str,
    source: str,
    scratch: str,
    limits: Limits,
    adapter: str = DUCKDB.name,
) -> DbtProject:
    """Copy the project to the scratch folder and write the harness's profile there. What the
    project holds (the model, the sources: `source` names them, space-separated) is learnt by
    parsing it in the worker: `ParseJob`."""
    check_project(project, source, adapter)
    profile = _profile_name(project)
    shutil.copytree(project, os.path.join(scratch, "project"), ignore=IGNORED)
    os.makedirs(os.path.join(scratch, "profiles"))
    output = _profile_output(adapter, scratch, limits)
    config = {profile: {"target": TARGET, "outputs": {TARGET: output}}}
    Path(scratch, "profiles", "profiles.yml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return DbtProject(scratch, model, "", "", "", adapter=adapter)


BAD_PROJECT = "bad_dbt_project"
"""The error class a ParseJob reports for a project, model or source the user must fix."""


def _resolve(manifest: Any, project: DbtProject, where: str, source: str) -> DbtProject:
    """The sources' and model's relations from a parsed manifest, or a CheckInputError
    (`source`: the sources' SOURCE.TABLE names, space-separated)."""
    relations = []
    for one in source.split():
        source_name, table_name = one.split(".")
        sources = [
            s
            for s in manifest.sources.values()
            if (s.source_name, s.name) == (source_name, table_name)
        ]
        if not sources:
            known = sorted(f"{s.source_name}.{s.name}" for s in manifest.sources.values())
            raise CheckInputError(
                f"--source {one}: no such source in {where} "
                f"(sources: {', '.join(known) or 'none'}); declare it in a sources .yml file."
            )
        found = sources[0]
        relations.append((one, f"{found.schema}.{found.identifier}", found.identifier))
    model = project.model
    models = [n for n in manifest.nodes.values() if n.resource_type == "model" and n.name == model]
    if not models:
        import difflib

        names = sorted(n.name for n in manifest.nodes.values() if n.resource_type == "model")
        close = difflib.get_close_matches(model, names, n=1)
        hint = f" Did you mean '{close[0]}'?" if close else f" Models: {', '.join(names)}."
        raise CheckInputError(f"--model {model}: no such model in {where}.{hint}")
    node = models[0]
    from arrivalbench.check.microbatch import Microbatch

    batching = Microbatch.of(node)
    return dataclasses.replace(
        project,
        source_relation=relations[0][1],
        source_table=relations[0][2],
        model_relation=f"{node.schema}.{node.alias}",
        seeds=" ".join(_upstream_seeds(manifest, node.unique_id)),
        relations=tuple(relations),
        batch_size=batching.batch_size if batching else "",
        lookback=batching.lookback if batching else 0,
    )


def _upstream_seeds(manifest: Any, unique_id: str) -> list[str]:
    """The names of the seeds a node depends on, through any chain of refs."""
    seen: set[str] = set()
    pending = [unique_id]
    seeds: list[str] = []
    while pending:
        node = manifest.nodes.get(pending.pop())
        if node is None:
            continue
        for parent in getattr(node.depends_on, "nodes", ()) or ():
            if parent in seen:
                continue
            seen.add(parent)
            found = manifest.nodes.get(parent)
            if found is not None and found.resource_type == "seed":
                seeds.append(found.name)
            pending.append(parent)
    return sorted(seeds)


def _selected(runner: Any, project: DbtProject, criteria: list[str]) -> list[str]:
    """The models `--select criteria` names, by dbt's own selector (`dbt ls`)."""
    listing = ["ls", "--select", *criteria, "--resource-type", "model", "--output", "name"]
    with contextlib.redirect_stdout(io.StringIO()):
        result = runner.invoke([*listing, *project.args()])
    return [str(name) for name in result.result or ()] if result.success else []


def _check_selection(runner: Any, manifest: Any, project: DbtProject, where: str) -> None:
    """Every `--select` criterion selects a model, and the selection holds the checked model
    (dbt itself runs nothing and succeeds on a criterion that matches nothing)."""
    if not project.select:
        return
    import difflib

    names = sorted(n.name for n in manifest.nodes.values() if n.resource_type == "model")
    for criterion in project.selection():
        if _selected(runner, project, [criterion]):
            continue
        bare = criterion.strip("+@").split(",")[0].lstrip("0123456789").rstrip("0123456789")
        close = difflib.get_close_matches(bare, names, n=1)
        hint = (
            f" Did you mean '{criterion.replace(bare, close[0])}'?"
            if close
            else f" Models: {', '.join(names)}."
        )
        raise CheckInputError(
            f"--select {criterion}: selects no model in {where} (dbt's selection syntax, "
            f"e.g. +{project.model}).{hint}"
        )
    if project.model not in _selected(runner, project, project.selection()):
        raise CheckInputError(
            f"--select {project.select}: does not select --model {project.model}, so it would "
            f"never run; add it (e.g. --select +{project.model})."
        )


@dataclass(frozen=True)
class ParseJob:
    """Parse the project in the worker (which then keeps the manifest for the replays): its
    `target` is a one-row table of the resolved relations, or its error a BAD_PROJECT message."""

    project: DbtProject
    source: str
    where: str
    limits: Limits
    script: None = None
    engine: str = DUCKDB.name
    cap: ResultCap | None = None

    def run(
        self, engine: Engine, statements: list[Statement], heartbeat: Heartbeat
    ) -> ReplayResult:
        result = _parse(self.project)
        if not result.success:
            lines = str(result.exception or "dbt parse failed").strip().splitlines()
            detail = " ".join(line.strip() for line in lines if line.strip())[:300]
            message = f"--dbt-project {self.where}: the project does not parse ({detail})."
            return ReplayResult(None, RunError(BAD_PROJECT, None, None, message), 0.0, 0)
        try:
            resolved = _resolve(result.result, self.project, self.where, self.source)
        except CheckInputError as exc:
            return ReplayResult(None, RunError(BAD_PROJECT, None, None, str(exc)), 0.0, 0)
        runner = _keep_runner(self.project, result.result)
        try:
            _check_selection(runner, result.result, resolved, self.where)
        except CheckInputError as exc:
            return ReplayResult(None, RunError(BAD_PROJECT, None, None, str(exc)), 0.0, 0)
        fields = (
            "source_relation",
            "source_table",
            "model_relation",
            "seeds",
            "batch_size",
            "lookback",
        )
        row: dict[str, list[Any]] = {name: [getattr(resolved, name)] for name in fields}
        row["relations"] = [[list(r) for r in resolved.relations]]
        return ReplayResult(pa.table(row), None, 0.0, 0)


class WorkerStartError(RuntimeError):
    """The worker did not finish parsing the project (too slow a start, or it died): the check
    could not run. Not bad input (the project may be fine): the CLI says so in one line and
    exits 1, never 2."""


def parsed_project(project: DbtProject, result: ReplayResult, startup: float) -> DbtProject:
    """The project with what its ParseJob found; a CheckInputError for what the user must fix,
    a WorkerStartError when the worker was too slow or died."""
    if result.error is not None:
        if result.error.error_class == BAD_PROJECT:
            raise CheckInputError(result.error.message)
        if result.error.error_class == "timeout":
            load = os.getloadavg()[0]
            raise WorkerStartError(
                f"check did not run: parsing the dbt project took longer than {startup:g} s "
                f"(load average {load:.1f} on {os.cpu_count()} cores); the project may be "
                "fine: raise --startup-timeout or retry on a quieter machine."
            )
        first = result.error.message.splitlines()[0] if result.error.message else ""
        raise WorkerStartError(
            f"check did not run: the worker parsing the dbt project failed "
            f"({result.error.error_class}: {first})."
        )
    assert result.target is not None
    found = result.target.to_pylist()[0]
    found["relations"] = tuple(tuple(r) for r in found["relations"])
    return dataclasses.replace(project, **found)


def dbt_version(adapter: str = DUCKDB.name) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"dbt-core {version('dbt-core')}, dbt-{adapter} {version(f'dbt-{adapter}')}"
    except PackageNotFoundError:
        return "not installed"


def _close_adapter() -> None:
    """Close dbt-duckdb's process-wide connection, so the next replay's new file is really new
    (otherwise DuckDB's instance cache hands back the old database)."""
    try:
        from dbt.adapters.duckdb.connections import DuckDBConnectionManager
    except ImportError:
        return
    env = DuckDBConnectionManager._ENV
    if env is not None:
        with contextlib.suppress(Exception):
            env.close()
    DuckDBConnectionManager._ENV = None


_WRAPPER = re.compile(
    r"^\s*(?:Runtime|Database|Compilation|Dependency) Error(?: in \w+ \S+(?: \(.*\))?)?\s*$"
)


def engine_text(message: str) -> str:
    """The engine's own words of a dbt node error: dbt's wrapper line ("Runtime Error in model
    stg_events (models/stg_events.sql)") dropped and the rest dedented, so the first line, the
    one a table shows, is the engine's ("Binder Error: Referenced column ... not found")."""
    lines = message.strip().splitlines()
    if len(lines) > 1 and _WRAPPER.match(lines[0]):
        lines = lines[1:]
    return textwrap.dedent("\n".join(lines)).strip()


_RUN_ERRORS: list[str] = []
"""What dbt's events said failed during this worker's current invocation: a microbatch batch's
error is only an event (its node's message is "PARTIAL SUCCESS (1/2)"). Cleared per invocation."""

_THREAD_PREFIX = "Exception on worker thread. "


def _on_event(event: Any) -> None:
    """dbtRunner's callback: keep the text of an exception dbt caught while running a node."""
    if event.info.name == "GenericExceptionOnRun":
        text = str(getattr(event.data, "exc", "") or event.info.msg)
        _RUN_ERRORS.append(text.removeprefix(_THREAD_PREFIX))


def _failure(result: Any) -> str:
    """What made a dbt invocation fail, in one message: the node's name and the engine's text."""
    if result.exception is not None:
        return engine_text(str(result.exception))
    for node in getattr(result.result, "results", None) or ():
        status = str(node.status).lower()
        summary = str(node.message or "")
        if _RUN_ERRORS and ("partial" in status or summary.upper() in ("", "ERROR")):
            # a microbatch model: its failed batches' errors are events, its message a summary
            return f"{node.node.name}: {summary}: {engine_text(_RUN_ERRORS[0])}"
        if status in ("error", "fail", "runstatus.error"):
            return f"{node.node.name}: {engine_text(str(node.message))}"
    return "dbt run failed"


def _retarget(runner: Any, database: str) -> None:
    """Point the warm manifest's relations at this replay's database: it was parsed once, with
    the profile's placeholder, and dbt-postgres refuses a relation of another database."""
    manifest = getattr(runner, "manifest", None)
    if manifest is None:
        return
    for node in (*manifest.nodes.values(), *manifest.sources.values()):
        if getattr(node, "database", None) is not None:
            node.database = database


def _sequential_batches(manifest: Any) -> None:
    """Run microbatch batches one after another. dbt submits a model's middle batches to its
    thread pool where the adapter allows it (dbt-duckdb does), while the model's own runner holds
    the pool's one thread (`threads: 1`) waiting for them: a run of three or more batches hangs
    until the statement limit."""
    for node in manifest.nodes.values():
        if getattr(node.config, "incremental_strategy", None) == "microbatch":
            node.config.concurrent_batches = False


def _parse(project: DbtProject) -> Any:
    """`dbt parse` of the scratch copy, in this worker: its result holds the manifest."""
    for name in PG_ENV:  # parsing renders the profile but never connects
        os.environ.setdefault(name, "unused")
    with contextlib.redirect_stdout(io.StringIO()):
        result = _runner().invoke(["parse", *project.args()])
    _close_adapter()
    return result


def _keep_runner(project: DbtProject, manifest: Any) -> Any:
    """This worker's dbtRunner over the parsed manifest, its microbatch batches sequential."""
    from dbt.cli.main import dbtRunner

    _sequential_batches(manifest)
    _RUNNERS.clear()
    _RUNNERS[project.scratch] = dbtRunner(manifest=manifest, callbacks=[_on_event])
    return _RUNNERS[project.scratch]


def _warm_runner(project: DbtProject) -> Any:
    """The dbtRunner holding the project's parsed manifest, so a run skips parsing: the one
    ParseJob made if this worker parsed, else parsed here once. A worker retires after a job
    that left it mapping over a GiB (dbt's imports and a run do), so most replays run in a
    worker that did not parse; a plain runner there parsed per run, and ran batches in parallel."""
    if project.scratch in _RUNNERS:
        return _RUNNERS[project.scratch]
    result = _parse(project)
    if not result.success:  # it parsed in ParseJob's worker: a harness defect if not here
        raise RuntimeError(f"dbt parse failed in a replay worker: {result.exception}")
    return _keep_runner(project, result.result)


@dataclass
class DbtTests:
    """`--with-tests`: the project's data tests on the selection, run after each delivery's
    `dbt run` (dbt build's order, without build's skipping of a failed test's children, which
    would change the model's state). A failing test is reported beside the verdict."""

    deliveries: int = 0
    failed: dict[str, dict[str, Any]] = field(default_factory=dict)

    def run(self, runner: Any, project: DbtProject, batch: int) -> None:
        command = ["test", "--select", *project.selection(), "--no-write-json"]
        with contextlib.redirect_stdout(io.StringIO()):
            result = runner.invoke([*command, *project.args()])
        _close_adapter()
        self.deliveries += 1
        found = [
            (n.node.name, str(n.status).lower().split(".")[-1], n.failures, str(n.message or ""))
            for n in getattr(result.result, "results", None) or ()
        ]
        if result.exception is not None:
            found.append(("dbt test", "error", None, engine_text(str(result.exception))))
        for name, status, failures, message in found:
            if status not in ("fail", "error"):
                continue
            entry = self.failed.setdefault(
                name,
                {
                    "status": status,
                    "first_batch": batch,
                    "failures": failures,
                    "message": engine_text(message).splitlines()[0] if message else "",
                    "deliveries": 0,
                },
            )
            entry["deliveries"] += 1

    def to_json(self) -> dict[str, Any]:
        return {"deliveries": self.deliveries, "failed": dict(sorted(self.failed.items()))}


@dataclass(frozen=True)
class DbtCheckJob:
    """One replay of the dbt model in the worker (or, with `first_arrivals`, its full refresh)."""

    project: DbtProject
    limits: Limits
    log: LogFile
    schedule: Any
    mode: Mode
    arrival_column: str | None
    first_arrivals: np.ndarray | None = field(default=None, repr=False)
    script: None = None
    engine: str = DUCKDB.name
    cap: ResultCap | None = None

    @property
    def uses_database(self) -> bool:
        """On PostgreSQL the supervisor makes the replay's database and role (as for a SQL
        pipeline) and the worker hands it to `run`; dbt-duckdb's file is the job's own."""
        return self.engine != DUCKDB.name

    def run(
        self,
        engine: Engine,
        statements: list[Statement],
        heartbeat: Heartbeat,
        database: Any = None,
    ) -> ReplayResult:
        runner = _warm_runner(self.project)
        log = self.log.load()
        static = self.log.static()
        landing = self.project.landing()
        full = self.schedule is None
        schedule = full_refresh_schedule(log) if full else self.schedule
        base = arrival_base(log)
        deadline = time.monotonic() + self.limits.replay_timeout
        if database is not None:  # PostgreSQL: this replay's new database, named to the profile
            values = (database.socket, database.role, database.name)
            os.environ.update(dict(zip(PG_ENV, values, strict=True)))
            _retarget(runner, database.name)
        else:
            _close_adapter()
            for path in (self.project.database, self.project.database + ".wal"):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(path)
        spent = 0.0
        runs = 0
        if self.project.seeds:  # the seeds the model refs, in the new database, once
            heartbeat(schedule.deliveries[0].batch_id, None)
            seed = ["seed", "--select", *self.project.seeds.split(), *self.project.args()]
            with contextlib.redirect_stdout(io.StringIO()):
                result = runner.invoke(seed)
            _close_adapter()
            if not result.success:
                message = f"dbt seed: {_failure(result)}"
                error = RunError("sql_error", schedule.deliveries[0].batch_id, None, message)
                return ReplayResult(None, error, spent, runs)
        selector = [
            "run",
            "--select",
            *self.project.selection(),
            "--no-write-json",
            "--no-populate-cache",
            *self.project.args(),
        ]
        tests = DbtTests() if self.project.with_tests and not full else None
        batching = self.project.microbatch
        times = log.ts_micros()
        clock: int | None = None  # a microbatch model's clock: the newest event time delivered
        for index, delivery in enumerate(schedule.deliveries):
            window: list[str] = []
            if batching is not None:
                delivered = times[np.asarray(delivery.rows, dtype=np.int64)]
                window = batching.flags(delivered, clock)
                clock = max(int(delivered.max()), clock if clock is not None else -(2**62))
            attempts = 2 if delivery.crash is not None else 1
            for attempt in range(attempts):
                stamps = self.first_arrivals if full else stamp(base, index, attempt)
                tables = delivered_tables(
                    log,
                    delivery.rows,
                    delivery.omit_columns,
                    self.arrival_column,
                    stamps,
                    static,
                    index == 0,
                )
                for name, table in tables.items():
                    try:
                        self._land(landing[name], table, database)
                    except (duckdb.Error, *engine.errors) as exc:  # the model reshaped it
                        message = f"loading the delivery into {landing[name]}: {exc}"
                        error = RunError("sql_error", delivery.batch_id, None, message)
                        return ReplayResult(None, error, spent, runs)
                if attempt < attempts - 1:
                    continue  # the crash: the run after this landing never happened
                if time.monotonic() > deadline:
                    message = f"the replay exceeded its {self.limits.replay_timeout:g} s budget"
                    return ReplayResult(
                        None, RunError("timeout", delivery.batch_id, None, message), spent, runs
                    )
                heartbeat(delivery.batch_id, 1)
                started = time.perf_counter()
                _RUN_ERRORS.clear()
                with contextlib.redirect_stdout(io.StringIO()):
                    result = runner.invoke(
                        [*selector, *window, *(["--full-refresh"] if full else [])]
                    )
                _close_adapter()
                spent += time.perf_counter() - started
                runs += 1
                if not result.success:
                    error = RunError("sql_error", delivery.batch_id, None, _failure(result))
                    return ReplayResult(None, error, spent, runs)
                if tests is not None:
                    tests.run(runner, self.project, delivery.batch_id)
        heartbeat(schedule.deliveries[-1].batch_id, None)
        result = self._read_target(spent, runs, schedule.deliveries[-1].batch_id, database)
        if tests is not None:
            result = dataclasses.replace(result, beside={"dbt_tests": tests.to_json()})
        return result

    def _land(self, relation: str, table: pa.Table, database: Any) -> None:
        if database is not None:
            session = database.session()
            try:
                if self.mode == "batch":
                    schema, name = relation.split(".")
                    session.execute(f'DROP TABLE IF EXISTS "{schema}"."{name}"')
                session.append_batch(relation, table)
            finally:
                session.close()
            return
        con = duckdb.connect(self.project.database, config={"threads": 1})
        try:
            session = DuckDBSession(con.cursor())
            if self.mode == "batch":
                schema, name = relation.split(".")
                con.execute(f'DROP TABLE IF EXISTS "{schema}"."{name}"')
            session.append_batch(relation, table)
        finally:
            con.close()

    def _read_target(self, spent: float, runs: int, last: int, database: Any) -> ReplayResult:
        schema, name = self.project.model_relation.split(".")
        if database is not None:
            session = database.session()
            try:
                session.execute(
                    f'CREATE TEMP TABLE arrivalbench_target AS SELECT * FROM "{schema}"."{name}"'
                )
                table = session.read_table("arrivalbench_target")
            except Exception as exc:  # psycopg's UndefinedTable: the model made no relation
                message = (
                    f"model relation {self.project.model_relation} does not exist after the "
                    f"last delivery ({str(exc).splitlines()[0]})"
                )
                return ReplayResult(
                    None, RunError("missing_target", last, None, message), spent, runs
                )
            finally:
                session.close()
            assert table is not None
            return ReplayResult(table, None, spent, runs)
        con = duckdb.connect(self.project.database, config={"threads": 1})
        try:
            table = con.sql(f'SELECT * FROM "{schema}"."{name}"').to_arrow_table()
        except duckdb.CatalogException:
            message = f"model relation {self.project.model_relation} does not exist after the last delivery"
            return ReplayResult(None, RunError("missing_target", last, None, message), spent, runs)
        finally:
            con.close()
        return ReplayResult(table, None, spent, runs)
