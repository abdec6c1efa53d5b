"""Matched sets of tasks: the tasks declaring all five silent hazards, where both signature
groups are averaged over the same tasks, with the weakest-link margin beside the group mean."""

from __future__ import annotations

from arrivalbench.analysis.signtests import all_five, signature, signature_test
from arrivalbench.report import format as fmt
from arrivalbench.report.analysis import Analysis
from arrivalbench.report.format import Table


def all_five_table(a: Analysis) -> Table:
    matched = all_five(a.outcomes)
    sigs = signature(matched)
    rows = []
    for arm in a.arms:
        own = [o for o in matched if o.arm == arm]
        sig = sigs.get(arm)
        rows.append(
            (
                arm,
                fmt.count(
                    len({o.task for o in own}), tuple((o.arm, o.task, o.sample) for o in own)
                ),
                fmt.pct(sig.ordering_mean if sig else None),
                fmt.pct(sig.idempotency_mean if sig else None),
                fmt.pp(sig.group_mean if sig else None),
                fmt.pct(sig.weakest_ordering if sig else None),
                fmt.pct(sig.weakest_idempotency if sig else None),
                fmt.pp(sig.weakest_link if sig else None),
            )
        )
    runs = tuple(sorted(a.runs))
    lines = []
    for form, name in (("group_mean", "group-mean"), ("weakest_link", "weakest-link")):
        test = signature_test(f"signature_{form}_all_five", sigs, form, a.tested, runs)
        lines.append(
            f"{name} margin positive in {test.statistic:.0f} of {test.n} untied arms (one-sided sign "
            f"test against {test.null:.2f}: p = {test.p_value:.3g})"
        )
    return Table(
        key="all_five",
        title="The signature over the tasks declaring all five silent hazards",
        caption=(
            "Every rate over the matched set of tasks that declare late arrival, out of order, duplicate "
            "delivery, crash-retry and backfill, so the ordering and idempotency groups are averaged over the "
            "same tasks: each hazard's temporal-pass is the mean over those tasks, the group means and the "
            "group-mean margin as in the main table's last column, and beside them the weakest hazard of each "
            "group and the weakest-link margin (weakest ordering minus weakest idempotency), in points."
        ),
        columns=(
            "arm",
            "all-five tasks",
            "ordering mean %",
            "idempotency mean %",
            "group-mean margin pp",
            "weakest ordering %",
            "weakest idempotency %",
            "weakest-link margin pp",
        ),
        rows=tuple(rows),
        note=f"Over the arms the sign tests count ({fmt.tested_arms(a)}): "
        + "; ".join(lines)
        + ".",
    )
