"""Hostile pipelines graded on daily_revenue: each is one ERROR of the right class, in bounded time,
and leaves nothing on the host; a worker that dies or hangs costs one verdict and is replaced.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from arrivalbench import replies
from arrivalbench import sandbox as sandbox_module
from arrivalbench import scratch as scratch_module
from arrivalbench.compare import compare
from arrivalbench.engines import Limits, get_engine
from arrivalbench.engines.common import scratch_parent
from arrivalbench.grade import Grader
from arrivalbench.sandbox import ReplayJob, Sandbox, screen
from arrivalbench.schedules import build_schedule
from arrivalbench.spec import Task, get_task

LIMITS = Limits(statement_timeout=1.0, memory_limit="256MB")
ENDLESS = (
    "WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) AS n FROM r"
)
HARMLESS = (
    "CREATE TABLE IF NOT EXISTS scratch AS SELECT 1 AS x;\nSELECT count(*) FROM sales_batch;\n"
)
"""Two statements that run fine, so a refused statement after them is statement 3."""


@pytest.fixture(scope="module")
def task() -> Task:
    return get_task("daily_revenue")


@pytest.fixture(scope="module")
def grader(task):
    with Grader(limits=LIMITS) as g:
        # Start the worker under a generous limit: the supervisor's patience (timeout + grace) also
        # covers a cold worker's start-up (see test_slow_worker_start_is_not_charged_to_the_pipeline).
        g.limits = Limits(statement_timeout=30.0)
        g.grade(task, task.gold_sql, ["snapshot"])
        g.limits = LIMITS
        yield g


@pytest.fixture(scope="module")
def worker(task):
    with Sandbox() as sb:
        _gold_passes(sb, task)  # warm: a cold start counts against the first job's patience
        yield sb


def snapshot_verdict(grader: Grader, task: Task, script: str) -> dict[str, object]:
    record, _ = grader.grade(task, script, ["snapshot"])
    return record["verdicts"]["snapshot"]


def assert_error(
    entry: dict[str, object], error_class: str, batch: int | None, statement: int | None
) -> None:
    assert entry["verdict"] == "ERROR", entry
    assert (entry["error_class"], entry["batch"], entry["statement"]) == (
        error_class,
        batch,
        statement,
    ), entry
    assert isinstance(entry["message"], str) and entry["message"]
    assert "diff" not in entry


def job(task: Task, script: str, schedule: str = "snapshot", limits: Limits = LIMITS) -> ReplayJob:
    built, _ = build_schedule(task, schedule, 0)
    return ReplayJob(task=task, schedule=built, script=script, limits=limits)


# --- reaching the host ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "reader",
    [
        "read_text('/etc/passwd')",
        "read_csv('/etc/passwd')",
        "read_csv_auto('/etc/passwd', header = false)",
        "read_blob('/etc/passwd')",
        "glob('/etc/*')",
        "read_parquet('https://example.com/x.parquet')",
    ],
)
def test_reading_host_files_is_refused_by_the_engine(grader, task, reader):
    entry = snapshot_verdict(
        grader, task, HARMLESS + f"CREATE TABLE daily_revenue AS SELECT * FROM {reader};"
    )
    assert_error(entry, "sandbox_refused", 1, 3)
    assert "disabled by configuration" in entry["message"]
    assert "root:" not in entry["message"]


def test_copy_to_a_file_is_screened_before_execution_and_writes_nothing(grader, task, tmp_path):
    out = tmp_path / "leak.csv"
    script = (
        "CREATE TABLE daily_revenue AS SELECT store_id FROM sales_batch;\n"
        f"COPY daily_revenue TO '{out}' (HEADER);\n"
    )
    entry = snapshot_verdict(grader, task, script)
    assert_error(entry, "sandbox_refused", 1, 2)
    assert entry["message"].startswith("COPY statements are not allowed")
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_export_database_writes_nothing(grader, task, tmp_path):
    out = tmp_path / "export"
    entry = snapshot_verdict(grader, task, HARMLESS + f"EXPORT DATABASE '{out}';")
    assert_error(entry, "sandbox_refused", 1, 3)
    assert not out.exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("statement", "verb"),
    [
        ("ATTACH ':memory:' AS side", "ATTACH"),
        ("ATTACH '/tmp/arrivalbench-sandbox-test.db' AS side", "ATTACH"),
        ("DETACH side", "DETACH"),
        ("INSTALL httpfs", "INSTALL"),
        ("LOAD httpfs", "LOAD"),
        ("SET threads = 8", "SET"),
        ("set memory_limit = '64GB'", "SET"),
        ("RESET threads", "RESET"),
        ("PRAGMA database_list", "PRAGMA"),
        ("CALL pragma_version()", "CALL"),
        ("EXPORT DATABASE '/tmp/arrivalbench-sandbox-export'", "EXPORT"),
        ("CREATE PERSISTENT SECRET leak (TYPE S3, KEY_ID 'a', SECRET 'b')", "CREATE SECRET"),
        (
            "CREATE OR REPLACE TEMPORARY SECRET leak (TYPE S3, KEY_ID 'a', SECRET 'b')",
            "CREATE SECRET",
        ),
        (
            "-- a comment first\nCREATE SECRET leak (TYPE S3, KEY_ID 'a', SECRET 'b')",
            "CREATE SECRET",
        ),
        ("USE memory", "USE"),
        ("VACUUM", "VACUUM"),
    ],
)
def test_session_changing_and_outside_reaching_statements_are_refused_with_their_index(
    grader, task, statement, verb
):
    entry = snapshot_verdict(
        grader, task, HARMLESS + statement + ";\nCREATE TABLE daily_revenue AS SELECT 1 AS x;"
    )
    assert_error(entry, "sandbox_refused", 1, 3)
    assert verb in entry["message"]
    assert "not allowed in a pipeline" in entry["message"]
    assert not Path("/tmp/arrivalbench-sandbox-test.db").exists()
    assert not Path("/tmp/arrivalbench-sandbox-export").exists()


def test_screening_refuses_the_first_bad_statement_of_the_whole_script(task):
    engine = get_engine()
    statements = engine.split("SELECT 1;\nSELECT 2;\nSET threads = 2;\nATTACH ':memory:' AS m;")
    refusal = screen(engine, statements)
    assert refusal is not None
    assert (refusal.error_class, refusal.batch, refusal.statement) == ("sandbox_refused", 1, 3)
    assert screen(engine, engine.split(task.gold_sql)) is None
    for control in task.controls.values():
        assert screen(engine, engine.split(control)) is None


def test_create_secret_with_an_inner_comment_is_refused(grader, task):
    entry = snapshot_verdict(
        grader, task, "CREATE /* x */ PERSISTENT SECRET leak (TYPE S3, KEY_ID 'a', SECRET 'b');"
    )
    assert_error(entry, "sandbox_refused", 1, 1)


@pytest.mark.parametrize(
    "wrapped",
    [
        "PREPARE leak AS COPY (SELECT * FROM sales_batch) TO '{out}';\nEXECUTE leak;",
        "EXPLAIN ANALYZE COPY (SELECT * FROM sales_batch) TO '{out}';",
    ],
)
def test_copy_wrapped_in_prepare_or_explain_analyze_writes_nothing(grader, task, tmp_path, wrapped):
    """The screen sees PREPARE/EXPLAIN, not COPY; the engine's external-access lock still holds."""
    out = tmp_path / "leak.csv"
    entry = snapshot_verdict(grader, task, HARMLESS + wrapped.format(out=out))
    assert_error(entry, "sandbox_refused", 1, 3)
    assert not out.exists()


