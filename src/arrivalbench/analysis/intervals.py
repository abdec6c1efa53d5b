"""Intervals around the rates: bootstrap over tasks (or scenarios), the exact Clopper-Pearson
bound below EXACT_BELOW units, the rule of three, and paired differences between arms.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np

from arrivalbench.analysis.outcomes import CellOutcome, _unknown
from arrivalbench.analysis.rates import task_rates
from arrivalbench.errors import UsageError
from arrivalbench.seeds import rng as seeded_rng

DEFAULT_BOOTSTRAP_SEED = 20260105
LEVEL = 0.95

Unit = Literal["task", "scenario"]


# -- intervals ------------------------------------------------------------------------------------


def _pct(x: float, digits: int, signed: bool) -> str:
    shown = round(100 * x, digits) + 0.0  # + 0.0 turns a rounded -0.0 into 0.0
    return f"{shown:+.{digits}f}" if signed else f"{shown:.{digits}f}"


@dataclass(frozen=True)
class Estimate:
    """A rate (or a paired difference) with its 95% interval over tasks.

    At exactly 0 or 1 a bootstrap interval collapses to a point, so `bound` holds the rule-of-three
    one-sided 95% bound instead (upper 3/n at 0, lower 1 - 3/n at 1) and low/high are None.
    """

    value: float | None
    low: float | None
    high: float | None
    tasks: int
    bound: float | None = None

    def format(self, digits: int = 1, signed: bool = False) -> str:
        """'16.7% [8.7, 26.0]', '0.0% (≤7.5%)', '+3.0pp [-1.6, +16.8]' (signed), '—' when undefined."""
        if self.value is None:
            return "—"
        unit = "pp" if signed else "%"
        head = f"{_pct(self.value, digits, signed)}{unit}"
        if self.bound is not None:
            side = "≤" if self.bound >= self.value else "≥"
            return f"{head} ({side}{_pct(self.bound, digits, signed)}{unit})"
        if self.low is None or self.high is None:
            return head
        return f"{head} [{_pct(self.low, digits, signed)}, {_pct(self.high, digits, signed)}]"


EXACT_BELOW = 30
"""Below this many units a 0 or 1 rate takes the exact Clopper-Pearson bound, not 3/n."""


def bound_of_three(rate: float | None, n: int) -> float | None:
    """The one-sided 95% bound of a rate of exactly 0 (upper) or 1 (lower) over n units.

    From EXACT_BELOW units on, the rule of three (3/n above a 0, 1 - 3/n below a 1); below it the
    exact Clopper-Pearson bound, which solves (1 - b)^n = 0.05, so a tiny n never prints
    "≤100%" (two units: ≤77.6%). None for any other rate, where an interval is drawn instead.
    """
    if rate is None or n == 0 or rate not in (0.0, 1.0):
        return None
    upper = 1 - (1 - LEVEL) ** (1 / n) if n < EXACT_BELOW else min(1.0, 3 / n)
    return upper if rate == 0.0 else 1 - upper


def _binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed in log space so large n does not overflow."""
    if k <= 0:
        return 1.0
    if p <= 0.0:
        return 0.0
    if p >= 1.0:
        return 1.0
    lp, lq = math.log(p), math.log1p(-p)
    logs = [
        math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * lp + (n - j) * lq
        for j in range(k, n + 1)
    ]
    top = max(logs)
    return min(1.0, math.exp(top) * sum(math.exp(x - top) for x in logs))


def _solve(f: Callable[[float], float], target: float) -> float:
    """The p in [0, 1] where the increasing f(p) reaches target, by bisection."""
    low, high = 0.0, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        low, high = (mid, high) if f(mid) < target else (low, mid)
    return (low + high) / 2


def clopper_pearson(k: int, n: int) -> tuple[float | None, float | None]:
    """The exact two-sided 95% interval of k successes in n trials ((None, None) when n is 0).

    low solves P(X >= k; low) = 2.5% and high P(X <= k; high) = 2.5%; 4 of 10 gives [12.2%, 73.8%].
    """
    if n == 0:
        return None, None
    tail = (1 - LEVEL) / 2
    low = 0.0 if k == 0 else _solve(lambda p: _binomial_tail(k, n, p), tail)
    high = 1.0 if k == n else _solve(lambda p: _binomial_tail(k + 1, n, p), 1 - tail)
    return low, high


