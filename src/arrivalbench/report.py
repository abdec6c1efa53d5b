"""The report of graded runs: tables and figures as Markdown, one self-contained HTML page, CSV and LaTeX.

The report only reads. Every number in it comes from stored verdict rows through stats.py and
idioms.py, so a report can be rebuilt at any time from the run directories and reads the same.

    OUT/
      report.md            the tables and the definitions, figures linked from figures/
      report.html          the same page with the figures embedded as PNG; no external resources
      tables/<key>.csv     each table as shown (one file per table), and tables/<key>.tex (booktabs)
      figures/<key>.png    each figure
"""

from __future__ import annotations

import base64
import csv
import dataclasses
import functools
import html
import io
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arrivalbench.errors import ArrivalBenchError, UsageError
from arrivalbench.idioms import (
    FEATURES,
    GuardCell,
    GuardSplit,
    Idioms,
    artifact_idioms,
    guard_cells,
    guard_sign_test,
    guard_split,
    idiom_table,
)
from arrivalbench.spec import get_task
from arrivalbench.stats import (
    BENIGN,
    DEFAULT_BOOTSTRAP_SEED,
    IDEMPOTENCY,
    LOUD,
    ORDERING,
    SIGN_TEST_NULL,
    CellOutcome,
    Estimate,
    Signature,
    SignatureForm,
    Unit,
    crash_rates,
    estimate,
    no_artifact,
    paired,
    replication,
    run_outcomes,
    signature,
    signature_sign_test,
)
from arrivalbench.store import RunDir

METRICS_DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
UNITS = ("task", "scenario")
PROMPT_BASELINE = "unhinted"
GUARD_HAZARD = "duplicate_delivery"


class ReportInputError(ArrivalBenchError):
    """A run directory the report cannot read as a graded run."""


# -- the pieces of a report ------------------------------------------------------------------------


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


@dataclass(frozen=True)
class Figure:
    key: str
    title: str
    caption: str
    png: bytes
    number: int = 0

    @property
    def heading(self) -> str:
        return f"Figure {self.number}. {self.title}"


@dataclass(frozen=True)
class Source:
    """One run given to the report, with its cells labelled as they appear in the report."""

    run: RunDir
    name: str
    labels: dict[str, str]  # arm as stored -> label in the report
    outcomes: list[CellOutcome]  # arms as stored


@dataclass(frozen=True)
class Report:
    sources: tuple[Source, ...]
    paragraphs: tuple[tuple[str, str], ...]  # (heading, text), the header
    blocks: tuple[Table | Figure, ...]  # in reading order


@dataclass(frozen=True)
class ReportFiles:
    markdown: Path
    html: Path
    tables: Path
    figures: Path


# -- reading the runs ------------------------------------------------------------------------------


def load_sources(paths: Sequence[Path]) -> list[Source]:
    """Open each run, refuse ungraded ones, and label arms so that no two runs share a label."""
    if not paths:
        raise UsageError("report: no run directory given; pass at least one graded run directory.")
    runs = []
    for path in paths:
        run = RunDir.open(Path(path))
        if run.verdicts().num_rows == 0:
            raise ReportInputError(
                f"{run.path}: the run has no verdicts yet; grade it first with 'arrivalbench grade-run {run.path}'."
            )
        runs.append(run)
    if len({run.path.resolve() for run in runs}) < len(runs):
        given = ", ".join(str(run.path) for run in runs)
        raise UsageError(f"report: a run directory was given twice ({given}); pass each run once.")
    names = [run.path.name for run in runs]
    if len(set(names)) < len(names):
        names = [str(run.path) for run in runs]
    found = [run_outcomes(run) for run in runs]
    arms = [{o.arm for o in outcomes} for outcomes in found]
    sources = []
    for run, name, own, outcomes in zip(runs, names, arms, found, strict=True):
        shared = {arm for arm in own if sum(arm in other for other in arms) > 1}
        labels = {arm: f"{arm} ({name})" if arm in shared else arm for arm in sorted(own)}
        sources.append(Source(run=run, name=name, labels=labels, outcomes=outcomes))
    return sources


