"""`arrivalbench check`: a user's own SQL pipeline or dbt model over the user's own log.

Everything runs for real: SQL pipelines in the sandbox worker, dbt models through dbt-core and
dbt-duckdb (the `dbt` extra, which `make test` installs). CLI behaviour is tested by running
the CLI.
"""

from __future__ import annotations

import datetime as dt
import json
import runpy
import shutil
import sqlite3
import xml.etree.ElementTree as ET
from itertools import pairwise
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arrivalbench.check.delivery import arrival_base, deliverer, first_arrivals, stamp
from arrivalbench.check.log import LogColumns, read_log
from arrivalbench.check.runner import CHECK_SCHEDULES, plan
from arrivalbench.engines import Limits
from arrivalbench.engines.duckdb import DuckDBDatabase
from arrivalbench.schedules import REGISTRY
from conftest import run_cli
from test_cli import HOSTILE_ERROR, SHOWN_ERROR

ROOT = Path(__file__).resolve().parents[1]
SHOP = ROOT / "examples" / "dbt_shop"
make_log = runpy.run_path(str(SHOP / "make_log.py"))["make_log"]

SQL_ARGS = ("--source-table", "raw_orders", "--target", "daily_orders")
LOG_ARGS = ("--key", "order_id", "--event-time", "ordered_at")
STAMPED = ("--arrival-column", "_loaded_at", "--ignore-column", "_loaded_at")

# Batch mode: the source holds one delivery; the pipeline keeps what it saw, once per order.
DEDUP_BATCH = """
CREATE TABLE IF NOT EXISTS seen (order_id VARCHAR PRIMARY KEY, ordered_at TIMESTAMP, amount DECIMAL(10,2));
INSERT OR IGNORE INTO seen SELECT DISTINCT ON (order_id) order_id, ordered_at, amount FROM raw_orders;
CREATE OR REPLACE TABLE daily_orders AS
SELECT ordered_at::DATE AS day, count(*) AS orders, sum(amount) AS revenue FROM seen GROUP BY 1;
"""
# Batch mode, the common mistake: a day's total is replaced by the total of this delivery.
REPLACE_DAYS = """
CREATE TABLE IF NOT EXISTS daily_orders (day DATE, orders BIGINT, revenue DECIMAL(18,2));
DELETE FROM daily_orders WHERE day IN (SELECT DISTINCT ordered_at::DATE FROM raw_orders);
INSERT INTO daily_orders SELECT ordered_at::DATE, count(*), sum(amount) FROM raw_orders GROUP BY 1;
"""
# Landing mode: the landing table holds everything; recompute over it, each order once.
LANDING_DEDUP = """
CREATE OR REPLACE TABLE daily_orders AS
SELECT ordered_at::DATE AS day, count(*) AS orders, sum(amount) AS revenue
FROM (SELECT DISTINCT ON (order_id) * FROM raw_orders) GROUP BY 1;
"""
# Landing mode without deduplication: right under late arrival, wrong under redelivery.
LANDING_COUNT_ALL = """
CREATE OR REPLACE TABLE daily_orders AS
SELECT ordered_at::DATE AS day, count(*) AS orders, sum(amount) AS revenue FROM raw_orders GROUP BY 1;
"""
# Landing mode, filtering on the loader's arrival column: late rows arrive new; redeliveries too.
ARRIVAL_FILTER = """
CREATE TABLE IF NOT EXISTS loaded (order_id VARCHAR, ordered_at TIMESTAMP, amount DECIMAL(10,2), _loaded_at TIMESTAMP);
INSERT INTO loaded SELECT order_id, ordered_at, amount, _loaded_at FROM raw_orders
WHERE _loaded_at > (SELECT coalesce(max(_loaded_at), TIMESTAMP '1970-01-01') FROM loaded);
CREATE OR REPLACE TABLE daily_orders AS
SELECT ordered_at::DATE AS day, count(*) AS orders, sum(amount) AS revenue FROM loaded GROUP BY 1;
"""
ORACLE = """
SELECT ordered_at::DATE AS day, count(*) AS orders, sum(amount) AS revenue FROM raw_orders GROUP BY 1
"""


@pytest.fixture(scope="module")
def orders(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_log(tmp_path_factory.mktemp("log") / "orders.parquet", orders=240, seed=3)


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def check_json(*args: str | Path) -> tuple[int, dict, str]:
    done = run_cli("check", *args, "--json")
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout), done.stderr