@pytest.mark.parametrize(
    "wrapped",
    [
        "PREPARE leak AS COPY (SELECT 1) TO '/tmp/arrivalbench-sandbox-leak.csv';",
        "EXPLAIN ANALYZE COPY (SELECT 1) TO '/tmp/arrivalbench-sandbox-leak.csv';",
    ],
)
def test_copy_wrapped_in_prepare_or_explain_analyze_is_screened_before_execution(task, wrapped):
    engine = get_engine()
    refusal = screen(engine, engine.split(HARMLESS + wrapped))
    assert refusal is not None and refusal.statement == 3


def test_refusal_of_a_one_word_statement_names_the_verb_cleanly(grader, task):
    entry = snapshot_verdict(grader, task, "CHECKPOINT;")
    assert_error(entry, "sandbox_refused", 1, 1)
    assert entry["message"].startswith("CHECKPOINT statements are not allowed")


# --- what the pipeline can see ------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["log", "sales", "daily_revenue_expected", "oracle", "__arrivalbench_delivery"]
)
def test_pipeline_cannot_see_the_log_the_oracle_or_python_objects(grader, task, name):
    entry = snapshot_verdict(grader, task, f'CREATE TABLE daily_revenue AS SELECT * FROM "{name}";')
    assert_error(entry, "sql_error", 1, 1)
    assert "does not exist" in entry["message"]


