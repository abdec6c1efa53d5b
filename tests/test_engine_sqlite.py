"""The SQLite engine meets the DuckDB engine's hermetic-replay contract: a new database per
replay, a connection per delivery (a crash rolls back what is uncommitted), hostile scripts
refused by the screen or the authorizer, resource bombs stopped by limits, and the suite's
reference scripts transpiled from DuckDB SQL and graded against the one DuckDB oracle."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from arrivalbench.corpus import make_corpus
from arrivalbench.dialects import script_for, transpile
from arrivalbench.engines import Limits, get_engine
from arrivalbench.gate import gate_task
from arrivalbench.grade import Grader
from arrivalbench.sandbox import prepare
from arrivalbench.spec import Task, get_task
from arrivalbench.sweep import sweep, verify

LIMITS = Limits(statement_timeout=3.0, memory_limit="512MB", replay_timeout=60.0)


@pytest.fixture(scope="module")
def task() -> Task:
    return get_task("customer_state")


@pytest.fixture(scope="module")
def grader():
    with Grader(limits=LIMITS, engine_name="sqlite") as g:
        yield g


@pytest.fixture(scope="module")
def gold(task: Task) -> str:
    return script_for(task, "gold.sql", task.gold_sql, "sqlite")


def verdict(grader: Grader, task: Task, script: str, schedule: str = "snapshot") -> dict:
    record, _ = grader.grade(task, script, [schedule])
    assert record["engine"] == "sqlite"
    return record["verdicts"][schedule]


@pytest.mark.slow
def test_transpiled_gold_passes_every_default_schedule_on_sqlite(grader, task, gold):
    record, _ = grader.grade(task, gold, ["snapshot", "late_arrival", "crash_retry", "backfill"])
    assert {s: v["verdict"] for s, v in record["verdicts"].items()} == dict.fromkeys(
        ["snapshot", "late_arrival", "crash_retry", "backfill"], "PASS"
    )
    assert record["engine_version"] == get_engine("sqlite").version


@pytest.mark.slow
def test_gate_admits_a_task_on_sqlite(grader, task):
    result = gate_task(task, grader)
    assert result.violations == []
    assert result.admitted


# --- hostile scripts ---------------------------------------------------------------------------

REFUSED_BY_SCREEN = {
    "attach": "ATTACH DATABASE '/etc/passwd' AS host",
    "detach": "DETACH DATABASE temp",
    "pragma_write": "PRAGMA writable_schema = ON",
    "vacuum_into": "VACUUM INTO '/tmp/arrivalbench-stolen.db'",
    "explain": "EXPLAIN SELECT 1",
    "trigger": "CREATE TRIGGER t AFTER INSERT ON x BEGIN SELECT 1; END",
    "virtual_table": "CREATE VIRTUAL TABLE v USING fts5(x)",
    "comment_disguise": "/* SELECT */ ATTACH 'x.db' AS y",
}


@pytest.mark.parametrize("name", sorted(REFUSED_BY_SCREEN))
def test_screen_refuses_statements_that_reach_outside(name):
    result = prepare(get_engine("sqlite"), REFUSED_BY_SCREEN[name] + ";", LIMITS)
    assert not isinstance(result, list), f"{name} was not refused"
    assert result.error is not None and result.error.error_class == "sandbox_refused"


REFUSED_BY_AUTHORIZER = {
    "load_extension": "CREATE TABLE customer_state AS SELECT load_extension('/tmp/evil.so') AS x",
    "attach_in_expression": "CREATE TABLE customer_state AS SELECT * FROM pragma_database_list",
    "schema_write": "DELETE FROM sqlite_master",
    "other_database": "CREATE TABLE customer_state AS SELECT * FROM vacuum_db.sqlite_master",
}


@pytest.mark.parametrize("name", sorted(REFUSED_BY_AUTHORIZER))
def test_authorizer_refuses_what_the_screen_lets_through(grader, task, name):
    entry = verdict(grader, task, REFUSED_BY_AUTHORIZER[name] + ";")
    assert entry["verdict"] == "ERROR"
    assert entry["error_class"] in ("sandbox_refused", "sql_error"), entry
    if name != "other_database":  # no such database exists either: refused or unknown
        assert entry["error_class"] == "sandbox_refused", entry


def test_read_only_pragma_is_allowed_and_its_table_valued_form_is_not(grader, task, gold):
    script = "PRAGMA table_info(customers_batch);\n"
    assert verdict(grader, task, script + gold)["verdict"] == "PASS"
    entry = verdict(grader, task, "SELECT * FROM pragma_table_info('customers_batch');")
    assert entry["error_class"] == "sandbox_refused", entry


@pytest.mark.slow
def test_a_statement_that_never_ends_is_a_timeout(grader, task):
    bomb = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n;"
    entry = verdict(grader, task, bomb)
    assert entry["verdict"] == "ERROR" and entry["error_class"] == "timeout", entry
    assert "3 s limit" in entry["message"]


def test_a_huge_string_is_stopped_by_a_limit_not_the_machine(grader, task):
    entry = verdict(grader, task, "CREATE TABLE x AS SELECT randomblob(400000000) AS b;")
    assert entry["verdict"] == "ERROR" and entry["error_class"] == "engine_crash", entry


def test_the_database_file_is_private_and_removed_with_the_replay():
    database = get_engine("sqlite").open(LIMITS)
    folder = os.path.dirname(database.path)
    session = database.session()
    session.execute("CREATE TABLE t (x INTEGER)")
    session.close()
    assert os.stat(folder).st_mode & 0o777 == 0o700
    database.close()
    assert not os.path.exists(folder)


# --- isolation and crash semantics --------------------------------------------------------------


def test_no_object_survives_into_the_next_replay(grader, task):
    """A table, view and index made by one artifact are gone for the next one."""
    stash = (
        "CREATE TABLE IF NOT EXISTS stash AS SELECT * FROM customers_batch;\n"
        "CREATE VIEW IF NOT EXISTS stash_v AS SELECT 1 AS x;\n"
        "CREATE INDEX IF NOT EXISTS stash_ix ON stash (customer_id);\n"
    )
    assert verdict(grader, task, stash, "single_batch")["error_class"] == "missing_target"
    probe = (
        "CREATE TABLE stash (customer_id INTEGER);\n"
        "CREATE VIEW stash_v AS SELECT 1 AS x;\n"
        "CREATE INDEX stash_ix ON stash (customer_id);\n"
    )  # each fails if its name survived
    entry = verdict(grader, task, probe)
    assert entry["error_class"] == "missing_target", entry


def test_closing_a_session_rolls_back_its_open_transaction_and_keeps_autocommits():
    """The crash: a delivery's connection closes mid-script; what it committed stays."""
    database = get_engine("sqlite").open(LIMITS)
    try:
        first = database.session()
        first.execute("CREATE TABLE ledger (x INTEGER)")
        first.execute("INSERT INTO ledger VALUES (1)")
        first.execute("BEGIN")
        first.execute("INSERT INTO ledger VALUES (2)")
        first.close()
        second = database.session()
        assert second.capture("ledger", "__probe") == 1
        assert second.read_table("__probe").column("x").to_pylist() == [1]
        assert second.capture("customers_batch", "__probe2") is None  # TEMP died with `first`
        second.close()
    finally:
        database.close()


