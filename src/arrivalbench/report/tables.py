"""The report's tables: one function per table, each returning every cell already formatted.

A table is built from the shared analysis (analysis.py) and carries its own title, caption and
note, so the Markdown, HTML, CSV and LaTeX renderings (render.py) print the same strings.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from arrivalbench.guards import guard_sign_test, idiom_table
from arrivalbench.idioms import FEATURES
from arrivalbench.loopstats import repair_effect
from arrivalbench.report.analysis import Analysis
from arrivalbench.stats import (
    BENIGN,
    IDEMPOTENCY,
    LOUD,
    ORDERING,
    SIGN_TEST_NULL,
    Estimate,
    Signature,
    SignatureForm,
    bound_of_three,
    crash_rates,
    no_artifact,
    replication,
    signature_sign_test,
)

PROMPT_BASELINE = "unhinted"


@dataclass(frozen=True)
class Table:
    """One table as it is shown: every cell already formatted, so all four renderings agree."""

    key: str
    title: str
    caption: str
    columns: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    note: str = ""
    labels: int = 1  # leading columns that name the row (left-aligned); the rest are numbers
    number: int = 0  # set in reading order once every block is built

    @property
    def heading(self) -> str:
        return f"Table {self.number}. {self.title}"


# -- formatting ------------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _pp(value: float | None) -> str:
    """A difference in percentage points, signed; zero prints unsigned as in the paper's tables."""
    if value is None:
        return "—"
    text = f"{100 * value:+.1f}"
    return ("0.0" if text in ("+0.0", "-0.0") else text) + "pp"


def _point(est: Estimate | None) -> str:
    """The rate alone, keeping its rule-of-three bound at exactly 0% or 100%."""
    return "—" if est is None else dataclasses.replace(est, low=None, high=None).format(digits=1)


def _interval(est: Estimate | None, signed: bool = False) -> str:
    return "—" if est is None else est.format(digits=1, signed=signed)


# -- one function per table ------------------------------------------------------------------------


def main_table(a: Analysis, sigs: dict[str, Signature]) -> Table:
    rates = [("snapshot-pass % [95% CI]", "snapshot_pass"), ("gap % [95% CI]", "gap")]
    loud = any(h in LOUD for o in a.outcomes for h in o.hazards)
    if loud:
        rates.append(("gap, schema evolution dropped % [95% CI]", "gap_drop_loud"))
    rates += [("error % [95% CI]", "error"), ("all-in failure % [95% CI]", "all_in")]
    margins: list[tuple[str, SignatureForm]] = [
        ("group-mean margin pp", "group_mean"),
        ("weakest-link margin pp", "weakest_link"),
        ("conservative margin pp", "conservative"),
    ]
    rows = []
    for arm in a.arms:
        own = [o for o in a.outcomes if o.arm == arm]
        sig = sigs.get(arm)
        rows.append(
            (
                arm,
                str(len({o.task for o in own})),
                str(len(own)),
                *(_interval(a.estimates(metric).get(arm)) for _, metric in rates),
                *(_pp(getattr(sig, form) if sig else None) for _, form in margins),
            )
        )
    tests = []
    for header, form in margins:
        positive, n, p = signature_sign_test(sigs, form)
        tests.append(
            f"{header.removesuffix(' pp')} positive in {positive} of {n} untied arms "
            f"(one-sided sign test against {SIGN_TEST_NULL[form]:.2f}: p = {p:.3g})"
        )
    masking = (
        " The schema-evolution column recomputes the gap with that loud hazard out of the hazard set, so a "
        "cell it crashed is no longer dropped: how much the loud hazard masks."
        if loud
        else ""
    )
    return Table(
        key="main",
        title="Snapshot-pass, gap, error and all-in failure per arm, with the failure signature",
        caption=(
            "Rates are means over tasks of each task's rate, with 95% bootstrap intervals; a rate of exactly 0% or "
            "100% shows its rule-of-three bound instead. Sorted by gap, the primary metric, lowest first."
            + masking
            + " The signature columns are ordering minus idempotency temporal-pass in percentage points: group-mean "
            "compares the two group means, weakest-link the weakest hazard of each group, conservative the weakest "
            "ordering against the strongest idempotency hazard."
        ),
        columns=("arm", "tasks", "cells", *(h for h, _ in rates), *(h for h, _ in margins)),
        rows=tuple(rows),
        note="Signature: "
        + "; ".join(tests)
        + ". The arms share tasks and one engine, so they are not independent draws.",
    )


