"""severity.py: how wrong a FAIL's table is, computed here again from the two tables by hand."""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal

import pyarrow as pa
import pytest

from arrivalbench.compare import compare
from arrivalbench.engines import Limits, get_engine, oracle_engine
from arrivalbench.oracle import compute_oracle
from arrivalbench.replay import replay
from arrivalbench.schedules import build_schedule
from arrivalbench.seeds import DEFAULT_SEED
from arrivalbench.severity import measure_columns, total_errors
from arrivalbench.spec import TargetSpec, get_task
from arrivalbench.verdict import RECORD_FORMAT, Diff, Verdict

TARGET = TargetSpec(
    name="t",
    columns={"k": "INTEGER", "label": "VARCHAR", "amount": "DECIMAL(10,2)", "n": "BIGINT"},
    key=["k"],
)


def table(rows: list[tuple[int, str, str | None, int]]) -> pa.Table:
    return pa.table(
        {
            "k": pa.array([r[0] for r in rows], pa.int32()),
            "label": [r[1] for r in rows],
            "amount": pa.array(
                [None if r[2] is None else Decimal(r[2]) for r in rows], pa.decimal128(10, 2)
            ),
            "n": pa.array([r[3] for r in rows], pa.int64()),
        }
    )


def test_measure_columns_are_the_numeric_non_key_columns():
    assert measure_columns(TARGET) == ["amount", "n"]


def test_severity_of_a_changed_a_missing_and_an_extra_row_by_hand():
    expected = table([(1, "a", "100.00", 4), (2, "b", "50.00", 1), (3, "c", "50.00", 5)])
    # k=1 overstated by 25.00 (25%), k=2 lost (100%), k=4 extra (no expected value)
    actual = table([(1, "a", "125.00", 4), (3, "c", "50.00", 5), (4, "d", "10.00", 2)])
    diff = compare(expected, actual, TARGET, with_severity=True).diff
    # right rows: k=3 only, of max(3, 3) rows
    assert diff["right_rows_share"] == pytest.approx(1 / 3, abs=1e-6)
    got = diff["severity"]
    assert got["wrong_rows_share"] == round(1 - 0.333333, 6)
    # amount: expected 200, actual 185 -> |185 - 200| / 200 = 0.075; rows: 25/100, 50/50, 0/50
    assert got["measures"]["amount"] == {
        "expected_total": 200.0,
        "actual_total": 185.0,
        "total_error": 0.075,
        "max_row_error": 1.0,
    }
    # n: expected 10, actual 11 -> 0.1; rows: 0/4, 1/1 (lost), 0/5
    assert got["measures"]["n"] == {
        "expected_total": 10.0,
        "actual_total": 11.0,
        "total_error": 0.1,
        "max_row_error": 1.0,
    }
    assert total_errors(diff) == {"amount": 0.075, "n": 0.1}


def test_nulls_are_skipped_and_a_zero_expected_total_has_no_relative_error():
    expected = table([(1, "a", None, 0), (2, "b", "10.00", 0)])
    actual = table([(1, "a", "5.00", 3), (2, "b", "10.00", 0)])
    got = compare(expected, actual, TARGET, with_severity=True).diff["severity"]["measures"]
    # amount: 10 against 15 (the NULL expected row has no value: it is not in the row maximum)
    assert got["amount"] == {
        "expected_total": 10.0,
        "actual_total": 15.0,
        "total_error": 0.5,
        "max_row_error": 0.0,
    }
    # n: expected total 0, actual 3: no relative error; no expected row is nonzero
    assert got["n"] == {
        "expected_total": 0.0,
        "actual_total": 3.0,
        "total_error": None,
        "max_row_error": None,
    }
    assert total_errors({"severity": {"measures": got}}) == {"amount": 0.5}