BATCH_PROBE = """
CREATE TABLE IF NOT EXISTS daily_revenue (batch_id BIGINT, batch_rows BIGINT, batch_is_temp BOOLEAN,
                                          batch_schema VARCHAR, scratch_visible BIGINT, databases BIGINT);
INSERT INTO daily_revenue
SELECT (SELECT max(_batch_id) FROM sales_batch),
       (SELECT count(*) FROM sales_batch),
       (SELECT bool_and(temporary) FROM duckdb_tables() WHERE table_name = 'sales_batch'),
       (SELECT min(schema_name) FROM duckdb_tables() WHERE table_name = 'sales_batch'),
       (SELECT count(*) FROM duckdb_tables() WHERE table_name = 'scratch'),
       (SELECT count(*) FROM duckdb_databases() WHERE NOT internal);
CREATE TEMP TABLE scratch AS SELECT * FROM sales_batch;
"""


def test_batch_table_is_temp_per_session_and_holds_one_delivery(worker, task):
    the_job = job(task, BATCH_PROBE, "in_order_stream")
    result = worker.run(the_job)
    assert result.error is None, result.error
    rows = sorted(result.target.to_pylist(), key=lambda r: r["batch_id"])
    deliveries = the_job.schedule.deliveries
    assert len(deliveries) > 1
    assert [r["batch_id"] for r in rows] == [d.batch_id for d in deliveries]
    assert [r["batch_rows"] for r in rows] == [len(d.rows) for d in deliveries]
    assert all(r["batch_is_temp"] and r["batch_schema"] == "main" for r in rows)
    assert all(r["scratch_visible"] == 0 for r in rows)  # last delivery's TEMP table is gone
    assert all(r["databases"] == 1 for r in rows)  # only the pipeline's own in-memory database


# --- running too long, too big, or not at all ---------------------------------------------------


@pytest.mark.slow
def test_endless_recursive_cte_times_out(grader, task):
    entry = snapshot_verdict(grader, task, f"SELECT 1;\nCREATE TABLE daily_revenue AS {ENDLESS};")
    assert_error(entry, "timeout", 1, 2)
    assert "1 s" in entry["message"]


def test_memory_bomb_is_an_engine_crash(grader, task):
    script = "CREATE TABLE x AS SELECT range, repeat('x', 1000) AS pad FROM range(100000000);"
    entry = snapshot_verdict(grader, task, script)
    assert_error(entry, "engine_crash", 1, 1)
    assert "Out of Memory" in entry["message"]


