"""The tables read off the scripts themselves: duplicate delivery with and without a
within-batch guard, and the SQL idioms each arm writes."""

from __future__ import annotations

from arrivalbench.analysis.correlation import pearson, spearman
from arrivalbench.analysis.guards import guard_sign_test, idiom_table
from arrivalbench.analysis.idioms import FEATURES
from arrivalbench.analysis.signtests import TestResult
from arrivalbench.analysis.stats import CONSTRAINT
from arrivalbench.report import format as fmt
from arrivalbench.report.analysis import GUARD_HAZARD, Analysis
from arrivalbench.report.format import Table


def guard_table(a: Analysis) -> Table:
    splits = a.guard_splits
    rows = []
    for arm in a.arms:
        pair = splits.get(arm, {})
        row = [arm]
        for guarded in (True, False):
            split = pair.get(guarded)
            n = split.cells if split else 0
            members = tuple(
                o
                for o in a.outcomes
                if o.arm == arm
                and o.snapshot_pass
                and GUARD_HAZARD in o.hazards
                and o.verdicts.get(GUARD_HAZARD) is not None
                and o.artifact_sha256 in a.idioms
                and a.idioms[o.artifact_sha256].guard == guarded
            )
            keys = tuple((o.arm, o.task, o.sample) for o in members)
            fired = sum(o.error_classes.get(GUARD_HAZARD) == CONSTRAINT for o in members)
            row += [
                fmt.count(n, keys),
                fmt.share(split.fail if split else 0, n, keys),
                fmt.share(split.error if split else 0, n, keys),
                fmt.count(fired),
            ]
        rows.append(tuple(row))
    tested = set(a.tested)
    test = guard_sign_test(
        [s for arm, pair in splits.items() if arm in tested for s in pair.values()]
    )
    result = TestResult(
        name="guard_split",
        arms=tuple(test.arms),
        runs=tuple(sorted(a.runs)),
        statistic=float(test.wins),
        n=test.trials,
        p_value=test.p if test.trials else None,
        null=0.5,
    )
    note = (
        f"Guarded cells fail silently less often in {test.wins} of {test.trials} arms with at least ten cells in "
        f"each group ({test.ties} tied, {test.losses} reversed; one-sided sign test against 1/2, ties kept as "
        f"trials: p = {test.p:.3g}); arms counted ({fmt.tested_arms(a)}): {', '.join(test.arms)}."
        if test.trials
        else f"No arm among {fmt.tested_arms(a)} has ten or more cells in both groups, so the sign test is over 0 arms."
    )
    return Table(
        key="guard",
        title="Duplicate delivery with and without a within-batch guard",
        caption=(
            "Snapshot-passing cells whose task declares duplicate delivery, split by whether the script keeps a "
            "within-batch guard (a declared key, a deduplication of the arriving batch, or an upsert; read "
            "statically from the SQL). Rates are pooled over cells, because keeping the guard varies between samples "
            "of one task. A guard that fires turns a silent FAIL into an ERROR: it relocates failure. Constraint "
            "crashes count the ERRORs raised by a key or NOT NULL constraint (a declared key refusing a duplicate), "
            "split out of sql_error."
        ),
        columns=(
            "arm",
            "guarded cells",
            "guarded: silent FAIL",
            "guarded: ERROR",
            "guarded: constraint crashes",
            "unguarded cells",
            "unguarded: silent FAIL",
            "unguarded: ERROR",
            "unguarded: constraint crashes",
        ),
        rows=tuple(rows),
        note=note,
        tests=(result,),
    )


def idioms_table(a: Analysis) -> Table:
    shares = {share.arm: share for share in idiom_table(a.outcomes, a.idioms)}
    names = ("guard", *FEATURES, "parsed")
    rows = []
    for arm in a.arms:
        share = shares.get(arm)
        scripts = sorted(
            {
                o.artifact_sha256
                for o in a.outcomes
                if o.arm == arm and o.artifact_sha256 in a.idioms
            }
        )
        kinds = {tuple(getattr(a.idioms[sha], n) for n in ("guard", *FEATURES)) for sha in scripts}
        rows.append(
            (
                arm,
                fmt.count(share.cells if share else 0),
                fmt.count(len(scripts)),
                fmt.count(len(kinds)),
                *(fmt.pct(share.shares[n]) if share else "—" for n in names),
            )
        )
    return Table(
        key="idioms",
        title="SQL idioms of the generated scripts",
        caption=(
            "Share of each arm's cells with an artifact whose script uses each feature, read statically with sqlglot "
            "(nothing is executed); a script two samples share counts twice. Guard is the within-batch guard of the "
            "guard table; parsed is the share whose every statement sqlglot could parse (the rest were read by pattern). "
            "Distinct scripts counts different artifacts; idiom signatures counts the different combinations of "
            "guard and features among them (how many recipes the arm's scripts follow)."
        ),
        columns=(
            "arm",
            "cells",
            "distinct scripts",
            "idiom signatures",
            *(f"{n.replace('_', ' ')} %" for n in names),
        ),
        rows=tuple(rows),
    )


CORRELATED = (
    ("gap", "gap"),
    ("gap_drop_duplicate", "gap without duplicate delivery"),
)


def guard_correlation_table(a: Analysis) -> Table:
    """Pearson and Spearman correlation over arms of the guard share with the gap, with and
    without duplicate delivery in the gap's hazard set (analysis/correlation.py)."""
    guard = {
        share.arm: share.shares["guard"]
        for share in idiom_table(a.outcomes, a.idioms)
        if share.cells
    }
    rows = []
    for metric, name in CORRELATED:
        gaps = a.estimates(metric)
        arms = [
            arm
            for arm in a.tested
            if arm in guard and gaps.get(arm) is not None and gaps[arm].value is not None
        ]
        x = [guard[arm] for arm in arms]
        y = [gaps[arm].value for arm in arms]  # type: ignore[misc]
        r, rho = pearson(x, y), spearman(x, y)
        rows.append(
            (
                name,
                fmt.count(len(arms)),
                fmt.Num(f"{r:+.3f}", r) if r is not None else "—",
                fmt.Num(f"{rho:+.3f}", rho) if rho is not None else "—",
                ", ".join(arms) or "none",
            )
        )
    return Table(
        key="guard_correlation",
        title="Correlation over arms of the guard share with the gap",
        caption=(
            "Over the arms the sign tests count ("
            + fmt.tested_arms(a)
            + "): each arm's guard share (the idioms "
            "table's guard %: cells with a script whose script keeps a within-batch guard) against its gap (the main "
            "table's mean over tasks), and against the gap with duplicate delivery removed from the hazard set, so "
            "that a correlation is not only the guard's own hazard. Pearson's r of the values and Spearman's rho "
            "of their ranks (ties at their mean rank), computed directly; undefined (—) below three arms or when "
            "one side does not vary. Arms are not independent draws (they share tasks), so no p-value is given."
        ),
        columns=("gap", "arms", "Pearson r", "Spearman rho", "arms counted"),
        rows=tuple(rows),
        labels=1,
    )
