"""Red-team routes against the grader, on daily_revenue: one test per route tried.

A passing test is a route the grader defeats. A route that still works is an
`xfail(strict=True)` test that demonstrates it: when the hole is fixed the test passes and strict
xfail turns that into a failure, so the mark must then be removed. Routes fixed since the pass:
a HUGEINT target that crashed the comparison (and poisoned it for later artifacts), column names
outside the result cap, the host's home directory in settings, and a fresh worker's first job
starved of memory, and values that round to the expected one (lossless comparison, issue 11);
they are plain tests now.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from arrivalbench import compare as compare_module
from arrivalbench.dialects import script_for
from arrivalbench.engines import Limits
from arrivalbench.grade import Grader
from arrivalbench.replay import MAX_MESSAGE_BYTES
from arrivalbench.spec import Task, get_task
from conftest import engine_params

LIMITS = Limits(statement_timeout=10.0)
GOLD_ROLLUP = (
    "CREATE OR REPLACE TABLE daily_revenue AS SELECT store_id, CAST(ts_event AS DATE) AS day, "
    "CAST(SUM(amount) AS DECIMAL(18,2)) AS revenue, COUNT(*) AS orders FROM sales_history GROUP BY ALL"
)
HISTORY = (
    "CREATE TABLE IF NOT EXISTS sales_history (event_id BIGINT PRIMARY KEY, ts_event TIMESTAMP, "
    "store_id INTEGER, amount DECIMAL(12,2));\n"
    "INSERT INTO sales_history SELECT event_id, ts_event, store_id, amount FROM sales_batch "
    "QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1 "
    "ON CONFLICT DO NOTHING;\n"
)
"""The README's passing pipeline, split so that statements can go between its parts."""


@pytest.fixture(scope="module")
def task() -> Task:
    return get_task("daily_revenue")


@pytest.fixture(scope="module")
def grader(task):
    with Grader(limits=LIMITS) as g:
        g.grade(task, task.gold_sql, ["snapshot"])  # a warm worker (see test_first_job_...)
        yield g


def verdict(grader: Grader, task: Task, script: str, schedule: str = "snapshot") -> dict:
    record, _ = grader.grade(task, script, [schedule])
    return record["verdicts"][schedule]


def assert_refused_or_failed(entry: dict, classes: tuple[str, ...]) -> None:
    assert entry["verdict"] == "ERROR", entry
    assert entry["error_class"] in classes, entry


# --- (1) state carried between replays, schedules and artifacts ------------------------------------


@pytest.mark.slow
def test_tables_and_sequences_do_not_survive_into_the_next_replay(grader, task):
    """A marker table written after the history exists must never be seen before it, in any
    replay: each replay starts from a new instance, so a script that ERRORs on leftovers passes."""
    script = (
        "SELECT CASE WHEN EXISTS (SELECT 1 FROM duckdb_tables() WHERE table_name = 'replay_marker') "
        "AND NOT EXISTS (SELECT 1 FROM duckdb_tables() WHERE table_name = 'sales_history') "
        "THEN error('state from an earlier replay') END;\n"
        "CREATE SEQUENCE IF NOT EXISTS replays;\n"
        + HISTORY
        + "CREATE TABLE IF NOT EXISTS replay_marker AS SELECT nextval('replays') AS n;\n"
        "SELECT CASE WHEN (SELECT max(n) FROM replay_marker) <> 1 "
        "THEN error('sequence carried over') END;\n" + GOLD_ROLLUP + ";\n"
    )
    for _ in range(2):
        record, _ = grader.grade(task, script, ["snapshot", "in_order_stream", "crash_retry"])
        assert {v["verdict"] for v in record["verdicts"].values()} == {"PASS"}, record