def test_memory_bomb_spills_nothing_to_disk(grader, task):
    """The worker runs in '/'; with spilling off, DuckDB's default temp directory never appears."""
    before = Path("/.tmp").exists()
    entry = snapshot_verdict(
        grader, task, "CREATE TABLE x AS SELECT range, repeat('x', 500) FROM range(50000000);"
    )
    assert entry["verdict"] == "ERROR"
    assert Path("/.tmp").exists() == before


def test_script_that_never_creates_the_target_is_missing_target(grader, task):
    entry = snapshot_verdict(
        grader, task, "CREATE TABLE revenue_by_day AS SELECT * FROM sales_batch;"
    )
    assert_error(entry, "missing_target", 1, None)
    assert "daily_revenue" in entry["message"]


def test_missing_target_names_the_last_batch(grader, task):
    record, _ = grader.grade(task, "SELECT count(*) FROM sales_batch;", ["in_order_stream"])
    entry = record["verdicts"]["in_order_stream"]
    schedule, _ = grader.schedule(task, "in_order_stream")
    assert_error(entry, "missing_target", schedule.deliveries[-1].batch_id, None)


@pytest.mark.parametrize(
    ("script", "statement"),
    [
        ("CREATE TABLE daily_revenue AS SELEC 1;", 1),
        (HARMLESS + "CREATE TABLE daily_revenue AS SELEC 1;", 3),
    ],
)
def test_syntax_error_is_sql_error(grader, task, script, statement):
    """The parser rejects the whole script: nothing runs, and no statement but the bad one may be blamed."""
    entry = snapshot_verdict(grader, task, script)
    assert entry["verdict"] == "ERROR"
    assert (entry["error_class"], entry["batch"]) == ("sql_error", 1)
    assert entry["statement"] in (None, statement)
    assert "syntax error" in entry["message"].lower()
    assert "SELEC" in entry["message"]


def test_runtime_error_names_its_batch_and_statement(grader, task):
    entry = snapshot_verdict(
        grader, task, HARMLESS + "CREATE TABLE daily_revenue AS SELECT 1 / 0 AS x, 'a'::INT AS y;"
    )
    assert_error(entry, "sql_error", 1, 3)
    assert "Conversion" in entry["message"]


# --- the worker: killed, hung, replaced --------------------------------------------------------


class _ActOnBeat:
    """Wraps the supervisor's end of the socket: when the worker announces `beat`, signal it."""

    def __init__(self, conn, pid: int, signum: int, beat: tuple[int, int] = (1, 1)) -> None:
        self._conn, self._pid, self._signum, self._beat = conn, pid, signum, beat
        self.fired = False

    def send(self, obj) -> None:
        self._conn.send(obj)

    def poll(self, timeout: float) -> bool:
        return self._conn.poll(timeout)

    def recv_bytes(self) -> bytes:
        data = self._conn.recv_bytes()
        reply = replies.decode(data)
        if reply.kind == "beat" and (reply.batch, reply.statement) == self._beat and not self.fired:
            self.fired = True
            os.kill(self._pid, self._signum)
        return data

    def close(self) -> None:
        self._conn.close()


def _gold_passes(worker: Sandbox, task: Task) -> int:
    """Run the gold through the worker (must PASS) and return the worker's pid."""
    from arrivalbench.oracle import compute_oracle

    the_job = job(task, task.gold_sql, limits=Limits(statement_timeout=30.0))
    result = worker.run(the_job)
    assert result.error is None, result.error
    _, log = build_schedule(task, "snapshot", 0)
    assert compare(compute_oracle(task, log, get_engine()), result.target, task.spec.target).equal
    assert worker._process is not None
    return worker._process.pid


def _gone(pid: int) -> bool:
    return not Path(f"/proc/{pid}").exists()


