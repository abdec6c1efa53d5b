"""Grading cost per engine on this machine, one run each; writes benchmarks/results/engines.*.

    python benchmarks/engines.py                                   # five tasks, every engine
    python benchmarks/engines.py --tasks daily_revenue --engines duckdb,sqlite

For each engine, the same reference corpus (gold, controls, naive baselines of the tasks; the
engine's own SQL: transpiled, or the task's override) is graded by one worker, and reports
(a) seconds per graded cell per core (a cell: one artifact over its task's default schedules)
and (b) harness wall time over the engine's own statement time (summed over every statement).
PostgreSQL's figure includes creating and dropping a database per replay.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

from arrivalbench import __version__
from arrivalbench.corpus import make_corpus
from arrivalbench.engines import ENGINES, get_engine
from arrivalbench.sweep import sweep

RESULTS = Path(__file__).parent / "results"
TASKS = "daily_revenue,customer_state,web_sessions,account_balances,store_max_order"


def measure(engine: str, task_ids: list[str]) -> dict[str, object]:
    version = get_engine(engine).version  # a server engine starts here, outside the timing
    scratch = Path(tempfile.mkdtemp(prefix=f"arrivalbench-bench-{engine}-"))
    run = make_corpus(scratch / "run", task_ids=task_ids, engine=engine)
    cells = len(run.cells())
    started = time.perf_counter()
    sweep(run, workers=1)
    seconds = time.perf_counter() - started
    timings = run.timings().to_pylist()
    statement = sum(t["statement_seconds"] for t in timings)
    verdicts = run.verdicts().to_pylist()
    return {
        "engine": engine,
        "engine_version": version,
        "cells": cells,
        "verdict_rows": len(verdicts),
        "errors": sum(v["verdict"] == "ERROR" for v in verdicts),
        "sweep_seconds": round(seconds, 1),
        "statement_seconds": round(statement, 1),
        "a_seconds_per_cell_core": round(seconds / cells, 3),
        "b_harness_over_statement_time": round(seconds / max(statement, 1e-9), 2),
    }


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
        "| (b) harness / statement |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        lines.append(
            f"| {r['engine']} | {r['engine_version']} | {r['cells']} | {r['errors']} | "
            f"{r['sweep_seconds']} | {r['statement_seconds']} | {r['a_seconds_per_cell_core']} "
            f"| {r['b_harness_over_statement_time']} |"
        )
    (RESULTS / "engines.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
