"""Grading cost per engine on this machine, one run each; writes benchmarks/results/engines.*.

    python benchmarks/engines.py                                   # seven tasks, every engine
    python benchmarks/engines.py --tasks daily_revenue --engines duckdb,sqlite

For each engine, the same reference corpus (gold, controls, naive baselines of the tasks; the
engine's own SQL: transpiled, or the task's override) is graded by one worker, and reports
(a) seconds per graded cell per core (a cell: one artifact over its task's default schedules)
and (b) harness wall time over the engine's own statement time (summed over every statement).
PostgreSQL's figure includes creating and dropping a database (and its role) per replay;
(c) is that per-replay cost measured on its own, its share of the sweep (an upper bound: the
worker opens the next replay's database while the grader compares), and the alternatives:
PostgreSQL 15's default WAL_LOG strategy and a schema per replay in one shared database. The
load average is recorded before and after each engine (the machine may be shared).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

from arrivalbench import __version__
from arrivalbench.corpus import make_corpus
from arrivalbench.engines import ENGINES, get_engine
from arrivalbench.sweep import sweep

RESULTS = Path(__file__).parent / "results"
TASKS = (
    "daily_revenue,customer_state,web_sessions,account_balances,store_max_order,"
    "first_purchase,daily_active_users"
)
CREATION_ROUNDS = 15


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def database_creation(rounds: int = CREATION_ROUNDS) -> dict[str, float]:
    """Seconds per replay to make and remove a PostgreSQL replay's isolation, three ways."""
    from arrivalbench.engines import Limits
    from arrivalbench.engines.postgres import SANDBOX, TEMPLATE, admin_connection, server_socket

    engine, limits = get_engine("postgres"), Limits()
    socket = server_socket()

    def timed(make, remove) -> float:
        seconds = []
        for i in range(rounds):
            started = time.perf_counter()
            made = make(i)
            remove(made)
            seconds.append(time.perf_counter() - started)
        return round(statistics.median(seconds), 4)

    template_file_copy = timed(lambda i: engine.open(limits), lambda db: db.close())

    def wal_log(i: int) -> str:
        with admin_connection(socket) as con:
            con.execute(f"CREATE ROLE bench_{i} LOGIN IN ROLE {SANDBOX}")
            con.execute(f"CREATE DATABASE bench_{i} TEMPLATE {TEMPLATE} STRATEGY WAL_LOG")
        return f"bench_{i}"

    def drop_database(name: str) -> None:
        with admin_connection(socket) as con:
            con.execute(f"DROP DATABASE {name} WITH (FORCE)")
            con.execute(f"DROP ROLE {name}")

    template_wal_log = timed(wal_log, drop_database)
    with admin_connection(socket) as con:
        con.execute(f"CREATE DATABASE bench_shared TEMPLATE {TEMPLATE}")

    def schema(i: int) -> str:
        with admin_connection(socket, "bench_shared") as con:
            con.execute(f"CREATE ROLE bench_s{i} LOGIN")
            con.execute(f"CREATE SCHEMA bench_s{i} AUTHORIZATION bench_s{i}")
        return f"bench_s{i}"

    def drop_schema(name: str) -> None:
        with admin_connection(socket, "bench_shared") as con:
            con.execute(f"DROP SCHEMA {name} CASCADE")
            con.execute(f"DROP ROLE {name}")

    schema_per_replay = timed(schema, drop_schema)
    with admin_connection(socket) as con:
        con.execute("DROP DATABASE bench_shared WITH (FORCE)")
    return {
        "template_file_copy_s": template_file_copy,
        "template_wal_log_s": template_wal_log,
        "schema_per_replay_s": schema_per_replay,
    }


def measure(engine: str, task_ids: list[str]) -> dict[str, object]:
    version = get_engine(engine).version  # a server engine starts here, outside the timing
    load_before = _load()
    scratch = Path(tempfile.mkdtemp(prefix=f"arrivalbench-bench-{engine}-"))
    run = make_corpus(scratch / "run", task_ids=task_ids, engine=engine)
    cells = len(run.cells())
    started = time.perf_counter()
    sweep(run, workers=1)
    seconds = time.perf_counter() - started
    timings = run.timings().to_pylist()
    statement = sum(t["statement_seconds"] for t in timings)
    verdicts = run.verdicts().to_pylist()
    row: dict[str, object] = {
        "engine": engine,
        "engine_version": version,
        "cells": cells,
        "verdict_rows": len(verdicts),
        "errors": sum(v["verdict"] == "ERROR" for v in verdicts),
        "sweep_seconds": round(seconds, 1),
        "statement_seconds": round(statement, 1),
        "a_seconds_per_cell_core": round(seconds / cells, 3),
        "b_harness_over_statement_time": round(seconds / max(statement, 1e-9), 2),
        "load_before": load_before,
        "load_after": _load(),
    }
    if engine == "postgres":
        creation = database_creation()
        row.update(creation)
        row["c_creation_share_of_sweep"] = round(
            len(timings) * creation["template_file_copy_s"] / seconds, 3
        )
        row["replays"] = len(timings)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", default=TASKS, help=f"comma-separated task ids ({TASKS})")
    parser.add_argument("--engines", default=",".join(ENGINES), help="comma-separated engines")
    args = parser.parse_args()
    task_ids = args.tasks.split(",")
    rows = [measure(engine, task_ids) for engine in args.engines.split(",")]
    results = {
        "harness_version": __version__,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores",
        "tasks": task_ids,
        "engines": rows,
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "engines.json").write_text(json.dumps(results, indent=2) + "\n")
    lines = [
        "# Grading cost per engine",
        "",
        f"Measured {time.strftime('%Y-%m-%d')} on {results['machine']}, one worker, the "
        f"reference corpus of {len(task_ids)} tasks ({', '.join(task_ids)}), each engine's "
        "own SQL.",
        "",
        "| engine | version | cells | ERROR rows | sweep s | statement s | (a) s per cell-core "
        "| (b) harness / statement | load average before; after |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['engine']} | {r['engine_version']} | {r['cells']} | {r['errors']} | "
            f"{r['sweep_seconds']} | {r['statement_seconds']} | {r['a_seconds_per_cell_core']} "
            f"| {r['b_harness_over_statement_time']} | {r['load_before']}; {r['load_after']} |"
        )
    for r in rows:
        if "c_creation_share_of_sweep" in r:
            lines += [
                "",
                f"(c) PostgreSQL's isolation per replay (median of {CREATION_ROUNDS}, create + "
                "drop, a role included):",
                "",
                "| database from the template, FILE_COPY (used) | the same, WAL_LOG | a schema "
                "per replay in one database | replays in the sweep | FILE_COPY's share of the "
                "sweep (upper bound) |",
                "| --- | --- | --- | --- | --- |",
                f"| {r['template_file_copy_s']} s | {r['template_wal_log_s']} s | "
                f"{r['schema_per_replay_s']} s | {r['replays']} | "
                f"{r['c_creation_share_of_sweep']:.1%} |",
            ]
    (RESULTS / "engines.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
