"""Explain every negative control of the suite on every hazard it declares; writes benchmarks/results/.

    python benchmarks/explain_controls.py                       # every task
    python benchmarks/explain_controls.py --tasks daily_revenue,customer_state

For each (task, control, declared hazard) at the default seed: the verdict, the diagnosis, the
minimal schedule's size (batches, rows) against the original's, the replays and seconds the
shrinking took, and whether the budget ran out. Prints the median and worst shrink time and the
cases left `unclassified` (issue 13 asks for both).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from arrivalbench.explain import explain
from arrivalbench.schedules import build_schedule
from arrivalbench.seeds import DEFAULT_SEED
from arrivalbench.spec import get_task, load_suite

RESULTS = Path(__file__).parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", help="comma-separated task ids (default: all)")
    parser.add_argument("--budget-seconds", type=float, default=60.0)
    args = parser.parse_args()
    tasks = (
        [get_task(t) for t in args.tasks.split(",")] if args.tasks else list(load_suite().values())
    )
    rows = []
    for task in tasks:
        for control in task.spec.controls:
            script = (task.folder / control.file).read_text(encoding="utf-8")
            for hazard in control.fails:
                schedule, log = build_schedule(task, hazard, DEFAULT_SEED)
                started = time.perf_counter()
                e = explain(task, script, schedule, log, budget_seconds=args.budget_seconds)
                seconds = time.perf_counter() - started
                data = e.to_json()
                row = {
                    "task": task.id,
                    "control": control.file,
                    "hazard": hazard,
                    "verdict": e.verdict + (f" ({e.error_class})" if e.error_class else ""),
                    "diagnosis": data["diagnosis"],
                    "batches": len(data["minimal"]["batches"]) if data["minimal"] else None,
                    "rows": data["minimal"]["rows_delivered"] if data["minimal"] else None,
                    "original_rows": schedule.delivered_rows(),
                    "first_divergent_batch": data["first_divergent_batch"],
                    "replays": data.get("shrink", {}).get("replays"),
                    "shrink_seconds": data.get("shrink", {}).get("seconds"),
                    "explain_seconds": round(seconds, 3),
                    "budget_exhausted": data.get("shrink", {}).get("budget_exhausted"),
                }
                rows.append(row)
                print(json.dumps(row), flush=True)
    shrinks = [r["shrink_seconds"] for r in rows if r["shrink_seconds"] is not None]
    fails = [r for r in rows if r["verdict"] == "FAIL"]
    summary = {
        "cases": len(rows),
        "fail_cases": len(fails),
        "median_shrink_seconds": round(statistics.median(shrinks), 3) if shrinks else None,
        "worst_shrink_seconds": max(shrinks) if shrinks else None,
        "budget_exhausted": sum(1 for r in rows if r["budget_exhausted"]),
        "unclassified_fails": [
            f"{r['task']}/{r['control']}/{r['hazard']}" for r in fails if not r["diagnosis"]
        ],
    }
    print(json.dumps(summary, indent=1))
    RESULTS.mkdir(exist_ok=True)
    name = "explain_controls.json" if not args.tasks else "explain_controls_subset.json"
    (RESULTS / name).write_text(
        json.dumps({"summary": summary, "rows": rows}, indent=1) + "\n", encoding="utf-8"
    )


if __name__ == "__main__":
    sys.exit(main())
