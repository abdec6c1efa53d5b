"""`arrivalbench check` cost on this machine, measured in one run; writes benchmarks/results/check.*.

    python benchmarks/check.py                    # every measurement
    python benchmarks/check.py --events 100000    # a smaller SQL log, for a quick look
    python benchmarks/check.py --dbt-only         # (c) alone: writes benchmarks/results/check_dbt.*

Reports (issue 14):
(a) seconds for a one-model dbt project (examples/dbt_shop, orders_fixed, landing mode with an
    arrival column) over the default schedules, the full refreshes included; target <= 30 s;
(b) for a SQL pipeline over a 10^6-event log (batch mode, default schedules): the check's wall
    time over the engine's own statement time (every replay's and the full refresh's
    statements); target <= 2;
(c) issue 27: seconds for the same one-model dbt project (one source, 600 events) per engine
    (duckdb; postgres when the harness's private server starts) with --workers 1 and 2, the
    full refreshes and each worker's parse included; target <= 60 s. Written to check_dbt.*.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import runpy
import tempfile
import time
from pathlib import Path

import duckdb

from arrivalbench import __version__
from arrivalbench.check import Check, CheckConfig, LogColumns
from arrivalbench.engines import Limits

ROOT = Path(__file__).resolve().parents[1]
RESULTS = Path(__file__).parent / "results"
SHOP = ROOT / "examples" / "dbt_shop"
PIPELINE = """
CREATE TABLE IF NOT EXISTS seen (order_id VARCHAR PRIMARY KEY, ordered_at TIMESTAMP, amount DECIMAL(10,2));
INSERT OR IGNORE INTO seen SELECT DISTINCT ON (order_id) order_id, ordered_at, amount FROM raw_orders;
CREATE OR REPLACE TABLE daily_orders AS
SELECT ordered_at::DATE AS day, count(*) AS orders, sum(amount) AS revenue FROM seen GROUP BY 1;
"""


def dbt_project_seconds(log: Path, engine: str = "duckdb", workers: int = 1) -> tuple[float, dict]:
    config = CheckConfig(
        engine=engine,
        workers=workers,
        log=str(log),
        columns=LogColumns("order_id", "ordered_at", arrival_column="_loaded_at"),
        seed=20260101,
        limits=Limits(60.0, "2GB", 600.0),
        dbt_project=SHOP,
        model="orders_fixed",
        source="raw.orders",
        ignore_columns=("_loaded_at",),
    )
    started = time.perf_counter()
    record, timings = Check(config).run(None)
    wall = time.perf_counter() - started
    assert all(e["verdict"] == "PASS" for e in record["verdicts"].values()), record
    return wall, timings


def sql_ratio(log: Path, scratch: Path) -> tuple[float, float, dict]:
    pipeline = scratch / "pipeline.sql"
    pipeline.write_text(PIPELINE, encoding="utf-8")
    config = CheckConfig(
        log=str(log),
        columns=LogColumns("order_id", "ordered_at"),
        seed=20260101,
        limits=Limits(600.0, "4GB", 3600.0, 10_000_000),
        pipeline=pipeline,
        source_table="raw_orders",
        target="daily_orders",
    )
    started = time.perf_counter()
    record, timings = Check(config).run(PIPELINE)
    wall = time.perf_counter() - started
    assert all(e["verdict"] == "PASS" for e in record["verdicts"].values()), record
    statements = sum(t["statement_seconds"] for t in timings.values())
    return wall, statements, timings


def postgres_available() -> str | None:
    """Why the private PostgreSQL server cannot start here, or None when it can."""
    from arrivalbench.engines import get_engine

    try:
        get_engine("postgres")
    except Exception as exc:  # no binaries, or the server does not start
        return str(exc).splitlines()[0]
    return None


def engines_and_workers(shop_log: Path) -> None:
    """(c): the dbt project per engine, with 1 and 2 workers, in one run."""
    engines = ["duckdb"]
    missing = postgres_available()
    if missing is None:
        engines.append("postgres")
    rows = []
    for engine in engines:
        for workers in (1, 2):
            started_load = os.getloadavg()[0]
            wall, timings = dbt_project_seconds(shop_log, engine, workers)
            rows.append(
                {
                    "engine": engine,
                    "workers": workers,
                    "seconds": round(wall, 2),
                    "load_average_at_start": round(started_load, 2),
                    "load_average_at_end": round(os.getloadavg()[0], 2),
                    "timings": timings,
                }
            )
            print(f"(c) dbt on {engine}, --workers {workers}: {wall:.1f} s (target <= 60)")
    uptime = Path("/proc/uptime").read_text().split()[0] if Path("/proc/uptime").exists() else ""
    result = {
        "measured": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "uptime_seconds": float(uptime) if uptime else None,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "duckdb": duckdb.__version__,
        "harness_version": __version__,
        "postgres": "measured" if missing is None else f"not measured: {missing}",
        "runs": rows,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "check_dbt.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    lines = [
        "# Check benchmark (c): a one-model dbt project per engine and worker count",
        "",
        f"Measured {result['measured']} on {result['machine']}, DuckDB {result['duckdb']}; "
        f"load average at the end {result['load_average_at_end']} (the machine was shared). "
        "examples/dbt_shop's orders_fixed, one source, 600 events, the default schedules, the "
        "full refreshes and every worker's parse included.",
        "",
        "| engine | --workers | seconds | load average at start / end | target |",
        "| --- | --- | --- | --- | --- |",
        *(
            f"| {r['engine']} | {r['workers']} | {r['seconds']:.1f} | "
            f"{r['load_average_at_start']} / {r['load_average_at_end']} | <= 60 |"
            for r in rows
        ),
        "",
    ]
    if missing is not None:
        lines.append(f"PostgreSQL not measured: {missing}.\n")
    (RESULTS / "check_dbt.md").write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {RESULTS / 'check_dbt.md'}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000)
    parser.add_argument("--dbt-only", action="store_true", help="measure (c) alone")
    args = parser.parse_args()
    make_log = runpy.run_path(str(SHOP / "make_log.py"))["make_log"]
    scratch = Path(tempfile.mkdtemp(prefix="arrivalbench-bench-check-"))
    shop_log = make_log(scratch / "orders.parquet", orders=600, seed=7)
    engines_and_workers(shop_log)
    if args.dbt_only:
        return
    dbt_wall, dbt_timings = dbt_project_seconds(shop_log)
    print(f"(a) dbt project over the default schedules: {dbt_wall:.1f} s (target <= 30)")
    big_log = make_log(scratch / "big.parquet", orders=args.events, seed=1)
    wall, statements, sql_timings = sql_ratio(big_log, scratch)
    ratio = wall / statements
    print(
        f"(b) SQL check over {args.events:,} events: {wall:.1f} s wall, "
        f"{statements:.1f} s of statements, ratio {ratio:.2f} (target <= 2)"
    )
    result = {
        "measured": time.strftime("%Y-%m-%d"),
        "machine": f"{platform.machine()}, {os.cpu_count()} cores",
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "duckdb": duckdb.__version__,
        "harness_version": __version__,
        "dbt_project_seconds": round(dbt_wall, 2),
        "dbt_timings": dbt_timings,
        "sql_events": args.events,
        "sql_wall_seconds": round(wall, 2),
        "sql_statement_seconds": round(statements, 2),
        "sql_ratio": round(ratio, 3),
        "sql_timings": sql_timings,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "check.json").write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    lines = [
        "# Check benchmark",
        "",
        f"Measured {result['measured']} on {result['machine']}, DuckDB {result['duckdb']}; "
        f"load average at the end {result['load_average_at_end']} (the machine was shared).",
        "",
        "| measure | value | target |",
        "| --- | --- | --- |",
        f"| (a) one-model dbt project (examples/dbt_shop, orders_fixed), default schedules, "
        f"seconds | {dbt_wall:.1f} | <= 30 |",
        f"| (b) SQL check over {args.events:,} events: wall / statement time | {ratio:.2f} "
        f"({wall:.1f} s / {statements:.1f} s) | <= 2 |",
        "",
    ]
    (RESULTS / "check.md").write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {RESULTS / 'check.md'}")


if __name__ == "__main__":
    main()
