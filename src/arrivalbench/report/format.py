"""How the report prints numbers: every cell of a table is a string, and a number is a `Num`, the
printed text carrying its value, bounds and the cells behind it for the CSV, report.json and the
HTML page's links. The helpers here only format; every statistic they print comes computed from
analysis/ (an interval, a share's exact bound).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING

from arrivalbench.analysis.intervals import Estimate, pooled_share
from arrivalbench.analysis.rates import METRICS

if TYPE_CHECKING:
    from arrivalbench.analysis.signtests import TestResult
    from arrivalbench.report.analysis import Analysis


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


Cells = tuple[tuple[str, str, int], ...]


def pct(value: float | None, cells: Cells = ()) -> str:
    return "—" if value is None else Num(f"{100 * value:.1f}%", value, cells=cells)


def pp(value: float | None) -> str:
    """A difference in percentage points, signed; zero prints unsigned as in the paper's tables."""
    if value is None:
        return "—"
    text = f"{100 * value:+.1f}"
    return Num(("0.0" if text in ("+0.0", "-0.0") else text) + "pp", value)


def bounds(est: Estimate) -> tuple[float | None, float | None]:
    """(lo, hi) of an estimate: its interval, or at 0 or 1 the one-sided bound and the rate."""
    if est.bound is not None and est.value is not None:
        return (est.value, est.bound) if est.bound >= est.value else (est.bound, est.value)
    return est.low, est.high


def point(est: Estimate | None, cells: Cells = ()) -> str:
    """The rate alone, keeping its one-sided bound at exactly 0% or 100%."""
    if est is None or est.value is None:
        return "—"
    text = dataclasses.replace(est, low=None, high=None).format(digits=1)
    lo, hi = bounds(est) if est.bound is not None else (None, None)
    return Num(text, est.value, lo, hi, cells)


def interval(est: Estimate | None, signed: bool = False, cells: Cells = ()) -> str:
    if est is None or est.value is None:
        return "—"
    return Num(est.format(digits=1, signed=signed), est.value, *bounds(est), cells=cells)


def count(n: int, cells: Cells = ()) -> str:
    return Num(str(n), n, cells=cells)


def share(k: int, n: int, cells: Cells = ()) -> str:
    """A rate pooled over n cells, as 'k/n = x%', with its one-sided bound at 0% and 100%
    (exact below 30 cells); the numeric value carries the exact Clopper-Pearson interval."""
    if n == 0:
        return "—"
    value, bound, lo, hi = pooled_share(k, n)
    side = "" if bound is None else f" ({'≤' if k == 0 else '≥'}{pct(bound)})"
    return Num(f"{k}/{n} = {pct(value)}{side}", value, lo, hi, cells)


def printed_delta(a: float | None, b: float | None) -> str:
    """b minus a as the two rates print (one decimal of a percent), so a row reconciles on the page."""
    if a is None or b is None:
        return "—"
    return pp((round(100 * b, 1) - round(100 * a, 1)) / 100)


def cells_behind(a: Analysis, arm: str, metric: str | None = None) -> Cells:
    """The cells behind an arm's number: those in the metric's denominator (every cell of the arm
    when no metric is named)."""
    fn = METRICS[metric] if metric else None
    return tuple(
        (o.arm, o.task, o.sample)
        for o in a.outcomes
        if o.arm == arm and (fn is None or fn(o) is not None)
    )


def tested_arms(a: Analysis) -> str:
    """Which arms and runs the report's tests count, in words."""
    arms = "the arms named by --arms" if a.chosen_arms is not None else "model arms (unhinted)"
    runs = ", ".join(str(r) for r in sorted(a.runs))
    engine = (
        f", on {a.engines[0]} (the first run's engine)"
        if a.several_engines and a.chosen_arms is None
        else ""
    )
    return f"{arms}, run{'s' * (len(a.runs) > 1)} {runs}{engine}"
