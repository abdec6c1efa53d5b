"""Metrics, intervals and tests on hand-made cells, with every expected number worked out by hand.

daily_revenue declares five hazards; store_sales_schema declares the same five and schema_evolution.
The worked examples of docs/metrics.md are computed here under the same names.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from scipy.stats import binomtest

from arrivalbench.analysis.stats import (
    BENIGN,
    METRICS,
    ORDERING,
    SILENT,
    ArmSummary,
    CellOutcome,
    Estimate,
    Signature,
    arm_summaries,
    bound_of_three,
    clopper_pearson,
    crash_rates,
    error_class,
    estimate,
    no_artifact,
    outcomes,
    paired,
    rate,
    replication,
    run_outcomes,
    sign_test,
    signature,
    signature_sign_test,
    task_rates,
)
from arrivalbench.errors import UsageError
from arrivalbench.spec import HAZARDS, get_task
from arrivalbench.store import Cell, RunDir, verdict_row

A, B = "daily_revenue", "store_sales_schema"
TASKS = {t: get_task(t) for t in (A, B)}
FIVE = ("late_arrival", "out_of_order", "duplicate_delivery", "crash_retry", "backfill")


def cell(
    task: str, sample: int, arm: str = "model", artifact: bool = True, turns: tuple[str, ...] = ()
) -> Cell:
    if artifact:
        return Cell(
            arm=arm,
            task=task,
            sample=sample,
            artifact_sha256=f"{task}-{sample}",
            snapshot_by_turn=turns,
        )
    return Cell(
        arm=arm, task=task, sample=sample, no_artifact_reason="refusal", snapshot_by_turn=turns
    )


def graded(task: str, sample: int, arm: str = "model", **verdicts: str) -> list[dict[str, object]]:
    """Verdict rows for the snapshot, the benign schedules and every declared hazard: PASS unless given."""
    schedules = ["snapshot", "single_batch", "in_order_stream", *TASKS[task].spec.hazards]
    rows = {s: verdicts.pop(s, "PASS") for s in schedules}
    rows.update(verdicts)  # a schedule the task does not declare
    return [
        {
            "arm": arm,
            "task": task,
            "sample": sample,
            "schedule": s,
            "verdict": v,
            "error_class": "sql_error" if v == "ERROR" else None,
        }
        for s, v in rows.items()
    ]


def table(*groups: list[dict[str, object]]) -> pa.Table:
    rows = [row for group in groups for row in group]
    return pa.Table.from_pylist(
        rows,
        schema=pa.schema(
            [
                ("arm", pa.string()),
                ("task", pa.string()),
                ("sample", pa.int64()),
                ("schedule", pa.string()),
                ("verdict", pa.string()),
                ("error_class", pa.string()),
            ]
        ),
    )


def only(summaries: list[ArmSummary]) -> ArmSummary:
    (summary,) = summaries
    return summary


def synthetic(
    arm: str,
    task: str,
    sample: int = 0,
    *,
    scenario: str | None = None,
    hazards: tuple[str, ...] = FIVE,
    snapshot: str = "PASS",
    **verdicts: str,
) -> CellOutcome:
    """A CellOutcome without a task folder: PASS on every declared hazard unless given."""
    seen = {"snapshot": snapshot, **{h: "PASS" for h in hazards}, **verdicts}
    return CellOutcome(
        arm=arm,
        task=task,
        sample=sample,
        scenario=scenario or task,
        hazards=hazards,
        verdicts=seen,
        error_classes={s: "sql_error" for s, v in seen.items() if v == "ERROR"},
        artifact=True,
        no_artifact_reason=None,
        snapshot_by_turn=(),
    )


def gap_cells(
    arm: str, task: str, fails: int, k: int = 5, scenario: str | None = None
) -> list[CellOutcome]:
    """k snapshot-passing cells of one task, the first `fails` of them failing duplicate delivery."""
    return [
        synthetic(
            arm, task, s, scenario=scenario, duplicate_delivery="FAIL" if s < fails else "PASS"
        )
        for s in range(k)
    ]


# -- the summary table (arm_summaries) -----------------------------------------------------------


def test_rates_are_means_over_tasks_not_pooled_over_cells():
    # A: 3 cells pass the snapshot, one FAILs late_arrival  -> snapshot 1, gap 1/3, error 0, all-in 1/3
    # B: 2 cells, one FAILs the snapshot, one ERRORs crash_retry
    #                                                      -> snapshot 1/2, gap undefined, error 1/2, all-in 1
    cells = [cell(A, 0), cell(A, 1), cell(A, 2), cell(B, 0), cell(B, 1)]
    verdicts = table(
        graded(A, 0, late_arrival="FAIL"),
        graded(A, 1),
        graded(A, 2),
        graded(B, 0, snapshot="FAIL"),
        graded(B, 1, crash_retry="ERROR"),
    )
    s = only(arm_summaries(cells, verdicts, TASKS))
    assert (s.arm, s.tasks, s.cells) == ("model", 2, 5)
    assert s.snapshot_pass == pytest.approx(3 / 4)  # pooled over cells: 4/5
    assert s.gap == pytest.approx(1 / 3)  # B has no gap; it is left out, not counted as 0 (1/6)
    assert s.error == pytest.approx(1 / 4)  # pooled: 1/5
    assert s.all_in == pytest.approx(2 / 3)  # pooled: 3/5


def test_arms_are_summarised_apart_in_name_order():
    cells = [cell(A, 0, arm="zeta"), cell(A, 0, arm="alpha")]
    verdicts = table(graded(A, 0, arm="zeta", snapshot="FAIL"), graded(A, 0, arm="alpha"))
    alpha, zeta = arm_summaries(cells, verdicts, TASKS)
    assert (alpha.arm, alpha.snapshot_pass, alpha.gap, alpha.all_in) == ("alpha", 1.0, 0.0, 0.0)
    assert (zeta.arm, zeta.snapshot_pass, zeta.gap, zeta.all_in) == ("zeta", 0.0, None, 1.0)


def test_cell_without_artifact_fails_snapshot_error_and_all_in():
    # sample 1 has no artifact (and so no verdict rows): not a pass, an all-in failure and an error.
    # Changed: this test used to assert error == 0; the paper's error rate counts cells with no
    # pipeline (refusals, truncation) as errors, which is what the error composition splits.
    cells = [cell(A, 0), cell(A, 1, artifact=False)]
    s = only(arm_summaries(cells, table(graded(A, 0)), TASKS))
    assert s.cells == 2
    assert s.snapshot_pass == pytest.approx(1 / 2)
    assert s.all_in == pytest.approx(1 / 2)
    assert s.error == pytest.approx(1 / 2)
    assert s.gap == 0.0  # only sample 0 is in the gap's denominator


def test_cell_without_artifact_ignores_stray_verdict_rows():
    s = only(arm_summaries([cell(A, 0, artifact=False)], table(graded(A, 0)), TASKS))
    assert (s.snapshot_pass, s.gap, s.error, s.all_in) == (0.0, None, 1.0, 1.0)


def test_cell_with_an_artifact_but_no_verdicts_is_in_no_denominator():
    # a sweep still running: sample 1 is not graded yet, which is not the same as failing
    s = only(arm_summaries([cell(A, 0), cell(A, 1)], table(graded(A, 0)), TASKS))
    assert (s.snapshot_pass, s.gap, s.error, s.all_in) == (1.0, 0.0, 0.0, 0.0)


def test_error_masks_a_silent_failure_out_of_the_gap():
    # sample 0 ERRORs on late_arrival and FAILs duplicate_delivery: the FAIL says nothing about the
    # pipeline being silently wrong, so the cell leaves the gap's denominator; it is an error and an
    # all-in failure. Sample 1 passes everything: the gap is 0/1, not 1/2.
    cells = [cell(A, 0), cell(A, 1)]
    verdicts = table(graded(A, 0, late_arrival="ERROR", duplicate_delivery="FAIL"), graded(A, 1))
    s = only(arm_summaries(cells, verdicts, TASKS))
    assert s.gap == 0.0
    assert s.error == pytest.approx(1 / 2)
    assert s.all_in == pytest.approx(1 / 2)
    assert s.snapshot_pass == 1.0


def test_snapshot_error_counts_as_an_error():
    s = only(arm_summaries([cell(A, 0)], table(graded(A, 0, snapshot="ERROR")), TASKS))
    assert (s.snapshot_pass, s.gap, s.error, s.all_in) == (0.0, None, 1.0, 1.0)


def test_gap_includes_schema_evolution_unless_dropped():
    # Changed: this test used to assert the opposite default (schema evolution left out of the gap
    # unless asked). The paper's gap takes every declared hazard; dropping the loud one is the
    # gap_drop_loud variant. B sample 0 FAILs only schema_evolution, sample 1 passes everything.
    cells = [cell(B, 0), cell(B, 1)]
    verdicts = table(graded(B, 0, schema_evolution="FAIL"), graded(B, 1))
    assert only(arm_summaries(cells, verdicts, TASKS)).gap == pytest.approx(1 / 2)
    assert only(arm_summaries(cells, verdicts, TASKS, drop_loud=True)).gap == 0.0


def test_verdicts_on_undeclared_schedules_do_not_count():
    # daily_revenue does not declare schema_evolution; benign controls are not hazards
    verdicts = table(graded(A, 0, schema_evolution="FAIL", in_order_stream="FAIL"))
    for drop_loud in (False, True):
        s = only(arm_summaries([cell(A, 0)], verdicts, TASKS, drop_loud=drop_loud))
        assert (s.snapshot_pass, s.gap, s.error, s.all_in) == (1.0, 0.0, 0.0, 0.0)


def test_schema_evolution_counts_in_error_and_all_in_unless_dropped():
    cells = [cell(B, 0), cell(B, 1)]
    verdicts = table(graded(B, 0, schema_evolution="ERROR"), graded(B, 1))
    s = only(arm_summaries(cells, verdicts, TASKS))
    assert s.error == pytest.approx(1 / 2)
    assert s.all_in == pytest.approx(1 / 2)
    dropped = only(arm_summaries(cells, verdicts, TASKS, drop_loud=True))
    assert (dropped.error, dropped.all_in) == (0.0, 0.0)


# -- the running example of docs/metrics.md ------------------------------------------------------


def running_example() -> list[CellOutcome]:
    """T1 (five hazards): c1 clean, c2 FAILs late_arrival, c3 clean. T2 (six): c4 ERRORs
    schema_evolution and FAILs duplicate_delivery, c5 has no artifact (refusal)."""
    cells = [cell(A, 1), cell(A, 2), cell(A, 3), cell(B, 4), cell(B, 5, artifact=False)]
    verdicts = table(
        graded(A, 1),
        graded(A, 2, late_arrival="FAIL"),
        graded(A, 3),
        graded(B, 4, schema_evolution="ERROR", duplicate_delivery="FAIL"),
    )
    return outcomes(cells, verdicts, TASKS)


@pytest.mark.parametrize(
    ("metric", "expected", "pooled"),
    [
        ("snapshot_pass", 3 / 4, 4 / 5),
        ("gap", 1 / 3, 1 / 3),
        ("gap_drop_loud", 2 / 3, 2 / 4),
        ("pass:late_arrival", 5 / 6, 3 / 4),
        ("pass:duplicate_delivery", 1 / 2, 3 / 4),
        ("pass:schema_evolution", None, None),
        ("error", 1 / 2, 2 / 5),
        ("error_drop_loud", 1 / 4, 1 / 5),
        ("all_in", 2 / 3, 3 / 5),
        ("all_in_drop_loud", 2 / 3, 3 / 5),
    ],
)
def test_running_example(metric, expected, pooled):
    found = running_example()
    values = [v for v in map(METRICS[metric], found) if v is not None]
    if expected is None:
        assert rate(found, metric) == {"model": None} and values == []
        return
    assert rate(found, metric) == {"model": pytest.approx(expected)}
    assert sum(values) / len(values) == pytest.approx(pooled)


def test_masked_silent_failure_counts_in_gap_drop_loud_only():
    # c4: the schema_evolution crash (loud) hides the duplicate_delivery FAIL (silent) from the gap
    c4 = running_example()[3]
    assert c4.task == B
    assert (c4.verdicts["duplicate_delivery"], c4.verdicts["schema_evolution"]) == ("FAIL", "ERROR")
    assert METRICS["gap"](c4) is None
    assert METRICS["gap_drop_loud"](c4) == 1.0
    assert METRICS["error"](c4) == 1.0
    assert METRICS["error_drop_loud"](c4) == 0.0
    assert METRICS["pass:duplicate_delivery"](c4) == 0.0  # its own hazard did not error


def test_task_rates_leave_out_tasks_without_a_usable_cell():
    assert task_rates(running_example(), "gap") == {"model": {A: pytest.approx(1 / 3)}}
    assert task_rates(running_example(), "error") == {"model": {A: 0.0, B: 1.0}}


def test_crash_rates_and_no_artifact_share():
    found = running_example()
    assert crash_rates(found) == {"model": {"no_artifact:refusal": 0.25, "sql_error": 0.25}}
    assert no_artifact(found) == {"model": {"refusal": pytest.approx(1 / 5)}}  # pooled over cells


def test_crash_rates_count_a_cell_in_each_of_its_classes():
    two = synthetic("m", "t", 0, crash_retry="ERROR", snapshot="ERROR")
    two = CellOutcome(
        **{**two.__dict__, "error_classes": {"snapshot": "timeout", "crash_retry": "sql_error"}}
    )
    found = [two, synthetic("m", "t", 1), synthetic("m", "u", 0)]
    assert crash_rates(found) == {"m": {"sql_error": 0.25, "timeout": 0.25}}
    assert rate(found, "error") == {"m": 0.25}
    assert no_artifact(found) == {"m": {}}


def test_per_hazard_pass_uses_declaring_tasks_and_its_own_errors_only():
    found = [
        synthetic("m", "t", 0, late_arrival="FAIL"),
        synthetic("m", "t", 1, late_arrival="ERROR"),  # out of pass:late_arrival
        synthetic("m", "t", 2, crash_retry="ERROR"),  # in pass:late_arrival, out of the gap
        # in pass:late_arrival (it has an artifact: DESIGN.md), out of the gap
        synthetic("m", "t", 3, snapshot="FAIL"),
        # u does not declare late_arrival: its FAIL counts nowhere
        synthetic("m", "u", 0, hazards=("duplicate_delivery",), late_arrival="FAIL"),
    ]
    assert rate(found, "pass:late_arrival") == {"m": pytest.approx(2 / 3)}
    assert task_rates(found, "gap") == {"m": {"t": 1.0, "u": 0.0}}
    assert rate(found, "pass:out_of_order") == {"m": 1.0}  # u does not declare out_of_order either


def test_benign_schedules_count_every_snapshot_passing_cell():
    found = [
        synthetic("m", "t", 0, hazards=(), in_order_stream="FAIL", single_batch="PASS"),
        synthetic("m", "t", 1, hazards=(), in_order_stream="PASS", single_batch="PASS"),
        synthetic("m", "t", 2, hazards=(), snapshot="FAIL", in_order_stream="PASS"),
    ]
    assert rate(found, "pass:in_order_stream") == {"m": pytest.approx(1 / 2)}
    assert rate(found, "pass:single_batch") == {"m": 1.0}
    assert rate(found, "gap") == {"m": 0.0}  # benign failures are not in the gap


def test_every_hazard_and_benign_schedule_has_a_pass_metric():
    assert {f"pass:{s}" for s in (*HAZARDS, *BENIGN)} <= METRICS.keys()


def test_first_turn_and_final_snapshot_pass():
    cells = [
        cell(A, 0, turns=("FAIL", "PASS")),
        cell(A, 1, turns=("PASS",)),
        cell(A, 2, turns=("FAIL", "FAIL", "FAIL")),
        cell(A, 3),  # a reference cell: no repair loop, not in either denominator
    ]
    verdicts = table(graded(A, 0), graded(A, 1), graded(A, 2, snapshot="FAIL"), graded(A, 3))
    found = outcomes(cells, verdicts, TASKS)
    assert rate(found, "first_turn_snapshot_pass") == {"model": pytest.approx(1 / 3)}
    assert rate(found, "final_snapshot_pass") == {"model": pytest.approx(2 / 3)}


def test_mean_over_tasks_differs_from_pooled_over_cells():
    # t: 1 of 1 cell fails; u: 0 of 4. Over tasks (1 + 0) / 2 = 50%; pooled 1/5 = 20%.
    found = gap_cells("m", "t", fails=1, k=1) + gap_cells("m", "u", fails=0, k=4)
    assert rate(found, "gap") == {"m": 0.5}


def test_an_arm_with_no_usable_cell_has_no_rate():
    found = [synthetic("m", "t", snapshot="FAIL")]
    assert rate(found, "gap") == {"m": None}
    assert estimate(found, "gap")["m"] == Estimate(value=None, low=None, high=None, tasks=0)
    assert estimate(found, "gap")["m"].format() == "—"


def test_unknown_metric_is_a_usage_error_with_a_suggestion():
    with pytest.raises(UsageError, match=r"Unknown metric 'gpa'\. Did you mean 'gap'\?"):
        rate(running_example(), "gpa")
    with pytest.raises(UsageError, match="Unknown resampling unit 'cell'"):
        estimate(running_example(), "gap", unit="cell")  # type: ignore[arg-type]


def test_cell_of_a_task_not_given_is_a_usage_error():
    with pytest.raises(UsageError, match="task 'daily_revenue' is not among the 0 tasks given"):
        outcomes([cell(A, 0)], table(graded(A, 0)), {})


def test_run_outcomes_reads_a_stored_run(tmp_path):
    cells = [cell(A, 0), cell(B, 0, artifact=False)]
    run = RunDir.create(
        tmp_path / "run", suite_hash="s", task_hashes={}, base_seed=1, engine="duckdb",
        engine_version="x", config={}, cells=cells, artifacts={},
    )  # fmt: skip
    entries = {
        "snapshot": {"verdict": "PASS"},
        "duplicate_delivery": {"verdict": "ERROR", "error_class": "timeout"},
    } | {h: {"verdict": "PASS"} for h in FIVE if h != "duplicate_delivery"}
    rows = [verdict_row(cells[0], s, 1, e) for s, e in entries.items()]
    timings = [
        {k: r[k] for k in ("arm", "task", "sample", "schedule")}
        | {"wall_seconds": 0.0, "statement_seconds": 0.0}
        for r in rows
    ]  # a journal line is a whole record: its timing row is checked too
    run.append(rows, timings)
    (a, b) = run_outcomes(run)
    assert (a.task, a.scenario, a.hazards) == (A, "additive_rollup", FIVE)
    assert a.error_classes == {"duplicate_delivery": "timeout"}
    assert (b.artifact, b.no_artifact_reason, b.verdicts) == (False, "refusal", {})
    assert (a.artifact_sha256, b.artifact_sha256) == (f"{A}-0", None)
    assert b.scenario == "additive_rollup_evolving"


# -- intervals ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("e", "signed", "shown"),
    [
        (Estimate(0.1667, 0.087, 0.26, 40), False, "16.7% [8.7, 26.0]"),
        (Estimate(0.0, None, None, 40, bound=0.075), False, "0.0% (≤7.5%)"),
        (Estimate(1.0, None, None, 40, bound=0.925), False, "100.0% (≥92.5%)"),
        (Estimate(0.03, -0.016, 0.168, 40), True, "+3.0pp [-1.6, +16.8]"),
        (Estimate(-0.0001, -0.0004, 0.0, 40), True, "+0.0pp [+0.0, +0.0]"),
        (Estimate(None, None, None, 0), False, "—"),
    ],
)
def test_estimate_format(e, signed, shown):
    assert e.format(signed=signed) == shown


def test_estimate_format_digits():
    assert Estimate(0.16666, 0.08666, 0.26, 40).format(digits=2) == "16.67% [8.67, 26.00]"


def test_rule_of_three_replaces_a_collapsed_interval():
    zero = [c for t in range(40) for c in gap_cells("m", f"t{t:02d}", fails=0)]
    e = estimate(zero, "gap")["m"]
    assert e == Estimate(value=0.0, low=None, high=None, tasks=40, bound=0.075)
    assert e.format() == "0.0% (≤7.5%)"
    one = [c for t in range(40) for c in gap_cells("m", f"t{t:02d}", fails=5)]
    assert estimate(one, "gap")["m"].format() == "100.0% (≥92.5%)"
    # one failing cell anywhere is a rate above zero: a bootstrap interval again
    some = zero[1:] + gap_cells("m", "t00", fails=1)[:1]
    assert estimate(some, "gap")["m"].bound is None


def test_bootstrap_is_seeded():
    found = [c for t in range(20) for c in gap_cells("m", f"t{t:02d}", fails=t % 6)]
    first, again = estimate(found, "gap")["m"], estimate(found, "gap")["m"]
    other = estimate(found, "gap", seed=7)["m"]
    assert first == again
    assert first.value == other.value and (first.low, first.high) != (other.low, other.high)
    assert first.low < first.value < first.high


def test_bootstrap_interval_of_an_arm_does_not_depend_on_other_arms():
    one = [c for t in range(20) for c in gap_cells("m", f"t{t:02d}", fails=t % 6)]
    other = [c for t in range(20) for c in gap_cells("n", f"t{t:02d}", fails=t % 3)]
    assert estimate(one, "gap")["m"] == estimate(one + other, "gap")["m"]


def test_bootstrap_coverage_is_close_to_95_percent():
    # 300 datasets of 40 tasks: task difficulty ~ Beta(2, 3), five cells per task. The true rate
    # (the expected task rate) is 2/5; a 95% interval should contain it about 95% of the time.
    generator = np.random.default_rng(20260105)
    covered = 0
    for dataset in range(300):
        difficulty = generator.beta(2, 3, size=40)
        fails = generator.binomial(5, difficulty)
        found = [c for t, f in enumerate(fails) for c in gap_cells("m", f"t{t:02d}", fails=int(f))]
        e = estimate(found, "gap", resamples=1000, seed=dataset)["m"]
        covered += e.low <= 0.4 <= e.high
    assert 0.91 <= covered / 300 <= 0.98


def test_paired_interval_is_much_narrower_when_arms_share_task_difficulty():
    # Both arms fail every cell of the 20 hard tasks and no cell of the 20 easy ones; arm b also
    # fails three easy tasks. Per task the difference is 0 except on those three.
    found = []
    for t in range(40):
        hard = t % 2 == 0
        found += gap_cells("a", f"t{t:02d}", fails=5 if hard else 0)
        found += gap_cells("b", f"t{t:02d}", fails=5 if hard or t in (1, 3, 5) else 0)
    e = paired(found, "gap", "a", "b")
    assert e.value == pytest.approx(3 / 40) and e.tasks == 40 and e.bound is None
    # the unpaired difference: each arm's tasks resampled on their own
    rates = task_rates(found, "gap")
    generator = np.random.default_rng(1)
    draws = [
        np.array(list(rates[arm].values()))[generator.integers(0, 40, (10_000, 40))].mean(1)
        for arm in "ab"
    ]
    unpaired = np.percentile(draws[1] - draws[0], [2.5, 97.5])
    assert e.high - e.low < 0.5 * (unpaired[1] - unpaired[0])
    assert e.low <= 3 / 40 <= e.high


def test_paired_uses_only_tasks_usable_in_both_arms():
    found = (
        gap_cells("a", "t", fails=1) + gap_cells("b", "t", fails=3)  # +0.4
        + gap_cells("a", "u", fails=0) + gap_cells("b", "u", fails=1)  # +0.2
        + gap_cells("a", "v", fails=5)  # arm b has no cell on v: left out, not imputed
    )  # fmt: skip
    e = paired(found, "gap", "a", "b")
    assert (e.value, e.tasks) == (pytest.approx(0.3), 2)
    assert 0.2 <= e.low <= e.high <= 0.4
    with pytest.raises(UsageError, match="Unknown arm 'c'"):
        paired(found, "gap", "a", "c")


def test_paired_difference_of_the_docs_example():
    rates = {"t1": (1, 0), "t2": (3, 2), "t3": (5, 4)}  # failing cells of 5, arm a then arm b
    found = [
        c for t, (fa, fb) in rates.items() for c in gap_cells("a", t, fa) + gap_cells("b", t, fb)
    ]
    assert paired(found, "gap", "a", "b").format(signed=True) == "-20.0pp [-20.0, -20.0]"
    both = estimate(found, "gap")
    assert (both["a"].low, both["a"].high) == (pytest.approx(0.2), pytest.approx(1.0))
    assert (both["b"].low, both["b"].high) == (pytest.approx(0.0), pytest.approx(0.8))


def test_scenario_unit_with_one_task_per_scenario_equals_task_unit():
    found = [
        c for t in range(12) for c in gap_cells("m", f"t{t:02d}", fails=t % 4, scenario=f"s{t:02d}")
    ]
    by_scenario = estimate(found, "gap", unit="scenario")["m"]
    by_task = estimate(found, "gap", unit="task")["m"]
    assert by_scenario.value == by_task.value and by_scenario.tasks == by_task.tasks == 12
    # the same draws, summed per scenario instead of averaged per task: equal up to rounding
    assert (by_scenario.low, by_scenario.high) == (
        pytest.approx(by_task.low),
        pytest.approx(by_task.high),
    )


def test_scenario_unit_is_wider_when_tasks_of_a_scenario_agree():
    # 8 scenarios of 5 tasks; the tasks of a scenario share its failure count
    found = [
        c
        for s in range(8)
        for t in range(5)
        for c in gap_cells("m", f"s{s}t{t}", fails=s % 6, scenario=f"s{s}")
    ]
    by_task, by_scenario = estimate(found, "gap")["m"], estimate(found, "gap", unit="scenario")["m"]
    assert by_task.value == by_scenario.value
    assert (by_scenario.high - by_scenario.low) > 1.5 * (by_task.high - by_task.low)


def test_scenario_unit_averages_over_drawn_tasks_not_scenarios():
    # S1 holds rates 0 and 1/2, S2 holds 1: the point estimate is the mean over tasks, 1/2, and the
    # possible resampled means are (S1,S1) 1/4, (S1,S2) 1/2, (S2,S2) 1.
    found = (
        gap_cells("m", "a", fails=0, k=2, scenario="S1")
        + gap_cells("m", "b", fails=1, k=2, scenario="S1")
        + gap_cells("m", "c", fails=2, k=2, scenario="S2")
    )
    e = estimate(found, "gap", unit="scenario")["m"]
    assert (e.value, e.low, e.high, e.tasks) == (0.5, 0.25, 1.0, 3)


def test_scenario_unit_weights_a_drawn_scenario_by_its_task_count():
    # one scenario of 20 tasks that always fail, nine one-task scenarios that never do: the rate is
    # 20/29 over tasks, and a draw holding the big scenario k times has mean 20k / (20k + 10 - k),
    # 90% at k = 3; averaging scenario means instead would give k/10 and put the interval below
    # its own point estimate.
    found = [
        c for t in range(20) for c in gap_cells("m", f"big{t:02d}", fails=1, k=1, scenario="big")
    ]
    found += [
        c for s in range(9) for c in gap_cells("m", f"small{s}", fails=0, k=1, scenario=f"small{s}")
    ]
    e = estimate(found, "gap", unit="scenario")["m"]
    assert (e.value, e.tasks) == (pytest.approx(20 / 29), 29)
    assert e.low == 0.0 and e.high >= 60 / 67


def test_estimate_is_fast_enough_to_vectorise_many_arms():
    # 10 arms x 40 tasks x 5 cells, 10,000 resamples each: the index matrix is drawn once per arm
    found = [
        c
        for a in range(10)
        for t in range(40)
        for c in gap_cells(f"arm{a}", f"t{t:02d}", fails=(a + t) % 6)
    ]
    result = estimate(found, "gap")
    assert sorted(result) == [f"arm{a}" for a in range(10)]
    assert all(e.tasks == 40 and e.low < e.value < e.high for e in result.values())


# -- the failure signature and sign tests ---------------------------------------------------------


def signature_cells(arm: str, passes: dict[str, int]) -> list[CellOutcome]:
    """One task of 10 cells; `passes[h]` of them pass hazard h and the rest FAIL it."""
    return [
        synthetic(arm, "t", s, **{h: "PASS" if s < passes.get(h, 10) else "FAIL" for h in FIVE})
        for s in range(10)
    ]


def test_signature_margins_of_the_docs_example():
    found = signature_cells(
        "m",
        {
            "late_arrival": 9,
            "out_of_order": 8,
            "duplicate_delivery": 5,
            "crash_retry": 7,
            "backfill": 6,
        },
    )
    s = signature(found)["m"]
    assert (s.ordering_mean, s.idempotency_mean) == (pytest.approx(0.85), pytest.approx(0.6))
    assert (s.weakest_ordering, s.weakest_idempotency, s.strongest_idempotency) == (0.8, 0.5, 0.7)
    assert s.group_mean == pytest.approx(0.25)
    assert s.weakest_link == pytest.approx(0.30)
    assert s.conservative == pytest.approx(0.10)


def test_signature_rates_are_over_the_tasks_declaring_each_hazard():
    found = [
        synthetic("m", "t", 0, late_arrival="FAIL"),
        synthetic("m", "u", 0, hazards=("out_of_order", *FIVE[2:])),  # no late_arrival
    ]
    s = signature(found)["m"]
    assert s.rates["late_arrival"] == 0.0 and s.rates["out_of_order"] == 1.0
    assert (s.weakest_ordering, s.weakest_link, s.group_mean) == (0.0, -1.0, -0.5)


def test_signature_is_empty_where_a_hazard_rate_is_missing():
    found = [synthetic("m", "t", 0, hazards=FIVE[1:])]  # nobody declares late_arrival
    s = signature(found)["m"]
    assert s.rates["late_arrival"] is None
    assert s.ordering_mean is None and s.weakest_ordering is None
    assert s.group_mean is None and s.weakest_link is None and s.conservative is None
    assert (s.idempotency_mean, s.weakest_idempotency) == (1.0, 1.0)


@pytest.mark.parametrize(
    ("k", "n", "p"), [(11, 11, 0.6), (12, 13, 0.5), (0, 5, 0.3), (3, 10, 0.1), (7, 18, 0.1)]
)
def test_sign_test_matches_scipy(k, n, p):
    assert sign_test(k, n, p) == pytest.approx(
        binomtest(k, n, p, alternative="greater").pvalue, rel=1e-12
    )


def test_sign_test_hand_values():
    # the paper's two sign tests, as printed
    assert sign_test(11, 11, 3 / 5) == pytest.approx(0.6**11)
    assert f"{sign_test(11, 11, 3 / 5):.1e}" == "3.6e-03"
    assert sign_test(12, 13, 1 / 2) == pytest.approx(14 / 8192)
    assert f"{sign_test(12, 13, 1 / 2):.1e}" == "1.7e-03"
    with pytest.raises(UsageError):
        sign_test(4, 3, 0.5)
    with pytest.raises(UsageError):
        sign_test(1, 3, 1.5)


def sig(arm: str, margin: float | None) -> Signature:
    return Signature(arm, None, None, margin, None, None, None, margin, margin, {})


def test_signature_sign_test_nulls_and_ties():
    sigs = {f"a{i}": sig(f"a{i}", 0.1) for i in range(11)}
    assert signature_sign_test(sigs) == (11, 11, pytest.approx(0.6**11))
    assert signature_sign_test(sigs, "group_mean") == (11, 11, pytest.approx(0.5**11))
    assert signature_sign_test(sigs, "conservative") == (11, 11, pytest.approx(0.1**11))
    mixed = [
        *sigs.values(),
        sig("tie", 0.0),
        sig("float_tie", 1e-16),
        sig("missing", None),
        sig("neg", -0.05),
    ]
    positive, n, p = signature_sign_test(mixed, "group_mean")
    assert (positive, n) == (11, 12)
    assert p == pytest.approx(13 / 4096)  # P(X >= 11 | 12, 1/2) = (12 + 1) / 2^12
    with pytest.raises(UsageError, match="Did you mean 'weakest_link'"):
        signature_sign_test(sigs, "weakest")  # type: ignore[arg-type]


# -- replication ------------------------------------------------------------------------------------


def test_replication_of_one_arm_across_two_runs():
    # run a fails t1 (2/5), t2 (1/5), t3 (5/5), passes t4; run b fails t2, t3, t4 (1/5 each), passes t1
    run_a = [
        c for t, f in {"t1": 2, "t2": 1, "t3": 5, "t4": 0}.items() for c in gap_cells("m", t, f)
    ]
    run_b = [
        c for t, f in {"t1": 0, "t2": 1, "t3": 1, "t4": 1}.items() for c in gap_cells("m", t, f)
    ]
    r = replication(run_a, run_b, "m")
    assert r.rate_a == pytest.approx(8 / 20) and r.rate_b == pytest.approx(3 / 20)
    assert r.delta == pytest.approx(-5 / 20)
    assert r.failing_a == {"t1", "t2", "t3"} and r.failing_b == {"t2", "t3", "t4"}
    assert r.recurring == {"t2", "t3"} and r.recurrence == pytest.approx(2 / 3)


def test_replication_of_a_pass_metric_fails_on_zero():
    run_a = [synthetic("m", "t", 0, snapshot="FAIL"), synthetic("m", "u", 0)]
    run_b = [synthetic("m", "t", 0), synthetic("m", "u", 0)]
    r = replication(run_a, run_b, "m", metric="snapshot_pass")
    assert (r.failing_a, r.failing_b, r.recurrence, r.delta) == ({"t"}, frozenset(), 0.0, 0.5)
    with pytest.raises(UsageError, match="arm 'x' is not in the first run"):
        replication(run_a, run_b, "x")


def test_bound_of_three_at_zero_and_one_only():
    assert bound_of_three(0.0, 40) == pytest.approx(0.075)
    assert bound_of_three(1.0, 40) == pytest.approx(0.925)
    assert bound_of_three(0.5, 40) is None and bound_of_three(None, 40) is None
    assert bound_of_three(0.0, 0) is None


def test_tiny_n_bound_is_exact_never_100_percent():
    """At two tasks the rule of three printed "≤100%", a bound that says nothing; below 30 units
    the bound is the exact one-sided Clopper-Pearson bound, 1 - 0.05^(1/n)."""
    assert bound_of_three(0.0, 2) == pytest.approx(1 - 0.05**0.5)  # 77.6%
    assert bound_of_three(1.0, 2) == pytest.approx(0.05**0.5)  # 22.4%
    assert bound_of_three(0.0, 1) == pytest.approx(0.95)
    upper = binomtest(0, 29).proportion_ci(confidence_level=0.90, method="exact").high
    assert bound_of_three(0.0, 29) == pytest.approx(upper)
    assert Estimate(0.0, None, None, 2, bound=bound_of_three(0.0, 2)).format() == "0.0% (≤77.6%)"


@pytest.mark.parametrize(("k", "n"), [(0, 5), (4, 10), (1, 9), (5, 5), (30, 200), (0, 1)])
def test_clopper_pearson_matches_scipy(k, n):
    exact = binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    low, high = clopper_pearson(k, n)
    assert (low, high) == (pytest.approx(exact.low, abs=1e-9), pytest.approx(exact.high, abs=1e-9))
    assert clopper_pearson(0, 0) == (None, None)


def test_gap_over_benign_passing_cells_only():
    """A cell that also fails a benign schedule (an ordinary incremental bug) leaves the
    benign-passing gap; the plain gap keeps it."""
    benign = {"single_batch": "PASS", "in_order_stream": "PASS"}
    cells = [
        synthetic("m", "t", 0, duplicate_delivery="FAIL", **benign),
        synthetic("m", "t", 1, duplicate_delivery="FAIL", **{**benign, "single_batch": "FAIL"}),
        synthetic("m", "t", 2, **benign),
        synthetic("m", "t", 3, **benign),
    ]
    assert rate(cells, "gap")["m"] == pytest.approx(2 / 4)
    # cell 1 fails a benign schedule: the benign-passing gap is over cells 0, 2 and 3
    assert rate(cells, "gap_benign")["m"] == pytest.approx(1 / 3)


def test_gap_over_tasks_declaring_all_five_silent_hazards():
    cells = [
        synthetic("m", "five", 0, duplicate_delivery="FAIL"),
        synthetic("m", "five", 1),
        synthetic("m", "two", 0, hazards=("late_arrival", "out_of_order"), late_arrival="FAIL"),
    ]
    assert rate(cells, "gap")["m"] == pytest.approx((1 / 2 + 1) / 2)
    assert rate(cells, "gap_all_five")["m"] == pytest.approx(1 / 2)
    assert task_rates(cells, "gap_all_five")["m"] == {"five": 0.5}


def test_signature_over_tasks_declaring_all_five_of_the_docs_example():
    cells = [
        synthetic("m", "five", 0, duplicate_delivery="FAIL"),
        synthetic("m", "five", 1),
        synthetic("m", "two", 0, hazards=ORDERING, late_arrival="FAIL"),
    ]
    everything = signature(cells)["m"]
    assert everything.group_mean == pytest.approx(0.75 - 2.5 / 3)  # -8.3pp
    subset = signature(o for o in cells if set(SILENT) <= set(o.hazards))["m"]
    assert subset.group_mean == pytest.approx(1 - 2.5 / 3)  # +16.7pp


def test_weakest_link_over_the_matched_all_five_set():
    """The docs example: over both tasks late arrival is (1 + 0) / 2 against duplicate delivery's
    1/2, a weakest-link margin of 0; over the all-five task alone late arrival is 1: +50pp."""
    from arrivalbench.analysis.signtests import all_five

    cells = [
        synthetic("m", "five", 0, duplicate_delivery="FAIL"),
        synthetic("m", "five", 1),
        synthetic("m", "two", 0, hazards=ORDERING, late_arrival="FAIL"),
    ]
    assert [o.task for o in all_five(cells)] == ["five", "five"]
    assert signature(cells)["m"].weakest_link == pytest.approx(0.0)
    matched = signature(all_five(cells))["m"]
    assert matched.weakest_link == pytest.approx(1 - 0.5)
    assert matched.group_mean == pytest.approx(1 - 2.5 / 3)


def test_constraint_errors_are_split_out_of_sql_error():
    """A key refusing a duplicate is the guard firing, not a broken script: the engine's
    'Constraint Error' becomes constraint_violation; other SQL errors stay sql_error."""
    record = '{"message": "Constraint Error: Duplicate key \\"event_id: 3\\" violates primary key"}'
    assert error_class("sql_error", record) == "constraint_violation"
    assert error_class("sql_error", '{"message": "Binder Error: no column x"}') == "sql_error"
    assert error_class("sql_error", None) == "sql_error"
    assert error_class("timeout", record) == "timeout"
    assert error_class(None, None) == "unknown"
    assert error_class("sql_error", "not json") == "sql_error"


def test_regression_a_cell_missing_a_declared_hazard_verdict_is_refused() -> None:
    """Regression: a cell graded on the snapshot alone (a manifest narrowed `config.schedules`)
    counted in the gap as a cell with no FAIL: the watermark control showed a gap of 0%."""
    from arrivalbench.analysis.stats import IncompleteCellError

    rows = [r for r in graded(A, 0) if r["schedule"] != "late_arrival"]
    with pytest.raises(IncompleteCellError, match=r"model/daily_revenue/0: .* late_arrival") as e:
        outcomes([cell(A, 0)], table(rows), TASKS)
    assert "\n" not in str(e.value)
    assert outcomes([cell(A, 1)], table(graded(A, 0)), TASKS)[0].graded is False  # ungraded: fine
