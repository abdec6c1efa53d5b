"""The report's tables: one function per table, each returning every cell already formatted
(the replication tables live in replication.py, the script-reading ones in scripts.py).

A table is built from the shared analysis (analysis.py) and carries its own title, caption and
note, so the Markdown, HTML, CSV and LaTeX renderings (render.py) print the same strings.
"""

from __future__ import annotations

from arrivalbench.analysis.loopstats import ALL, repair_effect
from arrivalbench.analysis.signtests import TestResult, signature_test
from arrivalbench.analysis.stats import (
    BENIGN,
    IDEMPOTENCY,
    LOUD,
    ORDERING,
    SILENT,
    Signature,
    SignatureForm,
    crash_rates,
    no_artifact,
    signature,
)
from arrivalbench.report import format as fmt
from arrivalbench.report.analysis import Analysis, diagnosis_counts
from arrivalbench.report.format import Cells as Cells
from arrivalbench.report.format import Num as Num
from arrivalbench.report.format import Table

PROMPT_BASELINE = "unhinted"


# -- one function per table ------------------------------------------------------------------------


def _rate_columns(a: Analysis) -> list[tuple[str, str]]:
    rates = [("snapshot-pass % [95% CI]", "snapshot_pass"), ("gap % [95% CI]", "gap")]
    if any(h in LOUD for o in a.outcomes for h in o.hazards):
        rates.append(("gap, schema evolution dropped % [95% CI]", "gap_drop_loud"))
    rates += [
        ("gap, benign-passing cells % [95% CI]", "gap_benign"),
        ("gap, tasks declaring all five % [95% CI]", "gap_all_five"),
        ("error % [95% CI]", "error"),
        ("all-in failure % [95% CI]", "all_in"),
    ]
    return rates


def _rate_cells(a: Analysis, arm: str, rates: list[tuple[str, str]]) -> list[str]:
    own = [o for o in a.outcomes if o.arm == arm]
    gap = a.estimates("gap").get(arm)
    return [
        a.role(arm),
        str(a.roles[arm].run),
        fmt.count(len({o.task for o in own})),
        fmt.count(len(own), fmt.cells_behind(a, arm)),
        fmt.count(gap.tasks if gap else 0, fmt.cells_behind(a, arm, "gap")),
        *(
            fmt.interval(a.estimates(metric).get(arm), cells=fmt.cells_behind(a, arm, metric))
            for _, metric in rates
        ),
    ]


RATE_CAPTION = (
    "Rates are means over tasks of each task's rate, with 95% bootstrap intervals; a rate of exactly 0% or 100% "
    "shows its one-sided 95% bound instead (exact Clopper-Pearson below 30 tasks, else the rule of three). "
    "Gap tasks counts the tasks with at least one gap-usable cell (snapshot-passing, no ERROR on a declared "
    "hazard). The benign-passing gap keeps only cells that also pass both benign schedules; the all-five gap "
    "only tasks declaring every silent hazard."
)


def main_table(a: Analysis, sigs: dict[str, Signature]) -> Table:
    rates = _rate_columns(a)
    margins: list[tuple[str, SignatureForm]] = [
        ("group-mean margin pp", "group_mean"),
        ("weakest-link margin pp", "weakest_link"),
        ("conservative margin pp", "conservative"),
    ]
    arms = [arm for arm in a.arms if a.role(arm) != "reference"]
    five = signature(o for o in a.outcomes if set(SILENT) <= set(o.hazards))
    rows = []
    for arm in arms:
        sig = sigs.get(arm)
        rows.append(
            (
                arm,
                *_rate_cells(a, arm, rates),
                *(fmt.pp(getattr(sig, form) if sig else None) for _, form in margins),
                fmt.pp(five[arm].group_mean if arm in five else None),
            )
        )
    tested = a.tested
    runs = tuple(sorted(a.runs))
    tests, lines = [], []
    for header, form in margins:
        test = signature_test(f"signature_{form}", sigs, form, tested, runs)
        tests.append(test)
        lines.append(
            f"{header.removesuffix(' pp')} positive in {test.statistic:.0f} of {test.n} untied arms "
            f"(one-sided sign test against {test.null:.2f}: p = {test.p_value:.3g})"
        )
    test = signature_test("signature_group_mean_all_five", five, "group_mean", tested, runs)
    tests.append(test)
    lines.append(
        f"group-mean margin over the tasks declaring all five silent hazards positive in "
        f"{test.statistic:.0f} of {test.n} untied arms (p = {test.p_value:.3g})"
    )
    entered = (
        f"Arms entering the sign tests ({fmt.tested_arms(a)}): {', '.join(tested)}."
        if tested
        else f"No arm entered the sign tests: these runs hold no {fmt.tested_arms(a)}, so every test is over 0 arms."
    )
    return Table(
        key="main",
        title="Snapshot-pass, gap, error and all-in failure per arm, with the failure signature",
        caption=(
            RATE_CAPTION
            + " Model and intervention arms only (reference arms have their own table), sorted by gap, the "
            "primary metric, lowest first. Role and run come from the runs' arm_info (inferred where absent). "
            "The signature columns are ordering minus idempotency temporal-pass in percentage points: group-mean "
            "compares the two group means, weakest-link the weakest hazard of each group, conservative the weakest "
            "ordering against the strongest idempotency hazard; the last column recomputes the group-mean margin "
            "over the tasks declaring all five silent hazards, so both groups are averaged over the same tasks."
        ),
        columns=(
            "arm",
            "role",
            "run",
            "tasks",
            "cells",
            "gap tasks",
            *(h for h, _ in rates),
            *(h for h, _ in margins),
            "group-mean margin, all-five tasks pp",
        ),
        rows=tuple(rows) or (("no model or intervention arms", *("—",) * (5 + len(rates) + 4)),),
        note=entered
        + " Signature: "
        + "; ".join(lines)
        + (
            ". The arms share tasks and one engine, so they are not independent draws."
            if not a.several_engines
            else ". The arms share tasks and an engine, so they are not independent draws."
        ),
        labels=2,
        tests=tuple(tests),
    )


