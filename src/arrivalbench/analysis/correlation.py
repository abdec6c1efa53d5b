"""Pearson's and Spearman's correlation of two quantities over arms, computed directly: the
report runs in the core install, which has no scipy (tests/test_correlation.py checks both
against scipy).

Spearman's rho is Pearson's r of the ranks, ties given their mean rank; values equal to twelve
decimals tie, so two rates computed in a different order still tie. Either coefficient is
undefined (None) with fewer than three pairs or when one side does not vary.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

MIN_PAIRS = 3


def pearson(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Pearson's r of paired values: cov(x, y) / (sd(x) sd(y))."""
    if len(x) != len(y):
        raise ValueError(f"pearson: {len(x)} values against {len(y)}; pass paired values.")
    if len(x) < MIN_PAIRS:
        return None
    mx, my = math.fsum(x) / len(x), math.fsum(y) / len(y)
    dx, dy = [v - mx for v in x], [v - my for v in y]
    sxx, syy = math.fsum(d * d for d in dx), math.fsum(d * d for d in dy)
    if sxx == 0 or syy == 0:
        return None
    r = math.fsum(a * b for a, b in zip(dx, dy, strict=True)) / math.sqrt(sxx * syy)
    return max(-1.0, min(1.0, r))


def ranks(values: Sequence[float]) -> list[float]:
    """1-based ranks, ties sharing their mean rank (values equal to 12 decimals tie)."""
    keyed = [round(v, 12) for v in values]
    order = sorted(range(len(keyed)), key=lambda i: keyed[i])
    out = [0.0] * len(keyed)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and keyed[order[j + 1]] == keyed[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return out


def spearman(x: Sequence[float], y: Sequence[float]) -> float | None:
    """Spearman's rho: Pearson's r of the ranks."""
    if len(x) != len(y):
        raise ValueError(f"spearman: {len(x)} values against {len(y)}; pass paired values.")
    return pearson(ranks(x), ranks(y))