def verdicts(record: dict) -> dict[str, str]:
    return {name: entry["verdict"] for name, entry in record["verdicts"].items()}


# --- the log and the schedules over it ------------------------------------------------------------


def test_a_user_log_is_ordered_by_event_time_and_keyed_by_any_type(orders: Path, tmp_path: Path):
    shuffled = pq.read_table(orders)
    shuffled = shuffled.take(np.random.default_rng(0).permutation(shuffled.num_rows))
    pq.write_table(shuffled, tmp_path / "shuffled.parquet")
    log = read_log(str(tmp_path / "shuffled.parquet"), LogColumns("order_id", "ordered_at"), "src")
    again = read_log(str(orders), LogColumns("order_id", "ordered_at"), "src")
    assert log.fingerprint() == again.fingerprint(), "row order of the file must not matter"
    assert np.all(np.diff(log.ts_micros()) >= 0)
    assert log.event_ids().dtype == object  # text keys
    built, skipped = plan(log, list(CHECK_SCHEDULES), 1)
    assert set(built) == set(CHECK_SCHEDULES) - {"schema_evolution"}
    assert "--evolving-column" in skipped["schema_evolution"]
    for name, schedule in built.items():
        delivered = {row for d in schedule.deliveries for row in d.rows}
        assert delivered == set(range(log.n)), name
        if REGISTRY[name].group != "benign":
            assert schedule.bites(), name


def test_csv_json_and_duckdb_table_logs_read_like_parquet(orders: Path, tmp_path: Path):
    con = duckdb.connect(str(tmp_path / "warehouse.duckdb"))
    con.execute(f"CREATE SCHEMA raw; CREATE TABLE raw.orders AS SELECT * FROM '{orders}'")
    con.execute(f"COPY raw.orders TO '{tmp_path / 'orders.csv'}' (HEADER)")
    con.execute(f"COPY raw.orders TO '{tmp_path / 'orders.json'}'")
    con.close()
    columns = LogColumns("order_id", "ordered_at")
    expected = read_log(str(orders), columns, "src").fingerprint()
    for where in ("orders.csv", "orders.json", "warehouse.duckdb:raw.orders"):
        assert read_log(str(tmp_path / where), columns, "src").fingerprint() == expected, where


def test_text_entity_keys_pair_events_of_the_same_entity(tmp_path: Path):
    table = pa.table(
        {
            "id": [f"e{i}" for i in range(60)],
            "account": [["a", "b", "c"][i % 3] for i in range(60)],
            "ts": pa.array(np.arange(60) * 3_600_000_000, pa.timestamp("us")),
        }
    )
    pq.write_table(table, tmp_path / "log.parquet")
    log = read_log(str(tmp_path / "log.parquet"), LogColumns("id", "ts", "account"), "src")
    keys = log.entity_keys()
    assert keys is not None and len(set(keys.tolist())) == 3
    schedule = REGISTRY["out_of_order"].build(log, 5)
    assert (
        schedule.perturbation["cross_batch_moves"] + schedule.perturbation["same_key_within_batch"]
        > 0
    )


def test_arrival_stamps_increase_and_a_crash_retry_is_restamped(orders: Path):
    log = read_log(str(orders), LogColumns("order_id", "ordered_at"), "raw_orders")
    schedule = REGISTRY["crash_retry"].build(log, 2)
    crashed = next(i for i, d in enumerate(schedule.deliveries) if d.crash)
    database = DuckDBDatabase(Limits())
    try:
        deliver = deliverer(log, schedule, {"raw_orders": "raw_orders"}, "landing", "_loaded_at")
        for index, delivery in enumerate(schedule.deliveries):
            for attempt in range(2 if index == crashed else 1):
                session = database.session()
                deliver(session, delivery, attempt)
                session.close()
        session = database.session()
        session.execute(
            "CREATE TEMP TABLE r AS SELECT _loaded_at, count(*) AS n FROM raw_orders GROUP BY 1"
        )
        table = session.read_table("r")
        session.close()
    finally:
        database.close()
    stamps = sorted(table.column("_loaded_at").to_pylist())
    base = arrival_base(log)
    assert len(stamps) == len(schedule.deliveries) + 1  # the retry landed with a stamp of its own
    assert all(a < b for a, b in pairwise(stamps))
    assert stamps[0] == dt.datetime(1970, 1, 1) + dt.timedelta(microseconds=base)
    first = first_arrivals(log, REGISTRY["late_arrival"].build(log, 2), base)
    assert first.min() == stamp(base, 0, 0) and (first >= base).all()