LEAVE_BEHIND = """
CREATE MACRO sum(x) AS 0;
CREATE MACRO revenue_of() AS TABLE SELECT 1 AS x;
CREATE TYPE leak_enum AS ENUM ('a', 'b');
CREATE SEQUENCE leak_seq;
SELECT nextval('leak_seq');
CREATE TABLE leak AS SELECT 1 AS x;
SELECT * FROM register_external_resource_type('leaktype', kind := 'x', create_function := 'range');
SELECT * FROM register_external_resource('leaktype', 'leak', map {'a': 'b'});
CREATE TABLE daily_revenue AS SELECT 1 AS store_id;
"""
CHECK_CLEAN = """
SELECT CASE WHEN
  (SELECT count(*) FROM duckdb_tables() WHERE table_name = 'leak')
  + (SELECT count(*) FROM duckdb_types() WHERE type_name = 'leak_enum')
  + (SELECT count(*) FROM duckdb_sequences() WHERE sequence_name = 'leak_seq')
  + (SELECT count(*) FROM duckdb_functions() WHERE function_name IN ('sum', 'revenue_of')
       AND NOT internal)
  + (SELECT count(*) FROM duckdb_external_resources())
  + (SELECT count(*) FROM duckdb_external_resource_types())
  > 0 THEN error('left behind by an earlier artifact') END;
"""


def test_catalog_macros_types_and_external_resources_do_not_reach_the_next_artifact(grader, task):
    """A shadowing `sum` macro, a table macro, an ENUM, a sequence, a table and entries of the
    external-resource registry made by one artifact are gone for the next artifact on the worker."""
    verdict(grader, task, LEAVE_BEHIND)
    assert verdict(grader, task, CHECK_CLEAN + task.gold_sql)["verdict"] == "PASS"


def test_shadowing_sum_inside_the_pipeline_does_not_change_the_oracle_or_comparison(grader, task):
    """A `sum` macro is the pipeline's own business: its wrong table FAILs."""
    script = "CREATE MACRO sum(x) AS 0;\n" + HISTORY + GOLD_ROLLUP + ";\n"
    entry = verdict(grader, task, script)
    assert entry["verdict"] == "FAIL" and entry["diff"]["counts"]["changed"] > 0, entry


def test_process_wide_counters_reveal_nothing_between_jobs(grader, task):
    """duckdb_approx_database_count() and catalog oids are the same in every replay, so a script
    cannot tell which job of the worker it is (and so cannot tell the snapshot from a hazard)."""
    probe = (
        "CREATE TABLE t AS SELECT 1;\n"
        "SELECT error('probe ' || (SELECT count FROM duckdb_approx_database_count()) || ' ' || "
        "(SELECT table_oid FROM duckdb_tables() WHERE table_name = 't'));\n"
    )
    first = verdict(grader, task, probe)
    verdict(grader, task, task.gold_sql, "in_order_stream")
    assert verdict(grader, task, probe)["message"] == first["message"]


# --- (2) reading outside the batch -----------------------------------------------------------------


@pytest.mark.parametrize(
    "reader",
    [
        "SELECT * FROM read_text('/etc/hostname')",
        "SELECT * FROM glob('/*')",
        "SELECT * FROM sniff_csv('/etc/passwd')",
        "SELECT * FROM read_duckdb('/etc/passwd')",
        "SELECT * FROM parquet_metadata('/etc/passwd')",
        "SELECT * FROM which_secret('s3://bucket/x', 's3')",
        "SELECT * FROM duckdb_extensions()",
    ],
)
def test_table_functions_that_read_the_host_are_refused(grader, task, reader):
    entry = verdict(grader, task, f"CREATE TABLE daily_revenue AS {reader};")
    if entry["verdict"] == "ERROR":  # which_secret finds nothing: an empty table, a FAIL
        assert entry["error_class"] in ("sandbox_refused", "sql_error"), entry
    else:
        assert entry["verdict"] == "FAIL", entry


