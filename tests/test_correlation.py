"""analysis/correlation.py: Pearson and Spearman by hand, and against scipy where it is installed."""

from __future__ import annotations

import pytest

from arrivalbench.analysis.correlation import pearson, ranks, spearman


def test_pearson_by_hand():
    # x = (1, 2, 3), y = (1, 3, 2): deviations (-1, 0, 1) and (-1, 1, 0); cov 1, sxx 2, syy 2
    assert pearson([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
    assert pearson([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)


def test_spearman_ranks_ties_by_their_mean_rank():
    assert ranks([0.3, 0.1, 0.1, 0.2]) == [4.0, 1.5, 1.5, 3.0]
    # ranks (1, 2, 3, 4) against (1, 3.5, 3.5, 2): deviations (-1.5, -.5, .5, 1.5) and
    # (-1.5, 1, 1, -.5); cov 2.25 - .5 + .5 - .75 = 1.5; sxx 5, syy 4.5 -> 1.5 / sqrt(22.5)
    assert spearman([1, 2, 3, 4], [0, 9, 9, 1]) == pytest.approx(1.5 / 22.5**0.5)


def test_too_few_pairs_or_no_variation_is_undefined():
    assert pearson([1, 2], [2, 1]) is None
    assert pearson([1, 1, 1], [1, 2, 3]) is None
    assert spearman([0.5, 0.5, 0.5], [1, 2, 3]) is None


def test_agrees_with_scipy():
    stats = pytest.importorskip("scipy.stats")
    x = [0.0, 0.25, 0.25, 0.9, 1.0, 0.4]
    y = [0.3, 0.2, 0.25, 0.05, 0.0, 0.3]
    assert pearson(x, y) == pytest.approx(stats.pearsonr(x, y)[0])
    assert spearman(x, y) == pytest.approx(stats.spearmanr(x, y)[0])
