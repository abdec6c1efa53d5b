"""The report's blocks for runs graded on several engines: the signature and the per-hazard pass
of each arm on each engine (a table and a figure), and whether the engine changes the verdict of
the same cell (a table).

An arm on two engines is two labelled arms of the report (each run is graded on one engine), never
a replicate: run indices are counted per engine (analysis/roles.py), the replication tables pair
runs on the same engine only, and by default the sign tests count the first run's engine only.
render.py adds these blocks only when the runs span more than one engine, so a single-engine
report is unchanged.
"""

from __future__ import annotations

from typing import Any

from arrivalbench.analysis.engines import verdict_pairs
from arrivalbench.analysis.stats import IDEMPOTENCY, ORDERING, Estimate, Signature
from arrivalbench.report import format as fmt
from arrivalbench.report.analysis import Analysis
from arrivalbench.report.figures import Figure, _png, _value
from arrivalbench.report.format import Num, Table

SIGNATURE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("ordering mean %", "ordering_mean"),
    ("idempotency mean %", "idempotency_mean"),
    ("group-mean margin pp", "group_mean"),
    ("weakest-link margin pp", "weakest_link"),
    ("conservative margin pp", "conservative"),
)
GROUP_MEANS = frozenset({"ordering_mean", "idempotency_mean"})
ENGINE_COLOURS = ("#2b6cb0", "#f0a35e", "#6a9f58", "#9a9a9a", "#b05fa8")


def engine_rows(a: Analysis) -> list[tuple[str, str, str, str]]:
    """(arm as stored, engine, run name, label) of every labelled arm: arms in the report's order
    (by the first label of each), then engines in the order given, then runs."""
    rows = [(arm, s.engine, s.name, label) for s in a.sources for arm, label in s.labels.items()]
    rank: dict[str, int] = {}
    for arm, *_, label in rows:
        rank[arm] = min(rank.get(arm, len(a.arms)), a.arms.index(label))
    runs = [s.name for s in a.sources]
    return sorted(rows, key=lambda r: (rank[r[0]], r[0], a.engines.index(r[1]), runs.index(r[2])))


def _rate_n(est: Estimate | None, cells: tuple[tuple[str, str, int], ...]) -> str:
    """A rate with its interval (or one-sided bound) and the number of tasks it is over."""
    if est is None or est.value is None:
        return "—"
    return Num(
        f"{est.format(digits=1)} n={est.tasks}",
        est.value,
        *fmt.bounds(est),
        cells=cells,
        n=est.tasks,
    )


def engine_table(a: Analysis, sigs: dict[str, Signature]) -> Table:
    hazards = a.hazards()
    rows = []
    for arm, engine, run, label in engine_rows(a):
        sig = sigs.get(label)
        rows.append(
            (
                arm,
                engine,
                run,
                *(
                    _rate_n(
                        a.estimates(f"pass:{h}").get(label), fmt.cells_behind(a, label, f"pass:{h}")
                    )
                    for h in hazards
                ),
                *(
                    (fmt.pct if form in GROUP_MEANS else fmt.pp)(
                        getattr(sig, form) if sig else None
                    )
                    for _, form in SIGNATURE_COLUMNS
                ),
            )
        )
    return Table(
        key="engines",
        title="The signature and the per-hazard pass of each arm on each engine",
        caption=(
            "Each arm of each run, by the engine the run was graded on (its manifest's engine): the "
            "temporal-pass of each declared hazard, a mean over the tasks declaring it with its 95% "
            "bootstrap interval (at exactly 0% or 100%, its one-sided bound) and n, the tasks it is "
            "over; then the signature, ordering-hazard against idempotency-hazard temporal-pass: the two "
            "group means and the three margins of the main table (group-mean, weakest-link, "
            "conservative; ordering minus idempotency, in percentage points). The oracle is the same "
            "DuckDB computation on every engine, so a difference between two rows of one arm is the "
            "engine's (and, for reference arms, the transpiled script's), not the truth's. An arm on "
            "two engines is not a replicate: by default the sign tests count the first run's "
            "engine only."
        ),
        columns=(
            "arm",
            "engine",
            "run",
            *(f"{h.replace('_', ' ')} pass %" for h in hazards),
            *(header for header, _ in SIGNATURE_COLUMNS),
        ),
        rows=tuple(rows),
        labels=3,
    )


