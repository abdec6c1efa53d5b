"""`check` over several sources (check/sources.py): `--source NAME=PATH`, per-source columns,
`--static`, bad input, the record's fingerprint, and a SQL pipeline and a dbt project that join
orders with customers (examples/dbt_customers)."""

from __future__ import annotations

import json
import runpy
import shutil
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arrivalbench.check.delivery import delivered_tables
from arrivalbench.check.log import LogColumns
from arrivalbench.check.sources import (
    SourceFile,
    check_read,
    per_source,
    read_sources,
    source_files,
    split_source_flags,
)
from arrivalbench.errors import CheckInputError, UsageError
from conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
CUSTOMERS = ROOT / "examples" / "dbt_customers"
make_logs = runpy.run_path(str(CUSTOMERS / "make_log.py"))["make_logs"]

COLUMNS = (
    "--key", "orders=order_id", "--key", "customers=change_id",
    "--event-time", "orders=ordered_at", "--event-time", "customers=effective_at",
)  # fmt: skip
DBT_COLUMNS = tuple(c if c.startswith("--") else f"raw.{c}" for c in COLUMNS)
STAMPED = ("--arrival-column", "_loaded_at", "--ignore-column", "_loaded_at")

# Batch mode, enriching each order once, when it arrives, with the customers seen so far.
AT_ARRIVAL = """
CREATE TABLE IF NOT EXISTS known (change_id VARCHAR, customer_id BIGINT, tier VARCHAR, effective_at TIMESTAMP);
INSERT INTO known SELECT * FROM customers;
CREATE TABLE IF NOT EXISTS enriched (order_id VARCHAR PRIMARY KEY, customer_id BIGINT, tier VARCHAR);
INSERT OR IGNORE INTO enriched
SELECT DISTINCT ON (order_id) order_id, customer_id,
       (SELECT k.tier FROM known k WHERE k.customer_id = o.customer_id AND k.effective_at <= o.ordered_at
        ORDER BY k.effective_at DESC, k.change_id DESC LIMIT 1)
FROM orders o;
CREATE OR REPLACE TABLE order_tiers AS SELECT * FROM enriched;
"""
# Batch mode, keeping both histories and rebuilding the join over them every run.
FULL_HISTORY = """
CREATE TABLE IF NOT EXISTS known (change_id VARCHAR, customer_id BIGINT, tier VARCHAR, effective_at TIMESTAMP);
INSERT INTO known SELECT * FROM customers;
CREATE TABLE IF NOT EXISTS seen (order_id VARCHAR PRIMARY KEY, customer_id BIGINT, ordered_at TIMESTAMP);
INSERT OR IGNORE INTO seen SELECT DISTINCT ON (order_id) order_id, customer_id, ordered_at FROM orders;
CREATE OR REPLACE TABLE order_tiers AS
SELECT order_id, customer_id,
       (SELECT k.tier FROM known k WHERE k.customer_id = s.customer_id AND k.effective_at <= s.ordered_at
        ORDER BY k.effective_at DESC, k.change_id DESC LIMIT 1) AS tier
FROM seen s;
"""
# The same two pipelines in PostgreSQL's SQL (no INSERT OR IGNORE, no CREATE OR REPLACE TABLE).
AT_ARRIVAL_POSTGRES = """
CREATE TABLE IF NOT EXISTS known (change_id TEXT, customer_id BIGINT, tier TEXT, effective_at TIMESTAMP);
INSERT INTO known SELECT change_id, customer_id, tier, effective_at FROM customers;
CREATE TABLE IF NOT EXISTS order_tiers (order_id TEXT PRIMARY KEY, customer_id BIGINT, tier TEXT);
INSERT INTO order_tiers
SELECT DISTINCT ON (order_id) order_id, customer_id,
       (SELECT k.tier FROM known k WHERE k.customer_id = o.customer_id AND k.effective_at <= o.ordered_at
        ORDER BY k.effective_at DESC, k.change_id DESC LIMIT 1)
FROM orders o ORDER BY order_id
ON CONFLICT (order_id) DO NOTHING;
"""
FULL_HISTORY_POSTGRES = """
CREATE TABLE IF NOT EXISTS known (change_id TEXT, customer_id BIGINT, tier TEXT, effective_at TIMESTAMP);
INSERT INTO known SELECT change_id, customer_id, tier, effective_at FROM customers;
CREATE TABLE IF NOT EXISTS seen (order_id TEXT PRIMARY KEY, customer_id BIGINT, ordered_at TIMESTAMP);
INSERT INTO seen SELECT DISTINCT ON (order_id) order_id, customer_id, ordered_at FROM orders
ORDER BY order_id ON CONFLICT (order_id) DO NOTHING;
DROP TABLE IF EXISTS order_tiers;
CREATE TABLE order_tiers AS
SELECT order_id, customer_id,
       (SELECT k.tier FROM known k WHERE k.customer_id = s.customer_id AND k.effective_at <= s.ordered_at
        ORDER BY k.effective_at DESC, k.change_id DESC LIMIT 1) AS tier
FROM seen s;
"""


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_logs(tmp_path_factory.mktemp("logs"), orders=240, customers=20, seed=3)