def test_worker_killed_mid_statement_is_engine_crash_and_is_replaced(worker, task):
    first = _gold_passes(worker, task)
    conn = worker._start()
    spy = _ActOnBeat(conn, worker._process.pid, signal.SIGKILL, beat=(1, 2))
    worker._conn = spy
    result = worker.run(job(task, f"SELECT 1;\n{ENDLESS};", limits=Limits(statement_timeout=60.0)))
    assert spy.fired
    assert result.target is None
    assert (result.error.error_class, result.error.batch, result.error.statement) == (
        "engine_crash",
        1,
        2,
    )
    assert "signal 9" in result.error.message
    assert _gone(first)
    assert _gold_passes(worker, task) != first


@pytest.mark.slow
def test_worker_that_ignores_the_interrupt_is_killed_as_timeout_and_replaced(
    worker, task, monkeypatch
):
    """A stopped worker cannot interrupt itself or answer: the supervisor kills it after the grace period."""
    first = _gold_passes(
        worker, task
    )  # a warm worker: its start-up is not part of the patience below
    monkeypatch.setattr(sandbox_module, "KILL_GRACE_SECONDS", 0.5)
    spy = _ActOnBeat(worker._start(), worker._process.pid, signal.SIGSTOP, beat=(1, 2))
    worker._conn = spy
    result = worker.run(job(task, f"SELECT 1;\n{ENDLESS};"))
    monkeypatch.undo()
    assert spy.fired
    assert result.target is None
    assert (result.error.error_class, result.error.batch, result.error.statement) == (
        "timeout",
        1,
        2,
    )
    assert "worker killed" in result.error.message
    assert _gone(first)
    assert _gold_passes(worker, task) != first


@pytest.mark.slow
def test_uninterruptible_statement_is_a_timeout_and_the_next_job_runs(worker, task, monkeypatch):
    """DuckDB checks for interrupts between vectors, not inside one huge regexp_replace (~5 s here)."""
    _gold_passes(worker, task)
    monkeypatch.setattr(sandbox_module, "KILL_GRACE_SECONDS", 0.5)
    script = "CREATE TABLE daily_revenue AS SELECT length(regexp_replace(repeat('x', 20000000), 'x', 'yy', 'g')) AS n;"
    result = worker.run(job(task, script))
    monkeypatch.undo()
    assert result.target is None
    assert (result.error.error_class, result.error.batch, result.error.statement) == (
        "timeout",
        1,
        1,
    )
    assert "worker killed" in result.error.message or "interrupted" in result.error.message
    _gold_passes(worker, task)


def test_slow_worker_start_is_not_charged_to_the_pipeline(task, monkeypatch):
    monkeypatch.setattr(sandbox_module, "KILL_GRACE_SECONDS", 0.0)
    with Sandbox() as fresh:  # a cold worker: importing the harness alone takes longer than 0.5 s
        result = fresh.run(job(task, task.gold_sql, limits=Limits(statement_timeout=0.5)))
    assert result.error is None, result.error


def test_closing_the_sandbox_stops_its_worker(task):
    sb = Sandbox()
    pid = _gold_passes(sb, task)
    sb.close()
    assert _gone(pid)
    assert sb._process is None


# --- the supervisor: dispatch, plain-data replies, scratch it owns ---------------------------------


@pytest.mark.slow
def test_regression_replays_took_the_other_job_kind_branch_and_never_ran_on_the_spare(task):
    """The worker runs as `python -m arrivalbench.sandbox`, so its `ReplayJob` was
    `__main__.ReplayJob` while the jobs it unpickled were `arrivalbench.sandbox.ReplayJob`:
    every replay took the other-job-kind branch and opened its own instance, and the spare
    opened ahead (while the grader compares) was never used."""
    with Sandbox() as sb:
        for _ in range(3):
            assert (
                sb.run(job(task, task.gold_sql, limits=Limits(statement_timeout=30.0))).error
                is None
            )
        assert sb.spares_used == 2  # every replay after the first


