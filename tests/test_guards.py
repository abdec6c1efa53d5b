"""The idioms of a stored run, the guard split over cell outcomes, its sign test, and the idiom table."""

from __future__ import annotations

import pytest

from arrivalbench.analysis.guards import (
    GuardSplit,
    artifact_idioms,
    guard_sign_test,
    guard_split,
    idiom_table,
)
from arrivalbench.analysis.idioms import FEATURES, Idioms
from arrivalbench.analysis.stats import CellOutcome, run_outcomes
from arrivalbench.spec import get_task
from arrivalbench.store import Cell, RunDir, sha256_text, verdict_row

# -- runs -------------------------------------------------------------------------------------------


def test_artifact_idioms_and_outcomes_of_a_stored_run_feed_the_split(tmp_path):
    gold = get_task("daily_revenue").gold_sql
    control = get_task("daily_revenue").controls["controls/dedup_history_only.sql"]
    cells = [
        Cell("m", "daily_revenue", 0, sha256_text(gold)),
        Cell("m", "daily_revenue", 1, sha256_text(control)),
        Cell("m", "daily_revenue", 2, sha256_text(gold)),
        Cell("m", "daily_revenue", 3, None, no_artifact_reason="refusal"),
    ]
    run = RunDir.create(
        tmp_path / "run", suite_hash="s", task_hashes={}, base_seed=1, engine="duckdb",
        engine_version="x", config={}, cells=cells, artifacts={sha256_text(t): t for t in (gold, control)},
    )  # fmt: skip
    # a graded cell has a verdict on every hazard its task declares (stats.IncompleteCellError)
    graded = {"snapshot": "PASS", "duplicate_delivery": "FAIL"} | dict.fromkeys(
        ("late_arrival", "out_of_order", "crash_retry", "backfill"), "PASS"
    )
    rows = [verdict_row(cells[1], s, 1, {"verdict": v}) for s, v in graded.items()]
    timings = [
        {k: r[k] for k in ("arm", "task", "sample", "schedule")}
        | {"wall_seconds": 0.0, "statement_seconds": 0.0}
        for r in rows
    ]  # a journal line is a whole record: its timing row is checked too
    run.append(rows, timings)
    tasks = {"daily_revenue": get_task("daily_revenue")}

    found = artifact_idioms(run, tasks)
    assert set(found) == {sha256_text(gold), sha256_text(control)}
    assert found[sha256_text(gold)].guard and not found[sha256_text(control)].guard

    by_sample = {c.sample: c for c in run_outcomes(run, tasks)}
    assert by_sample[1].verdicts == graded
    assert by_sample[1].artifact_sha256 == sha256_text(control)
    assert by_sample[0].verdicts == {} and by_sample[3].artifact_sha256 is None
    assert "duplicate_delivery" in by_sample[1].hazards
    (split,) = [s for s in guard_split(by_sample.values(), found) if s.cells]
    assert (split.guarded, split.cells, split.fail) == (False, 1, 1)


# -- the guard split --------------------------------------------------------------------------------

GUARDED, BARE = "g" * 64, "b" * 64
FOUND = {GUARDED: Idioms(key_constraint=True), BARE: Idioms(history_antijoin=True)}
DECLARED = ("duplicate_delivery", "late_arrival")


def outcome(
    arm: str,
    sample: int,
    sha: str | None,
    hazard: str | None,
    snapshot: str = "PASS",
    declared=DECLARED,
) -> CellOutcome:
    verdicts = {"snapshot": snapshot, "late_arrival": "PASS"}
    if hazard is not None:
        verdicts["duplicate_delivery"] = hazard
    return CellOutcome(
        arm=arm,
        task="t",
        sample=sample,
        scenario="t",
        hazards=declared,
        verdicts=verdicts,
        error_classes={},
        artifact=sha is not None,
        no_artifact_reason=None if sha is not None else "refusal",
        snapshot_by_turn=(),
        artifact_sha256=sha,
    )