def reference_table(a: Analysis) -> Table:
    rates = _rate_columns(a)
    arms = [arm for arm in a.arms if a.role(arm) == "reference"]
    rows = [(arm, *_rate_cells(a, arm, rates)) for arm in arms]
    columns = ("arm", "role", "run", "tasks", "cells", "gap tasks", *(h for h, _ in rates))
    return Table(
        key="reference",
        title="Reference arms: gold, controls, baselines and templates",
        caption=(
            RATE_CAPTION
            + " Reference arms come from the suite or a template, not from a model, so they enter no test: gold "
            "should show a 0% gap and the negative controls a 100% gap; the naive baselines and the primary-key "
            "templates (pk_constraint, pk_dedup) show what a fixed recipe does without a model."
        ),
        columns=columns,
        rows=tuple(rows) or (("no reference arms", *("—",) * (len(columns) - 1)),),
        labels=2,
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
            row += [
                fmt.point(rates[s].get(arm), fmt.cells_behind(a, arm, f"pass:{s}"))
                for s in schedules
            ]
            if mean and schedules:
                row.append(fmt.pct(getattr(sig, mean) if sig else None))
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
        same_engine = [b for b in candidates if a.engine_of[b] == a.engine_of[label]]
        pairs += [(b, label) for b in (same_run or same_engine)]
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
        before = [
            (
                fmt.interval(a.estimates(m).get(baseline), cells=fmt.cells_behind(a, baseline, m)),
                "—",
            )
            for m in metrics
        ]
        after = [
            (
                fmt.interval(a.estimates(m).get(arm), cells=fmt.cells_behind(a, arm, m)),
                fmt.interval(a.paired(m, baseline, arm), signed=True),
            )
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
        lift = fmt.printed_delta(f.value, g.value) if turned and f and g else "—"
        reasons = missing.get(arm, {})
        shares = ", ".join(
            f"{reason} {fmt.pct(share)}" for reason, share in sorted(reasons.items()) if share
        )
        rows.append(
            (
                arm,
                str(len(turned)),
                fmt.point(f) if turned else "—",
                fmt.point(g) if turned else "—",
                lift,
                fmt.pct(sum(reasons.values())) if reasons else fmt.pct(0.0),
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
    first = [
        o for o in a.outcomes if a.roles[o.arm].run == 1 and a.engine_of[o.arm] == a.engines[0]
    ]
    pooled = [e for e in repair_effect(first, resamples=a.resamples, seed=a.seed) if e.arm == ALL]
    effects = [e for e in effects if e.arm != ALL] + pooled
    rows = tuple(
        (
            e.arm,
            fmt.share(e.immediate_failing, e.immediate_cells),
            fmt.share(e.repaired_failing, e.repaired_cells),
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
            "holding both kinds of cell. The all-arms row pools the arms of run 1 only, so a replicate run is "
            "not counted twice."
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


def paired_table(a: Analysis) -> Table:
    arms = a.arms
    rows = []
    for row in arms:
        cells = [
            "—" if row == col else fmt.interval(a.paired("gap", col, row), signed=True)
            for col in arms
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
        (arm, *(fmt.pct(rates[arm][c]) if rates.get(arm, {}).get(c) else "—" for c in classes))
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


def arms_table(a: Analysis, tests: list[TestResult]) -> Table:
    info = a.arm_info()
    served: dict[str, set[str]] = {}
    for (label, _, _), models in a.served_models.items():
        served.setdefault(label, set()).update(models.split(", "))
    rows = []
    for arm in a.arms:
        role = a.roles[arm]
        entered = [t.name for t in tests if arm in t.arms]
        rows.append(
            (
                arm,
                role.role,
                str(role.run),
                "recorded" if role.recorded else "inferred",
                str(info.get(arm, {}).get("model") or "—"),
                str(info.get(arm, {}).get("prompt_arm") or "—"),
                ", ".join(sorted(served.get(arm, ()))) or "—",
                ", ".join(entered) or "none",
                fmt.count(len(fmt.cells_behind(a, arm)), fmt.cells_behind(a, arm)),
            )
        )
    return Table(
        key="arms",
        title="Arms: role, run, model, served model and the tests each entered",
        caption=(
            "Every arm of the given runs. Role (model, intervention, reference, human) and run index come from the "
            "runs' arm_info where recorded; otherwise gold, controls, baselines and templates are reference, an arm "
            "with a hint or architecture prompt is an intervention, any other arm a model arm, and the first run "
            "holding an arm is run 1, the next run 2. The sign tests and the signature count "
            + fmt.tested_arms(a)
            + ". Served model is the model id the provider reported for the cells (from their transcripts), where "
            "recorded; a run whose cells name several was served by more than one model."
        ),
        columns=(
            "arm",
            "role",
            "run",
            "role from",
            "model",
            "prompt",
            "served model",
            "tests entered",
            "cells",
        ),
        rows=tuple(rows),
        labels=8,
    )


def diagnosis_tables(a: Analysis) -> list[Table]:
    """How often each mistake occurs per arm, from explanations.parquet (`grade-run --explain`);
    no table when no run has one."""
    from arrivalbench.explain import LABELS

    counts, totals = diagnosis_counts(a.sources)
    if not totals:
        return []
    labels = [label for label in LABELS if any(label in c for c in counts.values())]
    rows = [
        (
            arm,
            fmt.count(totals[arm]),
            *(fmt.share(counts.get(arm, {}).get(label, 0), totals[arm]) for label in labels),
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


def severity_table(a: Analysis) -> Table:
    """How wrong the silent failures are, beside the gap (analysis/severities.py)."""
    from arrivalbench.analysis.severities import MISSTATED, severity_summaries

    summaries = severity_summaries(a.outcomes)
    rows = []
    for arm in a.arms:
        s = summaries.get(arm)
        if s is None:
            rows.append((arm, fmt.count(0), fmt.count(0), "—", "—", "—", "—", "—"))
            continue
        rows.append(
            (
                arm,
                fmt.count(s.fails),
                fmt.count(s.measured, s.cells),
                fmt.pct(s.wrong_rows_median),
                fmt.pct(s.wrong_rows_p90),
                fmt.pct(s.total_error_median),
                fmt.pct(s.total_error_p90),
                fmt.share(s.misstated, s.measured, s.cells),
            )
        )
    return Table(
        key="severity",
        title="Severity of the silent failures",
        caption=(
            "Every FAIL on a declared hazard of a snapshot-passing cell (the FAILs behind the gap), pooled over "
            "(cell, hazard), not averaged over tasks. Wrong rows is the share of target rows the FAIL got wrong "
            "(1 - right rows share); total error the largest relative error of a numeric measure column's total, "
            "|sum actual - sum expected| / |sum expected|; median and 90th percentile over the arm's measured FAILs. "
            f"The last column counts the FAILs mis-stating a total by more than {MISSTATED:.0%}. Measured FAILs are "
            "those graded with record format 2 (older runs' FAILs carry no severity: regrade them). Severity says how "
            "wrong a table is, beside the gap, never replacing it."
        ),
        columns=(
            "arm",
            "silent FAILs",
            "measured",
            "wrong rows: median",
            "wrong rows: p90",
            "total error: median",
            "total error: p90",
            "mis-stating a total >1%",
        ),
        rows=tuple(rows),
    )


def pooled_hazard_table(a: Analysis) -> Table:
    """Per-hazard counts pooled over cells under both denominators (analysis/pooled.py)."""
    from arrivalbench.analysis.pooled import pooled_hazards

    hazards = [h for h in (*ORDERING, *IDEMPOTENCY) if h in a.hazards()]
    rules = (pooled_hazards(a.outcomes), pooled_hazards(a.outcomes, strict=True))
    rows = []
    for arm in a.arms:
        row: list[str] = [arm]
        for rule in rules:
            pooled = rule.get(arm)
            for h in hazards:
                x, n = pooled.counts.get(h, (0, 0)) if pooled else (0, 0)
                row.append(fmt.Num(f"{x}/{n}", x / n) if n else "—")
            row.append(fmt.pp(pooled.weakest_link if pooled else None))
        rows.append(tuple(row))
    names = [h.replace("_", " ") for h in hazards]
    return Table(
        key="hazards_pooled",
        title="Per-hazard counts pooled over cells, under both denominators",
        caption=(
            "PASS counts x/n (the CSV holds x/n as a fraction) pooled over cells rather than averaged over tasks (the rule for an arm whose cells per "
            "task vary, such as a human arm). Per-hazard rule: a hazard over the cells with an artifact whose verdict "
            "on it is PASS or FAIL. Strict rule: every hazard over the gap's cells (snapshot-passing, no ERROR on any "
            "declared hazard). Weakest link: the weaker ordering rate minus the weakest idempotency rate, in points. "
            "The mean over tasks is the hazards table's and the main table's; --tasks-from-arm recomputes every arm "
            "over one arm's tasks."
        ),
        columns=(
            "arm",
            *(f"{n}: per-hazard" for n in names),
            "weakest link: per-hazard",
            *(f"{n}: strict" for n in names),
            "weakest link: strict",
        ),
        rows=tuple(rows),
    )
