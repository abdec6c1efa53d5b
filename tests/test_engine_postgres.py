"""The PostgreSQL engine meets the hermetic-replay contract: a server the tests start themselves
(a temporary folder, the postgres system user when run as root), a new database per replay,
a connection per delivery (a crash rolls back what is uncommitted), hostile statements refused
by the parser or by permissions, runaway statements stopped by the statement timeout."""

from __future__ import annotations

import pytest

from conftest import postgres_missing

if postgres_missing():  # pragma: no cover - make test installs the package
    pytest.skip(postgres_missing() or "", allow_module_level=True)

import psycopg

from arrivalbench.dialects import script_for
from arrivalbench.engines import Limits
from arrivalbench.engines.postgres import (
    BACKEND_ADDRESS_SPACE,
    LOCKS_PER_SESSION,
    DatabaseTooLarge,
    TooManyLocks,
)
from arrivalbench.grade import Grader
from arrivalbench.sandbox import prepare
from arrivalbench.spec import Task, get_task

LIMITS = Limits(statement_timeout=3.0, memory_limit="512MB", replay_timeout=60.0)


@pytest.fixture(scope="module")
def engine(postgres_engine):
    return postgres_engine  # conftest.py: skipped without the server binaries


@pytest.fixture(scope="module")
def task() -> Task:
    return get_task("customer_state")


@pytest.fixture(scope="module")
def grader(engine):
    with Grader(limits=LIMITS, engine_name="postgres") as g:
        yield g


def verdict(grader: Grader, task: Task, script: str, schedule: str = "snapshot") -> dict:
    record, _ = grader.grade(task, script, [schedule])
    assert record["engine"] == "postgres"
    return record["verdicts"][schedule]


@pytest.mark.slow
def test_transpiled_gold_passes_on_postgres(grader, task):
    gold = script_for(task, "gold.sql", task.gold_sql, "postgres")
    record, _ = grader.grade(task, gold, ["snapshot", "late_arrival", "crash_retry"])
    assert {v["verdict"] for v in record["verdicts"].values()} == {"PASS"}, record


REFUSED_BY_PARSER = {
    "copy_program": "COPY (SELECT 1) TO PROGRAM 'id'",
    "copy_file": "COPY customers_batch FROM '/etc/passwd'",
    "read_file": "CREATE TABLE x AS SELECT pg_read_file('/etc/passwd') AS t",
    "set": "SET statement_timeout = 0",
    "set_config": "SELECT set_config('statement_timeout', '0', false)",
    "do_block": "DO $$ BEGIN PERFORM 1; END $$",
    "function": "CREATE FUNCTION f() RETURNS int AS 'SELECT 1' LANGUAGE sql",
    "alter_role": "ALTER ROLE arrivalbench_sandbox SET work_mem = '4GB'",
    "drop_database": "DROP DATABASE postgres",
    "other_sessions": "CREATE TABLE x AS SELECT query FROM pg_stat_activity",
    "cancel_others": "SELECT pg_cancel_backend(1)",
}


@pytest.mark.parametrize("name", sorted(REFUSED_BY_PARSER))
def test_parser_refuses_statements_that_reach_outside(engine, name):
    result = prepare(engine, REFUSED_BY_PARSER[name] + ";", LIMITS)
    assert not isinstance(result, list), f"{name} was not refused"
    assert result.error is not None
    assert result.error.error_class in ("sandbox_refused", "sql_error"), result.error


def test_permissions_refuse_what_the_parser_lets_through(grader, task):
    entry = verdict(grader, task, "CREATE TABLE pg_catalog.stash (x INTEGER);")
    assert entry["verdict"] == "ERROR" and entry["error_class"] == "sandbox_refused", entry


@pytest.mark.slow
def test_a_statement_past_its_timeout_is_a_timeout(grader, task):
    entry = verdict(grader, task, "SELECT pg_sleep(30);")
    assert entry["verdict"] == "ERROR" and entry["error_class"] == "timeout", entry


def test_no_object_survives_into_the_next_replay(grader, task):
    stash = (
        "CREATE TABLE IF NOT EXISTS stash AS SELECT * FROM customers_batch;\n"
        "CREATE VIEW stash_v AS SELECT 1 AS x;\n"
        "CREATE SEQUENCE IF NOT EXISTS stash_q;\n"
    )
    first = verdict(grader, task, stash)
    assert first["error_class"] == "missing_target", first
    probe = "CREATE TABLE stash (x INTEGER);\nCREATE VIEW stash_v AS SELECT 1 AS x;\n"
    probe += "CREATE SEQUENCE stash_q;\n"  # each fails if its name survived
    entry = verdict(grader, task, probe)
    assert entry["error_class"] == "missing_target", entry


def test_closing_a_session_rolls_back_its_open_transaction(engine):
    database = engine.open(LIMITS)
    try:
        first = database.session()
        first.execute("CREATE TABLE ledger (x INTEGER)")
        first.execute("INSERT INTO ledger VALUES (1)")
        first.execute("BEGIN")
        first.execute("INSERT INTO ledger VALUES (2)")
        first.close()
        second = database.session()
        assert second.capture("ledger", "probe") == 1
        assert second.read_table("probe").column("x").to_pylist() == [1]
        second.close()
    finally:
        database.close()