def hazard_table(a: Analysis, sigs: dict[str, Signature]) -> Table:
    declared = a.hazards()
    groups: list[tuple[tuple[str, ...], str | None]] = [
        (tuple(h for h in ORDERING if h in declared), "ordering_mean"),
        (tuple(h for h in IDEMPOTENCY if h in declared), "idempotency_mean"),
        (tuple(h for h in LOUD if h in declared), None),
        (BENIGN, None),
    ]
    rates = {s: a.estimates(f"pass:{s}") for s in (*declared, *BENIGN)}
    columns, rows = ["arm"], []
    for schedules, mean in groups:
        columns += [
            f"{s.replace('_', ' ')}{' (benign)' if s in BENIGN else ''} %" for s in schedules
        ]
        if mean and schedules:
            columns.append(f"{mean.replace('_', ' ')} %")
    for arm in a.arms:
        row, sig = [arm], sigs.get(arm)
        for schedules, mean in groups:
            row += [_point(rates[s].get(arm)) for s in schedules]
            if mean and schedules:
                row.append(_pct(getattr(sig, mean) if sig else None))
        rows.append(tuple(row))
    return Table(
        key="hazards",
        title="Temporal-pass per hazard and on the two benign schedules",
        caption=(
            "Each hazard's rate is the share of PASS among cells with an artifact whose verdict on that schedule "
            "is PASS or FAIL (an ERROR there leaves the cell out), averaged over the tasks declaring the hazard; "
            "a benign schedule's rate is over the snapshot-passing cells of every task. "
            "Ordering hazards (late arrival, out of order) come first, then the idempotency hazards (duplicate "
            "delivery, crash-retry, backfill); schema evolution fails loudly and is never averaged into either group. The benign schedules deliver the same data in order and separate ordinary "
            "incrementality bugs from temporal ones."
        ),
        columns=tuple(columns),
        rows=tuple(rows),
    )


def intervention_table(a: Analysis) -> Table:
    info = a.arm_info()
    present = {o.arm for o in a.outcomes}
    baselines: dict[str, list[str]] = {}
    for label, entry in info.items():
        if entry.get("prompt_arm") == PROMPT_BASELINE and label in present:
            baselines.setdefault(entry.get("model", ""), []).append(label)
    run_of = {label: s.name for s in a.sources for label in s.labels.values()}
    pairs: list[tuple[str, str]] = []
    prompt_order = {"hint": 0, "arch": 1}
    for label, entry in sorted(
        info.items(),
        key=lambda item: (
            str(item[1].get("model")),
            prompt_order.get(str(item[1].get("prompt_arm")), 2),
            item[0],
        ),
    ):
        if entry.get("prompt_arm") in (None, PROMPT_BASELINE) or label not in present:
            continue
        candidates = baselines.get(entry.get("model", ""), [])
        same_run = [b for b in candidates if run_of[b] == run_of[label]]
        pairs += [(b, label) for b in (same_run or candidates)]
    columns = (
        "model",
        "arm",
        "prompt",
        "gap % [95% CI]",
        "Δ gap pp [95% CI]",
        "error % [95% CI]",
        "Δ error pp [95% CI]",
        "all-in failure % [95% CI]",
        "Δ all-in pp [95% CI]",
    )
    caption = (
        "Each prompt arm beside the unhinted arm of the same model (from the runs' arm_info). Δ is the prompt arm "
        "minus its baseline, paired over the tasks usable in both, with a 95% bootstrap interval. A gap that falls "
        "while the error rate rises has moved failure from silent to loud rather than removed it; all-in failure "
        "counts both."
    )
    if not pairs:
        return Table(
            key="intervention",
            title="Interventions against their unhinted baselines",
            caption=caption,
            columns=columns,
            rows=(("no prompt-arm pairs", *("—",) * (len(columns) - 1)),),
            labels=3,
            note=(
                "None of these runs holds an arm whose arm_info names a hint or architecture prompt together with "
                "an unhinted arm of the same model; reference arms (gold, controls, baselines) carry no arm_info."
            ),
        )
    metrics = ("gap", "error", "all_in")
    rows = []
    for baseline, arm in pairs:
        model = info[arm].get("model", "")
        before = [(_interval(a.estimates(m).get(baseline)), "—") for m in metrics]
        after = [
            (_interval(a.estimates(m).get(arm)), _interval(a.paired(m, baseline, arm), signed=True))
            for m in metrics
        ]
        rows.append((model, baseline, PROMPT_BASELINE, *(cell for pair in before for cell in pair)))
        rows.append(
            (
                model,
                arm,
                str(info[arm].get("prompt_arm")),
                *(cell for pair in after for cell in pair),
            )
        )
    unique = tuple(dict.fromkeys(rows))
    return Table(
        key="intervention",
        title="Interventions against their unhinted baselines",
        caption=caption,
        columns=columns,
        rows=unique,
        labels=3,
    )