def _labelled(sources: Sequence[Source]) -> list[CellOutcome]:
    return [dataclasses.replace(o, arm=s.labels[o.arm]) for s in sources for o in s.outcomes]


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


# -- the analysis: one function per table ----------------------------------------------------------


@dataclass
class _Analysis:
    """The labelled outcomes of every run, with estimates computed once per metric."""

    sources: Sequence[Source]
    outcomes: list[CellOutcome]
    unit: Unit
    resamples: int
    seed: int
    _cache: dict[str, dict[str, Estimate]] = dataclasses.field(default_factory=dict)

    def estimates(self, metric: str) -> dict[str, Estimate]:
        if metric not in self._cache:
            self._cache[metric] = estimate(
                self.outcomes, metric, unit=self.unit, resamples=self.resamples, seed=self.seed
            )
        return self._cache[metric]

    def paired(self, metric: str, arm_a: str, arm_b: str) -> Estimate:
        return paired(
            self.outcomes,
            metric,
            arm_a,
            arm_b,
            unit=self.unit,
            resamples=self.resamples,
            seed=self.seed,
        )

    @functools.cached_property
    def arms(self) -> list[str]:
        """Labels sorted by gap, lowest first; arms with no usable gap last."""
        gap = {arm: est.value for arm, est in self.estimates("gap").items()}

        def order(arm: str) -> tuple[bool, float, str]:
            value = gap.get(arm)
            return (value is None, value or 0.0, arm)

        return sorted({o.arm for o in self.outcomes}, key=order)

    def hazards(self) -> list[str]:
        """Hazards some cell declares, in the registry's order: ordering, idempotency, then loud."""
        declared = {h for o in self.outcomes for h in o.hazards}
        return [h for h in (*ORDERING, *IDEMPOTENCY, *LOUD) if h in declared]

    @functools.cached_property
    def idioms(self) -> tuple[list[GuardCell], dict[str, Idioms]]:
        """Every cell (labelled) with its verdicts, and the idioms of every artifact, read statically."""
        cells: list[GuardCell] = []
        found: dict[str, Idioms] = {}
        for s in self.sources:
            tasks = {t: get_task(t) for t in sorted({o.task for o in s.outcomes})}
            found.update(artifact_idioms(s.run, tasks))
            cells += [
                dataclasses.replace(c, arm=s.labels[c.arm]) for c in guard_cells(s.run, tasks)
            ]
        return cells, found

    def arm_info(self) -> dict[str, dict[str, Any]]:
        """label -> arm_info entry (model, prompt_arm), for generated arms only."""
        return {
            s.labels[arm]: info
            for s in self.sources
            for arm, info in s.run.arm_info().items()
            if arm in s.labels
        }


def main_table(a: _Analysis, sigs: dict[str, Signature]) -> Table:
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


def hazard_table(a: _Analysis, sigs: dict[str, Signature]) -> Table:
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
            "Each rate is the share of PASS among cells that pass the snapshot and whose verdict on that schedule "
            "is PASS or FAIL (an ERROR there leaves the cell out), averaged over the tasks declaring the hazard. "
            "Ordering hazards (late arrival, out of order) come first, then the idempotency hazards (duplicate "
            "delivery, crash-retry, backfill); schema evolution fails loudly and is never averaged into either group. The benign schedules deliver the same data in order and separate ordinary "
            "incrementality bugs from temporal ones."
        ),
        columns=tuple(columns),
        rows=tuple(rows),
    )


def intervention_table(a: _Analysis) -> Table:
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


def repair_table(a: _Analysis) -> Table:
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


def replication_table(a: _Analysis) -> Table:
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


def paired_table(a: _Analysis) -> Table:
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


def crash_table(a: _Analysis) -> Table:
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
    bound = ""
    if k == 0:
        bound = f" (≤{_pct(min(1.0, 3 / n))})"
    elif k == n:
        bound = f" (≥{_pct(max(0.0, 1 - 3 / n))})"
    return f"{k}/{n} = {_pct(k / n)}{bound}"