def test_the_pipeline_role_is_not_a_superuser(grader, task):
    script = (
        "CREATE TABLE customer_state AS SELECT rolsuper::int AS customer_id FROM pg_roles "
        "WHERE rolname = current_user;"
    )
    entry = verdict(grader, task, script)
    assert entry["verdict"] == "FAIL"
    assert "True" not in str(entry["diff"])


@pytest.mark.slow
def test_regrade_verify_reproduces_postgres_verdicts_byte_for_byte(tmp_path, engine, task):
    from arrivalbench.corpus import make_corpus
    from arrivalbench.sweep import sweep, verify

    run = make_corpus(tmp_path / "run", seed=7, task_ids=[task.id], engine="postgres")
    assert (run.manifest["engine"], run.manifest["engine_version"]) == ("postgres", engine.version)
    sweep(run, workers=1)
    assert len(run.verdicts()) > 0
    assert verify(run, workers=1) == []


# --- regressions: the sandbox holes found by the red team (issue 15, item 5) ------------------------


def test_regression_a_quoted_function_name_passed_the_postgres_screen(engine):
    """The screen compared `"set_config"` (quotes included) with its list, so a quoted name ran:
    settings changed mid-replay (work_mem = 4GB, statement_timeout = 0) and, with one role shared
    by all replays, pg_terminate_backend ended other replays' sessions."""
    for call in ('"set_config"', 'pg_catalog."set_config"', '"PG_TERMINATE_BACKEND"'):
        result = prepare(engine, f"SELECT {call}('work_mem', '4GB', false);", LIMITS)
        assert not isinstance(result, list), call
        assert result.error.error_class == "sandbox_refused", result.error


def test_regression_one_shared_role_carried_role_settings_into_the_next_replay(engine):
    """Every replay connected as one role, which may `ALTER ROLE CURRENT_USER SET` its own
    defaults: a setting (a string one, such as application_name, holding a stash) outlived the
    replay, with only the parser in the way. Now each replay has its own role, dropped after."""
    first = engine.open(LIMITS)
    session = first.session()
    try:
        session.execute("ALTER ROLE CURRENT_USER SET lock_timeout = '4321ms'")  # past the screen
        session.execute("ALTER ROLE CURRENT_USER SET application_name = 'stash'")
    finally:
        session.close()
        first.close()
    second = engine.open(LIMITS)
    session = second.session()
    try:
        cursor = session._con.cursor()
        row = cursor.execute(
            "SELECT current_setting('lock_timeout'), current_setting('application_name'), "
            "(SELECT count(*) FROM pg_db_role_setting WHERE setrole <> 0), "
            "(SELECT count(*) FROM pg_roles WHERE rolname = %s)",
            [first.role],
        ).fetchone()
    finally:
        session.close()
        second.close()
    assert second.role != first.role
    assert row == ("0", "", 0, 0)


def test_regression_replays_sharing_one_role_saw_and_signalled_each_others_sessions(engine):
    """With one role for all replays, a replay read the SQL of another replay running beside it
    (pg_stat_get_backend_activity shows the role's own sessions) and could cancel or terminate
    it, so one artifact could turn another's verdict into an ERROR in a parallel sweep."""
    mine, theirs = engine.open(LIMITS), engine.open(LIMITS)
    spy, victim = mine.session(), theirs.session()
    try:
        victim.execute("SELECT 'the other artifact''s secret'")
        cursor = spy._con.cursor()
        seen = cursor.execute(
            "SELECT string_agg(coalesce(pg_stat_get_backend_activity(s), ''), ' ') "
            "FROM pg_stat_get_backend_idset() s"
        ).fetchone()[0]
        assert "secret" not in seen
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            cursor.execute("SELECT pg_terminate_backend(%s)", [victim._con.info.backend_pid])
    finally:
        spy.close()
        victim.close()
        mine.close()
        theirs.close()


@pytest.mark.slow
def test_regression_a_postgres_replay_could_fill_the_disk(engine):
    """PostgreSQL has no quota: a replay wrote ~400 MB/s into its database, committed statement
    by statement, for as long as its replay budget lasted (tens of GB). Past the memory limit,
    the statement now ends the replay as an engine_crash."""
    limits = Limits(statement_timeout=60.0, memory_limit="128MB", replay_timeout=120.0)
    database = engine.open(limits)
    session = database.session()
    try:
        with pytest.raises(DatabaseTooLarge) as raised:
            session.execute(
                "CREATE TABLE big AS SELECT repeat(md5(i::text), 30) AS x "
                "FROM generate_series(1, 200000) i"
            )
        assert engine.classify(raised.value) == "engine_crash"
    finally:
        session.close()
        database.close()