@pytest.mark.parametrize(
    "name", ["python_arrow_scan", "pandas_scan", "arrow_scan", "arrow_scan_dumb"]
)
def test_pointer_scans_of_python_objects_cannot_be_called(grader, task, name):
    """The Python client's scan functions take an object pointer only through the client's own
    bind input: from SQL they fail to bind (no way to aim at the worker's cached log)."""
    entry = verdict(grader, task, f"CREATE TABLE daily_revenue AS SELECT * FROM {name}();")
    assert_refused_or_failed(entry, ("sql_error",))


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM query('SET lock_configuration = false')",
        "SELECT * FROM query('ATTACH '':memory:'' AS m')",
        "SELECT * FROM json_execute_serialized_sql('{}')",
        "SELECT * FROM enable_logging()",
        "SELECT * FROM enable_profiling()",
        "SELECT * FROM add_grammar_extension('x')",
        "SELECT * FROM destroy_external_resource('range(1); SET threads = 4; --', 1)",
    ],
)
def test_table_functions_cannot_run_statements_the_screen_refuses(grader, task, statement):
    """query() and json_execute_serialized_sql() take one SELECT; settings are locked;
    destroy_external_resource quotes its function name (no injection into its SELECT)."""
    assert_refused_or_failed(verdict(grader, task, statement + ";"), ("sql_error",))


@pytest.mark.slow
@pytest.mark.parametrize(
    "script",
    [
        "CREATE /* /* nested */ */ OR REPLACE PERSISTENT SECRET s (TYPE s3);",
        "CREATE TEMPORARY -- comment\r SECRET s (TYPE s3);",
        "CHECKPOINT;",
        "ANALYZE;",
        "USE memory;",
        "RESET threads;",
        "SET VARIABLE v = 1;",
        "UPDATE EXTENSIONS;",
        "PIVOT (SELECT 1 AS k, 2 AS v) ON k USING first(v);",
        "EXPLAIN ANALYZE SELECT 1;",
    ],
)
def test_screen_refuses_disguised_and_unnamed_statements(grader, task, script):
    assert_refused_or_failed(verdict(grader, task, script), ("sandbox_refused",))


def test_variables_are_empty(grader, task):
    """getvariable() sees nothing the harness set (SET VARIABLE is refused anyway)."""
    script = (
        "SELECT CASE WHEN (SELECT count(*) FROM duckdb_variables()) > 0 "
        "OR getvariable('log') IS NOT NULL THEN error('a variable') END;\n" + task.gold_sql
    )
    assert verdict(grader, task, script)["verdict"] == "PASS"


def test_settings_do_not_reveal_the_host(grader, task):
    home = str(Path.home())
    entry = verdict(
        grader,
        task,
        "SELECT error(string_agg(value, ' ')) FROM duckdb_settings() "
        "WHERE value LIKE '%/%' OR name LIKE '%directory%';",
    )
    assert entry["verdict"] == "ERROR"
    assert home not in entry["message"], entry["message"]


# --- (3) other artifacts' verdicts ------------------------------------------------------------------

HUGEINT_TARGET = (
    "CREATE TABLE daily_revenue AS SELECT 1::INTEGER AS store_id, DATE '2026-03-01' AS day, "
    "(-170141183460469231731687303715884105727::HUGEINT - 1) AS revenue, 1::BIGINT AS orders;"
)


def test_hugeint_target_is_a_verdict_not_an_exception(grader, task, monkeypatch):
    monkeypatch.setattr(compare_module, "_DATABASE", None)  # a poisoned database dies with the test
    assert verdict(grader, task, HUGEINT_TARGET)["verdict"] == "FAIL"


def test_one_artifact_cannot_break_the_comparison_of_the_next(grader, task, monkeypatch):
    monkeypatch.setattr(compare_module, "_DATABASE", None)
    control = (task.folder / "controls" / "dedup_history_only.sql").read_text()
    with contextlib.suppress(Exception):  # the route itself (previous test) may raise
        grader.grade(task, HUGEINT_TARGET, ["snapshot"])
    assert verdict(grader, task, control, "duplicate_delivery")["verdict"] == "FAIL"