def repair_table(a: Analysis) -> Table:
    first, final = a.estimates("first_turn_snapshot_pass"), a.estimates("final_snapshot_pass")
    missing = no_artifact(a.outcomes)
    rows = []
    for arm in a.arms:
        own = [o for o in a.outcomes if o.arm == arm]
        turned = [o for o in own if o.snapshot_by_turn]
        f, g = first.get(arm), final.get(arm)
        lift = _printed_delta(f.value, g.value) if turned and f and g else "—"
        reasons = missing.get(arm, {})
        shares = ", ".join(
            f"{reason} {_pct(share)}" for reason, share in sorted(reasons.items()) if share
        )
        rows.append(
            (
                arm,
                str(len(turned)),
                _point(f) if turned else "—",
                _point(g) if turned else "—",
                lift,
                _pct(sum(reasons.values())) if reasons else _pct(0.0),
                shares or "—",
            )
        )
    any_turns = any(o.snapshot_by_turn for o in a.outcomes)
    return Table(
        key="repair",
        title="The repair loop: snapshot-pass on the first turn and after the last, and cells with no artifact",
        caption=(
            "Over cells that record their snapshot result per turn (generated cells); means over tasks. Lift is the "
            "final rate minus the first-turn rate, as printed. The loop repairs against the snapshot test only, so "
            "the final snapshot-pass is that metric's best case. No-artifact shares are pooled over the arm's cells, "
            "by the reason recorded for the missing pipeline."
        ),
        columns=(
            "arm",
            "cells with turns",
            "first-turn snapshot-pass %",
            "final snapshot-pass %",
            "lift pp",
            "no artifact %",
            "no artifact by reason %",
        ),
        rows=tuple(rows),
        note=""
        if any_turns
        else "No cell in these runs records per-turn snapshot results (reference arms have no repair loop).",
    )