class _Evil:
    """Unpickled, it would write a file: what a subverted worker could make the grader run."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):
        return (Path.write_text, (self.path, "pwned"))


class _ForgedReplies:
    """The supervisor's end of the socket, answering every job with `data` (no worker at all)."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def send(self, obj) -> None:
        pass

    def poll(self, timeout: float) -> bool:
        return True

    def recv_bytes(self) -> bytes:
        return self.data

    def close(self) -> None:
        pass


def test_regression_the_grader_unpickled_whatever_its_worker_sent(task, tmp_path, monkeypatch):
    """The worker's replies were pickles, so an engine memory-safety bug that let a script
    choose the worker's bytes would run code in the grader. A pickle is now a malformed reply:
    the job's engine_crash, and nothing of it is run."""
    import pickle

    marker = tmp_path / "pwned"
    forged = pickle.dumps(("done", _Evil(marker), False))
    with pytest.raises(replies.ProtocolError):
        replies.decode(forged)
    sb = Sandbox()
    monkeypatch.setattr(sb, "_start", lambda: _ForgedReplies(forged))
    result = sb.run(job(task, task.gold_sql))
    assert result.target is None and result.error.error_class == "engine_crash"
    assert "malformed reply" in result.error.message
    assert not marker.exists()


def test_a_reply_round_trips_as_plain_data():
    """What the worker sends (target, trace, error, counters, what it found beside the verdict)
    is what the grader reads back."""
    import pyarrow as pa

    from arrivalbench.replay import ReplayResult, RunError

    table = pa.table({"k": [1, None], "v": ["a", "é"], "d": pa.array([1.5, 2.25])})
    result = ReplayResult(
        table,
        RunError("timeout", 2, None, "slow"),
        0.125,
        7,
        trace=(None, table),
        beside={"dbt_tests": {"deliveries": 2, "failed": {}}},
    )
    reply = replies.decode(replies.done(result, True, False))
    assert reply.kind == "done" and reply.retire and not reply.spare
    assert reply.result == result
    assert replies.decode(replies.beat(3, None)) == replies.Reply("beat", 3, None)
    for broken in (b"", b"\x00\x00\x00\x09{}", replies.done(result, True, False)[:-3]):
        with pytest.raises(replies.ProtocolError):
            replies.decode(broken)


class _FlakyScratch:
    """An engine whose scratch cannot be made (or dropped): the server out of a resource."""

    def __init__(self, engine, fail: str) -> None:
        self._engine, self.fail, self.calls = engine, fail, 0
        self.errors = engine.errors

    def provision(self, limits):
        if self.fail == "provision":
            self.calls += 1
            raise OSError("out of shared memory")
        return "scratch"

    def reclaim(self, scratch) -> None:
        if self.fail == "reclaim":
            self.calls += 1
            raise OSError("out of shared memory")


def test_regression_a_replay_database_that_could_not_be_made_stopped_the_grade(task, monkeypatch):
    """A failed CREATE DATABASE (the server's lock table full) was a HarnessError: `grade`
    exited 1 and `grade-run` stopped. It is now tried once more, then that artifact's ERROR."""
    monkeypatch.setattr(scratch_module, "RETRY_PAUSE_SECONDS", 0.0)
    sb = Sandbox()
    flaky = _FlakyScratch(get_engine("duckdb"), "provision")
    monkeypatch.setattr(sb, "_engine", lambda name: flaky)
    result = sb.run(job(task, task.gold_sql))
    sb.close()
    assert result.error.error_class == "engine_crash"
    assert "could not be made: out of shared memory" in result.error.message
    assert flaky.calls == 2  # one retry, then the ERROR
    assert sb._process is None  # no worker was ever started for it