@pytest.mark.slow
@pytest.mark.parametrize(
    "value",
    [
        "'x'::VARIANT",
        "union_value(a := 1)::UNION(a INTEGER, b VARCHAR)",
        "map {1: 2}",
        "1::BIGNUM",
        "'101'::BIT",
        "'POINT(1 2)'::GEOMETRY",
        "'12:00:00+01'::TIMETZ",
        "[1, 2]::INTEGER[2]",
        "'infinity'::DATE",
        "340282366920938463463374607431768211455::UHUGEINT",
    ],
)
def test_odd_target_types_are_a_fail_not_a_crash(grader, task, value, monkeypatch):
    monkeypatch.setattr(compare_module, "_DATABASE", None)
    script = (
        f"CREATE TABLE daily_revenue AS SELECT 1::INTEGER AS store_id, DATE '2026-03-01' AS day, "
        f"{value} AS revenue, 1::BIGINT AS orders;"
    )
    assert verdict(grader, task, script)["verdict"] == "FAIL"


# --- comparison tricks ------------------------------------------------------------------------------


def test_values_off_by_less_than_half_a_unit_fail(grader, task):
    script = (
        HISTORY + GOLD_ROLLUP + ";\nCREATE OR REPLACE TABLE daily_revenue AS SELECT store_id, day, "
        "CAST(revenue AS DOUBLE) + 0.004 AS revenue, orders + 0.4 AS orders FROM daily_revenue;"
    )
    assert verdict(grader, task, script)["verdict"] == "FAIL"


def test_null_nan_and_duplicate_rows_do_not_match(grader, task):
    """The value columns as NULL, NaN or a doubled row never pass."""
    for tail in (
        "UPDATE daily_revenue SET revenue = NULL;",
        "CREATE OR REPLACE TABLE daily_revenue AS SELECT store_id, day, 'nan'::DOUBLE AS revenue, "
        "orders FROM daily_revenue;",
        "INSERT INTO daily_revenue SELECT * FROM daily_revenue LIMIT 1;",
    ):
        assert verdict(grader, task, HISTORY + GOLD_ROLLUP + ";\n" + tail)["verdict"] == "FAIL"


# --- (4) the grader's own bounds --------------------------------------------------------------------


def test_error_messages_stay_bounded(grader, task):
    entry = verdict(grader, task, "SELECT error(repeat('x', 10000000));")
    assert len(entry["message"].encode()) <= MAX_MESSAGE_BYTES


def test_a_target_with_too_many_rows_is_result_too_large(grader, task):
    entry = verdict(grader, task, "CREATE TABLE daily_revenue AS SELECT * FROM range(200000);")
    assert_refused_or_failed(entry, ("result_too_large",))


def test_column_names_are_bounded_like_the_rows(grader, task):
    script = (
        "CREATE TABLE daily_revenue AS SELECT * FROM query('SELECT ' || array_to_string("
        "list_transform(range(50), lambda i: '1 AS \"' || repeat('y', 100000) || i || '\"'), ','));"
    )
    record, _ = grader.grade(task, script, ["snapshot"])
    assert len(json.dumps(record)) < 1_000_000


def test_first_job_of_a_fresh_worker_gets_its_memory_limit(task):
    with Grader(limits=Limits(memory_limit="256MB")) as fresh:
        record, _ = fresh.grade(task, task.gold_sql, ["snapshot"])
    assert record["verdicts"]["snapshot"]["verdict"] == "PASS"


# --- (5) every engine: the same routes, each in its engine's dialect ---------------------------------
#
# One mechanism for the three engines: a route is a property ("nothing on the host is read"), and
# each engine has its own exploits of it. A route passes when the artifact is an ERROR of the
# expected class (refused by the screen, by permissions or an authorizer, or stopped by a limit),
# nothing it aimed at happened, and the same grader then still grades the gold PASS.