def repair_effect_table(a: Analysis) -> Table:
    effects = repair_effect(a.outcomes, resamples=a.resamples, seed=a.seed)
    rows = tuple(
        (
            e.arm,
            _share(e.immediate_failing, e.immediate_cells),
            _share(e.repaired_failing, e.repaired_cells),
            e.pooled.format(signed=True),
            str(e.strata),
            e.within.format(signed=True),
        )
        for e in effects
    )
    return Table(
        key="repair_effect",
        title="Cells repaired against the snapshot against cells that passed it at once",
        caption=(
            "Among cells whose final script passes the snapshot: the share failing at least one declared hazard "
            "(silently or by crashing), for cells that passed on turn 1 and cells that needed a repair turn. These "
            "two shares are pooled over cells, because needing a repair is a property of the sample; the difference "
            "(repaired minus immediate) has a task-clustered 95% bootstrap interval. Repaired cells sit on harder "
            "tasks, so the last column holds arm and task fixed: the mean difference over the (arm, task) strata "
            "holding both kinds of cell."
        ),
        columns=(
            "arm",
            "passed at once: failing",
            "repaired: failing",
            "difference pp [95% CI]",
            "strata with both",
            "within arm and task pp [95% CI]",
        ),
        rows=rows or (("no generated cells", "—", "—", "—", "0", "—"),),
        note=""
        if rows
        else "No cell in these runs records per-turn snapshot results, so there is nothing to compare.",
    )


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
    for i, first in enumerate(a.sources):
        for second in a.sources[i + 1 :]:
            for arm in sorted(set(first.labels) & set(second.labels)):
                model_a = first.run.arm_info().get(arm, {}).get("model")
                model_b = second.run.arm_info().get(arm, {}).get("model")
                if model_a != model_b:
                    continue
                rep = replication(first.outcomes, second.outcomes, arm, metric="gap")
                ea, eb = gap.get(first.labels[arm]), gap.get(second.labels[arm])
                rows.append(
                    (
                        arm,
                        first.name,
                        second.name,
                        _point(ea),
                        _point(eb),
                        _printed_delta(rep.rate_a, rep.rate_b),
                        str(len(rep.failing_a)),
                        str(len(rep.failing_b)),
                        f"{len(rep.recurring)} of {len(rep.failing_a)}",
                    )
                )
    return Table(
        key="replication",
        title="Replication: the same arm in two runs",
        caption=(
            "An arm present in two of the given runs (with the same model where arm_info names one). Δ is the "
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


def _printed_delta(a: float | None, b: float | None) -> str:
    """b minus a as the two rates print (one decimal of a percent), so a row reconciles on the page."""
    if a is None or b is None:
        return "—"
    return _pp((round(100 * b, 1) - round(100 * a, 1)) / 100)


def paired_table(a: Analysis) -> Table:
    arms = a.arms
    rows = []
    for row in arms:
        cells = [
            "—" if row == col else _interval(a.paired("gap", col, row), signed=True) for col in arms
        ]
        rows.append((row, *cells))
    return Table(
        key="paired",
        title="Paired gap differences between arms",
        caption=(
            "Each cell is the row arm's gap minus the column arm's gap in percentage points, over the tasks usable in "
            "both, with a 95% bootstrap interval that resamples those tasks once for both arms. An interval that "
            "contains zero supports no ordering of the two arms."
        ),
        columns=("row − column", *arms),
        rows=tuple(rows),
    )


def crash_table(a: Analysis) -> Table:
    rates = crash_rates(a.outcomes)
    classes = sorted({c for per_arm in rates.values() for c in per_arm})
    rows = [
        (arm, *(_pct(rates[arm][c]) if rates.get(arm, {}).get(c) else "—" for c in classes))
        for arm in a.arms
    ]
    return Table(
        key="crashes",
        title="Crash rate by error class",
        caption=(
            "Share of each arm's cells showing each error class on the snapshot or a declared hazard (mean over tasks), "
            "and cells with no artifact by reason; '—' where the arm never shows it. Error composition differs by "
            "arm, so error rates are not comparable across arms without it."
        ),
        columns=("arm", *(f"{c} %" for c in classes)) if classes else ("arm", "errors"),
        rows=tuple(rows) if classes else tuple((arm, "none") for arm in a.arms),
    )


def _share(k: int, n: int) -> str:
    """A rate pooled over n cells, as 'k/n = x%', with the rule-of-three bound at 0% and 100%."""
    if n == 0:
        return "—"
    bound = bound_of_three(k / n, n)
    side = "" if bound is None else f" ({'≤' if k == 0 else '≥'}{_pct(bound)})"
    return f"{k}/{n} = {_pct(k / n)}{side}"


def guard_table(a: Analysis) -> Table:
    splits = a.guard_splits
    rows = []
    for arm in a.arms:
        pair = splits.get(arm, {})
        row = [arm]
        for guarded in (True, False):
            split = pair.get(guarded)
            n = split.cells if split else 0
            row += [
                str(n),
                _share(split.fail if split else 0, n),
                _share(split.error if split else 0, n),
            ]
        rows.append(tuple(row))
    test = guard_sign_test([s for pair in splits.values() for s in pair.values()])
    note = (
        f"Guarded cells fail silently less often in {test.wins} of {test.trials} arms with at least ten cells in "
        f"each group ({test.ties} tied, {test.losses} reversed; one-sided sign test against 1/2, ties kept as "
        f"trials: p = {test.p:.3g})."
        if test.trials
        else "No arm has ten or more cells in both groups, so no sign test across arms is reported."
    )
    return Table(
        key="guard",
        title="Duplicate delivery with and without a within-batch guard",
        caption=(
            "Snapshot-passing cells whose task declares duplicate delivery, split by whether the script keeps a "
            "within-batch guard (a declared key, a deduplication of the arriving batch, or an upsert; read "
            "statically from the SQL). Rates are pooled over cells, because keeping the guard varies between samples "
            "of one task. A guard that fires turns a silent FAIL into an ERROR: it relocates failure."
        ),
        columns=(
            "arm",
            "guarded cells",
            "guarded: silent FAIL",
            "guarded: ERROR",
            "unguarded cells",
            "unguarded: silent FAIL",
            "unguarded: ERROR",
        ),
        rows=tuple(rows),
        note=note,
    )


def idioms_table(a: Analysis) -> Table:
    shares = {share.arm: share for share in idiom_table(a.outcomes, a.idioms)}
    names = ("guard", *FEATURES, "parsed")
    rows = []
    for arm in a.arms:
        share = shares.get(arm)
        rows.append(
            (
                arm,
                str(share.cells if share else 0),
                *(_pct(share.shares[n]) if share else "—" for n in names),
            )
        )
    return Table(
        key="idioms",
        title="SQL idioms of the generated scripts",
        caption=(
            "Share of each arm's cells with an artifact whose script uses each feature, read statically with sqlglot "
            "(nothing is executed); a script two samples share counts twice. Guard is the within-batch guard of the "
            "guard table; parsed is the share whose every statement sqlglot could parse (the rest were read by pattern)."
        ),
        columns=("arm", "cells", *(f"{n.replace('_', ' ')} %" for n in names)),
        rows=tuple(rows),
    )


def diagnosis_tables(a: Analysis) -> list[Table]:
    """How often each mistake occurs per arm, from explanations.parquet (`grade-run --explain`);
    no table when no run has one."""
    from arrivalbench.explain import LABELS
    from arrivalbench.explain.diagnoses import read_explanations

    counts: dict[str, dict[str, int]] = {}
    totals: dict[str, int] = {}
    for source in a.sources:
        table = read_explanations(source.run)
        for row in table.to_pylist() if table is not None else []:
            arm = source.labels.get(row["arm"], row["arm"])
            totals[arm] = totals.get(arm, 0) + 1
            for label in row["diagnosis"]:
                counts.setdefault(arm, {})[label] = counts.get(arm, {}).get(label, 0) + 1
    if not totals:
        return []
    labels = [label for label in LABELS if any(label in c for c in counts.values())]
    rows = [
        (
            arm,
            str(totals.get(arm, 0)),
            *(_share(counts.get(arm, {}).get(label, 0), totals.get(arm, 0)) for label in labels),
        )
        for arm in a.arms
        if arm in totals
    ]
    return [
        Table(
            key="diagnoses",
            title="Diagnoses of FAIL verdicts per arm",
            caption=(
                "Each FAIL verdict (cell and schedule) diagnosed by the wrong semantics its final table "
                "equals (docs/explain.md), pooled over the arm's FAIL verdicts; a verdict can carry "
                "several labels. Computed by grade-run --explain."
            ),
            columns=("arm", "FAILs", *labels),
            rows=tuple(rows),
        )
    ]