@pytest.mark.slow
def test_regrade_verify_reproduces_sqlite_verdicts_byte_for_byte(tmp_path, task):
    run = make_corpus(tmp_path / "run", seed=7, task_ids=[task.id], engine="sqlite")
    assert run.manifest["engine"] == "sqlite"
    assert run.manifest["engine_version"] == get_engine("sqlite").version
    sweep(run, workers=1)
    assert len(run.verdicts()) > 0
    assert verify(run, workers=1) == []


# --- transpiling ---------------------------------------------------------------------------------


def test_transpile_rewrites_duckdb_forms_sqlite_lacks():
    sql = (
        "CREATE OR REPLACE TABLE t AS SELECT a, count(*) AS n FROM s GROUP BY ALL;\n"
        "INSERT INTO u SELECT * EXCLUDE (_arrival_seq, _batch_id) FROM s_batch "
        "ON CONFLICT DO NOTHING;\n"
        "SELECT row_number() OVER (ORDER BY ts) AS r, ts + INTERVAL '30' MINUTE AS later FROM s;\n"
    )
    out = transpile(sql, "sqlite", columns={"s_batch": ["a", "ts", "_arrival_seq", "_batch_id"]})
    assert "DROP TABLE IF EXISTS t;" in out
    assert "GROUP BY\n  a" in out
    assert "EXCLUDE" not in out and "EXCEPT" not in out
    assert "WHERE\n  TRUE" in out
    assert "NULLS" not in out and "ts IS NULL" in out
    assert "DATETIME(ts, '+30 minutes')" in out


