"""Explain the suite's negative controls and the recorded model replies on every hazard their task
declares; writes benchmarks/results/.

    python benchmarks/explain_controls.py                       # every task, controls and replies
    python benchmarks/explain_controls.py --tasks daily_revenue,customer_state
    python benchmarks/explain_controls.py --no-recorded         # the controls alone
    python benchmarks/explain_controls.py --combine A.json B.json --label suite  # pieces, one file

For each (task, pipeline, hazard) at the default seed: the verdict, the diagnosis, the minimal
schedule's size (batches, rows) against the original's, the replays and seconds the shrinking took,
and whether the budget ran out, with each label's detail (which watermark, which bound). A control is explained on the hazards it declares it fails; a
recorded reply (examples/recorded/*.json, the last reply of each task, parsed as the replay model's
loop parses it) on every hazard its task declares, a PASS costing one replay. Prints the median and
worst shrink time, the share of FAILs left `unclassified` (issue 28) and which, and the load
average before and after; `--markdown` writes it to benchmarks/results/explain_controls.md too.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

from arrivalbench.agent.models import ReplayModel
from arrivalbench.agent.parse import parse_response
from arrivalbench.explain import explain
from arrivalbench.schedules import build_schedule
from arrivalbench.seeds import DEFAULT_SEED
from arrivalbench.spec import Task, get_task, load_suite

RESULTS = Path(__file__).parent / "results"
RECORDED = Path(__file__).parent.parent / "examples" / "recorded"


def pipelines(task: Task, recorded: bool) -> list[tuple[str, str, list[str]]]:
    """(name, script, hazards to explain) for the task's controls and, if asked, its replies."""
    out = [
        (control.file, (task.folder / control.file).read_text(encoding="utf-8"), control.fails)
        for control in task.spec.controls
    ]
    if recorded:
        for path in sorted(RECORDED.glob("*.json")):
            replies = ReplayModel(path).replies.get(task.id)
            if not replies:
                continue
            parsed = parse_response(replies[-1].text)
            if parsed.script is not None:
                out.append((f"recorded/{path.stem}", parsed.script, list(task.spec.hazards)))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", help="comma-separated task ids (default: all)")
    parser.add_argument("--budget-seconds", type=float, default=60.0)
    parser.add_argument("--no-recorded", action="store_true", help="the controls alone")
    parser.add_argument("--label", default="", help="a name for this run in the output file")
    parser.add_argument("--markdown", action="store_true", help="also write explain_controls.md")
    parser.add_argument(
        "--markdown-from",
        nargs="+",
        metavar="RESULTS_JSON",
        help="append the sections of stored results to explain_controls.md instead of running, "
        "over the tasks every one of them finished (runs stopped at a time limit)",
    )
    parser.add_argument(
        "--combine",
        nargs="+",
        metavar="RESULTS_JSON",
        help="write one results file (named by --label) of stored runs over different tasks, "
        "a task's rows taken from the first run that finished it; runs nothing",
    )
    args = parser.parse_args()
    if args.markdown_from:
        return append_stored([Path(p) for p in args.markdown_from])
    if args.combine:
        return combine_stored([Path(p) for p in args.combine], args.label)
    tasks = (
        [get_task(t) for t in args.tasks.split(",")] if args.tasks else list(load_suite().values())
    )
    load_before = os.getloadavg()
    started_all = time.perf_counter()
    rows: list[dict] = []
    done: list[str] = []
    summary: dict = {}
    fails: list[dict] = []
    for task in tasks:
        for name, script, hazards in pipelines(task, not args.no_recorded):
            for hazard in hazards:
                schedule, log = build_schedule(task, hazard, DEFAULT_SEED)
                started = time.perf_counter()
                e = explain(task, script, schedule, log, budget_seconds=args.budget_seconds)
                seconds = time.perf_counter() - started
                data = e.to_json()
                row = {
                    "task": task.id,
                    "pipeline": name,
                    "hazard": hazard,
                    "verdict": e.verdict + (f" ({e.error_class})" if e.error_class else ""),
                    "diagnosis": data["diagnosis"],
                    "details": getattr(e, "details", {}),  # the code before issue 28 has none
                    "explanation": data["explanation"] if e.verdict == "FAIL" else None,
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
        done.append(task.id)
        summary, fails = write_results(args, done, rows, load_before, started_all)
    print(json.dumps(summary, indent=1))
    if args.markdown:
        with (RESULTS / "explain_controls.md").open("a", encoding="utf-8") as out:
            out.write(markdown(summary, fails))


def write_results(
    args: argparse.Namespace,
    done: list[str],
    rows: list[dict],
    load_before: tuple,
    started_all: float,
) -> tuple[dict, list[dict]]:
    """The results file over the tasks done so far, rewritten after each task, so a run stopped at
    a time limit keeps every task it finished."""
    summary = summarize(rows, list(done), round(time.perf_counter() - started_all, 1))
    summary = {"label": args.label, **summary}
    summary["load_average_before"] = [round(x, 2) for x in load_before]
    summary["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    name = (
        "explain_controls"
        + ("_subset" if args.tasks else "")
        + (f"_{args.label}" if args.label else "")
    )
    store(name, summary, rows)
    return summary, [r for r in rows if r["verdict"] == "FAIL"]


def summarize(rows: list[dict], tasks: list[str], seconds: float) -> dict:
    """The share of FAILs left unclassified over these rows, and what explaining them cost."""
    shrinks = [r["shrink_seconds"] for r in rows if r["shrink_seconds"] is not None]
    fails = [r for r in rows if r["verdict"] == "FAIL"]
    unclassified = [r for r in fails if not r["diagnosis"]]
    return {
        "tasks": tasks,
        "cases": len(rows),
        "fail_cases": len(fails),
        "unclassified_share": round(len(unclassified) / len(fails), 3) if fails else None,
        "median_shrink_seconds": round(statistics.median(shrinks), 3) if shrinks else None,
        "worst_shrink_seconds": max(shrinks) if shrinks else None,
        "budget_exhausted": sum(1 for r in rows if r["budget_exhausted"]),
        "seconds": seconds,
        "unclassified_fails": [f"{r['task']}/{r['pipeline']}/{r['hazard']}" for r in unclassified],
    }


def store(name: str, summary: dict, rows: list[dict]) -> None:
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(
        json.dumps({"summary": summary, "rows": rows}, indent=1) + "\n", encoding="utf-8"
    )


def combine_stored(paths: list[Path], label: str) -> None:
    """One results file over the tasks of several stored runs (a suite measured in pieces): each
    task's rows from the first run that finished it; the load averages are each run's, listed."""
    if not label:
        sys.exit("explain_controls: --combine needs --label NAME for the file it writes")
    stored = [json.loads(p.read_text(encoding="utf-8")) for p in paths]
    tasks: list[str] = []
    rows: list[dict] = []
    for data in stored:
        new = [t for t in data["summary"]["tasks"] if t not in tasks]
        tasks += new
        rows += [r for r in data["rows"] if r["task"] in new]
    seconds = round(sum(r["explain_seconds"] for r in rows), 1)
    summary = {"label": label, **summarize(rows, tasks, seconds)}
    summary["load_average_before"] = [d["summary"]["load_average_before"] for d in stored]
    summary["load_average_after"] = [d["summary"]["load_average_after"] for d in stored]
    summary["combined_from"] = [p.name for p in paths]
    store(f"explain_controls_{label}", summary, rows)
    print(json.dumps({k: v for k, v in summary.items() if k != "unclassified_fails"}, indent=1))


def append_stored(paths: list[Path]) -> None:
    """explain_controls.md's sections for stored results, each cut to the tasks all of them
    finished, so a before and an after stopped at a time limit compare the same FAILs."""
    stored = [json.loads(p.read_text(encoding="utf-8")) for p in paths]
    common = [
        t for t in stored[0]["summary"]["tasks"] if all(t in s["summary"]["tasks"] for s in stored)
    ]
    sections = []
    for data in stored:
        rows = [r for r in data["rows"] if r["task"] in common]
        seconds = round(sum(r["explain_seconds"] for r in rows), 1)
        summary = dict(data["summary"]) | summarize(rows, common, seconds)
        sections.append(markdown(summary, [r for r in rows if r["verdict"] == "FAIL"]))
    with (RESULTS / "explain_controls.md").open("a", encoding="utf-8") as out:
        out.write("".join(sections))


def markdown(summary: dict, fails: list[dict]) -> str:
    """One run's section of explain_controls.md: the share, the cost, the load, each FAIL's labels."""
    lines = [
        f"## {summary['label'] or 'run'}: {summary['fail_cases']} FAILs over tasks {summary['tasks']}",
        "",
        f"- unclassified: {len(summary['unclassified_fails'])} of {summary['fail_cases']} FAILs "
        f"(share {summary['unclassified_share']})",
        f"- {summary['cases']} explains in {summary['seconds']} s; shrink median "
        f"{summary['median_shrink_seconds']} s, worst {summary['worst_shrink_seconds']} s; "
        f"budget exhausted {summary['budget_exhausted']}",
        f"- load average (1, 5, 15 min) before {summary['load_average_before']}, after "
        f"{summary['load_average_after']}, on 2 cores",
        "",
        "| task | pipeline | hazard | diagnosis | detail |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {r['task']} | {r['pipeline']} | {r['hazard']} | "
        f"{', '.join(r['diagnosis']) or 'unclassified'} | {'; '.join(r.get('details', {}).values())} |"
        for r in fails
    ]
    return "\n".join(lines) + "\n\n"


if __name__ == "__main__":
    sys.exit(main())
