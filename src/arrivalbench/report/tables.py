"""The report's tables: one function per table, each returning every cell already formatted.

A table is built from the shared analysis (analysis.py) and carries its own title, caption and
note, so the Markdown, HTML, CSV and LaTeX renderings (render.py) print the same strings.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from arrivalbench.analysis.guards import guard_sign_test, idiom_table
from arrivalbench.analysis.idioms import FEATURES
from arrivalbench.analysis.loopstats import ALL, repair_effect
from arrivalbench.analysis.stats import (
    BENIGN,
    CONSTRAINT,
    IDEMPOTENCY,
    LOUD,
    METRICS,
    ORDERING,
    SIGN_TEST_NULL,
    SILENT,
    Estimate,
    Signature,
    SignatureForm,
    bound_of_three,
    clopper_pearson,
    crash_rates,
    no_artifact,
    replication,
    signature,
    signature_sign_test,
)
from arrivalbench.report.analysis import GUARD_HAZARD, Analysis

PROMPT_BASELINE = "unhinted"


class Num(str):
    """A number as printed, carrying its value for the numeric CSV and report.json (rate, lo and
    hi as fractions; a difference as a signed fraction) and the cells behind it, which the HTML
    page links to; `n`, where set, is the number of units (tasks) the rate is over. It is the
    printed string, so every rendering treats it as text."""

    rate: float | None
    lo: float | None
    hi: float | None
    cells: tuple[tuple[str, str, int], ...]
    n: int | None

    def __new__(
        cls,
        text: str,
        rate: float | None = None,
        lo: float | None = None,
        hi: float | None = None,
        cells: tuple[tuple[str, str, int], ...] = (),
        n: int | None = None,
    ) -> Num:
        obj = super().__new__(cls, text)
        obj.rate, obj.lo, obj.hi, obj.cells, obj.n = rate, lo, hi, tuple(cells), n
        return obj

    def __reduce__(self):  # type: ignore[no-untyped-def]
        return (Num, (str(self), self.rate, self.lo, self.hi, self.cells, self.n))


@dataclass(frozen=True)
class TestResult:
    """One hypothesis test of the report, with the arms and runs that entered it."""

    name: str
    arms: tuple[str, ...]
    runs: tuple[int, ...]
    statistic: float | None
    n: int
    p_value: float | None
    null: float | None = None
    note: str = ""


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
    tests: tuple[TestResult, ...] = ()  # the hypothesis tests this table's note reports

    @property
    def heading(self) -> str:
        return f"Table {self.number}. {self.title}"


# -- formatting ------------------------------------------------------------------------------------


Cells = tuple[tuple[str, str, int], ...]


def _pct(value: float | None, cells: Cells = ()) -> str:
    return "—" if value is None else Num(f"{100 * value:.1f}%", value, cells=cells)


def _pp(value: float | None) -> str:
    """A difference in percentage points, signed; zero prints unsigned as in the paper's tables."""
    if value is None:
        return "—"
    text = f"{100 * value:+.1f}"
    return Num(("0.0" if text in ("+0.0", "-0.0") else text) + "pp", value)


def _bounds(est: Estimate) -> tuple[float | None, float | None]:
    """(lo, hi) of an estimate: its interval, or at 0 or 1 the one-sided bound and the rate."""
    if est.bound is not None and est.value is not None:
        return (est.value, est.bound) if est.bound >= est.value else (est.bound, est.value)
    return est.low, est.high


def _point(est: Estimate | None, cells: Cells = ()) -> str:
    """The rate alone, keeping its one-sided bound at exactly 0% or 100%."""
    if est is None or est.value is None:
        return "—"
    text = dataclasses.replace(est, low=None, high=None).format(digits=1)
    lo, hi = _bounds(est) if est.bound is not None else (None, None)
    return Num(text, est.value, lo, hi, cells)


def _interval(est: Estimate | None, signed: bool = False, cells: Cells = ()) -> str:
    if est is None or est.value is None:
        return "—"
    return Num(est.format(digits=1, signed=signed), est.value, *_bounds(est), cells=cells)


def _count(n: int, cells: Cells = ()) -> str:
    return Num(str(n), n, cells=cells)


