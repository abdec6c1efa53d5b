"""Agreement between graders or annotators: Fleiss' kappa for several, Cohen's kappa and
McNemar's test for two.

Used to check a grader against people (or two versions of a grader) on the same items, e.g.
hand-labelled verdicts against the oracle's, or oracle.sql against oracle.py (audit.py).
Verified against statsmodels in the tests.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from arrivalbench.analysis.stats import sign_test
from arrivalbench.errors import UsageError

__all__ = ["McNemar", "cohen_kappa", "fleiss_kappa", "mcnemar"]


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> float:
    """Fleiss' kappa from an items x categories table of rater counts (every row the same total).

    NaN when every rating falls in one category: chance agreement is then 1 and kappa undefined.
    """
    table = np.asarray(counts, dtype=float)
    if table.ndim != 2 or table.shape[0] == 0 or table.shape[1] < 2:
        raise UsageError(
            f"fleiss_kappa needs an items x categories table with >= 2 categories; found shape {table.shape}."
        )
    if (table < 0).any():
        raise UsageError("fleiss_kappa needs non-negative counts.")
    raters = table.sum(axis=1)
    if not np.all(raters == raters[0]) or raters[0] < 2:
        raise UsageError(
            f"every item needs the same number (>= 2) of raters; found row totals {sorted(set(raters.tolist()))}."
        )
    n = raters[0]
    agreement = ((table * (table - 1)).sum(axis=1) / (n * (n - 1))).mean()
    shares = table.sum(axis=0) / table.sum()
    chance = float((shares**2).sum())
    if chance == 1.0:
        return math.nan
    return float((agreement - chance) / (1 - chance))


def cohen_kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """Cohen's kappa of two raters' nominal labels on the same items: (p_o - p_e) / (1 - p_e).

    p_o is the share of items labelled alike; p_e the chance agreement from each rater's own label
    shares. NaN when p_e is 1 (both raters used one and the same label throughout).
    """
    if len(a) != len(b):
        raise UsageError(
            f"cohen_kappa needs paired labels of equal length; found {len(a)} and {len(b)}."
        )
    if not a:
        raise UsageError("cohen_kappa needs at least one labelled item; found none.")
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    shares_a, shares_b = Counter(a), Counter(b)
    chance = sum(shares_a[label] * shares_b[label] for label in shares_a) / (n * n)
    if chance == 1.0:
        return math.nan
    return (observed - chance) / (1 - chance)


@dataclass(frozen=True)
class McNemar:
    """Paired binary outcomes: the 2x2 counts, the exact two-sided p and the corrected chi-square.

    statistic is NaN (and p_chi2 too) when there is no discordant pair.
    """

    both_yes: int
    a_only: int
    b_only: int
    both_no: int
    p_exact: float
    statistic: float
    p_chi2: float


def mcnemar(a: Sequence[bool], b: Sequence[bool]) -> McNemar:
    """McNemar's test on paired booleans: exact binomial p on the discordant pairs, and the
    chi-square statistic with continuity correction, (|a_only - b_only| - 1)^2 / (a_only + b_only)."""
    if len(a) != len(b):
        raise UsageError(
            f"mcnemar needs paired outcomes of equal length; found {len(a)} and {len(b)}."
        )
    pairs = Counter((bool(x), bool(y)) for x, y in zip(a, b, strict=True))
    a_only, b_only = pairs[(True, False)], pairs[(False, True)]
    discordant = a_only + b_only
    # two-sided exact p: twice the smaller tail, P(X <= min) = P(X >= discordant - min) at p = 1/2
    p_exact = min(1.0, 2 * sign_test(discordant - min(a_only, b_only), discordant, 0.5))
    if discordant:
        statistic = (abs(a_only - b_only) - 1) ** 2 / discordant
        p_chi2 = math.erfc(math.sqrt(statistic / 2))  # chi-square survival, one degree of freedom
    else:
        statistic = p_chi2 = math.nan
    return McNemar(
        both_yes=pairs[(True, True)],
        a_only=a_only,
        b_only=b_only,
        both_no=pairs[(False, False)],
        p_exact=p_exact,
        statistic=statistic,
        p_chi2=p_chi2,
    )
