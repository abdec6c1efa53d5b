"""Fleiss' kappa and McNemar's test, by hand and against statsmodels."""

import math

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from arrivalbench.agreement import fleiss_kappa, mcnemar
from arrivalbench.errors import UsageError


def test_fleiss_kappa_hand_example():
    assert fleiss_kappa([[3, 0], [0, 3], [2, 1]]) == pytest.approx(0.55)


@pytest.mark.parametrize("seed", range(5))
def test_fleiss_kappa_matches_statsmodels(seed):
    generator = np.random.default_rng(seed)
    counts = generator.multinomial(4, [0.5, 0.3, 0.2], size=12)
    assert fleiss_kappa(counts.tolist()) == pytest.approx(sm_fleiss_kappa(counts), rel=1e-12)


def test_fleiss_kappa_rejects_uneven_rows_and_is_nan_when_undefined():
    with pytest.raises(UsageError, match="same number"):
        fleiss_kappa([[3, 0], [1, 1]])
    assert math.isnan(fleiss_kappa([[3, 0], [3, 0]]))


def test_mcnemar_hand_example():
    a = [True] * 8 + [False] * 2 + [True] * 5 + [False] * 4
    b = [False] * 8 + [True] * 2 + [True] * 5 + [False] * 4
    m = mcnemar(a, b)
    assert (m.both_yes, m.a_only, m.b_only, m.both_no) == (5, 8, 2, 4)
    assert m.p_exact == pytest.approx(112 / 1024)
    assert m.statistic == pytest.approx(2.5)
    assert m.p_chi2 == pytest.approx(0.1138, abs=1e-4)


@pytest.mark.parametrize(
    ("yes", "a_only", "b_only", "no"), [(5, 8, 2, 4), (10, 3, 3, 1), (0, 0, 7, 2), (3, 12, 30, 9)]
)
def test_mcnemar_matches_statsmodels(yes, a_only, b_only, no):
    a = [True] * yes + [True] * a_only + [False] * b_only + [False] * no
    b = [True] * yes + [False] * a_only + [True] * b_only + [False] * no
    m = mcnemar(a, b)
    grid = [[yes, a_only], [b_only, no]]
    exact = sm_mcnemar(grid, exact=True)
    corrected = sm_mcnemar(grid, exact=False, correction=True)
    assert m.p_exact == pytest.approx(exact.pvalue, rel=1e-12)
    assert m.statistic == pytest.approx(corrected.statistic, rel=1e-12)
    assert m.p_chi2 == pytest.approx(corrected.pvalue, rel=1e-9)


def test_mcnemar_without_discordant_pairs_and_bad_input():
    m = mcnemar([True, False], [True, False])
    assert (m.p_exact, math.isnan(m.statistic)) == (1.0, True)
    with pytest.raises(UsageError, match="equal length"):
        mcnemar([True], [True, False])
