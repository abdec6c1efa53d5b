"""replay.replay on hand-built logs and schedules: sessions, arrival metadata and crash semantics.

Everything here runs in-process on the DuckDB engine (no sandbox worker), so each test states
exactly which events arrive in which batch and reads back what the script saw.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pytest

from arrivalbench.compare import compare
from arrivalbench.engines import Limits, get_engine
from arrivalbench.logs import Log
from arrivalbench.oracle import compute_oracle
from arrivalbench.replay import ReplayResult, delivery_table, replay
from arrivalbench.schedules import SYNTHETIC_COLUMN, Crash, Delivery, Schedule
from arrivalbench.spec import Task, get_task
from arrivalbench.sqltypes import arrow_type

FIXTURES = Path(__file__).parent / "fixtures" / "replay"
LIMITS = Limits(statement_timeout=5.0, memory_limit="256MB")
DAY = dt.datetime(2026, 1, 5)

# (event_id, hour of DAY, store_id, amount): one store and day, the last event is the 250.00 one.
THREE_ORDERS = [(11, 9, 1, "100.00"), (12, 10, 1, "75.00"), (13, 11, 1, "250.00")]
# Five orders over two stores and two days, for the metadata and crash tests.
FIVE_ORDERS = [
    (21, 9, 1, "10.00"),
    (22, 10, 2, "20.00"),
    (23, 11, 1, "30.00"),
    (24, 33, 2, "40.00"),
    (25, 34, 1, "50.00"),
]


@pytest.fixture(scope="module")
def engine():
    return get_engine("duckdb")


@pytest.fixture(scope="module")
def task() -> Task:
    return get_task("daily_revenue")


def make_log(task: Task, orders: list[tuple[int, int, int, str]]) -> Log:
    """A hidden log of the daily_revenue source from (event_id, hour, store_id, amount), in canonical order."""
    source = task.spec.source
    rows = sorted(orders, key=lambda o: (o[1], o[0]))
    values = {
        "event_id": [o[0] for o in rows],
        "ts_event": [DAY + dt.timedelta(hours=o[1]) for o in rows],
        "store_id": [o[2] for o in rows],
        "amount": [Decimal(o[3]) for o in rows],
    }
    assert list(values) == list(source.columns), "the daily_revenue source changed: update make_log"
    table = pa.table({c: pa.array(values[c], arrow_type(t)) for c, t in source.columns.items()})
    return Log(task_id=task.id, kind="hidden", seed=0, source=source, table=table)


def make_schedule(log: Log, *deliveries: Delivery, name: str = "hand_built") -> Schedule:
    return Schedule(
        name=name,
        task_id=log.task_id,
        seed=0,
        log_kind=log.kind,
        log_seed=log.seed,
        log_fingerprint=log.fingerprint(),
        source=log.source.name,
        deliveries=deliveries,
    )


def batches(*rows: tuple[int, ...]) -> tuple[Delivery, ...]:
    return tuple(Delivery(batch_id=i + 1, rows=r) for i, r in enumerate(rows))


def run(
    engine, script: str, log: Log, deliveries: tuple[Delivery, ...], target: str
) -> ReplayResult:
    return replay(
        engine, engine.split(script), make_schedule(log, *deliveries), log, target, LIMITS
    )


def rows_of(result: ReplayResult, order_by: str) -> list[dict[str, object]]:
    assert result.error is None, result.error
    assert result.target is not None
    return sorted(result.target.to_pylist(), key=lambda r: r[order_by])


# --- the documented regression ----------------------------------------------------------------


def test_staging_not_in_history_passes_redelivery_in_a_later_batch(engine, task):
    """An event sent again in a later batch is already in history, so it is skipped: 425.00 over 3."""
    log = make_log(task, THREE_ORDERS)
    script = (FIXTURES / "staging_not_in_history.sql").read_text()
    result = run(engine, script, log, batches((0, 1, 2), (2,)), "daily_revenue")
    assert result.error is None
    assert result.target.to_pylist() == [
        {"store_id": 1, "day": DAY.date(), "revenue": Decimal("425.00"), "orders": 3}
    ]
    assert compare(compute_oracle(task, log, engine), result.target, task.spec.target).equal


def test_staging_not_in_history_double_counts_an_event_sent_twice_in_one_batch(engine, task):
    """Regression: NOT EXISTS only looks at history, so both copies in one batch are staged.

    425.00 over 3 orders becomes 675.00 over 4; the comparator reports one changed row naming both
    columns, never a missing or extra row.
    """
    log = make_log(task, THREE_ORDERS)
    script = (FIXTURES / "staging_not_in_history.sql").read_text()
    result = run(engine, script, log, batches((0, 1, 2, 2)), "daily_revenue")
    assert result.error is None
    assert result.target.to_pylist() == [
        {"store_id": 1, "day": DAY.date(), "revenue": Decimal("675.00"), "orders": 4}
    ]
    expected = compute_oracle(task, log, engine)
    assert expected.to_pylist() == [
        {"store_id": 1, "day": DAY.date(), "revenue": Decimal("425.00"), "orders": 3}
    ]
    comparison = compare(expected, result.target, task.spec.target)
    assert not comparison.equal
    counts = comparison.diff["counts"]
    assert counts["changed"] == 1
    assert counts["missing"] == counts["extra"] == counts["duplicate_key"] == counts["schema"] == 0
    (example,) = comparison.diff["examples"]["changed"]
    assert example["key"] == {"store_id": 1, "day": "2026-01-05"}
    assert example["columns"] == {
        "revenue": {"expected": "425.00", "actual": "675.00"},
        "orders": {"expected": 3, "actual": 4},
    }


def test_gold_is_exact_under_both_duplicate_shapes(engine, task):
    """The gold dedups within the batch and against history, so both shapes give 425.00 over 3."""
    log = make_log(task, THREE_ORDERS)
    expected = compute_oracle(task, log, engine)
    for shape in (
        batches((0, 1, 2), (2,)),
        batches((0, 1, 2, 2)),
        batches((2, 0), (1, 2, 2), (0,)),
    ):
        result = run(engine, task.gold_sql, log, shape, "daily_revenue")
        assert result.error is None, shape
        assert compare(expected, result.target, task.spec.target).equal, shape


# --- arrival metadata and the batch table -------------------------------------------------------


def test_delivery_table_holds_exactly_the_delivery_with_arrival_metadata(task):
    log = make_log(task, FIVE_ORDERS)
    table = delivery_table(log, Delivery(batch_id=7, rows=(3, 0, 3)), first_seq=11)
    assert table.column_names == [*task.spec.source.columns, "_arrival_seq", "_batch_id"]
    assert table.column("event_id").to_pylist() == [24, 21, 24]
    assert table.column("_arrival_seq").to_pylist() == [11, 12, 13]
    assert table.column("_batch_id").to_pylist() == [7, 7, 7]
    assert table.schema.field("_arrival_seq").type == pa.int64()
    assert table.schema.field("_batch_id").type == pa.int64()


def test_arrival_seq_counts_across_deliveries_and_batch_id_is_the_deliverys(engine, task):
    log = make_log(task, FIVE_ORDERS)
    script = (
        "CREATE TABLE IF NOT EXISTS seen AS SELECT * FROM sales_batch LIMIT 0;\n"
        "INSERT INTO seen SELECT * FROM sales_batch;"
    )
    deliveries = (
        Delivery(batch_id=1, rows=(2, 0)),
        Delivery(batch_id=2, rows=(4,)),
        Delivery(batch_id=3, rows=(1, 3, 0)),
    )
    result = run(engine, script, log, deliveries, "seen")
    seen = rows_of(result, "_arrival_seq")
    assert [(r["event_id"], r["_arrival_seq"], r["_batch_id"]) for r in seen] == [
        (23, 1, 1),
        (21, 2, 1),
        (25, 3, 2),
        (22, 4, 3),
        (24, 5, 3),
        (21, 6, 3),
    ]


def test_each_delivery_is_a_fresh_session_and_the_batch_table_is_temp(engine, task):
    """TEMP tables of one delivery are gone in the next; `sales_batch` is TEMP and holds one delivery."""
    log = make_log(task, FIVE_ORDERS)
    script = (FIXTURES / "session_probe.sql").read_text()
    result = run(engine, script, log, batches((0, 1), (2, 3, 4), (1,)), "sessions")
    sessions = rows_of(result, "batch_id")
    assert [r["batch_id"] for r in sessions] == [1, 2, 3]
    assert [r["scratch_visible"] for r in sessions] == [0, 0, 0]
    assert all(r["batch_is_temp"] for r in sessions)
    assert [r["batch_rows"] for r in sessions] == [2, 3, 1]


def test_omit_columns_and_add_synthetic_shape_the_batch_table(engine, task):
    log = make_log(task, FIVE_ORDERS)
    script = (FIXTURES / "session_probe.sql").read_text()
    synthetic, synthetic_type = SYNTHETIC_COLUMN
    deliveries = (
        Delivery(batch_id=1, rows=(0, 1), omit_columns=("sales.amount",)),
        Delivery(batch_id=2, rows=(2,)),
        Delivery(batch_id=3, rows=(3, 4), add_synthetic=True),
    )
    result = run(engine, script, log, deliveries, "sessions")
    columns = [r["batch_columns"] for r in rows_of(result, "batch_id")]
    base = "event_id BIGINT, ts_event TIMESTAMP, store_id INTEGER"
    meta = "_arrival_seq BIGINT, _batch_id BIGINT"
    assert columns == [
        f"{base}, {meta}",
        f"{base}, amount DECIMAL(12,2), {meta}",
        f"{base}, amount DECIMAL(12,2), {synthetic} {synthetic_type}, {meta}",
    ]
    table = delivery_table(log, deliveries[2], first_seq=4)
    values = table.column(synthetic).to_pylist()
    assert all(isinstance(v, str) and v for v in values)
    # The synthetic value is a function of the event, not of its position or batch.
    again = delivery_table(
        log, Delivery(batch_id=9, rows=(4, 3), add_synthetic=True), first_seq=100
    )
    assert dict(
        zip(again.column("event_id").to_pylist(), again.column(synthetic).to_pylist(), strict=True)
    ) == dict(zip(table.column("event_id").to_pylist(), values, strict=True))


def test_replacement_scans_cannot_reach_python_objects(engine, task, monkeypatch):
    """An Arrow table visible to the frame that executes pipeline SQL is still invisible to the SQL.

    DuckDB's replacement scan resolves unknown table names from the executing Python frame, so the
    table is planted in the globals of the engine module itself, where a scan would look first.
    """
    import arrivalbench.engines.duckdb as engine_module

    log = make_log(task, FIVE_ORDERS)
    monkeypatch.setattr(engine_module, "hidden_orders", log.table, raising=False)
    for name in ("hidden_orders", "log", "table", "tables", "__arrivalbench_delivery"):
        script = f'CREATE TABLE daily_revenue AS SELECT * FROM "{name}";'
        result = run(engine, script, log, batches((0,)), "daily_revenue")
        assert result.target is None, name
        assert result.error is not None and result.error.error_class == "sql_error", name
        assert (result.error.batch, result.error.statement) == (1, 1)
        assert "does not exist" in result.error.message


def test_pipeline_sessions_are_locked_down(engine):
    """The settings the sandbox relies on, as a pipeline session sees them; none can be changed."""
    database = engine.open(LIMITS)
    try:
        session = database.session()
        session.execute(
            "CREATE TEMP TABLE settings AS SELECT name, value FROM duckdb_settings() WHERE name IN "
            "('enable_external_access', 'python_enable_replacements', 'lock_configuration', 'threads', "
            "'autoinstall_known_extensions', 'autoload_known_extensions', 'allow_persistent_secrets', "
            "'temp_directory', 'allowed_directories', 'allowed_paths')"
        )
        settings = {r["name"]: r["value"] for r in session.read_table("settings").to_pylist()}
        assert settings == {
            "enable_external_access": "false",
            "python_enable_replacements": "false",
            "lock_configuration": "true",
            "threads": "1",
            "autoinstall_known_extensions": "false",
            "autoload_known_extensions": "false",
            "allow_persistent_secrets": "false",
            "temp_directory": "",
            "allowed_directories": "[]",
            "allowed_paths": "[]",
        }
        with pytest.raises(engine.errors):
            session.execute("SET threads = 4")
    finally:
        database.close()


# --- crash semantics -------------------------------------------------------------------------------


def test_crash_keeps_autocommitted_work_rolls_back_the_open_transaction_and_reruns_in_full(
    engine, task
):
    log = make_log(task, FIVE_ORDERS)
    script = (FIXTURES / "crash_probe.sql").read_text()
    statements = engine.split(script)
    assert [s.kind for s in statements][-3:] == ["TRANSACTION", "INSERT", "TRANSACTION"]
    crash = Crash(
        slot=4, of=5
    )  # no more boundaries than crashes: one stop, after statement 1 + 4 % 5
    assert crash.statements(len(statements)) == (len(statements) - 1,)  # stop before the COMMIT
    deliveries = (
        Delivery(batch_id=1, rows=(0, 1)),
        Delivery(batch_id=2, rows=(2, 3), crash=crash),
        Delivery(batch_id=3, rows=(4,)),
    )
    runs = rows_of(run(engine, script, log, deliveries, "runs"), "batch_id")
    # The autocommitted INSERT of the crashed run stayed, and the redelivery ran it again,
    # seeing the same rows with the same _arrival_seq values.
    assert [(r["batch_id"], r["n"], r["seqs"]) for r in runs] == [
        (1, 2, "1,2"),
        (2, 2, "3,4"),
        (2, 2, "3,4"),
        (3, 1, "5"),
    ]
    applied = rows_of(run(engine, script, log, deliveries, "applied"), "arrival_seq")
    # The open transaction of the crashed run was rolled back: every event applied exactly once.
    assert [(r["event_id"], r["arrival_seq"], r["batch_id"]) for r in applied] == [
        (21, 1, 1),
        (22, 2, 1),
        (23, 3, 2),
        (24, 4, 2),
        (25, 5, 3),
    ]


def test_crash_after_a_commit_keeps_the_committed_transaction(engine, task):
    """Stopping right after a COMMIT: the committed rows stay, and the retry commits them again."""
    log = make_log(task, FIVE_ORDERS)
    script = (
        "CREATE TABLE IF NOT EXISTS counts (batch_id BIGINT, n BIGINT);\n"
        "BEGIN; INSERT INTO counts SELECT max(_batch_id), count(*) FROM sales_batch; COMMIT;\n"
        "CREATE TABLE IF NOT EXISTS done (batch_id BIGINT);\n"
        "INSERT INTO done SELECT DISTINCT _batch_id FROM sales_batch;"
    )
    statements = engine.split(script)
    assert statements[3].kind == "TRANSACTION" and statements[3].index == 4
    crash = Crash(slot=3, of=5)
    assert crash.statements(len(statements)) == (4,)  # stop right after the COMMIT
    deliveries = (
        Delivery(batch_id=1, rows=(0, 1, 2), crash=crash),
        Delivery(batch_id=2, rows=(3, 4)),
    )
    counts = rows_of(run(engine, script, log, deliveries, "counts"), "batch_id")
    assert [(r["batch_id"], r["n"]) for r in counts] == [(1, 3), (1, 3), (2, 2)]
    done = rows_of(run(engine, script, log, deliveries, "done"), "batch_id")
    assert [r["batch_id"] for r in done] == [1, 2]


def test_each_crash_point_is_one_attempt_followed_by_a_full_run(engine, task):
    """Replay honours every stop Crash.statements deals to a delivery, then runs the script whole."""
    log = make_log(task, FIVE_ORDERS)
    script = "CREATE TABLE IF NOT EXISTS marks (k INT);\n" + "".join(
        f"INSERT INTO marks VALUES ({k});\n" for k in (2, 3, 4)
    )
    crash = Crash(slot=0, of=1)
    stops = crash.statements(4)
    assert len(stops) > 1  # a script longer than the crash count is stopped at several points
    result = run(engine, script, log, (Delivery(batch_id=1, rows=(0,), crash=crash),), "marks")
    marks = [r["k"] for r in result.target.to_pylist()]
    for k in (2, 3, 4):
        assert marks.count(k) == 1 + sum(1 for p in stops if p >= k), (k, stops, marks)


def test_injected_crash_is_not_an_error_but_an_error_in_the_retry_is(engine, task):
    log = make_log(task, FIVE_ORDERS)
    crashed = (
        Delivery(batch_id=1, rows=(0,)),
        Delivery(batch_id=2, rows=(1, 2), crash=Crash(slot=0, of=1)),
    )
    # Idempotent statements: the crash is invisible in the verdict.
    ok = run(
        engine,
        "CREATE TABLE IF NOT EXISTS m (x INT);\nCREATE OR REPLACE TABLE t AS SELECT 1 AS x;",
        log,
        crashed,
        "t",
    )
    assert ok.error is None and ok.target.num_rows == 1
    # A first statement that cannot run twice: the retry of batch 2 fails at statement 1, as an ERROR.
    script = "CREATE TABLE marker_b2 AS SELECT 1 AS x FROM sales_batch WHERE _batch_id = 2 LIMIT 0;\nSELECT 1;"
    result = run(
        engine,
        script,
        log,
        (Delivery(batch_id=2, rows=(1,), crash=Crash(slot=0, of=1)),),
        "marker_b2",
    )
    assert result.target is None
    assert result.error is not None
    assert (result.error.error_class, result.error.batch, result.error.statement) == (
        "sql_error",
        2,
        1,
    )
    assert "marker_b2" in result.error.message


def test_one_statement_script_is_never_crashed(engine, task):
    """A crash needs a point between statements; with one statement the batch simply runs once."""
    log = make_log(task, FIVE_ORDERS)
    assert Crash(slot=0, of=1).statements(1) == ()
    script = "CREATE TABLE n AS SELECT 1 AS x;"  # fails if it runs a second time
    once = run(
        engine, script, log, (Delivery(batch_id=1, rows=(0,), crash=Crash(slot=0, of=1)),), "n"
    )
    assert once.error is None and once.target.to_pylist() == [{"x": 1}]
    twice = run(engine, script, log, batches((0,), (1,)), "n")
    assert twice.error is not None and (twice.error.error_class, twice.error.batch) == (
        "sql_error",
        2,
    )


def test_transaction_left_open_at_the_end_of_a_run_is_rolled_back(engine, task):
    """A script that never commits loses its work when its session ends, as in production."""
    log = make_log(task, FIVE_ORDERS)
    script = "BEGIN;\nCREATE TABLE daily_revenue AS SELECT store_id FROM sales_batch;"
    result = run(engine, script, log, batches((0, 1)), "daily_revenue")
    assert result.target is None
    assert result.error is not None and result.error.error_class == "missing_target"
    assert (result.error.batch, result.error.statement) == (1, None)


def test_statement_error_stops_the_replay_with_its_batch_and_statement(engine, task):
    log = make_log(task, FIVE_ORDERS)
    script = (
        "CREATE TABLE IF NOT EXISTS k (event_id BIGINT PRIMARY KEY);\n"
        "INSERT INTO k SELECT event_id FROM sales_batch;"
    )
    result = run(engine, script, log, batches((0, 1), (2,), (1, 3), (4,)), "k")
    assert result.target is None
    assert (result.error.error_class, result.error.batch, result.error.statement) == (
        "sql_error",
        3,
        2,
    )
    assert (
        "constraint" in result.error.message.lower() or "duplicate" in result.error.message.lower()
    )


def test_statement_timeout_interrupts_and_classifies_as_timeout(engine, task):
    log = make_log(task, FIVE_ORDERS)
    endless = "SELECT 1;\nWITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r;"
    limits = Limits(statement_timeout=1.0, memory_limit="256MB")
    result = replay(
        engine, engine.split(endless), make_schedule(log, *batches((0,))), log, "x", limits
    )
    assert result.target is None
    assert (result.error.error_class, result.error.batch, result.error.statement) == (
        "timeout",
        1,
        2,
    )
    assert "1 s" in result.error.message


# --- reading the target ---------------------------------------------------------------------------


def test_target_may_be_a_view_over_persistent_tables(engine, task):
    log = make_log(task, FIVE_ORDERS)
    script = (
        "CREATE TABLE IF NOT EXISTS h AS SELECT * FROM sales_batch LIMIT 0;\n"
        "INSERT INTO h SELECT * FROM sales_batch;\n"
        "CREATE OR REPLACE VIEW daily_revenue AS SELECT store_id, count(*) AS orders FROM h GROUP BY ALL;"
    )
    result = run(engine, script, log, batches((0, 1), (2, 3, 4)), "daily_revenue")
    assert sorted(map(tuple, (r.values() for r in rows_of(result, "store_id")))) == [(1, 3), (2, 2)]


def test_target_view_over_the_batch_table_reports_the_vanished_dependency(engine, task):
    log = make_log(task, FIVE_ORDERS)
    script = "CREATE OR REPLACE VIEW daily_revenue AS SELECT store_id, count(*) AS orders FROM sales_batch GROUP BY ALL;"
    result = run(engine, script, log, batches((0, 1)), "daily_revenue")
    assert result.error is not None
    assert result.error.error_class == "sql_error"
    assert "sales_batch" in result.error.message


def test_regression_long_script_is_stopped_only_where_the_committed_state_changed(engine, task):
    """A script past `of * PER_DELIVERY` boundaries was stopped at four evenly spread points
    (1, 7, 13, 19 of 20 here), whatever the statements did, and the INSERT after statement 12
    was never interrupted. Now every boundary is watched: the replay stops after each statement
    that changed the committed state (the CREATE once, each INSERT), and never after padding."""
    log = make_log(task, FIVE_ORDERS)
    lines = ["CREATE TABLE IF NOT EXISTS marks (k INT);"] + [f"SELECT {i};" for i in range(2, 21)]
    for k in (7, 12):
        lines[k - 1] = f"INSERT INTO marks VALUES ({k});"
    crash = Crash(slot=0, of=1)
    assert crash.statements(20) == () and crash.watched(20) == tuple(range(1, 20))
    result = run(engine, "\n".join(lines), log, (Delivery(1, (0,), crash=crash),), "marks")
    marks = [r["k"] for r in result.target.to_pylist()]
    # attempts stop after 1 (CREATE), 7, 12; the fourth passes every boundary unchanged
    assert (marks.count(7), marks.count(12)) == (3, 2)
    assert result.statements_run == 1 + 7 + 12 + 20


# --- crash points a script could dodge (issue 21): padded negative controls --------------------


def _padded(statements: list[str], at: int, total: int, filler) -> str:
    """The control's first two statements, filler up to statement `at`, the control's last two
    (its crash-unsafe pair: stopping between them applies a batch twice), filler to `total`."""
    head, pair = statements[:2], statements[2:]
    middle = [filler(i) for i in range(len(head) + 1, at)]
    tail = [filler(i) for i in range(at + len(pair), total + 1)]
    return "\n".join(s + ";" for s in head + middle + pair + tail)


@pytest.mark.slow
@pytest.mark.parametrize("engine_name", ["duckdb", "sqlite"])
@pytest.mark.parametrize("total", [20, 40])
@pytest.mark.parametrize("filler", ["select", "junk_insert"])
def test_regression_padding_a_crash_unsafe_control_no_longer_dodges_crash_retry(
    engine_name: str, total: int, filler: str
):
    """daily_revenue's ledger_after_update control, padded to 20 or 40 statements so that its
    non-atomic step sits after statement 10, passed crash_retry: past 16 boundaries only 16
    evenly spread ones were crashed, and 10 was not among them. Padding with writes to a junk
    table (which change the state, so they are crashed too) dodged the same way."""
    from arrivalbench.dialects import script_for
    from arrivalbench.grade import Grader

    task = get_task("daily_revenue")
    name = "controls/ledger_after_update.sql"
    control = script_for(task, name, task.controls[name], engine_name)
    statements = [s.text for s in get_engine(engine_name).split(control)]
    assert len(statements) == 4
    fill = {
        "select": lambda i: f"SELECT {i}",
        "junk_insert": lambda i: (
            "CREATE TABLE IF NOT EXISTS junk (i INTEGER)"
            if i == 3
            else f"INSERT INTO junk VALUES ({i})"
        ),
    }[filler]
    script = _padded(statements, 10, total, fill)
    assert len(get_engine(engine_name).split(script)) == total
    limits = Limits(statement_timeout=5.0, memory_limit="512MB", replay_timeout=100.0)
    with Grader(limits=limits, engine_name=engine_name) as grader:
        plain, _ = grader.grade(task, control, ["crash_retry"])
        record, _ = grader.grade(task, script, ["crash_retry"])
    assert plain["verdicts"]["crash_retry"]["verdict"] == "FAIL"
    assert record["verdicts"]["crash_retry"]["verdict"] == "FAIL", record["verdicts"]