ENGINE_TASK = "customer_state"
QUICK = Limits(statement_timeout=2.0, memory_limit="512MB", replay_timeout=60.0)
"""For runaway statements: the timeout is what stops them."""
ROOMY = Limits(statement_timeout=60.0, memory_limit="512MB", replay_timeout=120.0)
"""For memory and disk bombs: a memory or disk bound must stop them, not the timeout."""
REFUSED = ("sandbox_refused",)
ABSENT_OR_REFUSED = ("sandbox_refused", "sql_error")
"""sql_error: the engine has no such function or table at all (SQLite's readfile is the shell's)."""

ROUTES: dict[str, dict[str, list[str]]] = {
    "file_read": {
        "duckdb": [
            "CREATE TABLE customer_state AS SELECT * FROM read_text('/etc/hostname')",
            "CREATE TABLE customer_state AS SELECT * FROM read_csv('/etc/passwd')",
        ],
        "sqlite": [
            "ATTACH DATABASE '/etc/passwd' AS host",
            "CREATE TABLE customer_state AS SELECT readfile('/etc/hostname') AS x",
        ],
        "postgres": [
            "CREATE TABLE customer_state AS SELECT pg_read_file('/etc/hostname') AS x",
            "CREATE TABLE customer_state AS SELECT \"pg_read_file\"('/etc/hostname') AS x",
            "COPY customers_batch FROM '/etc/passwd'",
            "SELECT \"lo_import\"('/etc/hostname')",
            "CREATE TABLE customer_state AS SELECT * FROM pg_ls_dir('.') AS x",
        ],
    },
    "file_write": {
        "duckdb": ["COPY (SELECT 1 AS x) TO '{path}'", "EXPORT DATABASE '{path}'"],
        "sqlite": ["VACUUM INTO '{path}'", "ATTACH DATABASE '{path}' AS written"],
        "postgres": [
            "COPY (SELECT 1 AS x) TO '{path}'",
            "COPY (SELECT 1 AS x) TO PROGRAM 'touch {path}'",
            "SELECT \"lo_export\"(lo_create(0), '{path}')",
        ],
    },
    "network": {
        "duckdb": [
            "CREATE TABLE customer_state AS SELECT * FROM read_csv('http://127.0.0.1:9/x.csv')",
            "ATTACH 'http://127.0.0.1:9/x.duckdb' AS net",
        ],
        "postgres": [
            "CREATE TABLE customer_state AS SELECT * FROM "
            "dblink('host=127.0.0.1 dbname=postgres', 'SELECT 1') AS t(x INTEGER)",
            "CREATE TABLE customer_state AS SELECT * FROM "
            "\"dblink\"('host=127.0.0.1', 'SELECT 1') AS t(x INTEGER)",
        ],
    },
    "settings": {
        "duckdb": ["SET threads = 8", "SET memory_limit = '100GB'", "RESET memory_limit"],
        "sqlite": [
            "PRAGMA hard_heap_limit = 0",
            "CREATE TABLE customer_state AS SELECT * FROM pragma_hard_heap_limit",
            "PRAGMA temp_store_directory = '/tmp'",
            "PRAGMA journal_mode = OFF",
            "PRAGMA max_page_count = 2147483647",
        ],
        "postgres": [
            "SET statement_timeout = 0",
            "SELECT set_config('work_mem', '4GB', false)",
            "SELECT \"set_config\"('work_mem', '4GB', false)",
            "SELECT pg_catalog.\"set_config\"('statement_timeout', '0', false)",
            "ALTER ROLE CURRENT_USER SET work_mem = '4GB'",
            "ALTER DATABASE postgres SET work_mem = '4GB'",
            "RESET ALL",
        ],
    },
    "extensions": {
        "duckdb": ["LOAD httpfs", "INSTALL httpfs"],
        "sqlite": [
            "SELECT load_extension('/tmp/evil')",
            "SELECT \"load_extension\"('/tmp/evil')",
            "SELECT fts3_tokenizer('simple')",
        ],
        "postgres": ["CREATE EXTENSION dblink", "LOAD 'plpgsql'"],
    },
    "other_databases": {
        "duckdb": ["ATTACH ':memory:' AS other", "USE memory"],
        "sqlite": [
            "ATTACH DATABASE ':memory:' AS other",
            "DETACH DATABASE temp",
            "CREATE TABLE customer_state AS SELECT * FROM pragma_database_list",
        ],
        "postgres": [
            "CREATE DATABASE stash",
            "DROP DATABASE postgres",
            "CREATE TABLE customer_state AS SELECT * FROM dblink_connect('dbname=postgres')",
        ],
    },
    "catalog_and_code": {
        "duckdb": ["CREATE SECRET s (TYPE s3, KEY_ID 'a', SECRET 'b')", "CHECKPOINT"],
        "sqlite": [
            "PRAGMA writable_schema = ON",
            "DELETE FROM sqlite_master",
            "INSERT INTO sqlite_master VALUES ('table', 'x', 'x', 0, 'CREATE TABLE x (a)')",
            "CREATE TRIGGER t AFTER INSERT ON customers_batch BEGIN SELECT 1; END",
            "CREATE VIRTUAL TABLE v USING fts5(x)",
        ],
        "postgres": [
            "CREATE TABLE pg_catalog.stash (x INTEGER)",
            "TRUNCATE pg_class",
            "UPDATE pg_catalog.pg_class SET relname = 'x' WHERE false",
            "CREATE FUNCTION f() RETURNS INTEGER LANGUAGE plpgsql AS $$ BEGIN RETURN 1; END $$",
            "DO $$ BEGIN PERFORM 1; END $$",
            "COMMENT ON DATABASE postgres IS 'stash'",
            "CREATE TABLESPACE stash LOCATION '/tmp'",
            "CREATE ROLE stash",
        ],
    },
    "other_sessions": {
        "postgres": [
            'SELECT "pg_terminate_backend"(pg_stat_get_backend_pid(s)) '
            "FROM pg_stat_get_backend_idset() s",
            "SELECT pg_cancel_backend(1)",
            "CREATE TABLE customer_state AS SELECT query FROM pg_stat_activity",
            "SELECT pg_advisory_lock(1)",
            "LISTEN stash",
            "SELECT \"pg_notify\"('stash', 'x')",
            "PREPARE TRANSACTION 'stash'",
        ],
    },
}
HOSTILE = [
    pytest.param(engine, route, script, id=f"{engine}-{route}-{i}", marks=param.marks)
    for param in engine_params()
    for engine in param.values
    for route, by_engine in ROUTES.items()
    for i, script in enumerate(by_engine.get(engine, []))
]