def sources_args(logs: Path) -> tuple[str, ...]:
    return (
        "--source", f"orders={logs / 'orders.parquet'}",
        "--source", f"customers={logs / 'customers.parquet'}",
    )  # fmt: skip


def verdicts(record: dict) -> dict[str, str]:
    return {name: entry["verdict"] for name, entry in record["verdicts"].items()}


def check_json(*args: str | Path) -> tuple[int, dict]:
    done = run_cli("check", *args, "--json")
    assert done.returncode in (0, 1), done.stderr
    return done.returncode, json.loads(done.stdout)


# --- parsing --------------------------------------------------------------------------------------


def test_source_pairs_keep_their_order_and_the_one_source_form_stays():
    assert split_source_flags(["raw.b=b.csv", "raw.a = a.parquet"]) == (
        None,
        [("raw.b", "b.csv"), ("raw.a", "a.parquet")],
    )
    assert split_source_flags(["raw.orders"]) == ("raw.orders", [])
    assert split_source_flags([]) == (None, [])


def test_a_bare_column_is_every_source_not_named():
    names = ["orders", "customers", "regions"]
    given = ["orders=order_id", "id"]
    assert per_source("--key", given, names) == {
        "orders": "order_id",
        "customers": "id",
        "regions": "id",
    }
    assert per_source("--entity-key", [], names) == {}


def test_a_static_source_needs_no_event_time(logs: Path):
    pairs = [("orders", "o.parquet"), ("customers", "c.parquet")]
    files = source_files(
        pairs, ["orders=order_id", "customers=change_id"], ["orders=ordered_at"], [], [],
        ["customers"], "_loaded_at",
    )  # fmt: skip
    orders, customers = files
    assert (orders.static, customers.static) == (False, True)
    assert customers.columns.event_time is None and customers.columns.key == "change_id"
    assert orders.columns.arrival_column == customers.columns.arrival_column == "_loaded_at"


def test_streamed_sources_share_one_spine_and_a_static_one_comes_whole_first(logs: Path):
    pairs = [
        ("orders", str(logs / "orders.parquet")),
        ("customers", str(logs / "customers.parquet")),
    ]
    keys = ["orders=order_id", "customers=change_id"]
    both = read_sources(
        source_files(pairs, keys, ["orders=ordered_at", "customers=effective_at"], [], [], [], None)
    )
    assert both.static == ()
    assert both.log.n == 240 + 20 * 3  # every order and every tier change on the spine
    assert set(both.log.tables) == {"orders", "customers"}
    times = both.log.ts_micros()
    assert np.all(np.diff(times) >= 0)  # the spine interleaves the feeds by event time

    one = read_sources(
        source_files(pairs, keys, ["orders=ordered_at"], [], [], ["customers"], None)
    )
    assert one.log.n == 240 and set(one.log.tables) == {"orders"}
    (name, table), = one.static  # fmt: skip
    assert name == "customers" and table.num_rows == 60
    first = delivered_tables(one.log, np.arange(10), (), None, None, one.static, first=True)
    later = delivered_tables(one.log, np.arange(10, 20), (), None, None, one.static, first=False)
    assert first["customers"].num_rows == 60 and later["customers"].num_rows == 0
    assert first["orders"].num_rows == later["orders"].num_rows == 10