def _cells(a: Analysis, arm: str, metric: str | None = None) -> Cells:
    """The cells behind an arm's number: those in the metric's denominator (every cell of the arm
    when no metric is named)."""
    fn = METRICS[metric] if metric else None
    return tuple(
        (o.arm, o.task, o.sample)
        for o in a.outcomes
        if o.arm == arm and (fn is None or fn(o) is not None)
    )


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
        _count(len({o.task for o in own})),
        _count(len(own), _cells(a, arm)),
        _count(gap.tasks if gap else 0, _cells(a, arm, "gap")),
        *(
            _interval(a.estimates(metric).get(arm), cells=_cells(a, arm, metric))
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
                *(_pp(getattr(sig, form) if sig else None) for _, form in margins),
                _pp(five[arm].group_mean if arm in five else None),
            )
        )
    tested = a.tested
    runs = tuple(sorted(a.runs))
    tests, lines = [], []
    for header, form in margins:
        positive, n, p = signature_sign_test(
            {arm: sigs[arm] for arm in tested if arm in sigs}, form
        )
        entered_arms = tuple(
            arm for arm in tested if arm in sigs and getattr(sigs[arm], form) is not None
        )
        tests.append(
            TestResult(
                name=f"signature_{form}",
                arms=entered_arms,
                runs=runs,
                statistic=float(positive),
                n=n,
                p_value=p,
                null=SIGN_TEST_NULL[form],
            )
        )
        lines.append(
            f"{header.removesuffix(' pp')} positive in {positive} of {n} untied arms "
            f"(one-sided sign test against {SIGN_TEST_NULL[form]:.2f}: p = {p:.3g})"
        )
    positive, n, p = signature_sign_test(
        {arm: five[arm] for arm in tested if arm in five}, "group_mean"
    )
    tests.append(
        TestResult(
            name="signature_group_mean_all_five",
            arms=tuple(arm for arm in tested if arm in five and five[arm].group_mean is not None),
            runs=runs,
            statistic=float(positive),
            n=n,
            p_value=p,
            null=SIGN_TEST_NULL["group_mean"],
        )
    )
    lines.append(
        f"group-mean margin over the tasks declaring all five silent hazards positive in {positive} of "
        f"{n} untied arms (p = {p:.3g})"
    )
    entered = (
        f"Arms entering the sign tests ({_who(a)}): {', '.join(tested)}."
        if tested
        else f"No arm entered the sign tests: these runs hold no {_who(a)}, so every test is over 0 arms."
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


def _who(a: Analysis) -> str:
    arms = "the arms named by --arms" if a.chosen_arms is not None else "model arms (unhinted)"
    runs = ", ".join(str(r) for r in sorted(a.runs))
    engine = (
        f", on {a.engines[0]} (the first run's engine)"
        if a.several_engines and a.chosen_arms is None
        else ""
    )
    return f"{arms}, run{'s' * (len(a.runs) > 1)} {runs}{engine}"


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
            row += [_point(rates[s].get(arm), _cells(a, arm, f"pass:{s}")) for s in schedules]
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
            (_interval(a.estimates(m).get(baseline), cells=_cells(a, baseline, m)), "—")
            for m in metrics
        ]
        after = [
            (
                _interval(a.estimates(m).get(arm), cells=_cells(a, arm, m)),
                _interval(a.paired(m, baseline, arm), signed=True),
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
    first = [
        o for o in a.outcomes if a.roles[o.arm].run == 1 and a.engine_of[o.arm] == a.engines[0]
    ]
    pooled = [e for e in repair_effect(first, resamples=a.resamples, seed=a.seed) if e.arm == ALL]
    effects = [e for e in effects if e.arm != ALL] + pooled
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
            if first.engine != second.engine:  # another engine: not a replicate (engine table)
                continue
            for arm in sorted(set(first.labels) & set(second.labels)):
                if first.labels[arm] not in a.replicated:
                    continue
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


def _share(k: int, n: int, cells: Cells = ()) -> str:
    """A rate pooled over n cells, as 'k/n = x%', with its one-sided bound at 0% and 100%
    (exact below 30 cells); the numeric value carries the exact Clopper-Pearson interval."""
    if n == 0:
        return "—"
    bound = bound_of_three(k / n, n)
    side = "" if bound is None else f" ({'≤' if k == 0 else '≥'}{_pct(bound)})"
    if bound is None:
        lo, hi = clopper_pearson(k, n)
    else:
        lo, hi = (0.0, bound) if k == 0 else (bound, 1.0)
    return Num(f"{k}/{n} = {_pct(k / n)}{side}", k / n, lo, hi, cells)


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
                _count(n, keys),
                _share(split.fail if split else 0, n, keys),
                _share(split.error if split else 0, n, keys),
                _count(fired),
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
        f"trials: p = {test.p:.3g}); arms counted ({_who(a)}): {', '.join(test.arms)}."
        if test.trials
        else f"No arm among {_who(a)} has ten or more cells in both groups, so the sign test is over 0 arms."
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
                _count(share.cells if share else 0),
                _count(len(scripts)),
                _count(len(kinds)),
                *(_pct(share.shares[n]) if share else "—" for n in names),
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
    for i, first in enumerate(a.sources):
        for second in a.sources[i + 1 :]:
            if first.engine != second.engine:  # another engine: not a replicate (engine table)
                continue
            for arm in sorted(set(first.labels) & set(second.labels)):
                if first.labels[arm] not in a.replicated:
                    continue
                if first.run.arm_info().get(arm, {}).get("model") != second.run.arm_info().get(
                    arm, {}
                ).get("model"):
                    continue
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
                            _pct(rep.rate_a, _cells(a, first.labels[arm], metric)),
                            _pct(rep.rate_b, _cells(a, second.labels[arm], metric)),
                            _printed_delta(rep.rate_a, rep.rate_b),
                            _count(len(rep.failing_a)),
                            _count(len(rep.failing_b)),
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
                _count(len(_cells(a, arm)), _cells(a, arm)),
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
            + _who(a)
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
            _count(totals[arm]),
            *(_share(counts.get(arm, {}).get(label, 0), totals[arm]) for label in labels),
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