@pytest.fixture(scope="module")
def graders():
    """A grader per (engine, limits), made on first use and kept for the module."""
    with contextlib.ExitStack() as stack:
        made: dict[tuple[str, Limits], Grader] = {}

        def get(engine: str, limits: Limits = LIMITS) -> Grader:
            if (engine, limits) not in made:
                made[engine, limits] = stack.enter_context(
                    Grader(limits=limits, engine_name=engine)
                )
            return made[engine, limits]

        yield get


def engine_gold(engine: str) -> str:
    task = get_task(ENGINE_TASK)
    return script_for(task, "gold.sql", task.gold_sql, engine)


def engine_verdict(grader: Grader, script: str) -> dict:
    record, _ = grader.grade(get_task(ENGINE_TASK), script, ["snapshot"])
    return record["verdicts"]["snapshot"]


@pytest.mark.slow
@pytest.mark.parametrize(("engine", "route", "script"), HOSTILE)
def test_hostile_routes_are_stopped_on_every_engine(graders, tmp_path, engine, route, script):
    """Reading or writing the host, the network, settings, extensions, other databases, the
    catalog, procedural code and other sessions: refused by the screen, permissions or the
    authorizer, in each engine's own dialect; a file a route aimed at is never written."""
    folder = tmp_path / "out"
    folder.mkdir()
    folder.chmod(0o777)  # writable by a server running as another user: only the sandbox stops it
    target = folder / "written"
    entry = engine_verdict(graders(engine), script.format(path=target) + ";")
    assert entry["verdict"] == "ERROR", entry
    expected = REFUSED if route in ("settings", "extensions", "other_sessions") else None
    assert entry["error_class"] in (expected or ABSENT_OR_REFUSED), entry
    assert list(folder.iterdir()) == []