def test_regression_a_static_source_was_left_out_of_the_log_fingerprint(logs: Path, tmp_path: Path):
    """The record's log_fingerprint hashed the streamed log alone: a changed dimension file gave
    the same fingerprint (and the same schedule digests) as the old one."""
    changed = tmp_path / "customers.parquet"
    con = duckdb.connect()
    con.execute(
        f"COPY (SELECT * REPLACE (CASE WHEN change_id = 'c-0001-0' THEN 'platinum' ELSE tier END "
        f"AS tier) FROM '{logs / 'customers.parquet'}') TO '{changed}' (FORMAT parquet)"
    )
    con.close()

    def fingerprint(customers: Path, static: list[str]) -> str:
        pairs = [("orders", str(logs / "orders.parquet")), ("customers", str(customers))]
        keys = ["orders=order_id", "customers=change_id"]
        when = ["orders=ordered_at", "customers=effective_at"]
        return read_sources(source_files(pairs, keys, when, [], [], static, None)).fingerprint()

    assert fingerprint(logs / "customers.parquet", ["customers"]) != fingerprint(
        changed, ["customers"]
    )
    assert fingerprint(logs / "customers.parquet", ["customers"]) == fingerprint(
        logs / "customers.parquet", ["customers"]
    )
    # without a static source it is the log's own fingerprint, as for today's records
    pairs = [("orders", str(logs / "orders.parquet"))]
    alone = read_sources(source_files(pairs, ["order_id"], ["ordered_at"], [], [], [], None))
    assert alone.fingerprint() == alone.log.fingerprint()


# --- bad input ------------------------------------------------------------------------------------


def test_a_repeated_source_name_is_refused():
    with pytest.raises(UsageError, match=r"--source raw\.orders: named twice"):
        split_source_flags(["raw.orders=a.parquet", "raw.orders=b.parquet"])


def test_a_source_the_pipeline_never_reads_is_refused():
    def files(*names: str) -> tuple[SourceFile, ...]:
        return tuple(SourceFile(n, f"{n}.parquet", LogColumns("id", "ts")) for n in names)

    script = "CREATE OR REPLACE TABLE t AS SELECT * FROM raw.orders JOIN Customers USING (id);"
    check_read(script, files("raw.orders", "customers"), "duckdb")  # schema kept, case ignored
    with pytest.raises(UsageError, match=r"reads no table raw\.order .*Did you mean 'raw\.orders'"):
        check_read(script, files("raw.order", "customers"), "duckdb")
    check_read("CREATE TABLE (((", files("anything"), "duckdb")  # left to the engine


def test_regression_a_static_dimension_with_repeated_keys_was_refused_as_events(tmp_path: Path):
    """`--static customers --key customers=cust` over a dimension with two rows per customer
    said "keys repeat; the log must hold each event once", and with no --key for it, "has no
    key column": a static source is a table delivered whole, not events; it needs neither."""
    (tmp_path / "o.csv").write_text("oid,ts\no1,2026-01-01 00:00:00\n", encoding="utf-8")
    (tmp_path / "d.csv").write_text("cust,tier\n2,gold\n1,silver\n1,gold\n", encoding="utf-8")
    pairs = [("orders", str(tmp_path / "o.csv")), ("customers", str(tmp_path / "d.csv"))]
    for keys in (["orders=oid", "customers=cust"], ["orders=oid"]):
        files = source_files(pairs, keys, ["orders=ts"], [], [], ["customers"], None)
        ((name, table),) = read_sources(files).static
        assert name == "customers"
        assert table.to_pylist() == [
            {"cust": 1, "tier": "gold"},
            {"cust": 1, "tier": "silver"},
            {"cust": 2, "tier": "gold"},
        ]  # every row, in a stable order (the fingerprint hashes them)
    with pytest.raises(UsageError, match="source orders has no key column"):
        source_files(pairs, ["customers=cust"], ["orders=ts"], [], [], ["customers"], None)