def _splits(a: _Analysis) -> dict[str, dict[bool, GuardSplit]]:
    cells, found = a.idioms
    by_arm: dict[str, dict[bool, GuardSplit]] = {}
    for split in guard_split(cells, found, hazard=GUARD_HAZARD):
        by_arm.setdefault(split.arm, {})[split.guarded] = split
    return by_arm


def guard_table(a: _Analysis) -> Table:
    splits = _splits(a)
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


def idioms_table(a: _Analysis) -> Table:
    cells, found = a.idioms
    shares = {share.arm: share for share in idiom_table(cells, found)}
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


# -- figures ---------------------------------------------------------------------------------------

SNAPSHOT_COLOUR, GAP_COLOUR = "#9a9a9a", "#e07b20"


def _png(draw: Callable[[Any], None], size: tuple[float, float]) -> bytes:
    """Draw on a fresh Agg figure and return PNG bytes that depend on the data alone (no dates, no version)."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure as MplFigure

    with matplotlib.rc_context(
        {
            "svg.hashsalt": "arrivalbench",
            "font.size": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
        }
    ):
        fig = MplFigure(figsize=size, layout="constrained")
        FigureCanvasAgg(fig)
        draw(fig)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="png", dpi=120, metadata={"Software": None})
    return buffer.getvalue()


def _value(est: Estimate | None) -> float:
    return float("nan") if est is None or est.value is None else 100 * est.value


def _whisker(est: Estimate | None) -> tuple[float, float, float]:
    """(value, below, above) in percent; at 0% or 100% the whisker reaches the rule-of-three bound."""
    value = _value(est)
    if est is None or est.value is None:
        return (value, 0.0, 0.0)
    if est.bound is not None:
        bound = 100 * est.bound
        return (value, max(value - bound, 0.0), max(bound - value, 0.0))
    low = value if est.low is None else 100 * est.low
    high = value if est.high is None else 100 * est.high
    return (value, value - low, high - value)


def _arm_axis(ax: Any, arms: Sequence[str]) -> None:
    ax.set_xticks(range(len(arms)))
    ax.set_xticklabels(
        arms, rotation=30 if len(arms) > 3 else 0, ha="right" if len(arms) > 3 else "center"
    )
    ax.set_ylim(0, 105)
    ax.grid(axis="y", color="#e6e6e6", linewidth=0.6)
    ax.set_axisbelow(True)


def snapshot_gap_figure(a: _Analysis) -> Figure:
    arms, snap, gap = a.arms, a.estimates("snapshot_pass"), a.estimates("gap")

    def draw(fig: Any) -> None:
        ax = fig.add_subplot()
        for offset, rates, colour, label in (
            (-0.2, snap, SNAPSHOT_COLOUR, "snapshot-pass"),
            (0.2, gap, GAP_COLOUR, "gap"),
        ):
            points = [_whisker(rates.get(arm)) for arm in arms]
            xs = [i + offset for i in range(len(arms))]
            ax.bar(xs, [p[0] for p in points], width=0.4, color=colour, label=label)
            ax.errorbar(
                xs,
                [p[0] for p in points],
                yerr=[[p[1] for p in points], [p[2] for p in points]],
                fmt="none",
                ecolor="#222222",
                elinewidth=0.9,
                capsize=2.5,
            )
        _arm_axis(ax, arms)
        ax.set_ylabel("% of cells, mean over tasks")
        ax.legend(loc="lower left", bbox_to_anchor=(0, 1.0), ncols=2, frameon=False)

    return Figure(
        key="snapshot_gap",
        title="Snapshot-pass against the gap, per arm",
        caption=(
            "Snapshot-pass (grey) and the gap (orange) per arm, sorted by gap; whiskers are 95% bootstrap "
            "intervals over tasks, and at exactly 0% or 100% they reach the rule-of-three bound instead."
        ),
        png=_png(draw, (max(5.0, 0.75 * len(arms) + 2.0), 3.6)),
    )


def hazard_figure(a: _Analysis) -> Figure:
    arms = a.arms
    hazards = [h for h in (*ORDERING, *IDEMPOTENCY) if h in a.hazards()]
    rates = {h: a.estimates(f"pass:{h}") for h in hazards}
    split = sum(h in ORDERING for h in hazards) - 0.5

    def draw(fig: Any) -> None:
        import matplotlib

        ax = fig.add_subplot()
        colours = matplotlib.colormaps["tab10" if len(arms) <= 10 else "tab20"]
        dodge = min(
            0.06, 0.5 / max(len(arms), 1)
        )  # arms with equal rates stay visible side by side
        for i, arm in enumerate(arms):
            ys = [_value(rates[h].get(arm)) for h in hazards]
            xs = [x + (i - (len(arms) - 1) / 2) * dodge for x in range(len(hazards))]
            ax.plot(
                xs,
                ys,
                marker="o",
                markersize=4,
                linewidth=1.2,
                color=colours(i % colours.N),
                label=arm,
            )
        if 0 < split < len(hazards) - 1:
            ax.axvline(split, color="#444444", linewidth=0.9, linestyle="--")
            ax.text(split / 2, 103, "ordering", ha="center", fontsize=8, color="#444444")
            ax.text(
                (split + len(hazards) - 1) / 2,
                103,
                "idempotency",
                ha="center",
                fontsize=8,
                color="#444444",
            )
        ax.set_xticks(range(len(hazards)))
        ax.set_xticklabels([h.replace("_", " ") for h in hazards])
        ax.set_xlim(-0.4, len(hazards) - 0.6)
        ax.set_ylim(0, 108)
        ax.set_ylabel("temporal-pass %, mean over tasks")
        ax.grid(axis="y", color="#e6e6e6", linewidth=0.6)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize=8)

    return Figure(
        key="hazards",
        title="Temporal-pass per hazard, per arm",
        caption=(
            "Per-hazard temporal-pass for each arm (means over tasks, over snapshot-passing cells where the "
            "hazard did not ERROR). The dashed rule separates the ordering hazards (left) from the idempotency hazards "
            "(right); schema evolution, the loud hazard, is left out as in every group average."
        ),
        png=_png(draw, (7.5, 3.8)),
    )


def guard_figure(a: _Analysis) -> Figure:
    splits = _splits(a)
    arms = [arm for arm in a.arms if arm in splits]

    def draw(fig: Any) -> None:
        axes = fig.subplots(1, 2, sharey=True)
        for ax, (title, attr) in zip(
            axes, (("silent FAIL", "fail"), ("ERROR", "error")), strict=True
        ):
            for offset, guarded, colour, label in (
                (-0.2, True, "#2b6cb0", "guarded"),
                (0.2, False, "#f0a35e", "unguarded"),
            ):
                xs, ys, counts = [], [], []
                for i, arm in enumerate(arms):
                    split = splits[arm].get(guarded)
                    if split is not None and split.cells:
                        xs.append(i + offset)
                        ys.append(100 * getattr(split, attr) / split.cells)
                        counts.append(split.cells)
                ax.bar(xs, ys, width=0.4, color=colour, label=label)
                for x, y, n in zip(xs, ys, counts, strict=True):
                    ax.text(x, y + 1.5, f"n={n}", ha="center", fontsize=7, color="#444444")
            _arm_axis(ax, arms)
            ax.set_title(f"{title} on {GUARD_HAZARD.replace('_', ' ')}", fontsize=9)
            if not arms:
                ax.text(
                    0.5,
                    0.5,
                    "no snapshot-passing cell\ndeclares the hazard",
                    transform=ax.transAxes,
                    ha="center",
                    va="center",
                    color="#666666",
                )
        axes[0].set_ylabel("% of cells, pooled")
        axes[0].set_ylim(0, 112)  # room for the n= labels over a bar at 100%
        fig.legend(
            *axes[0].get_legend_handles_labels(), loc="outside upper center", ncols=2, frameon=False
        )

    return Figure(
        key="guard",
        title="Silent failure and crashes on duplicate delivery, guarded against unguarded cells",
        caption=(
            "Per arm, the share of snapshot-passing cells that FAIL silently (left) and that ERROR (right) on "
            "duplicate delivery, for scripts with a within-batch guard (blue) and without (orange); n is the "
            "number of cells in each bar. The guard table gives the counts and bounds."
        ),
        png=_png(draw, (max(7.0, 1.2 * len(arms) + 3.0), 3.6)),
    )


# -- building and writing --------------------------------------------------------------------------


def build_report(
    paths: Sequence[Path],
    *,
    resamples: int = 10_000,
    unit: str = "task",
    seed: int = DEFAULT_BOOTSTRAP_SEED,
) -> Report:
    """Read the runs and compute every table and figure; nothing is written."""
    if unit not in UNITS:
        raise UsageError(f"--unit {unit!r}: expected one of {', '.join(UNITS)}.")
    if resamples < 100:
        raise UsageError(
            f"--resamples {resamples}: use at least 100 (10000 for reported intervals)."
        )
    sources = load_sources(paths)
    a = _Analysis(sources, _labelled(sources), unit, resamples, seed)  # type: ignore[arg-type]  # checked above
    sigs = signature(a.outcomes)
    main, hazards = main_table(a, sigs), hazard_table(a, sigs)
    blocks: list[Table | Figure] = [
        main,
        snapshot_gap_figure(a),
        hazards,
        hazard_figure(a),
        intervention_table(a),
        repair_table(a),
        replication_table(a),
        paired_table(a),
        guard_table(a),
        guard_figure(a),
        crash_table(a),
        idioms_table(a),
    ]
    blocks = _numbered(blocks)
    return Report(
        sources=tuple(sources),
        paragraphs=tuple(_header(sources, unit, resamples, seed)),
        blocks=tuple(blocks),
    )


def _numbered(blocks: list[Table | Figure]) -> list[Table | Figure]:
    """Tables and figures numbered separately, in reading order."""
    counts = {Table: 0, Figure: 0}
    out = []
    for block in blocks:
        counts[type(block)] += 1
        out.append(dataclasses.replace(block, number=counts[type(block)]))
    return out


def _header(
    sources: Sequence[Source], unit: str, resamples: int, seed: int
) -> list[tuple[str, str]]:
    runs = []
    for s in sources:
        m = s.run.manifest
        arms = len(m.get("arms", []))
        ungraded = sum(not o.graded for o in s.outcomes)
        runs.append(
            f"{s.name} ({s.run.path}): suite {str(m.get('suite_hash'))[:12]}, harness {m.get('harness_version')}, "
            f"engine {m.get('engine')} {m.get('engine_version')}, base seed {m.get('base_seed')}, "
            f"{len(s.outcomes)} cells in {arms} arm{'s' * (arms != 1)}, made {m.get('created_at')}"
            + (f", {ungraded} cells not yet graded (in no denominator)" if ungraded else "")
        )
    suites = {str(s.run.manifest.get("suite_hash")) for s in sources}
    warning = (
        " The runs were graded against different suites, so their rates describe different task versions."
        if len(suites) > 1
        else ""
    )
    shared = sorted({arm for s in sources for arm, label in s.labels.items() if label != arm})
    labels = (
        f" Arms present in more than one run ({', '.join(shared)}) are labelled '<arm> (<run>)'."
        if shared
        else ""
    )
    return [
        ("Runs", "; ".join(runs) + "." + warning + labels),
        (
            "Intervals",
            (
                f"Percentile bootstrap over {unit}s, {resamples:,} resamples at the 95% level, seed {seed}: a resampled "
                f"{unit} carries all its samples, and paired differences resample the {unit}s usable in both arms once for "
                "both. A rate of exactly 0% or 100% is shown with its one-sided rule-of-three 95% bound (about 3/n over "
                "n tasks) instead of an interval, because resampling an all-zero sample returns [0, 0]."
            ),
        ),
        (
            "Definitions",
            (
                "A cell is one (arm, task, sample), and every rate is a mean over tasks of that task's rate, never pooled "
                "over cells (the no-artifact shares excepted); a cell holding an artifact with no verdict yet is in no "
                "denominator. Snapshot-pass: the artifact exists and passes the snapshot, the test the agent saw. Gap, "
                "the primary metric: among cells that pass the snapshot and raise no ERROR on a declared hazard, the share "
                "that FAIL (a silently wrong table) on at least one declared hazard. Temporal-pass of a schedule: among "
                "cells that pass the snapshot and whose verdict on it is PASS or FAIL, the share that PASS; a hazard "
                "counts over the tasks declaring it. Error: no artifact, or an ERROR on the snapshot or a declared hazard, "
                "over all cells. All-in failure: no artifact, a snapshot that does not pass, or a FAIL or ERROR on a "
                "declared hazard, over all cells. Signature: ordering-hazard against idempotency-hazard temporal-pass. "
                "Definitions with worked examples: docs/metrics.md."
            ),
        ),
    ]


def render_markdown(report: Report, link: str) -> str:
    lines = ["# ArrivalBench report", ""]
    for heading, text in report.paragraphs:
        text = text.replace("docs/metrics.md", f"[docs/metrics.md]({link})")
        lines += [f"**{heading}.** {text}", ""]
    for block in report.blocks:
        lines += [f"## {block.heading}", ""]
        if isinstance(block, Figure):
            lines += [f"![{block.heading}](figures/{block.key}.png)", "", block.caption, ""]
            continue
        lines += [block.caption, ""]
        cell = lambda text: text.replace("|", "\\|")  # noqa: E731
        lines.append("| " + " | ".join(map(cell, block.columns)) + " |")
        lines.append(
            "| "
            + " | ".join("---" if i < block.labels else "---:" for i in range(len(block.columns)))
            + " |"
        )
        lines += ["| " + " | ".join(map(cell, row)) + " |" for row in block.rows]
        lines.append("")
        if block.note:
            lines += [block.note, ""]
    return "\n".join(lines)


def render_csv(table: Table) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table.columns)
    writer.writerows(table.rows)
    return buffer.getvalue()


_LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "≤": r"$\leq$",
    "≥": r"$\geq$",
    "—": "---",
    "−": "$-$",
    "Δ": r"$\Delta$",
}


def _tex(text: str) -> str:
    return "".join(_LATEX.get(ch, ch) for ch in text)


def render_latex(table: Table) -> str:
    lines = [
        "% Written by arrivalbench report; needs \\usepackage{booktabs}.",
        "\\begin{table}",
        "\\centering",
        f"\\caption{{{_tex(table.title)}. {_tex(table.caption)}}}",
        f"\\label{{tab:arrivalbench-{table.key}}}",
        f"\\begin{{tabular}}{{l{'r' * (len(table.columns) - 1)}}}",
        "\\toprule",
        " & ".join(map(_tex, table.columns)) + " \\\\",
        "\\midrule",
        *(" & ".join(map(_tex, row)) + " \\\\" for row in table.rows),
        "\\bottomrule",
        "\\end{tabular}",
    ]
    if table.note:
        lines.append(f"\\par\\smallskip\\footnotesize {_tex(table.note)}")
    lines.append("\\end{table}")
    return "\n".join(lines) + "\n"


_STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 96rem; margin: 2rem auto; padding: 0 1rem; color: #1d1d1f; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-variant-numeric: tabular-nums; }
th, td { padding: .25rem .6rem; border-bottom: 1px solid #ddd; text-align: right; white-space: nowrap; }
th.label, td.label { text-align: left; }
thead th { border-bottom: 2px solid #444; }
figure { margin: 1.5rem 0; } figure img { max-width: 100%; height: auto; }
figcaption, .caption, .note { font-size: .9rem; color: #444; max-width: 60rem; }
.scroll { overflow-x: auto; }
#decode-warning { background: #fde8e8; padding: .5rem; }
"""

