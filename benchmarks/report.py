"""Report cost at the paper's scale, measured in one run; prints ratios and writes benchmarks/results/.

    python benchmarks/report.py                  # 18 arms x 40 tasks x k=5, 10,000 resamples
    python benchmarks/report.py --arms 6 --resamples 2000

A synthetic graded run of the paper's shape (every suite task, each cell graded on its default
schedules, verdicts drawn with seeded per-arm failure rates, prompt arms paired through arm_info,
per-turn snapshot histories) is written once; then the report is built and written. Reports:
(a) seconds to build and write the whole report, and per 1,000 stored verdicts;
(b) that time against the time grading the same run takes on this machine, using the grading
    benchmark's measured seconds per cell (benchmarks/results/grading.json): the report must be a
    rounding error beside grading, so a researcher can rebuild it after every run;
(c) the share of that time due to the bootstrap (a build at 100 resamples against the full one).
No target is set by an issue; the numbers are kept to notice regressions.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

from arrivalbench import __version__
from arrivalbench.engines import get_engine
from arrivalbench.report.render import build_report, write_report
from arrivalbench.schedules import default_schedules
from arrivalbench.spec import load_suite, suite_hash
from arrivalbench.store import Cell, RunDir, sha256_text, verdict_row

RESULTS = Path(__file__).parent / "results"


def synthetic_run(path: Path, arms: int, k: int, seed: int = 7) -> tuple[RunDir, int]:
    """A graded run of `arms` arms over the suite; returns it and its number of verdict rows."""
    chooser = random.Random(seed)
    suite = load_suite()
    models = [f"model{i}" for i in range((arms + 2) // 3)]
    arm_names = [f"{m}.{p}" for m in models for p in ("unhinted", "hint", "arch")][:arms]
    arm_info = {
        a: {
            "model": a.split(".")[0],
            "prompt_arm": a.split(".")[1],
            "prompt_sha256": "x",
            "turns": 3,
        }
        for a in arm_names
    }
    cells, artifacts, rows, timings = [], {}, [], []
    for arm in arm_names:
        fail, crash = chooser.uniform(0.0, 0.5), chooser.uniform(0.0, 0.2)
        for task in suite.values():
            scripts = [task.gold_sql, *task.controls.values()]
            for sample in range(k):
                if chooser.random() < 0.01:
                    cells.append(
                        Cell(
                            arm,
                            task.id,
                            sample,
                            no_artifact_reason="refusal",
                            stop_reason="refusal",
                        )
                    )
                    continue
                text = chooser.choice(scripts)
                artifacts[sha256_text(text)] = text
                turns = (
                    *(chooser.choice(["FAIL", "ERROR"]) for _ in range(chooser.randrange(3))),
                    "PASS",
                )
                cell = Cell(
                    arm,
                    task.id,
                    sample,
                    artifact_sha256=sha256_text(text),
                    snapshot_by_turn=turns,
                    tokens=chooser.randrange(2_000, 20_000),
                    stop_reason="stop",
                    prompt_sha256="x",
                )
                cells.append(cell)
                for schedule in default_schedules(task):
                    draw = chooser.random()
                    verdict = (
                        "PASS"
                        if schedule == "snapshot" or draw > fail + crash
                        else ("FAIL" if draw < fail else "ERROR")
                    )
                    entry = {"verdict": verdict, "schedule_sha256": sha256_text(schedule)}
                    if verdict == "ERROR":
                        entry.update(
                            error_class="sql_error",
                            batch=2,
                            statement=1,
                            message="Constraint Error",
                        )
                    rows.append(verdict_row(cell, schedule, seed, entry))
                    timings.append(
                        {
                            "arm": arm,
                            "task": task.id,
                            "sample": sample,
                            "schedule": schedule,
                            "wall_seconds": 0.1,
                            "statement_seconds": 0.05,
                        }
                    )
    engine = get_engine()
    run = RunDir.create(
        path,
        suite_hash=suite_hash(),
        task_hashes={t: task.content_hash() for t, task in suite.items()},
        base_seed=seed,
        engine=engine.name,
        engine_version=engine.version,
        config={"schedules": None},
        cells=cells,
        artifacts=artifacts,
        arm_info=arm_info,
    )
    run.append(rows, timings)
    run.compact()
    return run, len(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arms", type=int, default=18)
    parser.add_argument("-k", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=10_000)
    args = parser.parse_args()

    scratch = Path(tempfile.mkdtemp(prefix="arrivalbench-report-bench-"))
    started = time.perf_counter()
    run, verdicts = synthetic_run(scratch / "run", args.arms, args.k)
    setup = time.perf_counter() - started
    cells = len(run.cells())

    started = time.perf_counter()
    write_report([run.path], scratch / "report", resamples=args.resamples)
    report_seconds = time.perf_counter() - started
    started = time.perf_counter()
    build_report([run.path], resamples=100)
    few_resamples_seconds = time.perf_counter() - started

    grading = json.loads((RESULTS / "grading.json").read_text())
    per_cell = grading["a_seconds_per_cell_core"]
    grading_seconds = per_cell * cells
    result = {
        "machine": {
            "python": sys.version.split()[0],
            "platform": platform.platform(),
            "harness": __version__,
        },
        "config": {
            "arms": args.arms,
            "k": args.k,
            "tasks": len(load_suite()),
            "resamples": args.resamples,
        },
        "results": {
            "cells": cells,
            "verdicts": verdicts,
            "synthetic_run_seconds": round(setup, 2),
            "a_report_seconds": round(report_seconds, 2),
            "a_report_seconds_per_1000_verdicts": round(1000 * report_seconds / verdicts, 3),
            "b_grading_core_seconds_estimate": round(grading_seconds, 1),
            "b_report_over_grading": round(report_seconds / grading_seconds, 4),
            "c_build_100_resamples_seconds": round(few_resamples_seconds, 2),
            "c_bootstrap_share": round(1 - few_resamples_seconds / report_seconds, 3),
        },
    }
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "report.json").write_text(json.dumps(result, indent=2) + "\n")
    r = result["results"]
    lines = [
        f"# Report cost ({args.arms} arms x {len(load_suite())} tasks x k={args.k}, {args.resamples:,} resamples)",
        "",
        f"- cells {r['cells']:,}, verdict rows {r['verdicts']:,}",
        f"- (a) build and write the report: {r['a_report_seconds']} s "
        f"({r['a_report_seconds_per_1000_verdicts']} s per 1,000 verdicts)",
        f"- (b) report / grading the same run ({per_cell} s per cell-core, measured by grading.py): "
        f"{r['b_report_over_grading']:.2%} of {r['b_grading_core_seconds_estimate']:,} core-seconds",
        f"- (c) share of the time due to the {args.resamples:,} bootstrap resamples (against a build at 100): "
        f"{r['c_bootstrap_share']:.1%}",
        "",
        f"Python {result['machine']['python']}, {result['machine']['platform']}",
    ]
    (RESULTS / "report.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
