"""Grading cost on this machine, measured in one run; prints ratios and writes benchmarks/results/.

    python benchmarks/grading.py                 # the reference corpus of the whole suite
    python benchmarks/grading.py --tasks daily_revenue,customer_state --quick

Reports, for the reference corpus (gold, controls, naive baselines of every task):
(a) seconds per graded cell per core (a cell: one artifact over its task's default schedules);
(b) harness wall time over the engine's own statement time, summed over every statement (floor 1.0);
(c) parallel efficiency at 1 and 2 workers;
(d) cost growth of grading a gold when each task's log grows 10x and 100x;
(e) peak resident memory of a replay worker;
(f) wall time of the demo's commands (`make demo` without the install: gate at one seed,
    make-corpus, generate the recorded arms, grade-run of both, report), cold (an empty verdict
    cache) and warm (the same cache again); benchmarks/demo.py times the whole `make demo` of a
    fresh clone, the install included.
Every sweep of (a)-(e) grades without the verdict cache (cache.py), so no figure is flattered
by verdicts graded before; the demo's figures are the only ones that use it.
Targets (issues 6, 16 and 23): (a) <= 0.4 s, (b) <= 1.5 on DuckDB and <= 2.5 on PostgreSQL,
(c) >= 0.9, (d) at most linear, (e) <= 250 MB, (f) <= 2.5 min cold including the install,
<= 30 s warm. `--engine sqlite|postgres` measures (a)-(c) on that engine (grading_<engine>.md).
The machine may be shared: the load average over the run is printed beside the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import duckdb

from arrivalbench import __version__
from arrivalbench.corpus import make_corpus
from arrivalbench.engines import DEFAULT_ENGINE
from arrivalbench.grade import Grader
from arrivalbench.schedules import default_schedules
from arrivalbench.spec import Task, get_task, load_suite
from arrivalbench.store import RunDir
from arrivalbench.sweep import sweep

RESULTS = Path(__file__).parent / "results"


def timed_sweep(
    task_ids: list[str], workers: int, engine: str = DEFAULT_ENGINE
) -> tuple[float, RunDir, int]:
    """Seconds to grade the corpus cache-cold (no verdict cache: every verdict is executed)."""
    scratch = Path(tempfile.mkdtemp(prefix="arrivalbench-bench-"))
    run = make_corpus(scratch / "run", task_ids=task_ids, engine=engine)
    cells = len(run.cells())
    started = time.perf_counter()
    sweep(run, workers=workers, cache_dir=None)
    return time.perf_counter() - started, run, cells


RECORDED = Path(__file__).resolve().parent.parent / "examples" / "recorded"
DEMO = (
    ("gate", "--seeds", "1"),
    ("make-corpus", "--out", "{run}"),
    ("generate", "--model", f"replay:{RECORDED}/frontier-llm-{{{{arm}}}}.json",
     "--arm", "unhinted", "--arm", "hint", "--arm", "arch", "-k", "1", "--out", "{recorded}"),
    ("grade-run", "{run}"),
    ("grade-run", "{recorded}"),
    ("report", "{run}", "{recorded}", "--out", "{run}/report"),
)  # fmt: skip
"""The commands `make demo` runs after installing (Makefile), in order."""


def demo_seconds(cache_dir: Path, task_ids: list[str] | None) -> dict[str, float]:
    """Wall seconds of each demo command and in all, with `cache_dir` as the verdict cache."""
    scratch = Path(tempfile.mkdtemp(prefix="arrivalbench-demo-"))
    env = {**os.environ, "ARRIVALBENCH_CACHE_DIR": str(cache_dir), "NO_COLOR": "1"}
    seconds: dict[str, float] = {}
    for command in DEMO:
        args = [a.format(run=scratch / "run", recorded=scratch / "recorded") for a in command]
        if task_ids is not None and args[0] in ("gate", "make-corpus", "generate"):
            args += ["--tasks", ",".join(task_ids)]
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "arrivalbench.cli", *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=scratch,
        )
        step = args[0] if args[0] not in seconds else f"{args[0]} (2)"
        seconds[step] = round(time.perf_counter() - started, 1)
        if done.returncode != 0:
            print(f"  note: demo step {args[0]} exited {done.returncode}", file=sys.stderr)
    seconds["total"] = round(sum(seconds.values()), 1)
    return seconds


def scaled(task: Task, factor: int) -> Task:
    """The same task with every source's log `factor` times larger."""
    sources = []
    for source in task.spec.sources:
        params = dict(source.generator.params)
        base = int(params.get("events", 300))
        params["events"] = base * factor
        generator = source.generator.model_copy(update={"params": params})
        sources.append(source.model_copy(update={"generator": generator}))
    spec = task.spec.model_copy(update={"sources": sources})
    return Task(
        spec=spec,
        folder=task.folder,
        oracle_sql=task.oracle_sql,
        gold_sql=task.gold_sql,
        controls=task.controls,
        existing_sql=task.existing_sql,
    )


