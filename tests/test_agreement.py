"""Fleiss' and Cohen's kappa and McNemar's test, by hand and against statsmodels."""

import math

import numpy as np
import pytest
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar
from statsmodels.stats.inter_rater import cohens_kappa as sm_cohens_kappa
from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa

from arrivalbench.analysis.agreement import cohen_kappa, fleiss_kappa, mcnemar
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


def test_cohen_kappa_textbook_example():
    """50 items: both yes 20, A yes B no 5, A no B yes 10, both no 15. p_o = 35/50 = 0.7;
    A says yes half the time, B 0.6, so p_e = 0.5 * 0.6 + 0.5 * 0.4 = 0.5 and kappa = 0.4."""
    a = ["yes"] * 20 + ["yes"] * 5 + ["no"] * 10 + ["no"] * 15
    b = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    assert cohen_kappa(b, a) == pytest.approx(0.4)


def test_cohen_kappa_with_labels_only_one_rater_uses():
    """Nominal categories, "absent" given only by the second rater and ("k3", 3) only by the first:
    p_o = 3/5, p_e = (2*2 + 2*2) / 25 = 8/25, kappa = (15/25 - 8/25) / (17/25) = 7/17."""
    a = [("k1", 1), ("k1", 1), ("k2", 2), ("k2", 2), ("k3", 3)]
    b = [("k1", 1), ("k1", 1), ("k2", 2), "absent", ("k2", 2)]
    assert cohen_kappa(a, b) == pytest.approx(7 / 17)


@pytest.mark.parametrize("seed", range(5))
def test_cohen_kappa_matches_statsmodels(seed):
    generator = np.random.default_rng(seed)
    a = generator.integers(0, 3, 40)
    b = np.where(generator.random(40) < 0.6, a, generator.integers(0, 3, 40))
    table = np.zeros((3, 3))
    np.add.at(table, (a, b), 1)
    expected = sm_cohens_kappa(table, return_results=False)
    assert cohen_kappa(a.tolist(), b.tolist()) == pytest.approx(expected, rel=1e-12)


def test_cohen_kappa_perfect_undefined_and_bad_input():
    assert cohen_kappa(["a", "b", "c"], ["a", "b", "c"]) == 1.0
    assert math.isnan(cohen_kappa(["a", "a"], ["a", "a"]))
    assert cohen_kappa(["a", "b"], ["b", "a"]) == pytest.approx(-1.0)
    with pytest.raises(UsageError, match="equal length"):
        cohen_kappa(["a"], ["a", "b"])
    with pytest.raises(UsageError, match="at least one"):
        cohen_kappa([], [])


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