# Marks every figure as decoded or not once the page has loaded, so a broken embedding is visible
# to a reader (a warning) and to the headless-browser test (data attributes in the dumped DOM).
_SCRIPT = """
window.addEventListener("load", () => {
  let broken = 0;
  for (const img of document.images) {
    const ok = img.complete && img.naturalWidth > 0;
    img.dataset.decoded = ok ? "yes" : "no";
    img.dataset.naturalWidth = String(img.naturalWidth);
    if (!ok) broken += 1;
  }
  document.body.dataset.figuresChecked = String(document.images.length);
  if (broken) document.getElementById("decode-warning").hidden = false;
});
"""


def render_html(report: Report, link: str) -> str:
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        "<title>ArrivalBench report</title>",
        f"<style>{_STYLE}</style>",
        "</head>",
        "<body>",
        "<h1>ArrivalBench report</h1>",
        '<p id="decode-warning" hidden>Some figures on this page could not be decoded.</p>',
    ]
    for heading, text in report.paragraphs:
        body = e(text).replace("docs/metrics.md", f'<a href="{e(link)}">docs/metrics.md</a>')
        parts.append(f"<p><strong>{e(heading)}.</strong> {body}</p>")
    parts.append(
        "<nav><ul>"
        + "".join(f'<li><a href="#{_anchor(b)}">{e(b.heading)}</a></li>' for b in report.blocks)
        + "</ul></nav>"
    )
    for block in report.blocks:
        if isinstance(block, Figure):
            data = base64.b64encode(block.png).decode("ascii")
            parts.append(
                f'<figure id="{_anchor(block)}" data-figure="{block.key}"><h2>{e(block.heading)}</h2>'
                f'<img alt="{e(block.title)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{e(block.caption)}</figcaption></figure>"
            )
            continue
        left = ' class="label"'
        head = "".join(
            f'<th scope="col"{left if i < block.labels else ""}>{e(c)}</th>'
            for i, c in enumerate(block.columns)
        )
        body = "".join(
            "<tr>"
            + "".join(
                (
                    f'<th scope="row"{left}>{e(c)}</th>'
                    if i == 0
                    else f"<td{left if i < block.labels else ''}>{e(c)}</td>"
                )
                for i, c in enumerate(row)
            )
            + "</tr>"
            for row in block.rows
        )
        note = f'<p class="note">{e(block.note)}</p>' if block.note else ""
        parts.append(
            f'<section id="{_anchor(block)}"><h2>{e(block.heading)}</h2><p class="caption">{e(block.caption)}</p>'
            f'<div class="scroll"><table data-table="{block.key}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>{note}</section>"
        )
    parts += [f"<script>{_SCRIPT}</script>", "</body>", "</html>", ""]
    return "\n".join(parts)


