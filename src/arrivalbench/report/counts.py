"""The counts behind the rates: cells and verdicts per arm with the weakest and strongest hazard,
and the cells (and tasks) behind every per-hazard rate (analysis/counts.py)."""

from __future__ import annotations

from arrivalbench.analysis.counts import arm_counts, extremes, turn_counts
from arrivalbench.analysis.stats import BENIGN, IDEMPOTENCY, ORDERING
from arrivalbench.report import format as fmt
from arrivalbench.report.analysis import Analysis
from arrivalbench.report.format import Table


def _name(hazards: tuple[str, ...]) -> str:
    return ", ".join(h.replace("_", " ") for h in hazards)


def counts_table(a: Analysis) -> Table:
    counts = arm_counts(a.outcomes)
    silent = [h for h in (*ORDERING, *IDEMPOTENCY) if h in a.hazards()]
    rows = []
    for arm in a.arms:
        c = counts[arm]
        cells = fmt.cells_behind(a, arm)
        missing = c.cells - c.scripts
        found = {h: a.estimates(f"pass:{h}").get(arm) for h in silent}
        ends = extremes({h: e.value if e else None for h, e in found.items()})
        weakest, strongest = ends if ends else (((), None), ((), None))
        rows.append(
            (
                arm,
                fmt.count(c.cells, cells),
                fmt.count(c.scripts),
                fmt.count(missing),
                ", ".join(f"{r} {n}" for r, n in c.no_script.items()) or "—",
                fmt.count(c.verdicts),
                fmt.share(c.gradeable, c.verdicts),
                fmt.count(c.errors),
                fmt.share(c.constraint_violations, c.verdicts),
                _name(weakest[0]) or "—",
                fmt.pct(weakest[1]),
                _name(strongest[0]) or "—",
                fmt.pct(strongest[1]),
            )
        )
    return Table(
        key="counts",
        title="Cells and verdicts per arm, with the weakest and strongest hazard",
        caption=(
            "Counts over cells and verdicts, not averaged over tasks. Cells without a script are counted by the "
            "reason recorded (refusal, truncation, no code ...). A verdict is one (cell, schedule) of a cell with a "
            "script, over every schedule it was graded on (snapshot, benign schedules, declared hazards); gradeable "
            "verdicts are those whose final table was compared (PASS or FAIL), the rest are ERRORs. Constraint "
            "violations are the ERROR verdicts raised by a key or NOT NULL constraint, over all the arm's verdicts. "
            "The weakest and strongest hazard are the silent hazards with the lowest and highest temporal-pass "
            "(the hazards table's mean over tasks; ties listed together)."
        ),
        columns=(
            "arm",
            "cells",
            "cells with a script",
            "cells without a script",
            "without a script by reason",
            "verdicts",
            "gradeable verdicts",
            "ERROR verdicts",
            "constraint violations",
            "weakest hazard",
            "weakest hazard %",
            "strongest hazard",
            "strongest hazard %",
        ),
        rows=tuple(rows),
    )


def hazard_cells_table(a: Analysis) -> Table:
    schedules = [*a.hazards(), *BENIGN]
    rows = []
    for arm in a.arms:
        row = [arm]
        for s in schedules:
            behind = fmt.cells_behind(a, arm, f"pass:{s}")
            tasks = len({task for _, task, _ in behind})
            row.append(fmt.Num(f"{len(behind)} ({tasks})", len(behind), cells=behind, n=tasks))
        rows.append(tuple(row))
    return Table(
        key="hazard_cells",
        title="The cells behind each temporal-pass rate",
        caption=(
            "For each arm and schedule, the cells in the denominator of the hazards table's rate, and in brackets "
            "the tasks they belong to (the rate is the mean over those tasks): for a hazard, the cells with a "
            "script whose task declares it and whose verdict on it is PASS or FAIL; for a benign schedule, the "
            "snapshot-passing cells with a PASS or FAIL on it. The CSV holds the cells as the rate column and the "
            "tasks as n."
        ),
        columns=(
            "arm",
            *(
                f"{s.replace('_', ' ')}{' (benign)' if s in BENIGN else ''}: cells (tasks)"
                for s in schedules
            ),
        ),
        rows=tuple(rows),
    )


def turns_pooled_table(a: Analysis) -> Table:
    turns = turn_counts(a.outcomes)
    rows = []
    for arm in a.arms:
        t = turns[arm]
        behind = tuple(
            (o.arm, o.task, o.sample) for o in a.outcomes if o.arm == arm and o.snapshot_by_turn
        )
        rows.append(
            (
                arm,
                fmt.count(t.cells, behind),
                fmt.share(t.first, t.cells, behind),
                fmt.share(t.final, t.cells, behind),
                fmt.pp(t.final_rate - t.first_rate) if t.cells else "—",  # type: ignore[operator]
            )
        )
    return Table(
        key="repair_pooled",
        title="First-turn and final snapshot-pass pooled over cells",
        caption=(
            "The repair table's two snapshot rates pooled over the arm's cells that record their snapshot result "
            "per turn, rather than averaged over tasks: k/n with the exact Clopper-Pearson interval in the CSV "
            "and report.json (one-sided bound at 0% and 100%). Lift is the final minus the first-turn share."
        ),
        columns=(
            "arm",
            "cells with turns",
            "first-turn snapshot-pass, pooled",
            "final snapshot-pass, pooled",
            "lift pp",
        ),
        rows=tuple(rows),
        note=""
        if any(o.snapshot_by_turn for o in a.outcomes)
        else "No cell in these runs records per-turn snapshot results (reference arms have no repair loop).",
    )