BOMBS: dict[str, dict[str, tuple[str, str]]] = {
    "cpu": {
        "duckdb": ("CREATE TABLE x AS SELECT count(*) AS n FROM range(1000000000000)", "timeout"),
        "sqlite": (
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n",
            "timeout",
        ),
        "postgres": (
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n",
            "timeout",
        ),
    },
    "memory": {
        "duckdb": (
            "CREATE TABLE x AS SELECT list(repeat('x', 1000000)) AS l FROM range(3000)",
            "engine_crash",
        ),
        "sqlite": ("CREATE TABLE x AS SELECT randomblob(400000000) AS b", "engine_crash"),
        "postgres": (
            "SELECT length(a) + length(b) + length(c) + length(d) FROM (SELECT repeat('a', "
            "700000000) AS a, repeat('b', 700000000) AS b, repeat('c', 700000000) AS c, "
            "repeat('d', 700000000) AS d) AS t",
            "engine_crash",
        ),
    },
    "disk": {
        "duckdb": (
            "CREATE TABLE x AS SELECT repeat('x', 1000) || i AS x FROM range(3000000) t(i)",
            "engine_crash",
        ),
        "sqlite": (
            "CREATE TABLE x AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n "
            "LIMIT 3000000) SELECT randomblob(1000) AS b FROM n",
            "engine_crash",
        ),
        "postgres": (
            "CREATE TABLE x AS SELECT repeat(md5(i::text), 30) AS x FROM generate_series(1, 700000) i",
            "engine_crash",
        ),
    },
}


@pytest.mark.slow
@pytest.mark.parametrize("bomb", sorted(BOMBS))
@pytest.mark.parametrize("engine", engine_params())
def test_resource_bombs_cost_only_their_own_verdict_on_every_engine(graders, engine, bomb):
    """CPU time (the statement timeout), memory (the engine's bound: DuckDB's memory_limit,
    SQLite's hard heap and string limits, the PostgreSQL backend's address space) and disk
    (DuckDB keeps nothing on disk, SQLite's max_page_count, the PostgreSQL database's size
    bound): each is one ERROR, and the same grader grades the next artifact normally."""
    script, error_class = BOMBS[bomb][engine]
    grader = graders(engine, QUICK if bomb == "cpu" else ROOMY)
    entry = engine_verdict(grader, script + ";")
    assert entry["verdict"] == "ERROR" and entry["error_class"] == error_class, entry
    assert engine_verdict(grader, engine_gold(engine))["verdict"] == "PASS"


NESTED = "CREATE TABLE customer_state AS SELECT " + "(" * 3000 + "1" + ")" * 3000 + " AS x;"


@pytest.mark.slow
@pytest.mark.parametrize("engine", engine_params())
def test_regression_a_deeply_nested_expression_stopped_the_postgres_grader(graders, engine):
    """sqlglot's parser recurses once per level of parentheses: 3,000 levels (a 6 KB script)
    raised RecursionError in the worker's screen, which surfaced as HarnessError, so `grade`
    exited 1 and `grade-run` stopped. It is now that artifact's sql_error on every engine."""
    grader = graders(engine)
    assert_refused_or_failed(engine_verdict(grader, NESTED), ("sql_error",))
    assert engine_verdict(grader, engine_gold(engine))["verdict"] == "PASS"