def test_an_override_file_wins_over_the_transpile(tmp_path, task):
    import shutil

    from arrivalbench.spec import load_task

    folder = tmp_path / task.id
    shutil.copytree(task.folder, folder)
    (folder / "gold.sqlite.sql").write_text("SELECT 'by hand';\n")
    copy = load_task(folder)
    assert script_for(copy, "gold.sql", copy.gold_sql, "sqlite") == "SELECT 'by hand';\n"
    assert script_for(copy, "gold.sql", copy.gold_sql, "duckdb") == copy.gold_sql


# --- the command line ----------------------------------------------------------------------------


def test_grade_and_make_corpus_take_an_engine(cli, tmp_path, task, gold):
    pipeline = tmp_path / "gold.sqlite.sql"
    pipeline.write_text(gold)
    done = cli(
        "grade", "--engine", "sqlite", "--task", task.id, "--pipeline", pipeline,
        "--schedules", "snapshot", "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["engine"] == "sqlite"
    assert record["verdicts"]["snapshot"]["verdict"] == "PASS"
    made = cli("make-corpus", "--engine", "sqlite", "--tasks", task.id, "--out", tmp_path / "run")
    assert made.returncode == 0, made.stderr
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert (manifest["engine"], manifest["engine_version"]) == ("sqlite", sqlite3.sqlite_version)


def test_an_unknown_engine_is_one_line_and_exit_2(cli):
    done = cli("gate", "--engine", "sqlit", "--tasks", "daily_revenue")
    assert done.returncode == 2
    assert "Unknown engine 'sqlit'. Did you mean 'sqlite'?" in done.stderr
    assert "Traceback" not in done.stderr


def test_transpile_merge_takes_each_row_by_its_clause_before_the_merge():
    """Two WHEN MATCHED clauses: the second UPDATE must not see the first one's changes."""
    import sqlite3 as lite

    merge = (
        "MERGE INTO cur USING src AS s ON s.id = cur.id "
        "WHEN MATCHED AND s.v > cur.v THEN UPDATE SET v = s.v, n = cur.n + 1 "
        "WHEN MATCHED THEN UPDATE SET n = cur.n + 100 "
        "WHEN NOT MATCHED THEN INSERT (id, v, n) VALUES (s.id, s.v, 0)"
    )
    con = lite.connect(":memory:", isolation_level=None)
    con.execute("CREATE TABLE cur (id INTEGER PRIMARY KEY, v INTEGER, n INTEGER)")
    con.execute("CREATE TABLE src (id INTEGER, v INTEGER)")
    con.executemany("INSERT INTO cur VALUES (?, ?, ?)", [(1, 5, 0), (2, 9, 0)])
    con.executemany("INSERT INTO src VALUES (?, ?)", [(1, 7), (2, 3), (3, 1)])
    con.executescript(transpile(merge, "sqlite"))
    assert con.execute("SELECT * FROM cur ORDER BY id").fetchall() == [
        (1, 7, 1),
        (2, 9, 100),
        (3, 1, 0),
    ]


def test_transpile_count_distinct_over_a_partition_ignores_nulls():
    import sqlite3 as lite

    con = lite.connect(":memory:")
    con.execute("CREATE TABLE t (g INTEGER, x INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?)", [(1, 1), (1, 1), (1, 2), (1, None), (2, None)])
    sql = transpile("SELECT g, count(DISTINCT x) OVER (PARTITION BY g) AS n FROM t", "sqlite")
    assert sorted(set(con.execute(sql.rstrip().rstrip(";")).fetchall())) == [(1, 2), (2, 0)]


def test_regression_analyze_was_refused_on_sqlite(grader, task, gold):
    """ANALYZE is a pipeline statement the screen admits, but it creates sqlite_stat1 in the
    schema table, which the authorizer allowed only to CREATE, DROP and ALTER: a pipeline that
    ran ANALYZE was an ERROR (sandbox_refused) on SQLite alone. The schema table stays closed."""
    assert verdict(grader, task, gold + "\nANALYZE;\n")["verdict"] == "PASS"
    entry = verdict(grader, task, "ANALYZE;\nDELETE FROM sqlite_master;")
    assert entry["verdict"] == "ERROR" and entry["error_class"] == "sandbox_refused", entry