def test_regression_a_postgres_backend_had_no_memory_bound(engine):
    """work_mem bounds a sort, not a value: a row of four 700 MB strings grew a backend past
    2.5 GB (the OOM killer's business). Every server process now has a capped address space."""
    database = engine.open(LIMITS)
    session = database.session()
    try:
        pid = session._con.info.backend_pid
        with open(f"/proc/{pid}/limits", encoding="ascii") as limits:
            line = next(x for x in limits if x.startswith("Max address space"))
        assert int(line.split()[3]) <= BACKEND_ADDRESS_SPACE
    finally:
        session.close()
        database.close()


POISON_PILL = (
    "CREATE TABLE customer_state AS SELECT count(*) AS n "
    "FROM generate_series(1, 1000000) g WHERE pg_try_advisory_lock_shared(g);"
)


@pytest.mark.slow
def test_regression_advisory_locks_filled_the_lock_table_and_stopped_every_grade(grader, task):
    """Session advisory locks (pg_try_advisory_lock_shared, not on the screen's list) filled the
    server-wide lock table; the harness's own CREATE and DROP DATABASE then failed with "out of
    shared memory" as a HarnessError, on every rerun. EXECUTE is revoked in the template now:
    the pill is its own sandbox_refused, and the next artifact grades as usual."""
    entry = verdict(grader, task, POISON_PILL)
    assert entry["verdict"] == "ERROR" and entry["error_class"] == "sandbox_refused", entry
    assert "permission denied for function pg_try_advisory_lock_shared" in entry["message"]
    gold = script_for(task, "gold.sql", task.gold_sql, "postgres")
    assert verdict(grader, task, gold)["verdict"] == "PASS"


@pytest.mark.slow
@pytest.mark.parametrize(
    "call",
    [
        "SELECT * FROM ts_stat('SELECT to_tsvector(set_config(''work_mem'', ''1900MB'', false))')",
        "SELECT query_to_xml('SELECT set_config(''statement_timeout'', ''0'', false)', true, true, '')",
        "SELECT pg_advisory_xact_lock_shared(1)",
        "SELECT pg_notify('stash', 'x')",
    ],
)
def test_regression_ts_stat_ran_the_denied_set_config_inside_its_query_text(engine, call):
    """ts_stat (and query_to_xml) run their text argument, which the screen never parses, so a
    denied set_config ran inside one (work_mem 1900MB, statement_timeout 0). The privilege is
    revoked in every replay's database, whatever the spelling or the wrapper."""
    database = engine.open(LIMITS)
    session = database.session()
    try:
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            session.execute(call)
        row = session._con.execute(
            "SELECT current_setting('work_mem'), current_setting('statement_timeout')"
        ).fetchone()
        assert row == ("64MB", "3s")
    finally:
        session.close()
        database.close()


@pytest.mark.slow
def test_regression_locks_held_past_the_bound_end_the_replay(engine):
    """One session could hold the whole lock table (PostgreSQL bounds no role): past
    LOCKS_PER_SESSION after a statement, the replay is an engine_crash and its session goes."""
    database = engine.open(LIMITS)
    session = database.session()
    try:
        session.execute("BEGIN")
        session.execute("CREATE TABLE p (x INTEGER) PARTITION BY RANGE (x)")
        for i in range(0, LOCKS_PER_SESSION + 10, 500):
            parts = "; ".join(
                f"CREATE TABLE p{j} PARTITION OF p FOR VALUES FROM ({j}) TO ({j + 1})"
                for j in range(i, i + 500)
            )
            for statement in parts.split("; "):
                try:
                    session.execute(statement)
                except TooManyLocks as exc:
                    assert engine.classify(exc) == "engine_crash"
                    assert "locks, past the" in str(exc)
                    return
        pytest.fail("the lock bound never tripped")
    finally:
        session.close()
        database.close()


@pytest.mark.slow
def test_regression_a_killed_owner_left_its_private_server_running(tmp_path):
    """`pg_ctl start` daemonizes the postmaster, and only an atexit handler stopped it: a grader
    (or a worker that had started its own server) killed with SIGKILL left a server (parent PID
    1) and its /tmp/arrivalbench-pg-* folder. A watcher now stops it when its owner dies."""
    import os
    import signal
    import subprocess
    import sys
    import time

    code = (
        "import sys, time\n"
        "from arrivalbench.engines.postgres import Server\n"
        "s = Server()\n"
        "print(s.folder, flush=True)\n"
        "time.sleep(600)\n"
    )
    owner = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        folder = owner.stdout.readline().strip()
        with open(os.path.join(folder, "data", "postmaster.pid"), encoding="ascii") as pid_file:
            postmaster = int(pid_file.readline())
        assert os.path.exists(f"/proc/{postmaster}")
    finally:
        os.kill(owner.pid, signal.SIGKILL)
        owner.wait()
    deadline = time.monotonic() + 15
    while (os.path.exists(f"/proc/{postmaster}") or os.path.exists(folder)) and (
        time.monotonic() < deadline
    ):
        time.sleep(0.2)
    assert not os.path.exists(f"/proc/{postmaster}")
    assert not os.path.exists(folder)