def _bootstrap(
    values: np.ndarray, groups: np.ndarray | None, resamples: int, generator: np.random.Generator
) -> np.ndarray:
    """The resampled means: tasks drawn with replacement, or whole groups (scenarios) of tasks."""
    if groups is None:
        index = generator.integers(0, len(values), size=(resamples, len(values)))
        return values[index].mean(axis=1)
    codes = np.unique(groups, return_inverse=True)[1]
    sums = np.bincount(codes, weights=values)
    sizes = np.bincount(codes).astype(float)
    index = generator.integers(0, len(sums), size=(resamples, len(sums)))
    return sums[index].sum(axis=1) / sizes[index].sum(axis=1)


def _interval(
    values: np.ndarray,
    groups: np.ndarray | None,
    resamples: int,
    generator: np.random.Generator,
    rule_of_three: bool,
) -> Estimate:
    n = len(values)
    if n == 0:
        return Estimate(value=None, low=None, high=None, tasks=0)
    value = float(values.mean())
    if rule_of_three and (np.all(values == 0.0) or np.all(values == 1.0)):
        return Estimate(value=value, low=None, high=None, tasks=n, bound=bound_of_three(value, n))
    low, high = percentile_interval(_bootstrap(values, groups, resamples, generator))
    return Estimate(value=value, low=low, high=high, tasks=n)


def percentile_interval(draws: np.ndarray) -> tuple[float | None, float | None]:
    """The central 95% of bootstrap draws; NaN draws (a resample where the statistic is undefined) are dropped."""
    draws = draws[~np.isnan(draws)]
    if draws.size == 0:
        return None, None
    tail = 100 * (1 - LEVEL) / 2
    low, high = np.percentile(draws, [tail, 100 - tail])
    return float(low), float(high)


def _check_resampling(unit: str, resamples: int) -> None:
    if unit not in ("task", "scenario"):
        raise _unknown("resampling unit", unit, ("task", "scenario"))
    if resamples < 1:
        raise UsageError(f"resamples must be at least 1; found {resamples}.")


def _scenarios(outcomes: Iterable[CellOutcome]) -> dict[str, str]:
    return {o.task: o.scenario for o in outcomes}


def estimate(
    outcomes: Iterable[CellOutcome],
    metric: str,
    *,
    unit: Unit = "task",
    resamples: int = 10_000,
    seed: int = DEFAULT_BOOTSTRAP_SEED,
) -> dict[str, Estimate]:
    """Per arm: the rate with a percentile-bootstrap 95% interval, resampling tasks (or scenarios).

    Each arm draws from its own generator, derived from (seed, metric, arm), so adding an arm
    to a run leaves every other arm's interval unchanged.
    """
    _check_resampling(unit, resamples)
    outcomes = list(outcomes)
    scenario_of = _scenarios(outcomes)
    out = {}
    for arm, per_task in task_rates(outcomes, metric).items():
        values = np.array(list(per_task.values()), dtype=float)
        groups = np.array([scenario_of[t] for t in per_task]) if unit == "scenario" else None
        generator = seeded_rng(seed, "estimate", metric, arm)
        out[arm] = _interval(values, groups, resamples, generator, rule_of_three=True)
    return out


def paired(
    outcomes: Iterable[CellOutcome],
    metric: str,
    arm_a: str,
    arm_b: str,
    *,
    unit: Unit = "task",
    resamples: int = 10_000,
    seed: int = DEFAULT_BOOTSTRAP_SEED,
) -> Estimate:
    """arm_b minus arm_a over tasks usable in both, both rates taken from the same resampled tasks.

    Shared task difficulty cancels in each draw; a task usable in only one arm is left out rather
    than imputed. A difference has no rule-of-three bound.
    """
    _check_resampling(unit, resamples)
    outcomes = list(outcomes)
    rates = task_rates(outcomes, metric)
    for arm in (arm_a, arm_b):
        if arm not in rates:
            raise _unknown("arm", arm, rates)
    common = sorted(rates[arm_a].keys() & rates[arm_b].keys())
    values = np.array([rates[arm_b][t] - rates[arm_a][t] for t in common], dtype=float)
    scenario_of = _scenarios(outcomes)
    groups = np.array([scenario_of[t] for t in common]) if unit == "scenario" else None
    generator = seeded_rng(seed, "paired", metric, arm_a, arm_b)
    return _interval(values, groups, resamples, generator, rule_of_three=False)


def pooled_share(k: int, n: int) -> tuple[float, float | None, float | None, float | None]:
    """(k/n, its one-sided bound at 0 or 1 or None, lo, hi) of a rate pooled over n > 0 cells: the
    bound and the rate at 0% and 100% (exact below EXACT_BELOW cells), else Clopper-Pearson."""
    value = k / n
    bound = bound_of_three(value, n)
    if bound is None:
        lo, hi = clopper_pearson(k, n)
    else:
        lo, hi = (0.0, bound) if k == 0 else (bound, 1.0)
    return value, bound, lo, hi
