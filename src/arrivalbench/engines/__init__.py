"""Engines: one small protocol so SQLite, PostgreSQL or dbt can stand where DuckDB does."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from importlib import import_module
from typing import TYPE_CHECKING, Protocol

from arrivalbench.errors import ArrivalBenchError, UnknownNameError, UsageError

if TYPE_CHECKING:  # Arrow only in signatures: the CLI imports Limits and ENGINES without it
    import pyarrow as pa

_MEMORY = re.compile(r"^(\d+(\.\d+)?)\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)$", re.IGNORECASE)


@dataclass(frozen=True)
class Statement:
    """One statement of a script, as the engine's own parser split it."""

    index: int  # 1-based position in the script
    text: str
    kind: str  # the engine's statement type, e.g. "INSERT"


_UNITS = {"B": 1, "KB": 1000, "MB": 1000**2, "GB": 1000**3, "TB": 1000**4}
_UNITS.update({"KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "TIB": 1 << 40})
MIN_MEMORY_BYTES = 64 * 1000**2
"""Below this an engine cannot even hold a batch; a smaller limit is a typo (1KB for 1GB)."""
CEILINGS = {
    "statement_timeout": 3600.0,
    "replay_timeout": 86400.0,
    "memory_limit": 256 * 1000**3,
    "max_script_bytes": 100_000_000,
}
"""The most any Limits may grant, whoever asks (a flag, a manifest): an hour per statement, a day
per replay, 256GB, a 100MB script. Past them a number is a typo or an attack, and some (a
1e7 s timeout) overflow the clocks and rlimits they are handed to."""


def memory_bytes(text: str) -> int:
    """Bytes in a size such as '512MB' or '2GiB' (the engine's own spelling: 1GB = 10^9 bytes)."""
    match = _MEMORY.match(text.strip())
    if not match:
        raise UsageError(f"memory limit must look like 512MB or 2GB; found {text!r}.")
    return int(float(match.group(1)) * _UNITS[match.group(3).upper()])


@dataclass(frozen=True)
class Limits:
    """What one replay may spend: every number an untrusted script could otherwise make unbounded.

    `statement_timeout` (seconds per statement), `memory_limit` (the engine's, per replay; the
    worker's address space is capped a fixed overhead above it), `replay_timeout` (seconds of
    wall time for a whole schedule, crash retries included) and `max_script_bytes` (a longer
    script is refused before it is parsed).
    """

    statement_timeout: float = 10.0
    memory_limit: str = "1GB"
    replay_timeout: float = 120.0
    max_script_bytes: int = 1_000_000

    def __post_init__(self) -> None:
        for name in ("statement_timeout", "replay_timeout"):
            value = getattr(self, name)
            flag = "--" + name.replace("_", "-")
            if not (isinstance(value, int | float) and math.isfinite(value) and value > 0):
                raise UsageError(
                    f"{flag} must be a positive, finite number of seconds; found {value!r}."
                )
            if value > CEILINGS[name]:
                raise UsageError(
                    f"{flag} {value:g} is above the ceiling of {CEILINGS[name]:g} s; give at "
                    "most that."
                )
        if memory_bytes(self.memory_limit) < MIN_MEMORY_BYTES:
            raise UsageError(
                f"--memory-limit {self.memory_limit} is below the 64MB an engine needs to hold "
                "a batch; give e.g. 512MB or 1GB."
            )
        if memory_bytes(self.memory_limit) > CEILINGS["memory_limit"]:
            raise UsageError(
                f"--memory-limit {self.memory_limit} is above the ceiling of 256GB; give at most "
                "that."
            )
        if not (
            isinstance(self.max_script_bytes, int)
            and 0 < self.max_script_bytes <= CEILINGS["max_script_bytes"]
        ):
            raise UsageError(
                "--max-script-bytes must be a positive whole number of at most "
                f"{CEILINGS['max_script_bytes']}; found {self.max_script_bytes!r}."
            )

    @property
    def memory_bytes(self) -> int:
        return memory_bytes(self.memory_limit)


def landing_ddl(
    table_sql: str,
    batch: pa.Table,
    have: set[str],
    column_sql: Callable[[pa.Field], str],
) -> list[str]:
    """What a landing table needs before this delivery is appended (`Session.append_batch`):
    its CREATE at the first delivery (`have`, the lower-case columns it has, is empty), else an
    ADD COLUMN for each delivered column it lacks. `column_sql` spells a column's definition."""
    if not have:
        return [f"CREATE TABLE {table_sql} ({', '.join(map(column_sql, batch.schema))})"]
    return [
        f"ALTER TABLE {table_sql} ADD COLUMN {column_sql(f)}"
        for f in batch.schema
        if f.name.lower() not in have
    ]


class Session(Protocol):
    def load_batch(self, name: str, table: pa.Table) -> None: ...
    def append_batch(self, name: str, table: pa.Table) -> None:
        """Append to a persistent (landing) table, creating it first, adding columns it lacks."""
        ...

    def execute(self, sql: str) -> None: ...
    def interrupt(self) -> None: ...
    def capture(self, name: str, into: str) -> int | None:
        """Evaluate table or view `name` into a session table `into` (a statement, so the caller
        can run it under the watchdog); its row count, or None when no such table or view exists."""
        ...

    def read_table(self, name: str, max_bytes: int | None = None) -> pa.Table | None:
        """A session table's rows; None once they exceed `max_bytes` (reading stops there)."""
        ...

    def close(self) -> None: ...


class Observer(Protocol):
    """The harness's own session on a replay's database, which sees only committed data: what a
    crash would leave (an open transaction of the script rolls back, autocommitted work and
    non-transactional state such as sequence values stay). Nothing the script made can steer
    it: built-ins are read by qualified name, never through the script's search path."""

    def committed_state(self, around: Statement) -> Hashable:
        """A fingerprint of the committed persistent state, taken before and after statement
        `around` runs: equal values prove the statement changed nothing a crash would keep
        (catalog objects, their definitions and table contents); unequal values may be
        conservative (a change counter), never the other way round. `around` lets an engine
        leave out what the engine's parser says that kind of statement cannot change. Raises
        the engine's error when it cannot read the state (the replay then assumes a change)."""
        ...

    def interrupt(self) -> None: ...
    def close(self) -> None: ...


class Database(Protocol):
    """A database that persists across the sessions of one replay and shares nothing with any
    other: every replay opens a new one, so nothing an artifact made can reach another."""

    def session(self) -> Session: ...
    def observer(self) -> Observer:
        """The harness's committed-state reader (see Observer), opened once per replay."""
        ...

    def close(self) -> None: ...


class Engine(Protocol):
    info: EngineInfo  # its declaration (see REGISTRY)
    name: str
    version: str
    errors: tuple[type[BaseException], ...]

    def split(self, script: str) -> list[Statement]: ...
    def refusal(self, statement: Statement) -> str | None: ...
    def provision(self, limits: Limits) -> object | None:
        """In the supervising process: make what one replay's database occupies on the host (a
        folder, a server database and role) and describe it in plain data; None when the
        database lives in the worker's memory alone. The supervisor reclaims it whatever
        becomes of the worker, so a killed worker leaves nothing behind."""
        ...

    def reclaim(self, scratch: object) -> None:
        """In the supervising process: remove what `provision` made, and anything a replay on it
        left (its sessions too); safe to call again."""
        ...

    def open(self, limits: Limits, scratch: object | None = None) -> Database:
        """In the worker: the replay's database, on `scratch` (the supervisor's, which the
        database's close leaves to it), or with nothing given on scratch of its own that its
        close removes."""
        ...

    def classify(self, error: BaseException) -> str: ...
    def query(self, tables: dict[str, pa.Table], sql: str) -> pa.Table: ...


class EngineUnavailable(ArrivalBenchError):
    """An engine whose Python client is not installed."""


@dataclass(frozen=True)
class EngineInfo:
    """What the harness knows of an engine before loading it: each fact another module would
    otherwise decide by comparing the engine's name. Plain data, so the CLI validates `--engine`
    and the analysis reads error wording without importing DuckDB, Arrow or sqlglot."""

    name: str
    """The `--engine` value, and the name a manifest records."""
    label: str
    """How messages name it."""
    factory: str
    """`module:Class` of its Engine, imported on first use."""
    dialect: str
    """sqlglot's name for its SQL."""
    authored: bool = False
    """The suite's scripts are written in its SQL (no transpile, no override files), and it
    computes every oracle: rule controls are judged there, once."""
    schemas: bool = True
    """A table name may carry a schema (`main.events`)."""
    dbt_adapter: str | None = None
    """The dbt adapter `check --dbt-project` runs on it; None when it runs none."""
    prompt_file: str = "system.md"
    """The system prompt's template (under agent/prompts/)."""
    constraint_errors: tuple[str, ...] = ()
    """How it words a SQL error raised by a key, NOT NULL or CHECK constraint."""
    client: str | None = None
    """The Python client module it needs beyond the package's own dependencies."""
    client_hint: str = ""
    """How to install `client`."""


DUCKDB = EngineInfo(
    name="duckdb",
    label="DuckDB",
    factory="arrivalbench.engines.duckdb:DuckDBEngine",
    dialect="duckdb",
    authored=True,
    dbt_adapter="duckdb",
    constraint_errors=("Constraint Error",),
)
SQLITE = EngineInfo(
    name="sqlite",
    label="SQLite",
    factory="arrivalbench.engines.sqlite:SQLiteEngine",
    dialect="sqlite",
    schemas=False,
    prompt_file="system.sqlite.md",
    constraint_errors=("constraint failed",),  # UNIQUE / NOT NULL / CHECK constraint failed
)
POSTGRES = EngineInfo(
    name="postgres",
    label="PostgreSQL",
    factory="arrivalbench.engines.postgres:PostgresEngine",
    dialect="postgres",
    prompt_file="system.postgres.md",
    constraint_errors=(
        "violates unique constraint",
        "violates not-null constraint",
        "violates check constraint",
        "violates foreign key constraint",
    ),
    dbt_adapter="postgres",  # check --dbt-project: dbt-postgres on the harness's server
    client="psycopg",  # the client every PostgreSQL session speaks through
    client_hint="pip install -e '.[postgres]' (make test installs it)",
)

REGISTRY: dict[str, EngineInfo] = {e.name: e for e in (DUCKDB, SQLITE, POSTGRES)}
"""Every engine a pipeline can be graded on, by name. The oracle is always the authored one's."""
ENGINES = tuple(REGISTRY)
DEFAULT_ENGINE = DUCKDB.name
"""The engine of a command without `--engine`, and of a record or manifest that names none."""
AUTHORED = next(e for e in REGISTRY.values() if e.authored)
"""The engine whose SQL the suite is written in, and which computes every oracle."""


def engine_info(name: str) -> EngineInfo:
    """The declaration of engine `name`; an unknown name is a UsageError with a "did you mean"."""
    info = REGISTRY.get(name)
    if info is None:
        raise UnknownNameError("engine", name, list(ENGINES))
    return info


def check_engine(name: str) -> str:
    """`name` when it names an engine (the one validator of `--engine`, plans and logs)."""
    return engine_info(name).name


def get_engine(name: str = DEFAULT_ENGINE) -> Engine:
    """Engine `name`, ready to replay on: an unknown name, a missing client or an unusable
    $ARRIVALBENCH_SCRATCH_DIR is one UsageError here, before any worker starts."""
    from arrivalbench.engines.common import chosen_scratch_dir

    info = engine_info(name)
    chosen_scratch_dir()
    if info.client is not None:
        try:
            import_module(info.client)
        except ImportError:
            raise EngineUnavailable(
                f"--engine {info.name} needs the {info.client} client, which is not installed: "
                f"{info.client_hint}."
            ) from None
    module, _, cls = info.factory.partition(":")
    return getattr(import_module(module), cls)()


def oracle_engine() -> Engine:
    """The one reference computation every engine's result is compared with: DuckDB over the
    complete log (comparison is typed, so the same truth serves every engine)."""
    return get_engine(AUTHORED.name)