def growth(task_ids: list[str], factors: list[int]) -> dict[str, dict[str, float]]:
    """Seconds to grade each gold (default schedules) at each log size, relative to size 1."""
    out: dict[str, dict[str, float]] = {}
    with Grader() as grader:
        grader.grade(
            get_task(task_ids[0]), get_task(task_ids[0]).gold_sql, ["snapshot"]
        )  # warm the worker
        for task_id in task_ids:
            task = get_task(task_id)
            seconds = {}
            for factor in factors:
                big = scaled(task, factor)
                started = time.perf_counter()
                record, _ = grader.grade(big, big.gold_sql, default_schedules(big))
                seconds[factor] = time.perf_counter() - started
                bad = {
                    s: v["verdict"] for s, v in record["verdicts"].items() if v["verdict"] != "PASS"
                }
                if bad:
                    print(f"  note: {task_id} x{factor} gold verdicts {bad}", file=sys.stderr)
            out[task_id] = {f"x{f}": round(seconds[f] / seconds[factors[0]], 2) for f in factors}
            out[task_id]["seconds_x1"] = round(seconds[factors[0]], 3)
    return out


def worker_peak_rss_mb(task_ids: list[str]) -> float:
    """Peak RSS (VmHWM) of one replay worker after grading every gold and control of the tasks."""
    with Grader() as grader:
        for task_id in task_ids:
            task = get_task(task_id)
            for script in [task.gold_sql, *task.controls.values()]:
                grader.grade(task, script, default_schedules(task))
        pid = grader._sandbox._process.pid
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", help="comma-separated task ids (default: the whole suite)")
    parser.add_argument("--quick", action="store_true", help="growth at 10x only, on two tasks")
    parser.add_argument("--no-demo", action="store_true", help="skip (f), the demo's wall time")
    parser.add_argument(
        "--engine",
        default=DEFAULT_ENGINE,
        help="engine the corpus is graded on; another than DuckDB measures (a)-(c) only and "
        "writes grading_<engine>.{json,md}",
    )
    args = parser.parse_args()
    default = args.engine == DEFAULT_ENGINE
    task_ids = args.tasks.split(",") if args.tasks else list(load_suite())
    load_before = os.getloadavg()[0]

    t1, run1, cells = timed_sweep(task_ids, workers=1, engine=args.engine)
    timings = run1.timings().to_pylist()
    statement_seconds = sum(t["statement_seconds"] for t in timings)
    t2, _, _ = timed_sweep(task_ids, workers=2, engine=args.engine)
    per_cell_core = t2 * 2 / cells
    ratio = t1 / statement_seconds
    efficiency = (t1 / t2) / 2
    growth_tasks = (
        task_ids[:2]
        if args.quick
        else [t for t in ("daily_revenue", "customer_state", "web_sessions") if t in task_ids]
        or task_ids[:3]
    )
    factors = [1, 10] if args.quick else [1, 10, 100]
    grow = growth(growth_tasks, factors) if default else {}
    rss = worker_peak_rss_mb(task_ids) if default else float("nan")
    demo: dict[str, dict[str, float]] = {}
    if not args.no_demo and default:
        cache_dir = Path(tempfile.mkdtemp(prefix="arrivalbench-demo-cache-"))
        only = task_ids if args.tasks else None
        demo["cold"] = demo_seconds(cache_dir, only)
        demo["warm"] = demo_seconds(cache_dir, only)
    load_after = os.getloadavg()[0]

    results = {
        "harness_version": __version__,
        "duckdb": duckdb.__version__,
        "engine": args.engine,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {__import__('os').cpu_count()} cores",
        "tasks": len(task_ids),
        "cells": cells,
        "verdict_rows": len(timings),
        "a_seconds_per_cell_core": round(per_cell_core, 3),
        "b_harness_over_statement_time": round(ratio, 2),
        "c_parallel_efficiency_2_workers": round(efficiency, 2),
        "d_growth": grow,
        "e_worker_peak_rss_mb": round(rss, 1),
        "f_demo_seconds": demo,
        "load_average_1min": [round(load_before, 1), round(load_after, 1)],
        "sweep_seconds_1_worker": round(t1, 1),
        "sweep_seconds_2_workers": round(t2, 1),
        "statement_seconds_total": round(statement_seconds, 1),
    }
    RESULTS.mkdir(exist_ok=True)
    stem = "grading" if default else f"grading_{args.engine}"
    (RESULTS / f"{stem}.json").write_text(json.dumps(results, indent=2) + "\n")
    b_target = {"postgres": "<= 2.5"}.get(args.engine, "<= 1.5")
    rows = [
        ("(a) seconds per cell per core", results["a_seconds_per_cell_core"], "<= 0.4"),
        ("(b) harness wall / statement time", results["b_harness_over_statement_time"], b_target),
        (
            "(c) parallel efficiency, 2 workers",
            results["c_parallel_efficiency_2_workers"],
            ">= 0.9",
        ),
        (
            "(d) growth at 10x / 100x events",
            "; ".join(
                f"{t}: "
                + ", ".join(f"{k} {v}" for k, v in g.items() if k.startswith("x") and k != "x1")
                for t, g in grow.items()
            ),
            "<= linear (10, 100)",
        ),
        ("(e) replay worker peak RSS, MB", results["e_worker_peak_rss_mb"], "<= 250"),
    ]
    if not default:
        rows = rows[:3]
    if demo:
        rows += [
            (
                f"(f) demo wall, {kind} cache, s (without the install)",
                f"{demo[kind]['total']} ("
                + ", ".join(f"{k} {v}" for k, v in demo[kind].items() if k != "total")
                + ")",
                target,
            )
            for kind, target in (("cold", "<= 150 with the install"), ("warm", "<= 30"))
        ]
    table = ["| measure | value | target |", "| --- | --- | --- |"]
    table += [f"| {name} | {value} | {target} |" for name, value, target in rows]
    header = (
        f"Measured {time.strftime('%Y-%m-%d')} on {results['machine']}, engine {args.engine}, "
        f"DuckDB {results['duckdb']}, "
        f"{results['tasks']} tasks, {cells} cells, {len(timings)} verdict rows; sweeps took "
        f"{results['sweep_seconds_1_worker']} s (1 worker) and {results['sweep_seconds_2_workers']} s (2 workers); "
        f"engine statement time {results['statement_seconds_total']} s. Sweeps are cache-cold "
        f"(no verdict cache). The machine was shared: 1-minute load average {load_before:.1f} "
        f"before and {load_after:.1f} after the run, on {os.cpu_count()} cores.\n\n"
    )
    (RESULTS / f"{stem}.md").write_text(
        f"# Grading benchmark ({args.engine})\n\n" + header + "\n".join(table) + "\n"
    )
    print(header + "\n".join(table))


if __name__ == "__main__":
    main()