def synthetic() -> list[CellOutcome]:
    """Arm a: 6 guarded (2 ERROR, 4 PASS), 4 bare (3 FAIL, 1 PASS), plus five cells that must not count."""
    cells = [outcome("a", i, GUARDED, "ERROR" if i < 2 else "PASS") for i in range(6)]
    cells += [outcome("a", 10 + i, BARE, "FAIL" if i < 3 else "PASS") for i in range(4)]
    cells += [
        outcome("a", 20, BARE, "FAIL", snapshot="FAIL"),  # does not pass the snapshot
        outcome("a", 21, None, None, snapshot="ERROR"),  # no artifact
        outcome("a", 22, BARE, "FAIL", declared=("late_arrival",)),  # hazard not declared
        outcome("a", 23, BARE, None),  # never graded on the hazard
        outcome("b", 0, "x" * 64, "FAIL", snapshot="FAIL"),  # unknown artifact, but filtered first
    ]
    cells.append(outcome("c", 0, BARE, "FAIL"))
    return cells


def test_guard_split_counts_and_exact_bounds():
    splits = {(s.arm, s.guarded): s for s in guard_split(synthetic(), FOUND)}
    assert set(splits) == {("a", True), ("a", False), ("c", True), ("c", False)}
    guarded, bare = splits[("a", True)], splits[("a", False)]
    assert (guarded.cells, guarded.fail, guarded.error) == (6, 0, 2)
    assert (bare.cells, bare.fail, bare.error) == (4, 3, 0)
    # six cells: the exact one-sided bound 1 - 0.05^(1/6), not the rule of three's 3/6
    assert guarded.fail_rate == 0.0 and guarded.fail_bound == pytest.approx(1 - 0.05 ** (1 / 6))
    assert guarded.error_rate == pytest.approx(1 / 3) and guarded.error_bound is None
    assert bare.fail_rate == 0.75 and bare.fail_bound is None
    assert bare.error_bound == pytest.approx(1 - 0.05 ** (1 / 4))
    empty = splits[("c", True)]
    assert empty.cells == 0 and empty.fail_rate is None and empty.fail_bound is None


def test_guard_split_names_an_artifact_without_idioms():
    with pytest.raises(ValueError, match=r"no idioms for artifact b{64} of a/t/10"):
        guard_split([outcome("a", 10, BARE, "FAIL")], {})


def arm(name: str, guarded_fail: int, bare_fail: int, cells: int = 10) -> list[GuardSplit]:
    return [
        GuardSplit(name, True, cells, guarded_fail, 0),
        GuardSplit(name, False, cells, bare_fail, 0),
    ]


def test_guard_sign_test_reproduces_twelve_of_thirteen():
    splits = [s for i in range(12) for s in arm(f"m{i:02}", 0, 5)]
    splits += arm("tie", 4, 4)
    splits += arm("small", 9, 0, cells=9)  # a reversal, but below min_cells
    result = guard_sign_test(splits)
    assert (result.wins, result.ties, result.losses, result.trials) == (12, 1, 0, 13)
    assert "small" not in result.arms and len(result.arms) == 13
    assert result.p == 14 / 8192  # exactly: the tail sums multiples of 2**-13
    assert result.p == pytest.approx(1.7e-3, abs=1e-4)
    dropped = guard_sign_test(splits, drop_ties=True)
    assert (dropped.trials, dropped.p) == (12, 1 / 4096)
    assert guard_sign_test(splits, min_cells=9).losses == 1


def test_guard_sign_test_on_nothing():
    result = guard_sign_test([])
    assert (result.trials, result.p) == (0, 1.0)


# -- the idiom table --------------------------------------------------------------------------------


def test_idiom_table_shares_per_arm():
    cells = [
        Cell("a", "t", 0, GUARDED),
        Cell("a", "t", 1, BARE),
        Cell("a", "t", 2, BARE),
        Cell("a", "t", 3),
    ]
    cells.append(Cell("b", "t", 0, GUARDED))
    (a, b) = idiom_table(cells, FOUND)
    assert (a.arm, a.cells, b.arm, b.cells) == ("a", 3, "b", 1)
    assert a.shares["guard"] == pytest.approx(1 / 3)
    assert a.shares["history_antijoin"] == pytest.approx(2 / 3)
    assert a.shares["parsed"] == 1.0 and b.shares["key_constraint"] == 1.0
    assert set(a.shares) == {*FEATURES, "guard", "parsed"}


def test_idiom_table_reads_outcomes_like_stored_cells():
    found = synthetic()
    (a, b, c) = idiom_table(found, {**FOUND, "x" * 64: Idioms(parsed=False)})
    assert (a.cells, b.cells, c.cells) == (13, 1, 1)  # every cell with a known artifact
    assert a.shares["guard"] == pytest.approx(6 / 13)
    assert b.shares["parsed"] == 0.0