def test_regression_a_source_named_in_another_case_was_no_source():
    """`--key ORDERS=oid` beside `--source orders=...` said "no source named ORDERS", with no
    "did you mean" (difflib minds case), while the pipeline's check and SQL ignore case; and
    `--source orders=a --source ORDERS=b`, one table to the engine, was taken as two."""
    assert per_source("--key", ["ORDERS=oid", "id"], ["orders", "customers"]) == {
        "orders": "oid",
        "customers": "id",
    }
    pairs = [("orders", "o.csv"), ("customers", "c.csv")]
    files = source_files(pairs, ["id"], ["Orders=ts"], [], [], ["Customers"], None)
    assert [(f.name, f.static, f.columns.event_time) for f in files] == [
        ("orders", False, "ts"),
        ("customers", True, None),
    ]
    with pytest.raises(UsageError, match=r"--source ORDERS: named twice \(as orders"):
        split_source_flags(["orders=a.csv", "ORDERS=b.csv"])


def named_files(*names: str) -> tuple[SourceFile, ...]:
    return tuple(SourceFile(n, f"{n}.parquet", LogColumns("id", "ts")) for n in names)


def test_regression_a_source_without_a_schema_passed_for_a_table_read_in_one():
    """`--source orders=...` for a pipeline that reads raw.orders passed the check (the bare
    name matched) and landed in the default schema: an ERROR on every schedule. The list of
    tables it names showed aliases ('known AS k')."""
    script = "INSERT INTO out SELECT * FROM raw.orders o JOIN known k USING (id);"
    with pytest.raises(
        UsageError, match=r"reads no table orders .*Did you mean 'raw\.orders'"
    ) as e:
        check_read(script, named_files("orders"), "duckdb")
    assert "tables it names: known, out, raw.orders)" in str(e.value)
    assert check_read(script, named_files("raw.orders"), "duckdb") == {"raw.orders": "raw.orders"}


def test_regression_an_uppercase_source_on_postgres_landed_where_the_pipeline_never_reads():
    """`--source CUSTOMERS=...` made a table "CUSTOMERS" on PostgreSQL, which folds the
    pipeline's unquoted `customers` to lower case: relation "customers" does not exist, on
    every schedule. A source lands under the pipeline's own spelling, as the engine reads it."""
    script = 'SELECT * FROM Customers JOIN "Orders" USING (id) JOIN RAW.Regions USING (id);'
    files = named_files("CUSTOMERS", "orders", "raw.regions")
    assert check_read(script, files, "postgres") == {
        "CUSTOMERS": "customers",
        "orders": "Orders",
        "raw.regions": "raw.regions",
    }


