"""The replication tables: each arm that appears in two runs, run against run (the gap, then
hazard by hazard), with the failing tasks that recur."""

from __future__ import annotations

from collections.abc import Iterator

from arrivalbench.analysis.stats import estimate, replication, signature
from arrivalbench.report import format as fmt
from arrivalbench.report.analysis import Analysis, Source
from arrivalbench.report.format import Table


def replicates(a: Analysis) -> Iterator[tuple[Source, Source, str]]:
    """(first run, second run, arm) for each arm replicated in two runs on one engine (another
    engine is the engine table's), with the same model where arm_info names one."""
    for i, first in enumerate(a.sources):
        for second in a.sources[i + 1 :]:
            if first.engine != second.engine:
                continue
            for arm in sorted(set(first.labels) & set(second.labels)):
                if first.labels[arm] not in a.replicated:
                    continue
                model_a = first.run.arm_info().get(arm, {}).get("model")
                model_b = second.run.arm_info().get(arm, {}).get("model")
                if model_a == model_b:
                    yield first, second, arm


def replication_table(a: Analysis) -> Table:
    gap = a.estimates("gap")
    columns = (
        "arm",
        "run A",
        "run B",
        "gap % run A",
        "gap % run B",
        "Δ pp (B − A)",
        "failing tasks A",
        "failing tasks B",
        "recurring (of A's)",
    )
    rows = []
    for first, second, arm in replicates(a):
        rep = replication(first.outcomes, second.outcomes, arm, metric="gap")
        ea, eb = gap.get(first.labels[arm]), gap.get(second.labels[arm])
        rows.append(
            (
                arm,
                first.name,
                second.name,
                fmt.point(ea),
                fmt.point(eb),
                fmt.printed_delta(rep.rate_a, rep.rate_b),
                str(len(rep.failing_a)),
                str(len(rep.failing_b)),
                f"{len(rep.recurring)} of {len(rep.failing_a)}",
            )
        )
    return Table(
        key="replication",
        title="Replication: the same arm in two runs",
        caption=(
            "A model arm (or an arm named by --arms) present in two of the given runs (with the same model where "
            "arm_info names one); reference and intervention arms are not replicated here. Δ is the "
            "difference of the two rates as printed, so each row reconciles. A failing task is one where at least one "
            "usable cell fails temporally; recurring counts run A's failing tasks that fail again in run B."
        ),
        columns=columns,
        rows=tuple(rows) or (("no arm appears in two runs", *("—",) * (len(columns) - 1)),),
        note=""
        if rows
        else "Pass two runs of the same arms (an independent re-run) to see replication.",
        labels=3,
    )


def replication_hazard_table(a: Analysis) -> Table:
    columns = (
        "arm",
        "run A",
        "run B",
        "hazard",
        "pass % run A",
        "pass % run B",
        "Δ pp (B − A)",
        "failing tasks A",
        "failing tasks B",
        "recurring (of A's)",
    )
    hazards = [h for h in a.hazards()]
    rows = []
    for first, second, arm in replicates(a):
        for hazard in hazards:
            metric = f"pass:{hazard}"
            rep = replication(first.outcomes, second.outcomes, arm, metric=metric)
            if rep.rate_a is None and rep.rate_b is None:
                continue
            rows.append(
                (
                    arm,
                    first.name,
                    second.name,
                    hazard.replace("_", " "),
                    fmt.pct(rep.rate_a, fmt.cells_behind(a, first.labels[arm], metric)),
                    fmt.pct(rep.rate_b, fmt.cells_behind(a, second.labels[arm], metric)),
                    fmt.printed_delta(rep.rate_a, rep.rate_b),
                    fmt.count(len(rep.failing_a)),
                    fmt.count(len(rep.failing_b)),
                    f"{len(rep.recurring)} of {len(rep.failing_a)}",
                )
            )
    return Table(
        key="replication_hazards",
        title="Replication per hazard: the same arm in two runs",
        caption=(
            "The replication table hazard by hazard: temporal-pass of each declared hazard in each run (mean over "
            "tasks), its change, and the tasks where some usable cell fails that hazard in each run; recurring "
            "counts run A's failing tasks that fail the same hazard again in run B. A hazard the paper calls "
            "stable should recur."
        ),
        columns=columns,
        rows=tuple(rows) or (("no arm appears in two runs", *("—",) * (len(columns) - 1)),),
        labels=4,
    )


POOLED_METRICS = (
    ("snapshot-pass % [95% CI]", "snapshot_pass"),
    ("gap % [95% CI]", "gap"),
    ("error % [95% CI]", "error"),
    ("all-in failure % [95% CI]", "all_in"),
)


def pooled_runs_table(a: Analysis) -> list[Table]:
    """report --pool-runs: each named arm over all its runs as one arm (no table without it)."""
    if a.pooled is None:
        return []
    cells = list(a.pooled.outcomes)
    rates = {
        metric: estimate(cells, metric, unit=a.unit, resamples=a.resamples, seed=a.seed)
        for _, metric in POOLED_METRICS
    }
    sigs = signature(cells)
    rows = []
    for label, runs in a.pooled.runs.items():
        own = [o for o in cells if o.arm == label]
        sig = sigs.get(label)
        rows.append(
            (
                label,
                ", ".join(runs),
                fmt.count(len({o.task for o in own})),
                fmt.count(len(own)),
                *(fmt.interval(rates[m].get(label)) for _, m in POOLED_METRICS),
                fmt.pp(sig.group_mean if sig else None),
                fmt.pp(sig.weakest_link if sig else None),
            )
        )
    return [
        Table(
            key="pooled_runs",
            title="Arms pooled over their runs",
            caption=(
                "report --pool-runs: "
                + a.pooled.definition()
                + " Rates are means over tasks with 95% bootstrap intervals, as in the main table; the margins are "
                "the signature's group-mean and weakest-link forms over the pooled cells. A pooled arm enters no test."
            ),
            columns=(
                "arm",
                "runs",
                "tasks",
                "cells",
                *(h for h, _ in POOLED_METRICS),
                "group-mean margin pp",
                "weakest-link margin pp",
            ),
            rows=tuple(rows),
            labels=2,
        )
    ]
