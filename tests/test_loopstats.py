"""Repaired against immediately passing cells: pooled and within-stratum differences, by hand."""

from __future__ import annotations

import pytest

from arrivalbench.analysis.loopstats import ALL, repair_effect
from arrivalbench.analysis.stats import CellOutcome

HAZARDS = ("late_arrival", "duplicate_delivery")


def cell(arm: str, task: str, sample: int, turns: tuple[str, ...], **verdicts: str) -> CellOutcome:
    final = turns[-1] if turns else "PASS"
    graded = {"snapshot": final, **dict.fromkeys(HAZARDS, "PASS"), **verdicts}
    return CellOutcome(
        arm=arm,
        task=task,
        sample=sample,
        scenario="s",
        hazards=HAZARDS,
        verdicts=graded,
        error_classes={},
        artifact=True,
        no_artifact_reason=None,
        snapshot_by_turn=turns,
    )


IMMEDIATE, REPAIRED = ("PASS",), ("FAIL", "PASS")


def test_pooled_and_within_stratum_differences_by_hand() -> None:
    found = [
        # task t: 2 immediate (1 failing), 2 repaired (2 failing: one silent, one crash)
        cell("a", "t", 0, IMMEDIATE),
        cell("a", "t", 1, IMMEDIATE, late_arrival="FAIL"),
        cell("a", "t", 2, REPAIRED, duplicate_delivery="FAIL"),
        cell("a", "t", 3, ("ERROR", "FAIL", "PASS"), duplicate_delivery="ERROR"),
        # task u: 2 immediate (0 failing), no repaired cell: in the pooled rates, not a stratum
        cell("a", "u", 0, IMMEDIATE),
        cell("a", "u", 1, IMMEDIATE),
        # out: the final script fails the snapshot; a reference cell without turns
        cell("a", "u", 2, ("FAIL", "FAIL")),
        cell("a", "u", 3, ()),
    ]
    (effect,) = repair_effect(found, resamples=500)
    assert (effect.immediate_cells, effect.immediate_failing) == (4, 1)
    assert (effect.repaired_cells, effect.repaired_failing) == (2, 2)
    assert effect.repaired_rate - effect.immediate_rate == pytest.approx(1 - 1 / 4)
    assert effect.pooled.value == pytest.approx(0.75)
    # within task t only: 2/2 - 1/2
    assert effect.strata == 1 and effect.within.value == pytest.approx(0.5)
    assert (
        effect.within.low == effect.within.high == pytest.approx(0.5)
    )  # one stratum, every draw the same


def test_all_arms_row_and_task_difficulty_cancelling_within_strata() -> None:
    found = []
    # a hard task where everything fails, mostly repaired, and an easy one where nothing fails, passed at once
    for arm in ("a", "b"):
        found += [cell(arm, "hard", i, REPAIRED, late_arrival="FAIL") for i in range(3)]
        found += [cell(arm, "hard", 3, IMMEDIATE, late_arrival="FAIL")]
        found += [cell(arm, "easy", i, IMMEDIATE) for i in range(4)]
    effects = {e.arm: e for e in repair_effect(found, resamples=500)}
    assert list(effects) == ["a", "b", ALL]
    whole = effects[ALL]
    assert (whole.repaired_cells, whole.immediate_cells) == (6, 10)
    # pooled: repaired cells all fail (6/6), immediate 2/10: a large difference made by task difficulty
    assert whole.pooled.value == pytest.approx(1 - 2 / 10)
    # two tasks: a draw of (hard, hard) has both kinds failing everywhere, a difference of 0
    assert (whole.pooled.low, whole.pooled.high) == (pytest.approx(0.0), pytest.approx(0.8))
    # within (arm, task): only (a, hard) and (b, hard) hold both kinds, and there both fail everywhere
    assert whole.strata == 2 and whole.within.value == pytest.approx(0.0)


def test_no_generated_cells_gives_nothing_and_one_kind_gives_no_difference() -> None:
    assert repair_effect([cell("a", "t", 0, ())]) == []
    (effect,) = repair_effect(
        [cell("a", "t", 0, IMMEDIATE), cell("a", "t", 1, IMMEDIATE)], resamples=100
    )
    assert effect.pooled.value is None and effect.within.value is None and effect.strata == 0
    assert effect.pooled.format(signed=True) == "—"


def test_the_same_seed_gives_the_same_interval() -> None:
    found = [
        cell(
            "a",
            t,
            i,
            REPAIRED if i % 2 else IMMEDIATE,
            late_arrival="FAIL" if i % 3 == 0 else "PASS",
        )
        for t in ("t1", "t2", "t3", "t4")
        for i in range(4)
    ]
    first, second = repair_effect(found, resamples=300), repair_effect(found, resamples=300)
    assert first == second