@pytest.mark.parametrize(
    ("case", "needle"),
    [
        ("unknown_source", "--source custmers="),
        ("unknown_key_source", "--key customer=change_id: no source named customer"),
        ("unknown_time_source", "--event-time client=effective_at: no source named client"),
        ("unknown_static", "--static custmers: no source named custmers"),
        ("key_missing", "source customers has no key column; give --key customers=COL"),
        ("key_not_in_one_source", "--key customers=order_id: no such column in source customers"),
        ("no_event_time", "give --event-time customers=COL (or --static customers"),
        ("duplicate_source", "--source orders: named twice"),
        ("missing_file", "file not found (looked for "),
        ("log_and_source", "not both"),
        ("every_source_static", "every source is static"),
        ("source_table_with_sources", "--source-table raw_orders is for --log"),
    ],
)
def test_bad_sources_are_one_line_and_exit_2(logs: Path, tmp_path: Path, case: str, needle: str):
    pipeline = tmp_path / "p.sql"
    pipeline.write_text(FULL_HISTORY, encoding="utf-8")
    sources = list(sources_args(logs))
    columns = list(COLUMNS)
    extra: list[str] = []
    if case == "unknown_source":  # the pipeline reads customers
        sources[3] = sources[3].replace("customers=", "custmers=")
        columns = [c.replace("customers=", "custmers=") for c in columns]
        needle += f"{logs / 'customers.parquet'}: the pipeline reads no table custmers"
    elif case == "unknown_key_source":
        columns[3] = "customer=change_id"
    elif case == "unknown_time_source":
        columns[7] = "client=effective_at"
    elif case == "unknown_static":
        extra = ["--static", "custmers"]
    elif case == "key_missing":
        del columns[2:4]
    elif case == "key_not_in_one_source":
        columns[:4] = ["--key", "order_id"]
    elif case == "no_event_time":
        del columns[6:8]
    elif case == "duplicate_source":
        extra = ["--source", f"orders={logs / 'orders.parquet'}"]
    elif case == "missing_file":
        sources[3] = "customers=data/customers.parquet"
        needle += str(tmp_path / "data" / "customers.parquet")
    elif case == "log_and_source":
        extra = ["--log", str(logs / "orders.parquet")]
    elif case == "every_source_static":
        extra = ["--static", "orders", "--static", "customers"]
    else:
        extra = ["--source-table", "raw_orders"]
    done = run_cli(
        "check", "--pipeline", pipeline, "--target", "order_tiers", *sources, *columns, *extra,
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("arrivalbench: error:"), done.stderr
    assert needle in lines[0]
    assert "Traceback" not in done.stderr


# --- a SQL pipeline over two sources --------------------------------------------------------------


@pytest.mark.slow
def test_sql_join_at_arrival_fails_out_of_order_and_full_history_passes(logs: Path, tmp_path: Path):
    args = ("--target", "order_tiers", *sources_args(logs), *COLUMNS)
    at_arrival = tmp_path / "at_arrival.sql"
    at_arrival.write_text(AT_ARRIVAL, encoding="utf-8")
    code, record = check_json("--pipeline", at_arrival, *args)
    assert code == 1
    assert verdicts(record)["in_order_stream"] == "PASS"
    assert verdicts(record)["out_of_order"] == "FAIL"
    assert record["verdicts"]["out_of_order"]["diff"]["counts"]["changed"] > 0

    full = tmp_path / "full.sql"
    full.write_text(FULL_HISTORY, encoding="utf-8")
    code, record = check_json("--pipeline", full, *args)
    assert code == 0, record
    assert set(verdicts(record)) == {
        "single_batch", "in_order_stream", "late_arrival", "out_of_order",
        "duplicate_delivery", "crash_retry", "backfill",
    }  # fmt: skip

    # customers as a dimension delivered once, first: enriching at arrival is then right
    static = ("--static", "customers")
    code, record = check_json("--pipeline", at_arrival, *args, *static)
    assert code == 0, record


@pytest.mark.slow
def test_sql_two_sources_on_postgres_join_at_arrival_fails_and_full_history_passes(
    logs: Path, tmp_path: Path, postgres_engine
):
    args = ("--target", "order_tiers", *sources_args(logs), *COLUMNS, "--engine", "postgres")
    some = ("--schedules", "in_order_stream,out_of_order,backfill")
    at_arrival = tmp_path / "at_arrival.sql"
    at_arrival.write_text(AT_ARRIVAL_POSTGRES, encoding="utf-8")
    code, record = check_json("--pipeline", at_arrival, *args, *some)
    assert code == 1
    assert record["engine"] == "postgres"
    assert verdicts(record)["in_order_stream"] == "PASS"
    assert verdicts(record)["out_of_order"] == "FAIL"

    full = tmp_path / "full.sql"
    full.write_text(FULL_HISTORY_POSTGRES, encoding="utf-8")
    code, record = check_json("--pipeline", full, *args, *some)
    assert code == 0, record
    assert set(verdicts(record).values()) == {"PASS"}
    code, record = check_json("--pipeline", at_arrival, *args, *some, "--static", "customers")
    assert code == 0, record


# --- a dbt project over two sources (examples/dbt_customers) --------------------------------------


@pytest.fixture(scope="module")
def dbt_logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("dbt.adapters.duckdb")
    return make_logs(tmp_path_factory.mktemp("dbt_logs"))


def dbt_args(logs: Path) -> tuple[str, ...]:
    return (
        "--dbt-project", str(CUSTOMERS),
        "--source", f"raw.orders={logs / 'orders.parquet'}",
        "--source", f"raw.customers={logs / 'customers.parquet'}",
        *STAMPED,
    )  # fmt: skip


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.slow
def test_dbt_customers_join_at_arrival_fails_and_full_history_passes(dbt_logs: Path):
    before = _files(CUSTOMERS)
    args = (*dbt_args(dbt_logs), *DBT_COLUMNS)
    code, record = check_json(
        *args, "--model", "orders_tier_at_arrival", "--schedules", "in_order_stream,out_of_order"
    )
    assert code == 1
    assert verdicts(record) == {"in_order_stream": "PASS", "out_of_order": "FAIL"}
    assert record["verdicts"]["out_of_order"]["diff"]["counts"]["changed"] > 0

    code, record = check_json(*args, "--model", "orders_tier_rebuilt")
    assert code == 0, record
    assert verdicts(record)["out_of_order"] == verdicts(record)["late_arrival"] == "PASS"
    assert len(record["verdicts"]) == 7
    assert _files(CUSTOMERS) == before, "the user's project folder must never be written"


@pytest.mark.slow
def test_dbt_customers_static_dimension_makes_the_arrival_join_right(dbt_logs: Path):
    columns = ("--key", "raw.orders=order_id", "--key", "raw.customers=change_id",
               "--event-time", "raw.orders=ordered_at", "--static", "raw.customers")  # fmt: skip
    code, record = check_json(
        *dbt_args(dbt_logs), *columns, "--model", "orders_tier_at_arrival",
        "--schedules", "late_arrival,out_of_order",
    )  # fmt: skip
    assert code == 0, record
    assert verdicts(record) == {"late_arrival": "PASS", "out_of_order": "PASS"}


@pytest.mark.slow
def test_dbt_unknown_source_is_one_line_and_exit_2(dbt_logs: Path, tmp_path: Path):
    project = tmp_path / "customers"
    shutil.copytree(CUSTOMERS, project, ignore=shutil.ignore_patterns("target", "logs"))
    done = run_cli(
        "check", "--dbt-project", project, "--model", "orders_tier_rebuilt",
        "--source", f"raw.orders={dbt_logs / 'orders.parquet'}",
        "--source", f"raw.customer={dbt_logs / 'customers.parquet'}",
        "--key", "raw.orders=order_id", "--key", "raw.customer=change_id",
        "--event-time", "raw.orders=ordered_at", "--event-time", "raw.customer=effective_at",
    )  # fmt: skip
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = [x for x in done.stderr.strip().splitlines() if not x.startswith("check: ")]
    assert len(lines) == 1 and "--source raw.customer: no such source" in lines[0], done.stderr
    assert "raw.customers" in lines[0]  # the sources the project declares


@pytest.mark.slow
def test_dbt_customers_on_duckdb_and_postgres_side_by_side(logs: Path, postgres_engine):
    """The two-source project on dbt-duckdb and dbt-postgres (`--engine` twice): the join at
    arrival FAILs out_of_order on both engines; the join on the full history PASSes on
    PostgreSQL."""
    pytest.importorskip("dbt.adapters.duckdb")
    pytest.importorskip("dbt.adapters.postgres")
    args = (*dbt_args(logs), *DBT_COLUMNS, "--schedules", "in_order_stream,out_of_order")
    both = ("--engine", "duckdb", "--engine", "postgres")
    code, record = check_json(*args, *both, "--model", "orders_tier_at_arrival")
    assert code == 1
    assert list(record["engines"]) == ["duckdb", "postgres"]
    for engine, one in record["engines"].items():
        assert verdicts(one) == {"in_order_stream": "PASS", "out_of_order": "FAIL"}, engine
    assert "dbt-postgres" in record["engines"]["postgres"]["dbt_version"]

    on_postgres = (*dbt_args(logs), *DBT_COLUMNS, "--engine", "postgres")
    some = ("--schedules", "late_arrival,out_of_order,backfill")
    code, record = check_json(*on_postgres, *some, "--model", "orders_tier_rebuilt")
    assert code == 0, record
    assert verdicts(record) == dict.fromkeys(("late_arrival", "out_of_order", "backfill"), "PASS")


def test_regression_a_text_event_time_was_told_to_cast_epoch_seconds(tmp_path: Path):
    """A Parquet source storing its event time as text ('2026-01-01 10:00:00') was told to cast
    it with to_timestamp(epoch_seconds), a function for numbers, not text."""
    path = tmp_path / "orders.parquet"
    pq.write_table(pa.table({"oid": ["o1"], "placed": ["2026-01-01 10:00:00"]}), path)
    pairs = [("orders", str(path))]
    with pytest.raises(CheckInputError, match=r'is VARCHAR .*CAST\("placed" AS TIMESTAMP\)'):
        read_sources(source_files(pairs, ["oid"], ["placed"], [], [], [], None))
    pq.write_table(pa.table({"oid": ["o1"], "placed": [1767261600]}), path)
    with pytest.raises(CheckInputError, match=r'is BIGINT .*to_timestamp\("placed"\)'):
        read_sources(source_files(pairs, ["oid"], ["placed"], [], [], [], None))