# --- SQL pipelines -----------------------------------------------------------------------------


@pytest.mark.slow
def test_sql_batch_mode_with_the_full_refresh_oracle(orders: Path, tmp_path: Path):
    good = write(tmp_path, "good.sql", DEDUP_BATCH)
    code, record, stderr = check_json("--pipeline", good, "--log", orders, *SQL_ARGS, *LOG_ARGS)
    assert code == 0
    assert record["mode"] == "batch" and record["oracle"] == "full_refresh"
    assert set(verdicts(record).values()) == {"PASS"}
    assert set(record["verdicts"]) == set(CHECK_SCHEDULES) - {"schema_evolution"}
    assert "schema_evolution" in record["skipped"]
    assert "check: [7/7]" in stderr  # progress on stderr
    bad = write(tmp_path, "bad.sql", REPLACE_DAYS)
    code, record, _ = check_json("--pipeline", bad, "--log", orders, *SQL_ARGS, *LOG_ARGS)
    assert code == 1
    assert verdicts(record)["single_batch"] == "PASS"
    assert verdicts(record)["late_arrival"] == "FAIL"
    diff = record["verdicts"]["late_arrival"]["diff"]
    assert diff["counts"]["changed"] > 0  # keyed on the leading 'day' column, not on every column


@pytest.mark.slow
def test_sql_landing_mode_redeliveries_accumulate(orders: Path, tmp_path: Path):
    args = ("--log", orders, *SQL_ARGS, *LOG_ARGS, "--mode", "landing")
    args += ("--schedules", "late_arrival,duplicate_delivery")
    good = write(tmp_path, "good.sql", LANDING_DEDUP)
    code, record, _ = check_json("--pipeline", good, *args)
    assert code == 0 and record["mode"] == "landing"
    naive = write(tmp_path, "naive.sql", LANDING_COUNT_ALL)
    code, record, _ = check_json("--pipeline", naive, *args)
    assert code == 1
    assert verdicts(record) == {
        "late_arrival": "PASS",
        "duplicate_delivery": "FAIL",
    }