def _changes(counts: Any) -> str:
    shown = [f"{a}→{b} {n}" for (a, b), n in sorted(counts.items()) if "PASS" not in (a, b)]
    return ", ".join(shown) or "—"


def engine_verdict_table(a: Analysis) -> Table:
    """Per arm, each engine after the first against the first: the same (task, sample, schedule)'s
    verdict on both, and McNemar's exact test on PASS against not PASS."""
    reference = a.engines[0]
    by_arm: dict[str, dict[str, list[str]]] = {}
    for arm, engine, _, label in engine_rows(a):
        by_arm.setdefault(arm, {}).setdefault(engine, []).append(label)
    outcomes: dict[str, list[Any]] = {}
    for o in a.outcomes:
        outcomes.setdefault(o.arm, []).append(o)
    rows = []
    for arm, engines in by_arm.items():
        for first in engines.get(reference, []):
            for engine in a.engines[1:]:
                for other in engines.get(engine, []):
                    if a.roles[other].run != a.roles[first].run:
                        continue
                    pairs = verdict_pairs(outcomes.get(first, []), outcomes.get(other, []))
                    changed = tuple(
                        (label, task, sample)
                        for task, sample in pairs.cells
                        for label in (first, other)
                    )
                    both = fmt.cells_behind(a, first) + fmt.cells_behind(a, other)
                    p = pairs.test.p_exact
                    rows.append(
                        (
                            arm,
                            f"{reference} → {engine}",
                            fmt.count(pairs.pairs, both),
                            fmt.count(pairs.same),
                            fmt.count(pairs.pass_a_only),
                            fmt.count(pairs.pass_b_only),
                            _changes(pairs.changes),
                            fmt.count(len(pairs.cells), changed),
                            Num(f"{p:.3g}", p) if pairs.pairs else "—",
                        )
                    )
    return Table(
        key="engine_verdicts",
        title="Does the engine change the verdict? The same cells on two engines",
        caption=(
            "Each arm on each engine against the same arm on the first run's engine ("
            + reference
            + "): a cell pairs with the cell of the same task and sample (and run index), and each "
            "schedule graded on both pairs its two verdicts. PASS on one side only counts the pairs "
            "the engine turns from PASS to FAIL or ERROR (or back); other changes are FAIL against "
            "ERROR. The p-value is McNemar's exact two-sided test on PASS against not PASS over the "
            "pairs: the discordant pairs against a fair coin. The schedules of one cell, and the cells "
            "of one task, are not independent, so read it as a description, not a claim; it is not in "
            "report.json's list of tests, which holds the fixed tests over model arms."
        ),
        columns=(
            "arm",
            "engines (A → B)",
            "paired verdicts",
            "same verdict",
            "PASS on A only",
            "PASS on B only",
            "other changes",
            "cells changed",
            "McNemar exact p",
        ),
        rows=tuple(rows) or (("no arm on two engines", *("—",) * 8),),
        labels=2,
    )


