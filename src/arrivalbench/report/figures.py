"""The report's figures, drawn with matplotlib into PNG bytes that depend on the data alone."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from arrivalbench.analysis.stats import IDEMPOTENCY, ORDERING, Estimate
from arrivalbench.report.analysis import GUARD_HAZARD, Analysis


@dataclass(frozen=True)
class Figure:
    """One figure as it is shown: the PNG bytes that Markdown links to and HTML embeds."""

    key: str
    title: str
    caption: str
    png: bytes
    number: int = 0

    @property
    def heading(self) -> str:
        return f"Figure {self.number}. {self.title}"


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
    """(value, below, above) in percent; at 0% or 100% the whisker reaches the one-sided bound."""
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


def snapshot_gap_figure(a: Analysis) -> Figure:
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
            "intervals over tasks, and at exactly 0% or 100% they reach the one-sided 95% bound instead."
        ),
        png=_png(draw, (max(5.0, 0.75 * len(arms) + 2.0), 3.6)),
    )


def hazard_figure(a: Analysis) -> Figure:
    """A hazard × arm heatmap of temporal-pass, each cell printed with its rate."""
    arms = a.arms
    hazards = [h for h in a.hazards()]
    rates = {h: a.estimates(f"pass:{h}") for h in hazards}
    split = sum(h in ORDERING for h in hazards)
    loud = sum(h in (*ORDERING, *IDEMPOTENCY) for h in hazards)

    def draw(fig: Any) -> None:
        import matplotlib
        import numpy as np

        ax = fig.add_subplot()
        grid = np.array([[_value(rates[h].get(arm)) for arm in arms] for h in hazards], dtype=float)
        shown = np.ma.masked_invalid(grid) if grid.size else np.ma.zeros((1, 1))
        cmap = matplotlib.colormaps["RdYlGn"].with_extremes(bad="#eeeeee")
        image = ax.imshow(shown, cmap=cmap, vmin=0, vmax=100, aspect="auto")
        for (row, col), value in np.ndenumerate(grid):
            text = "—" if np.isnan(value) else f"{value:.0f}"
            dark = not np.isnan(value) and (value < 20 or value > 85)  # the scale's dark ends
            colour = "#ffffff" if dark else "#111111"
            ax.text(col, row, text, ha="center", va="center", fontsize=8, color=colour)
        for edge in (split, loud):
            if 0 < edge < len(hazards):
                ax.axhline(edge - 0.5, color="#222222", linewidth=1.2)
        ax.set_xticks(range(len(arms)))
        ax.set_xticklabels(arms, rotation=30 if len(arms) > 3 else 0, ha="right")
        ax.set_yticks(range(len(hazards)))
        ax.set_yticklabels([h.replace("_", " ") for h in hazards])
        ax.spines[:].set_visible(False)
        fig.colorbar(image, ax=ax, label="temporal-pass %, mean over tasks", shrink=0.8)

    return Figure(
        key="hazards",
        title="Temporal-pass per hazard and arm (heatmap)",
        caption=(
            "Per-hazard temporal-pass (rows) for each arm (columns), means over tasks over cells with an artifact "
            "where the hazard did not ERROR; red is low, green high, grey where the arm has no usable cell. Rules "
            "separate the ordering hazards (top), the idempotency hazards and the loud hazard (schema evolution, "
            "never averaged into either group). The hazard table gives the numbers with their bounds."
        ),
        png=_png(draw, (max(5.5, 0.8 * len(arms) + 3.0), max(2.6, 0.45 * len(hazards) + 1.6))),
    )


def guard_figure(a: Analysis) -> Figure:
    splits = a.guard_splits
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