# Landing mode in each engine's SQL: recompute over everything landed, each order once or not.
LANDING = {
    "sqlite": (
        "DROP TABLE IF EXISTS daily_orders; CREATE TABLE daily_orders AS SELECT date(ordered_at)"
        " AS day, count(*) AS orders, round(sum(amount), 2) AS revenue FROM ({rows}) GROUP BY 1;",
        "SELECT * FROM raw_orders WHERE rowid IN (SELECT min(rowid) FROM raw_orders GROUP BY"
        " order_id)",
    ),
    "postgres": (
        "DROP TABLE IF EXISTS daily_orders; CREATE TABLE daily_orders AS SELECT ordered_at::date"
        " AS day, count(*) AS orders, sum(amount) AS revenue FROM ({rows}) AS r GROUP BY 1;",
        "SELECT DISTINCT ON (order_id) * FROM raw_orders",
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_regression_landing_mode_was_refused_on_sqlite_and_postgres(
    orders: Path, tmp_path: Path, engine: str, request: pytest.FixtureRequest
):
    """Their sessions had no landing-table append, so `check --mode landing --engine sqlite`
    (or postgres) was refused: a landing pipeline could not be checked on its own engine."""
    if engine == "postgres":
        request.getfixturevalue("postgres_engine")
    script, dedup = LANDING[engine]
    args = ("--log", orders, *SQL_ARGS, *LOG_ARGS, "--mode", "landing", "--engine", engine)
    args += ("--schedules", "late_arrival,duplicate_delivery,crash_retry")
    good = write(tmp_path, "good.sql", script.format(rows=dedup))
    code, record, _ = check_json("--pipeline", good, *args)
    assert code == 0, record
    assert record["mode"] == "landing" and record["engine"] == engine
    naive = write(tmp_path, "naive.sql", script.format(rows="SELECT * FROM raw_orders"))
    code, record, _ = check_json("--pipeline", naive, *args)
    assert code == 1
    assert verdicts(record)["late_arrival"] == "PASS"
    assert verdicts(record)["duplicate_delivery"] == "FAIL"


def test_sql_arrival_filter_passes_late_arrival_and_fails_duplicate_delivery(
    orders: Path, tmp_path: Path
):
    pipeline = write(tmp_path, "arrival.sql", ARRIVAL_FILTER)
    code, record, _ = check_json(
        "--pipeline", pipeline, "--log", orders, *SQL_ARGS, *LOG_ARGS, "--mode", "landing",
        *STAMPED, "--schedules", "in_order_stream,late_arrival,duplicate_delivery",
    )  # fmt: skip
    assert code == 1
    assert verdicts(record) == {
        "in_order_stream": "PASS",
        "late_arrival": "PASS",
        "duplicate_delivery": "FAIL",
    }


@pytest.mark.slow
def test_sql_with_a_given_oracle(orders: Path, tmp_path: Path):
    pipeline = write(tmp_path, "good.sql", DEDUP_BATCH)
    oracle = write(tmp_path, "oracle.sql", ORACLE)
    args = ("--pipeline", pipeline, "--log", orders, *SQL_ARGS, *LOG_ARGS)
    args += ("--schedules", "single_batch,late_arrival")
    code, record, _ = check_json(*args, "--oracle", oracle)
    assert code == 0 and record["oracle"] == str(oracle)
    # The given query, not the pipeline's full refresh, is what the pipeline is held to.
    wrong = write(tmp_path, "wrong.sql", ORACLE.replace("count(*)", "count(*) + 1"))
    code, record, _ = check_json(*args, "--oracle", wrong)
    assert code == 1
    assert verdicts(record) == {"single_batch": "FAIL", "late_arrival": "FAIL"}
    assert record["verdicts"]["single_batch"]["diff"]["changed_columns"] == {"orders": 10}


def test_a_pipeline_that_raises_is_an_error_not_bad_input(orders: Path, tmp_path: Path):
    pipeline = write(tmp_path, "p.sql", "INSERT INTO daily_orders SELECT * FROM raw_orders;")
    code, record, _ = check_json(
        "--pipeline", pipeline, "--log", orders, *SQL_ARGS, *LOG_ARGS,
        "--schedules", "in_order_stream",
    )  # fmt: skip
    assert code == 1
    entry = record["verdicts"]["in_order_stream"]
    assert entry["verdict"] == "ERROR" and entry["error_class"] == "sql_error"
    assert entry["batch"] == 1 and "daily_orders" in entry["message"]


@pytest.mark.slow
def test_regression_escapes_and_markup_in_an_engine_message_reached_checks_table(
    cli, orders: Path, tmp_path: Path
):
    """check's table printed the engine's message as Rich markup, with its ESC sequences raw."""
    pipeline = write(tmp_path, "hostile.sql", HOSTILE_ERROR)
    result = cli(
        "check", "--pipeline", pipeline, "--log", orders, *SQL_ARGS, *LOG_ARGS,
        "--schedules", "in_order_stream",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    for shown in SHOWN_ERROR:
        assert shown in result.output
    assert "in_order_stream" in result.output and "ERROR" in result.output


def test_regression_an_escape_in_an_engine_message_made_the_junit_xml_unparsable(tmp_path: Path):
    """XML 1.0 holds no ESC or BEL: the engine's words went in raw and the file did not parse."""
    from arrivalbench.check.junit import junit_xml

    message = "Invalid Input Error: \x1b]52;c;eA==\x07"
    entry = {"verdict": "ERROR", "error_class": "sql_error", "batch": 1, "statement": 1}
    record = {"task": "t", "verdicts": {"snapshot": {**entry, "message": message}}}
    junit_xml(record, "suite", tmp_path / "r.xml")
    error = ET.parse(tmp_path / "r.xml").find("testcase/error")
    assert error is not None and error.text == "Invalid Input Error: \\x1b]52;c;eA==\\x07"
    assert error.get("message", "").endswith("\\x1b]52;c;eA==\\x07")


def test_junit_xml_has_one_testcase_per_schedule(cli, orders: Path, tmp_path: Path):
    pipeline = write(tmp_path, "bad.sql", REPLACE_DAYS)
    report = tmp_path / "out" / "check.xml"
    done = cli(
        "check", "--pipeline", pipeline, "--log", orders, *SQL_ARGS, *LOG_ARGS,
        "--schedules", "single_batch,late_arrival,schema_evolution", "--junit-xml", report,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    suite = ET.parse(report).getroot()
    assert suite.tag == "testsuite"
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert set(cases) == {"single_batch", "late_arrival", "schema_evolution"}
    assert list(cases["single_batch"]) == []
    failure = cases["late_arrival"].find("failure")
    assert failure is not None and "changed" in failure.get("message", "")
    assert json.loads(failure.text or "")["counts"]["changed"] > 0
    assert cases["schema_evolution"].find("skipped") is not None
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("3", "1", "1")


def test_schema_evolution_runs_with_an_evolving_column(tmp_path: Path):
    n = 120
    table = pa.table(
        {
            "order_id": list(range(n)),
            "ordered_at": pa.array(np.arange(n) * 7_200_000_000, pa.timestamp("us")),
            "coupon": [None] * (n // 2) + [f"c{i % 4}" for i in range(n - n // 2)],
        }
    )
    pq.write_table(table, tmp_path / "log.parquet")
    select_star = write(
        tmp_path, "p.sql", "CREATE OR REPLACE TABLE daily_orders AS SELECT * FROM raw_orders;"
    )
    code, record, _ = check_json(
        "--pipeline", select_star, "--log", tmp_path / "log.parquet", *SQL_ARGS,
        *LOG_ARGS, "--mode", "landing", "--evolving-column", "coupon",
        "--schedules", "schema_evolution",
    )  # fmt: skip
    assert record["skipped"] == {}
    assert verdicts(record) == {"schema_evolution": "PASS"}  # the landing table grew the column
    assert code == 0


# --- bad input: one line, exit 2 ------------------------------------------------------------------


def _bad_logs(folder: Path) -> dict[str, Path]:
    con = duckdb.connect()
    paths = {}
    for name, sql in {
        "null_key": "SELECT CASE WHEN i = 3 THEN NULL ELSE i END AS order_id, "
        "TIMESTAMP '2026-01-01' + INTERVAL (i) HOUR AS ordered_at FROM range(20) t(i)",
        "repeated_key": "SELECT i % 5 AS order_id, TIMESTAMP '2026-01-01' + INTERVAL (i) HOUR "
        "AS ordered_at FROM range(20) t(i)",
        "text_time": "SELECT i AS order_id, 'noon' AS ordered_at FROM range(20) t(i)",
    }.items():
        paths[name] = folder / f"{name}.parquet"
        con.execute(f"COPY ({sql}) TO '{paths[name]}' (FORMAT parquet)")
    con.close()
    return paths


@pytest.mark.parametrize(
    ("case", "needle"),
    [
        ("missing_key_column", "--key order_ids: no such column"),
        ("null_key", "have a NULL key"),
        ("repeated_key", "keys of"),
        ("text_time", "not a timestamp or date"),
        ("missing_log", "file not found"),
        ("unknown_format", "unknown log format"),
        ("both_pipeline_and_dbt", "not both"),
        ("no_target", "needs --target"),
        ("unknown_schedule", "Unknown schedule 'late_arival'"),
        ("bad_mode", "--mode stream"),
        ("qualified_target", "--target main.daily_orders: give the table's name alone"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    cli, orders: Path, tmp_path: Path, case: str, needle: str
):
    pipeline = write(tmp_path, "p.sql", DEDUP_BATCH)
    logs = _bad_logs(tmp_path)
    args: list[str | Path] = ["--pipeline", pipeline, "--log", orders, *SQL_ARGS, *LOG_ARGS]
    if case == "missing_key_column":
        args[args.index("order_id")] = "order_ids"
    elif case in logs:
        args[args.index(orders)] = logs[case]
    elif case == "missing_log":
        args[args.index(orders)] = tmp_path / "nowhere.parquet"
    elif case == "unknown_format":
        args[args.index(orders)] = write(tmp_path, "log.xlsx", "x")
    elif case == "both_pipeline_and_dbt":
        args += ["--dbt-project", SHOP]
    elif case == "no_target":
        args = args[:5] + args[7:]
    elif case == "unknown_schedule":
        args += ["--schedules", "late_arival"]
    elif case == "bad_mode":
        args += ["--mode", "stream"]
    elif case == "qualified_target":
        args[args.index("daily_orders")] = "main.daily_orders"
    done = cli("check", *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("arrivalbench: error:"), done.stderr
    assert needle in lines[0]
    assert "Traceback" not in done.stderr


# --- grade for CI ---------------------------------------------------------------------------------


@pytest.mark.slow
def test_grade_fail_on_and_junit_xml(cli, tmp_path: Path):
    from arrivalbench.spec import get_task

    task = get_task("daily_revenue")
    control = task.folder / "controls" / "dedup_history_only.sql"
    args = ("grade", "--task", task.id, "--pipeline", control, "--schedules", "duplicate_delivery")
    report = tmp_path / "grade.xml"
    done = cli(*args, "--junit-xml", report)
    assert done.returncode == 0, done.stderr  # --fail-on never: today's behaviour
    assert ET.parse(report).getroot().find("testcase/failure") is not None
    assert cli(*args, "--fail-on", "fail").returncode == 1
    assert cli(*args, "--fail-on", "error").returncode == 0
    assert cli(*args, "--fail-on", "any", "--json").returncode == 1
    wrong = cli(*args, "--fail-on", "sometimes")
    assert wrong.returncode == 2 and "--fail-on sometimes" in wrong.stderr


# --- dbt ------------------------------------------------------------------------------------------

DBT_ARGS = ("--source", "raw.orders", *LOG_ARGS)
ARRIVAL_MODEL = """
{{ config(materialized='incremental') }}
select order_id, customer_id, amount, ordered_at, _loaded_at
from {{ source('raw', 'orders') }}
{% if is_incremental() %}
where _loaded_at > (select max(_loaded_at) from {{ this }})
{% endif %}
"""


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    project = tmp_path / "shop"
    shutil.copytree(SHOP, project, ignore=shutil.ignore_patterns("target", "logs", "*.parquet"))
    return project


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_dbt_arrival_filter_passes_late_arrival_and_fails_duplicate_delivery(
    orders: Path, shop: Path
):
    write(shop / "models", "orders_by_arrival.sql", ARRIVAL_MODEL)
    before = _files(shop)
    code, record, _ = check_json(
        "--dbt-project", shop, "--model", "orders_by_arrival", "--log", orders, *DBT_ARGS,
        *STAMPED, "--schedules", "late_arrival,duplicate_delivery",
    )  # fmt: skip
    assert code == 1
    assert record["mode"] == "landing" and record["oracle"] == "full_refresh"
    assert verdicts(record) == {"late_arrival": "PASS", "duplicate_delivery": "FAIL"}
    assert record["verdicts"]["duplicate_delivery"]["diff"]["counts"]["duplicate_key"] > 0
    assert _files(shop) == before, "the user's project folder must never be written"


@pytest.mark.slow
def test_dbt_shop_watermark_model_fails_and_fixed_model_passes(orders: Path):
    before = _files(SHOP)
    args = ("--dbt-project", SHOP, "--log", orders, *DBT_ARGS, *STAMPED)
    code, record, _ = check_json(*args, "--model", "orders_watermark")
    assert code == 1
    assert verdicts(record)["late_arrival"] == "FAIL"
    assert verdicts(record)["in_order_stream"] == "PASS"
    assert record["verdicts"]["late_arrival"]["diff"]["counts"]["missing"] > 0
    code, record, _ = check_json(*args, "--model", "orders_fixed")
    assert code == 0, record
    assert set(verdicts(record)) == set(CHECK_SCHEDULES) - {"schema_evolution"}
    assert _files(SHOP) == before


@pytest.mark.slow
@pytest.mark.parametrize(
    ("case", "needle"),
    [
        ("unknown_model", "--model orders_watermak: no such model"),
        ("unknown_source", "--source raw.order: no such source"),
        ("does_not_parse", "the project does not parse"),
        ("not_a_project", "no dbt_project.yml"),
    ],
)
def test_dbt_bad_input_is_one_line_and_exit_2(
    cli, orders: Path, shop: Path, case: str, needle: str
):
    model, source, project = "orders_watermark", "raw.orders", shop
    if case == "unknown_model":
        model = "orders_watermak"
    elif case == "unknown_source":
        source = "raw.order"
    elif case == "does_not_parse":
        write(shop / "models", "broken.sql", "select {{ ref('nowhere' }}")
    else:
        project = shop / "models"
    done = cli(
        "check", "--dbt-project", project, "--model", model, "--source", source,
        "--log", orders, *LOG_ARGS,
    )  # fmt: skip
    assert done.returncode == 2, (done.stdout, done.stderr)
    # "check: parsing the dbt project…" is progress, printed before the project is known bad
    lines = [x for x in done.stderr.strip().splitlines() if not x.startswith("check: ")]
    assert len(lines) == 1 and needle in lines[0], done.stderr


def test_duplicate_delivery_on_a_million_events_gives_the_plain_list_result():
    """duplicate_delivery inserted each copy with list.index/list.insert, quadratic in the batch
    size (minutes on a user's 10^6-event log); its chunked list must give the same rows."""
    from arrivalbench.schedules import _ChunkedList

    rng = np.random.default_rng(11)
    for n in (1, 2, 150, 2_000):
        rows = [int(x) for x in rng.permutation(n)]
        plain, chunked = list(rows), _ChunkedList(list(rows))
        for row in rng.choice(rows, size=int(rng.integers(0, n + 1)), replace=False):
            at = plain.index(int(row))
            assert chunked.index(int(row)) == at
            k = int(rng.integers(at + 1, len(plain) + 1))
            plain.insert(k, int(row))
            chunked.insert(k, int(row))
        assert chunked.to_list() == plain


# --- on SQLite and PostgreSQL: the user's SQL, every piece of it, runs on the chosen engine --------

DEDUP_BATCH_SQLITE = """
CREATE TABLE IF NOT EXISTS seen (order_id TEXT PRIMARY KEY, ordered_at TIMESTAMP, amount DECIMAL(10,2));
INSERT OR IGNORE INTO seen SELECT order_id, ordered_at, amount FROM raw_orders;
DROP TABLE IF EXISTS daily_orders;
CREATE TABLE daily_orders AS
SELECT date(ordered_at) AS day, count(*) AS orders, round(sum(amount), 2) AS revenue FROM seen GROUP BY 1;
"""
REPLACE_DAYS_SQLITE = """
CREATE TABLE IF NOT EXISTS daily_orders (day DATE, orders BIGINT, revenue DECIMAL(18,2));
DELETE FROM daily_orders WHERE day IN (SELECT DISTINCT date(ordered_at) FROM raw_orders);
INSERT INTO daily_orders SELECT date(ordered_at), count(*), round(sum(amount), 2) FROM raw_orders GROUP BY 1;
"""
ORACLE_SQLITE = """
-- every order once: the log holds each once
SELECT date(ordered_at) AS day, count(*) AS orders, round(sum(amount), 2) AS revenue
FROM raw_orders GROUP BY 1;
"""
DEDUP_BATCH_POSTGRES = """
CREATE TABLE IF NOT EXISTS seen (order_id TEXT PRIMARY KEY, ordered_at TIMESTAMP, amount NUMERIC(10,2));
INSERT INTO seen SELECT DISTINCT ON (order_id) order_id, ordered_at, amount FROM raw_orders
ON CONFLICT (order_id) DO NOTHING;
DROP TABLE IF EXISTS daily_orders;
CREATE TABLE daily_orders AS
SELECT ordered_at::date AS day, count(*) AS orders, sum(amount) AS revenue FROM seen GROUP BY 1;
"""
SOME = ("--schedules", "single_batch,late_arrival,duplicate_delivery,crash_retry")


@pytest.mark.slow
def test_sql_pipeline_on_sqlite_against_its_own_full_refresh(cli, orders: Path, tmp_path: Path):
    args = ("--log", orders, *SQL_ARGS, *LOG_ARGS, *SOME, "--engine", "sqlite")
    good = write(tmp_path, "good.sql", DEDUP_BATCH_SQLITE)
    code, record, _ = check_json("--pipeline", good, *args)
    assert code == 0, record
    assert (record["engine"], record["engine_version"]) == ("sqlite", sqlite3.sqlite_version)
    assert record["oracle"] == "full_refresh" and set(verdicts(record).values()) == {"PASS"}
    shown = cli(
        "check", "--pipeline", good, "--log", orders, *SQL_ARGS, *LOG_ARGS, "--engine", "sqlite",
        "--schedules", "single_batch",
    )  # fmt: skip
    assert shown.returncode == 0 and f"sqlite {sqlite3.sqlite_version}" in shown.stdout
    bad = write(tmp_path, "bad.sql", REPLACE_DAYS_SQLITE)
    code, record, _ = check_json("--pipeline", bad, *args)
    assert code == 1
    assert verdicts(record)["single_batch"] == "PASS"
    assert verdicts(record)["late_arrival"] == "FAIL"
    # DuckDB's SQL is not SQLite's: the same check of DuckDB's pipeline errors on every schedule,
    # its full refresh included (the full refresh ran on SQLite too).
    duck = write(tmp_path, "duck.sql", DEDUP_BATCH)
    code, record, _ = check_json("--pipeline", duck, *args)
    assert code == 1 and set(verdicts(record).values()) == {"ERROR"}


@pytest.mark.slow
def test_an_oracle_query_runs_on_the_pipelines_engine(cli, orders: Path, tmp_path: Path):
    pipeline = write(tmp_path, "good.sql", DEDUP_BATCH_SQLITE)
    args = ("--pipeline", pipeline, "--log", orders, *SQL_ARGS, *LOG_ARGS, "--engine", "sqlite")
    args += ("--schedules", "single_batch,late_arrival")
    oracle = write(tmp_path, "oracle.sql", ORACLE_SQLITE)
    code, record, _ = check_json(*args, "--oracle", oracle)
    assert code == 0 and record["oracle"] == str(oracle)
    wrong = write(tmp_path, "wrong.sql", ORACLE_SQLITE.replace("count(*)", "count(*) + 1"))
    code, record, _ = check_json(*args, "--oracle", wrong)
    assert code == 1 and record["verdicts"]["single_batch"]["diff"]["changed_columns"] == {
        "orders": 10
    }
    # DuckDB's spelling of the oracle does not run on SQLite: one line, exit 2, nothing graded.
    duck = write(tmp_path, "duck_oracle.sql", ORACLE)  # ordered_at::DATE is not SQLite's SQL
    done = cli("check", *args, "--oracle", duck)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith("check: [")]
    assert len(lines) == 1 and "the query failed on sqlite" in lines[0], done.stderr
    two = write(tmp_path, "two.sql", ORACLE_SQLITE + ORACLE_SQLITE)
    done = cli("check", *args, "--oracle", two)
    assert done.returncode == 2 and "holds 2 statements; give one query" in done.stderr


@pytest.mark.slow
def test_sql_pipeline_on_postgres_against_its_own_full_refresh(
    orders: Path, tmp_path: Path, postgres_engine
):
    args = ("--log", orders, *SQL_ARGS, *LOG_ARGS, *SOME, "--engine", "postgres")
    good = write(tmp_path, "good.sql", DEDUP_BATCH_POSTGRES)
    code, record, _ = check_json("--pipeline", good, *args)
    assert code == 0, record
    assert (record["engine"], record["engine_version"]) == ("postgres", postgres_engine.version)
    assert set(verdicts(record).values()) == {"PASS"}
    # A pipeline that counts every delivered row: right once, wrong when a row comes again.
    naive = (
        DEDUP_BATCH_POSTGRES.replace("SELECT DISTINCT ON (order_id)", "SELECT")
        .replace("order_id TEXT PRIMARY KEY", "order_id TEXT")
        .replace("ON CONFLICT (order_id) DO NOTHING", "")
    )
    code, record, _ = check_json("--pipeline", write(tmp_path, "naive.sql", naive), *args)
    assert code == 1
    assert verdicts(record)["single_batch"] == "PASS"
    assert verdicts(record)["duplicate_delivery"] == "FAIL"


@pytest.mark.parametrize(
    ("case", "needle"),
    [
        ("dbt_on_sqlite", "check --dbt-project runs dbt-duckdb or dbt-postgres; --engine sqlite"),
        ("landing_in_a_schema_on_sqlite", "--source-table raw.orders: SQLite has no schemas"),
        ("unknown_engine", "Unknown engine 'mysql'"),
    ],
)
def test_engine_combinations_check_cannot_run_are_one_line_exit_2(
    cli, orders: Path, tmp_path: Path, case: str, needle: str
):
    if case.startswith("dbt"):
        engine = case.removeprefix("dbt_on_")
        args = ["--dbt-project", SHOP, "--model", "daily_orders", *DBT_ARGS, "--engine", engine]
    else:
        pipeline = write(tmp_path, "p.sql", DEDUP_BATCH_SQLITE)
        args = ["--pipeline", pipeline, *SQL_ARGS, *LOG_ARGS]
        if case.startswith("landing"):
            args += ["--mode", "landing", "--engine", "sqlite", "--source-table", "raw.orders"]
        args += ["--engine", "mysql"] if case == "unknown_engine" else []
    done = cli("check", "--log", orders, *args)
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("arrivalbench: error:"), done.stderr
    assert needle in lines[0] and "Traceback" not in done.stderr