def engine_figure(a: Analysis, sigs: dict[str, Signature]) -> Figure:
    """A hazard × (arm, engine) heatmap of temporal-pass over a bar per column of its group-mean
    margin, coloured by engine."""
    rows = engine_rows(a)
    hazards = a.hazards()
    rates = {h: a.estimates(f"pass:{h}") for h in hazards}
    split = sum(h in ORDERING for h in hazards)
    loud = sum(h in (*ORDERING, *IDEMPOTENCY) for h in hazards)
    colour = {e: ENGINE_COLOURS[i % len(ENGINE_COLOURS)] for i, e in enumerate(a.engines)}

    def draw(fig: Any) -> None:
        import matplotlib
        import numpy as np

        top, bottom = fig.subplots(
            2, 1, sharex=True, gridspec_kw={"height_ratios": [max(len(hazards), 1), 2.2]}
        )
        grid = np.array(
            [[_value(rates[h].get(label)) for *_, label in rows] for h in hazards], dtype=float
        )
        shown = np.ma.masked_invalid(grid) if grid.size else np.ma.zeros((1, max(len(rows), 1)))
        cmap = matplotlib.colormaps["RdYlGn"].with_extremes(bad="#eeeeee")
        top.imshow(shown, cmap=cmap, vmin=0, vmax=100, aspect="auto")
        for (row, col), value in np.ndenumerate(grid):
            text = "—" if np.isnan(value) else f"{value:.0f}"
            dark = not np.isnan(value) and (value < 20 or value > 85)
            top.text(
                col,
                row,
                text,
                ha="center",
                va="center",
                fontsize=7,
                color="#ffffff" if dark else "#111111",
            )
        for edge in (split, loud):
            if 0 < edge < len(hazards):
                top.axhline(edge - 0.5, color="#222222", linewidth=1.2)
        for i in range(1, len(rows)):  # a rule between arms
            if rows[i][0] != rows[i - 1][0]:
                top.axvline(i - 0.5, color="#ffffff", linewidth=2.5)
                bottom.axvline(i - 0.5, color="#dddddd", linewidth=0.8)
        top.set_yticks(range(len(hazards)))
        top.set_yticklabels([h.replace("_", " ") for h in hazards])
        top.spines[:].set_visible(False)
        top.set_title("temporal-pass %, mean over tasks", fontsize=9)
        margins = [getattr(sigs.get(label), "group_mean", None) for *_, label in rows]
        xs = [i for i, m in enumerate(margins) if m is not None]
        bottom.bar(
            xs,
            [100 * margins[i] for i in xs],  # type: ignore[operator]
            width=0.7,
            color=[colour[rows[i][1]] for i in xs],
        )
        for i, m in enumerate(margins):
            if m is None:
                bottom.text(i, 0, "—", ha="center", va="bottom", fontsize=7, color="#666666")
        bottom.axhline(0, color="#222222", linewidth=0.8)
        bottom.set_ylim(-105, 105)
        bottom.set_ylabel("group-mean\nmargin pp")
        bottom.grid(axis="y", color="#e6e6e6", linewidth=0.6)
        bottom.set_axisbelow(True)
        bottom.set_xticks(range(len(rows)))
        bottom.set_xticklabels(
            [f"{arm} · {engine}" for arm, engine, *_ in rows], rotation=45, ha="right"
        )
        for tick, (_, engine, *_) in zip(bottom.get_xticklabels(), rows, strict=True):
            tick.set_color(colour[engine])
        handles = [matplotlib.patches.Patch(color=colour[e], label=e) for e in a.engines]
        fig.legend(handles=handles, loc="outside upper center", ncols=len(handles), frameon=False)

    width = min(11.5, max(6.0, 0.42 * len(rows) + 3.0))  # at most 1380 px at 120 dpi
    return Figure(
        key="engines",
        title="Temporal-pass per hazard and the signature, per arm and engine",
        caption=(
            "Top: per-hazard temporal-pass (rows) for each arm on each engine (columns, grouped by arm), "
            "means over tasks, as in the hazard heatmap; red is low, green high, grey where the arm has "
            "no usable cell on that engine. Bottom: the group-mean margin of the signature (ordering "
            "minus idempotency, percentage points) of the same column, coloured by engine ('—' where a "
            "rate it needs is undefined). The engine table gives the numbers with their intervals."
        ),
        png=_png(draw, (width, max(4.2, 0.4 * len(hazards) + 3.6))),
    )
