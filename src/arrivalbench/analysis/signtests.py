"""The failure signature (ordering minus idempotency temporal-pass, per arm) and the tests over
it: the one-sided sign test, and replication of failing tasks between two runs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from arrivalbench.analysis.outcomes import CellOutcome, _unknown
from arrivalbench.analysis.rates import FAILURE_METRICS, _cell_values, _mean, rate
from arrivalbench.errors import UsageError
from arrivalbench.hazards import IDEMPOTENCY, ORDERING, SILENT

_TIE = 1e-12  # margins closer to zero than this are ties (rates equal up to float rounding)

SignatureForm = Literal["weakest_link", "group_mean", "conservative"]


# -- the failure signature -------------------------------------------------------------------------


@dataclass(frozen=True)
class Signature:
    """An arm's failure signature: ordering-hazard pass rates against idempotency-hazard ones.

    Margins are ordering minus idempotency in rate units (0.157 is +15.7pp); None where a rate they
    need is missing. `rates` holds the five per-hazard temporal-pass rates.
    """

    arm: str
    ordering_mean: float | None
    idempotency_mean: float | None
    group_mean: float | None
    weakest_ordering: float | None
    weakest_idempotency: float | None
    strongest_idempotency: float | None
    weakest_link: float | None
    conservative: float | None
    rates: Mapping[str, float | None]


def _complete(values: list[float | None]) -> list[float] | None:
    return None if any(v is None for v in values) else values  # type: ignore[return-value]


def _minus(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None else a - b


def signature(outcomes: Iterable[CellOutcome]) -> dict[str, Signature]:
    """arm -> Signature, from per-hazard temporal-pass rates (each over the tasks declaring it)."""
    outcomes = list(outcomes)
    by_hazard = {h: rate(outcomes, f"pass:{h}") for h in SILENT}
    out = {}
    for arm in sorted({o.arm for o in outcomes}):
        rates = {h: by_hazard[h].get(arm) for h in SILENT}
        ordering = _complete([rates[h] for h in ORDERING])
        idempotency = _complete([rates[h] for h in IDEMPOTENCY])
        ordering_mean = _mean(ordering) if ordering else None
        idempotency_mean = _mean(idempotency) if idempotency else None
        weakest_ordering = min(ordering) if ordering else None
        weakest_idempotency = min(idempotency) if idempotency else None
        strongest_idempotency = max(idempotency) if idempotency else None
        out[arm] = Signature(
            arm=arm,
            ordering_mean=ordering_mean,
            idempotency_mean=idempotency_mean,
            group_mean=_minus(ordering_mean, idempotency_mean),
            weakest_ordering=weakest_ordering,
            weakest_idempotency=weakest_idempotency,
            strongest_idempotency=strongest_idempotency,
            weakest_link=_minus(weakest_ordering, weakest_idempotency),
            conservative=_minus(weakest_ordering, strongest_idempotency),
            rates=rates,
        )
    return out


def all_five(outcomes: Iterable[CellOutcome]) -> list[CellOutcome]:
    """The matched set: cells of tasks declaring all five silent hazards, so both signature groups
    are averaged over the same tasks."""
    return [o for o in outcomes if set(SILENT) <= set(o.hazards)]


def sign_test(successes: int, n: int, p: float) -> float:
    """One-sided P(X >= successes) for X ~ Binomial(n, p), summed exactly."""
    if n < 0 or not 0 <= successes <= n:
        raise UsageError(
            f"sign test needs 0 <= successes <= n; found successes={successes}, n={n}."
        )
    if not 0.0 <= p <= 1.0:
        raise UsageError(f"sign test needs a probability 0 <= p <= 1; found p={p}.")
    return min(
        1.0, sum(math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(successes, n + 1))
    )


SIGN_TEST_NULL: dict[str, float] = {
    "weakest_link": 3 / 5,
    "group_mean": 1 / 2,
    "conservative": 1 / 10,
}
"""Chance of a positive margin when the five hazard rates are exchangeable (docs/metrics.md)."""


def signature_sign_test(
    sigs: Mapping[str, Signature] | Iterable[Signature], form: SignatureForm = "weakest_link"
) -> tuple[int, int, float]:
    """(arms with a strictly positive margin, arms not tied, one-sided p) against the form's null.

    Ties (both groups saturated, say) and arms with a missing margin are left out of n.
    """
    if form not in SIGN_TEST_NULL:
        raise _unknown("signature form", form, SIGN_TEST_NULL)
    values = sigs.values() if isinstance(sigs, Mapping) else sigs
    margins = [getattr(s, form) for s in values]
    decided = [m for m in margins if m is not None and abs(m) > _TIE]
    positive = sum(m > 0 for m in decided)
    return positive, len(decided), sign_test(positive, len(decided), SIGN_TEST_NULL[form])


# -- replication ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Replication:
    """One arm in two independent runs: how far the rate moved and whether the same tasks failed."""

    metric: str
    rate_a: float | None
    rate_b: float | None
    delta: float | None
    failing_a: frozenset[str]
    failing_b: frozenset[str]
    recurring: frozenset[str]
    recurrence: float | None


def _failing_tasks(cells: dict[str, list[float]], metric: str) -> frozenset[str]:
    bad = 1.0 if metric in FAILURE_METRICS else 0.0
    return frozenset(task for task, values in cells.items() if bad in values)


def replication(
    outcomes_a: Iterable[CellOutcome],
    outcomes_b: Iterable[CellOutcome],
    arm: str,
    metric: str = "gap",
) -> Replication:
    """Compare one arm across two runs; recurrence is the share of run a's failing tasks failing in b.

    A failing task has at least one usable cell failing the metric (for the gap, one silent
    temporal failure). delta is rate_b - rate_a before any rounding.
    """
    cells_a, cells_b = _cell_values(outcomes_a, metric), _cell_values(outcomes_b, metric)
    for name, cells in (("first", cells_a), ("second", cells_b)):
        if arm not in cells:
            raise UsageError(
                f"arm '{arm}' is not in the {name} run; its arms are {', '.join(sorted(cells))}."
            )
    rate_a = _mean([sum(v) / len(v) for v in cells_a[arm].values()])
    rate_b = _mean([sum(v) / len(v) for v in cells_b[arm].values()])
    failing_a, failing_b = (
        _failing_tasks(cells_a[arm], metric),
        _failing_tasks(cells_b[arm], metric),
    )
    recurring = failing_a & failing_b
    return Replication(
        metric=metric,
        rate_a=rate_a,
        rate_b=rate_b,
        delta=_minus(rate_b, rate_a),
        failing_a=failing_a,
        failing_b=failing_b,
        recurring=recurring,
        recurrence=len(recurring) / len(failing_a) if failing_a else None,
    )


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


def signature_test(
    name: str,
    sigs: Mapping[str, Signature],
    form: SignatureForm,
    tested: Sequence[str],
    runs: tuple[int, ...],
) -> TestResult:
    """The one-sided sign test of one signature form over the tested arms that have a signature;
    `arms` names those whose margin entered (not None)."""
    chosen = {arm: sigs[arm] for arm in tested if arm in sigs}
    positive, n, p = signature_sign_test(chosen, form)
    return TestResult(
        name=name,
        arms=tuple(arm for arm, sig in chosen.items() if getattr(sig, form) is not None),
        runs=runs,
        statistic=float(positive),
        n=n,
        p_value=p,
        null=SIGN_TEST_NULL[form],
    )