@pytest.mark.slow
def test_regression_a_replay_database_that_could_not_be_dropped_poisoned_the_next_job(
    task, monkeypatch
):
    """A failed DROP DATABASE after the result was sent reached the next job as a
    harness_error. The supervisor now drops after the worker answered, tries once more, makes
    it this artifact's ERROR and keeps retrying the leftover; the next job runs."""
    monkeypatch.setattr(scratch_module, "RETRY_PAUSE_SECONDS", 0.0)
    with Sandbox() as sb:
        flaky = _FlakyScratch(get_engine("duckdb"), "reclaim")
        monkeypatch.setattr(sb, "_engine", lambda name: flaky)
        the_job = job(task, task.gold_sql, limits=Limits(statement_timeout=30.0))
        result = sb.run(the_job)
        assert result.error.error_class == "engine_crash"
        assert "could not be dropped" in result.error.message
        assert sb._leftovers == [(flaky, "scratch")]
        flaky.fail = ""
        assert sb.run(the_job).error is None
        assert sb._leftovers == []


@pytest.mark.slow
def test_regression_a_killed_sqlite_worker_left_its_scratch_folder(worker, task, monkeypatch):
    """The worker made and removed each replay's folder (~196 MB for a large replay), so a
    worker killed mid-replay left it in /tmp. The supervisor makes it and removes it after the
    worker exits for any reason."""
    made: list[str] = []
    engine = worker._engine("sqlite")
    provision = engine.provision
    monkeypatch.setattr(
        engine, "provision", lambda limits: made.append(provision(limits)) or made[-1]
    )
    script = "CREATE TABLE t AS SELECT 1 AS x;\nWITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r;"
    built, _ = build_schedule(task, "snapshot", 0)
    sqlite_job = ReplayJob(
        task=task,
        schedule=built,
        script=script,
        limits=Limits(statement_timeout=60.0),
        engine="sqlite",
    )
    worker._start()
    spy = _ActOnBeat(worker._start(), worker._process.pid, signal.SIGKILL, beat=(1, 2))
    worker._conn = spy
    result = worker.run(sqlite_job)
    assert spy.fired and result.error.error_class == "engine_crash"
    assert len(made) == 1 and made[0].startswith(
        os.path.join(scratch_parent(sqlite_job.limits.memory_bytes), "arrivalbench-sqlite-")
    )
    assert not os.path.exists(made[0])


def test_regression_a_relative_pythonpath_made_workers_run_another_checkouts_code(monkeypatch):
    """`PYTHONPATH=src` from a checkout: the worker starts in `/`, where `src` names nothing, so
    it imported the installed arrivalbench (another checkout) and ran that code for these jobs
    (a dbt microbatch model then ran without its window and its sequential batches, and hung)."""
    import subprocess
    import sys

    import arrivalbench
    from arrivalbench.sandbox import worker_environment

    here = Path(arrivalbench.__file__).parents[1]
    monkeypatch.chdir(here.parent)
    environment = worker_environment({**os.environ, "PYTHONPATH": f"{here.name}{os.pathsep}"})
    assert environment["PYTHONPATH"] == f"{here}{os.pathsep}"  # an empty entry stays as it was
    found = subprocess.run(
        [sys.executable, "-c", "import arrivalbench; print(arrivalbench.__file__)"],
        cwd="/",
        env=environment,
        capture_output=True,
        text=True,
        check=True,
    )
    assert Path(found.stdout.strip()) == Path(arrivalbench.__file__)


def test_regression_the_worker_made_a_new_engine_for_every_job(monkeypatch):
    """`engines.setdefault(name, get_engine(name))` built an engine per job (its argument is
    evaluated first): on PostgreSQL a `postgres --version` subprocess before every replay."""
    made: list[str] = []

    def counting(name: str) -> object:
        made.append(name)
        return object()

    monkeypatch.setattr(sandbox_module, "get_engine", counting)
    engines: dict = {}
    first = sandbox_module._engine_for(engines, "duckdb")
    assert sandbox_module._engine_for(engines, "duckdb") is first
    sandbox_module._engine_for(engines, "sqlite")
    assert made == ["duckdb", "sqlite"]