def _anchor(block: Table | Figure) -> str:
    return f"{'figure' if isinstance(block, Figure) else 'table'}-{block.key}"


def _metrics_link(out: Path) -> str:
    """Where docs/metrics.md is, seen from the report: relative inside the repository, else its file URI."""
    if not METRICS_DOC.is_file():
        return "docs/metrics.md"
    root, here = METRICS_DOC.parents[1], out.resolve()
    if here == root or root in here.parents:
        return Path(os.path.relpath(METRICS_DOC, here)).as_posix()
    return METRICS_DOC.as_uri()


def write_report(
    paths: Sequence[Path],
    out: Path,
    *,
    resamples: int = 10_000,
    unit: str = "task",
    seed: int = DEFAULT_BOOTSTRAP_SEED,
) -> ReportFiles:
    """Build the report of the runs and write every file under `out`; returns where they are."""
    report = build_report(paths, resamples=resamples, unit=unit, seed=seed)
    out = Path(out)
    files = ReportFiles(
        markdown=out / "report.md",
        html=out / "report.html",
        tables=out / "tables",
        figures=out / "figures",
    )
    try:
        files.tables.mkdir(parents=True, exist_ok=True)
        files.figures.mkdir(parents=True, exist_ok=True)
        link = _metrics_link(out)
        for block in report.blocks:
            if isinstance(block, Figure):
                (files.figures / f"{block.key}.png").write_bytes(block.png)
            else:
                (files.tables / f"{block.key}.csv").write_text(render_csv(block), encoding="utf-8")
                (files.tables / f"{block.key}.tex").write_text(
                    render_latex(block), encoding="utf-8"
                )
        files.markdown.write_text(render_markdown(report, link), encoding="utf-8")
        files.html.write_text(render_html(report, link), encoding="utf-8")
    except OSError as exc:
        raise UsageError(
            f"{out}: cannot write the report ({exc.strerror}); choose a writable --out."
        ) from None
    return files