def test_a_pass_has_no_severity_and_compare_adds_none_unless_asked():
    rows = table([(1, "a", "1.00", 1)])
    assert "severity" not in compare(rows, rows, TARGET, with_severity=True).diff
    other = table([(1, "a", "2.00", 1)])
    assert "severity" not in compare(rows, other, TARGET).diff


def test_a_schema_fail_is_all_rows_wrong_and_measures_the_columns_it_kept():
    expected = table([(1, "a", "100.00", 4)])
    actual = expected.drop_columns(["n"])
    got = compare(expected, actual, TARGET, with_severity=True).diff["severity"]
    assert got["wrong_rows_share"] == 1.0
    assert list(got["measures"]) == ["amount"]
    assert got["measures"]["amount"]["total_error"] == 0.0


def test_a_record_format_1_diff_reads_and_writes_its_own_bytes():
    assert RECORD_FORMAT == 2
    old = {
        "verdict": "FAIL",
        "diff": {
            "counts": {"schema": 0, "missing": 1, "extra": 0, "duplicate_key": 0, "changed": 0},
            "examples": {},
            "expected_rows": 2,
            "actual_rows": 1,
            "right_rows_share": 0.5,
        },
    }
    assert Verdict.from_json(old).to_json() == old
    assert total_errors(old["diff"]) == {}
    new = {**old, "diff": {**old["diff"], "severity": {"wrong_rows_share": 0.5, "measures": {}}}}
    assert Verdict.from_json(new).to_json() == new
    assert Diff.from_json(new["diff"]).severity == {"wrong_rows_share": 0.5, "measures": {}}


def test_figure_4s_pipeline_overstates_daily_revenue_by_what_the_two_tables_imply():
    """The paper's Figure 4: deduplicating against history but not within the arriving batch lets
    both copies of a twice-delivered event land; revenue is overstated, no error is raised."""
    task = get_task("daily_revenue")
    script = (task.folder / "controls" / "dedup_history_only.sql").read_text(encoding="utf-8")
    schedule, log = build_schedule(task, "duplicate_delivery", DEFAULT_SEED)
    engine = get_engine("duckdb")
    expected = compute_oracle(task, log, oracle_engine())
    result = replay(engine, engine.split(script), schedule, log, task.spec.target.name, Limits())
    assert result.error is None and result.target is not None
    actual = result.target
    # by hand, from the two tables: exact decimal totals and per-key revenue
    e_rows = {(r["store_id"], r["day"]): r["revenue"] for r in expected.to_pylist()}
    a_rows: dict[tuple[object, object], Decimal] = defaultdict(Decimal)
    for r in actual.to_pylist():
        a_rows[(r["store_id"], r["day"])] += Decimal(str(r["revenue"]))
    e_total = sum(e_rows.values(), Decimal(0))
    a_total = sum(a_rows.values(), Decimal(0))
    assert a_total > e_total  # overstated, as in the paper
    by_hand = float(abs(a_total - e_total) / e_total)
    worst = max(float(abs(a_rows.get(k, Decimal(0)) - e) / e) for k, e in e_rows.items() if e)

    comparison = compare(expected, actual, task.spec.target, with_severity=True)
    assert not comparison.equal
    measured = comparison.diff["severity"]["measures"]["revenue"]
    assert measured["expected_total"] == pytest.approx(float(e_total), abs=1e-6)
    assert measured["actual_total"] == pytest.approx(float(a_total), abs=1e-6)
    assert measured["total_error"] == pytest.approx(by_hand, abs=1e-6)
    assert measured["max_row_error"] == pytest.approx(worst, abs=1e-6)
    assert comparison.diff["severity"]["wrong_rows_share"] == pytest.approx(
        1 - comparison.diff["right_rows_share"], abs=1e-6
    )
    # and the verdict carries it: its diff is what a FAIL's record stores
    verdict = Verdict.failed(Diff.from_json(comparison.diff))
    assert verdict.to_json()["diff"]["severity"]["measures"]["revenue"] == measured
