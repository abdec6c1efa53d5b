"""Typed comparison: bag semantics on the key, NULL-safe, float tolerance, schema diffs, examples."""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal

import pyarrow as pa
import pytest

from arrivalbench.compare import EXAMPLES, KINDS, compare, jsonable
from arrivalbench.spec import TargetSpec, Tolerance

NAN, INF = float("nan"), float("inf")

REVENUE = TargetSpec(
    name="daily_revenue",
    columns={"store_id": "INTEGER", "day": "DATE", "revenue": "DECIMAL(18,2)", "orders": "BIGINT"},
    key=["store_id", "day"],
)
D1, D2, D3 = dt.date(2026, 3, 1), dt.date(2026, 3, 2), dt.date(2026, 3, 3)


def revenue_table(
    rows: list[tuple], names: tuple[str, ...] = ("store_id", "day", "revenue", "orders")
) -> pa.Table:
    store, day, revenue, orders = zip(*rows, strict=True) if rows else ((), (), (), ())
    return pa.table(
        {
            names[0]: pa.array(store, pa.int32()),
            names[1]: pa.array(day, pa.date32()),
            names[2]: pa.array(
                [None if r is None else Decimal(r) for r in revenue], pa.decimal128(18, 2)
            ),
            names[3]: pa.array(orders, pa.int64()),
        }
    )


EXPECTED_ROWS = [(1, D1, "10.00", 2), (1, D2, "5.50", 1), (2, D1, "7.25", 3), (2, D2, "1.00", 1)]


def kv_target(value_type: str, **tolerance: Tolerance) -> TargetSpec:
    return TargetSpec(
        name="t", columns={"k": "INTEGER", "v": value_type}, key=["k"], tolerance=tolerance
    )


def kv(keys: list, values: list, value_type: pa.DataType) -> pa.Table:
    return pa.table({"k": pa.array(keys, pa.int32()), "v": pa.array(values, value_type)})


def floats_equal(
    expected: float | None, actual: float | None, tolerance: Tolerance | None = None
) -> bool:
    target = kv_target("DOUBLE", **({"v": tolerance} if tolerance else {}))
    return compare(kv([1], [expected], pa.float64()), kv([1], [actual], pa.float64()), target).equal


def counts(result) -> dict[str, int]:
    return result.diff["counts"]


# ---------------------------------------------------------------------------------------------
# Equality and the shape of a diff


def test_equal_tables_in_a_different_row_order_are_equal() -> None:
    expected = revenue_table(EXPECTED_ROWS)
    actual = revenue_table(list(reversed(EXPECTED_ROWS)))
    result = compare(expected, actual, REVENUE)
    assert result.equal
    assert counts(result) == dict.fromkeys(KINDS, 0)
    assert result.diff["examples"] == {}
    assert result.diff["right_rows_share"] == 1.0
    assert (result.diff["expected_rows"], result.diff["actual_rows"]) == (4, 4)


def test_equal_tables_with_differently_ordered_columns_are_equal() -> None:
    expected = revenue_table(EXPECTED_ROWS)
    actual = expected.select(["orders", "revenue", "day", "store_id"])
    assert compare(expected, actual, REVENUE).equal


def test_two_empty_tables_are_equal() -> None:
    result = compare(revenue_table([]), revenue_table([]), REVENUE)
    assert result.equal
    assert result.diff["right_rows_share"] == 1.0


def test_diff_is_json_serialisable() -> None:
    expected = revenue_table(EXPECTED_ROWS)
    actual = revenue_table([(1, D1, "10.01", 2), (9, D3, "1.00", 1)])
    result = compare(expected, actual, REVENUE)
    assert not result.equal
    text = json.dumps(result.diff, allow_nan=False)
    assert '"2026-03-03"' in text and '"10.01"' in text


# ---------------------------------------------------------------------------------------------
# Missing, extra, duplicate key, changed


def test_missing_rows_are_counted_with_examples_sorted_by_key() -> None:
    expected = revenue_table(EXPECTED_ROWS)
    actual = revenue_table([EXPECTED_ROWS[2]])
    result = compare(expected, actual, REVENUE)
    assert not result.equal
    assert counts(result) == {**dict.fromkeys(KINDS, 0), "missing": 3}
    examples = result.diff["examples"]["missing"]
    assert [(r["store_id"], r["day"]) for r in examples] == [
        (1, "2026-03-01"),
        (1, "2026-03-02"),
        (2, "2026-03-02"),
    ]
    assert examples[0] == {"store_id": 1, "day": "2026-03-01", "revenue": "10.00", "orders": 2}
    assert result.diff["right_rows_share"] == 0.25


def test_extra_rows_are_counted_with_examples_sorted_by_key() -> None:
    expected = revenue_table(EXPECTED_ROWS)
    actual = revenue_table([*EXPECTED_ROWS, (3, D3, "4.00", 1), (3, D1, "2.00", 1)])
    result = compare(expected, actual, REVENUE)
    assert counts(result) == {**dict.fromkeys(KINDS, 0), "extra": 2}
    assert [(r["store_id"], r["day"]) for r in result.diff["examples"]["extra"]] == [
        (3, "2026-03-01"),
        (3, "2026-03-03"),
    ]
    assert result.diff["right_rows_share"] == round(4 / 6, 6)


def test_at_most_three_examples_of_each_kind() -> None:
    expected = revenue_table([(s, D1, "1.00", 1) for s in range(10)])
    actual = revenue_table(
        [(s, D1, "2.00", 1) for s in range(5)] + [(s, D2, "1.00", 1) for s in range(20, 27)]
    )
    result = compare(expected, actual, REVENUE)
    assert counts(result)["missing"] == 5
    assert counts(result)["extra"] == 7
    assert counts(result)["changed"] == 5
    examples = result.diff["examples"]
    assert EXAMPLES == 3
    assert [r["store_id"] for r in examples["missing"]] == [5, 6, 7]
    assert [r["store_id"] for r in examples["extra"]] == [20, 21, 22]
    assert [r["key"]["store_id"] for r in examples["changed"]] == [0, 1, 2]


def test_duplicate_key_is_counted_per_key_with_row_counts() -> None:
    expected = revenue_table(EXPECTED_ROWS)
    actual = revenue_table([*EXPECTED_ROWS, EXPECTED_ROWS[3], EXPECTED_ROWS[0], EXPECTED_ROWS[0]])
    result = compare(expected, actual, REVENUE)
    assert not result.equal
    assert counts(result) == {**dict.fromkeys(KINDS, 0), "duplicate_key": 2}
    assert result.diff["examples"]["duplicate_key"] == [
        {"store_id": 1, "day": "2026-03-01", "expected_rows": 1, "actual_rows": 3},
        {"store_id": 2, "day": "2026-03-02", "expected_rows": 1, "actual_rows": 2},
    ]
    assert result.diff["right_rows_share"] == round(2 / 7, 6)


def test_changed_values_name_the_key_and_only_the_changed_columns() -> None:
    expected = revenue_table(EXPECTED_ROWS)
    actual = revenue_table(
        [(1, D1, "10.00", 3), (1, D2, "5.51", 1), (2, D1, "7.24", 4), EXPECTED_ROWS[3]]
    )
    result = compare(expected, actual, REVENUE)
    assert counts(result) == {**dict.fromkeys(KINDS, 0), "changed": 3}
    assert result.diff["examples"]["changed"] == [
        {
            "key": {"store_id": 1, "day": "2026-03-01"},
            "columns": {"orders": {"expected": 2, "actual": 3}},
        },
        {
            "key": {"store_id": 1, "day": "2026-03-02"},
            "columns": {"revenue": {"expected": "5.50", "actual": "5.51"}},
        },
        {
            "key": {"store_id": 2, "day": "2026-03-01"},
            "columns": {
                "revenue": {"expected": "7.25", "actual": "7.24"},
                "orders": {"expected": 3, "actual": 4},
            },
        },
    ]
    assert result.diff.get("changed_columns") == {"revenue": 2, "orders": 2}
    assert result.diff["right_rows_share"] == 0.25


def test_every_kind_at_once() -> None:
    expected = revenue_table(EXPECTED_ROWS)
    actual = revenue_table(
        [(1, D1, "99.00", 2), EXPECTED_ROWS[1], EXPECTED_ROWS[1], (5, D1, "1.00", 1)]
    )
    result = compare(expected, actual, REVENUE)
    assert counts(result) == {
        "schema": 0,
        "missing": 2,
        "extra": 1,
        "duplicate_key": 1,
        "changed": 1,
    }
    assert set(result.diff["examples"]) >= {"missing", "extra", "duplicate_key", "changed"}


def test_key_only_target_compares_keys() -> None:
    target = TargetSpec(name="t", columns={"k": "INTEGER"}, key=["k"])
    keys = lambda values: pa.table({"k": pa.array(values, pa.int32())})  # noqa: E731
    assert compare(keys([1, 2]), keys([2, 1]), target).equal
    result = compare(keys([1, 2]), keys([2, 3]), target)
    assert (counts(result)["missing"], counts(result)["extra"]) == (1, 1)


def test_repeated_keys_in_the_oracle_compare_as_a_bag() -> None:
    expected = kv([1, 1, 2], ["a", "b", "c"], pa.string())
    assert compare(
        expected, kv([2, 1, 1], ["c", "b", "a"], pa.string()), kv_target("VARCHAR")
    ).equal
    result = compare(expected, kv([1, 1, 2], ["a", "a", "c"], pa.string()), kv_target("VARCHAR"))
    assert not result.equal
    assert counts(result)["changed"] == 1


# ---------------------------------------------------------------------------------------------
# NULL


def test_null_key_does_not_crash_and_sorts_first() -> None:
    """Regression: sorting examples by a key holding NULL must not crash (None < int in Python)."""
    target = kv_target("VARCHAR")
    expected = kv([3, None, 1, 2], ["c", "n", "a", "b"], pa.string())
    result = compare(expected, kv([], [], pa.string()), target)
    assert counts(result)["missing"] == 4
    assert [r["k"] for r in result.diff["examples"]["missing"]] == [None, 1, 2]
    extra = compare(kv([], [], pa.string()), expected, target)
    assert [r["k"] for r in extra.diff["examples"]["extra"]] == [None, 1, 2]


def test_null_key_in_a_changed_and_a_duplicate_example_sorts_first() -> None:
    target = kv_target("VARCHAR")
    expected = kv([None, 1, 2], ["n", "a", "b"], pa.string())
    changed = compare(expected, kv([2, 1, None], ["B", "A", "N"], pa.string()), target)
    assert [e["key"]["k"] for e in changed.diff["examples"]["changed"]] == [None, 1, 2]
    duplicated = compare(
        expected, kv([None, None, 1, 1, 2], ["n", "n", "a", "a", "b"], pa.string()), target
    )
    assert counts(duplicated)["duplicate_key"] == 2
    assert [e["k"] for e in duplicated.diff["examples"]["duplicate_key"]] == [None, 1]


def test_null_key_sorts_first_in_a_composite_key() -> None:
    expected = revenue_table(
        [(2, D1, "1.00", 1), (None, D2, "1.00", 1), (1, None, "1.00", 1), (1, D1, "1.00", 1)]
    )
    result = compare(expected, revenue_table([]), REVENUE)
    assert [(r["store_id"], r["day"]) for r in result.diff["examples"]["missing"]] == [
        (None, "2026-03-02"),
        (1, None),
        (1, "2026-03-01"),
    ]


def test_null_key_matches_null_key() -> None:
    expected = kv([None, 1], ["n", "a"], pa.string())
    assert compare(expected, kv([1, None], ["a", "n"], pa.string()), kv_target("VARCHAR")).equal


@pytest.mark.parametrize(
    ("value_type", "arrow", "value"),
    [
        ("INTEGER", pa.int32(), 5),
        ("VARCHAR", pa.string(), "x"),
        ("DECIMAL(18,2)", pa.decimal128(18, 2), Decimal("1.50")),
        ("DOUBLE", pa.float64(), 1.5),
        ("DATE", pa.date32(), D1),
        ("TIMESTAMP", pa.timestamp("us"), dt.datetime(2026, 3, 1, 12, 0)),
        ("BOOLEAN", pa.bool_(), False),
    ],
)
def test_null_equals_null_and_one_sided_null_is_a_change(
    value_type: str, arrow: pa.DataType, value
) -> None:
    target = kv_target(value_type)
    both_null = compare(kv([1, 2], [None, value], arrow), kv([2, 1], [value, None], arrow), target)
    assert both_null.equal
    for expected, actual in ((None, value), (value, None)):
        result = compare(kv([1], [expected], arrow), kv([1], [actual], arrow), target)
        assert not result.equal, (expected, actual)
        assert counts(result) == {**dict.fromkeys(KINDS, 0), "changed": 1}
        change = result.diff["examples"]["changed"][0]["columns"]["v"]
        assert change == {"expected": jsonable(expected), "actual": jsonable(actual)}


# ---------------------------------------------------------------------------------------------
# Floats and tolerance


@pytest.mark.parametrize(
    ("expected", "actual", "equal"),
    [
        (-100.0, -100.5, True),
        (-100.5, -100.0, True),
        (-100.0, -101.0, True),
        (-100.0, -99.0, True),
        (-100.0, -102.5, False),
        (-100.0, -97.5, False),
        (100.0, 100.9, True),
        (100.0, 102.5, False),
        (-1.0, 1.0, False),
    ],
)
def test_relative_tolerance_works_for_negative_numbers(
    expected: float, actual: float, equal: bool
) -> None:
    # The trap: a*0.99 <= b <= a*1.01 is empty for negative a.
    assert floats_equal(expected, actual, Tolerance(rel=0.01)) is equal


@pytest.mark.parametrize(
    ("expected", "actual", "tolerance", "equal"),
    [
        (1000.0, 1000.4, Tolerance(abs=0.5), True),
        (1000.0, 1000.6, Tolerance(abs=0.5), False),
        (1000.0, 1000.9, Tolerance(rel=0.001), True),
        (1000.0, 1001.2, Tolerance(rel=0.001), False),
        (
            0.0,
            1e-4,
            Tolerance(rel=0.001),
            False,
        ),  # relative alone never forgives a difference from zero
        (0.0, 1e-4, Tolerance(abs=1e-3), True),
        (0.0, 1e-4, Tolerance(abs=1e-3, rel=0.001), True),
        (1e6, 1e6 + 2, Tolerance(abs=1.0, rel=3e-6), True),  # the larger of the two bounds applies
        (1e6, 1e6 + 2, Tolerance(abs=1.0, rel=1e-7), False),
        (1.0, 1.0 + 1e-12, None, True),  # the default tolerance absorbs float noise
        (1.0, 1.0 + 1e-6, None, False),
    ],
)
def test_absolute_and_relative_tolerance(expected, actual, tolerance, equal: bool) -> None:
    assert floats_equal(expected, actual, tolerance) is equal


def test_tolerance_is_relative_to_the_larger_magnitude_so_it_is_symmetric() -> None:
    tol = Tolerance(rel=0.1)
    # |100 - 111| = 11 <= 0.1 * max(100, 111) = 11.1; relative to 100 alone it would fail one way round.
    assert floats_equal(100.0, 111.0, tol)
    assert floats_equal(111.0, 100.0, tol)
    assert not floats_equal(100.0, 112.0, tol)
    assert not floats_equal(112.0, 100.0, tol)


def test_nan_equals_nan() -> None:
    assert floats_equal(NAN, NAN)
    assert floats_equal(NAN, NAN, Tolerance(abs=0.0, rel=0.0))


def test_infinity_equals_the_same_infinity() -> None:
    assert floats_equal(INF, INF)
    assert floats_equal(-INF, -INF)


@pytest.mark.parametrize(("expected", "actual"), [(1.0, NAN), (NAN, 1.0), (0.0, NAN)])
def test_nan_never_equals_a_number(expected: float, actual: float) -> None:
    assert not floats_equal(expected, actual, Tolerance(abs=0.0, rel=0.0))
    assert not floats_equal(expected, actual)


@pytest.mark.parametrize(("expected", "actual"), [(1.0, INF), (INF, 1.0), (-INF, INF), (1.0, -INF)])
def test_infinity_never_equals_a_different_value(expected: float, actual: float) -> None:
    assert not floats_equal(expected, actual, Tolerance(abs=0.0, rel=0.0))
    assert not floats_equal(expected, actual)


@pytest.mark.parametrize(("expected", "actual"), [(None, NAN), (NAN, None)])
def test_null_never_equals_nan(expected, actual) -> None:
    assert not floats_equal(expected, actual)


@pytest.mark.parametrize("value_type", ["BIGINT", "INTEGER", "DECIMAL(18,2)"])
def test_tolerance_never_applies_to_exact_columns(value_type: str) -> None:
    target = TargetSpec(
        name="t",
        columns={"k": "INTEGER", "x": "DOUBLE", "v": value_type},
        key=["k"],
        tolerance={"x": {"abs": 10.0, "rel": 0.5}},
    )
    arrow = (
        pa.int64()
        if value_type == "BIGINT"
        else pa.int32()
        if value_type == "INTEGER"
        else pa.decimal128(18, 2)
    )
    values = [150, 151] if value_type != "DECIMAL(18,2)" else [Decimal("150.00"), Decimal("150.01")]

    def table(v) -> pa.Table:
        return pa.table(
            {"k": pa.array([1], pa.int32()), "x": pa.array([1.0]), "v": pa.array([v], arrow)}
        )

    result = compare(table(values[0]), table(values[1]), target)
    assert not result.equal
    assert counts(result)["changed"] == 1
    assert compare(table(values[0]), table(values[0]), target).equal


def test_tolerance_smuggled_onto_an_integer_column_is_ignored() -> None:
    # Bypass validation: even a tolerance stored for an integer column must not loosen it.
    target = TargetSpec.model_construct(
        name="t",
        columns={"k": "INTEGER", "v": "BIGINT"},
        key=["k"],
        tolerance={"v": Tolerance(abs=5.0, rel=0.5)},
    )
    assert not compare(kv([1], [150], pa.int64()), kv([1], [151], pa.int64()), target).equal


def test_float_tolerance_does_not_leak_into_other_float_columns() -> None:
    target = TargetSpec(
        name="t",
        columns={"k": "INTEGER", "x": "DOUBLE", "y": "DOUBLE"},
        key=["k"],
        tolerance={"x": 1.0},
    )

    def table(x: float, y: float) -> pa.Table:
        return pa.table({"k": pa.array([1], pa.int32()), "x": pa.array([x]), "y": pa.array([y])})

    assert compare(table(1.0, 1.0), table(1.5, 1.0), target).equal
    result = compare(table(1.0, 1.0), table(1.0, 1.5), target)
    assert not result.equal
    assert list(result.diff["examples"]["changed"][0]["columns"]) == ["y"]


# ---------------------------------------------------------------------------------------------
# Columns: names, schema diffs, castable types


def test_column_names_match_case_insensitively() -> None:
    expected = revenue_table(EXPECTED_ROWS)
    actual = revenue_table(EXPECTED_ROWS, names=("STORE_ID", "Day", "Revenue", "oRdErS"))
    assert compare(expected, actual, REVENUE).equal
    changed = revenue_table(
        [(1, D1, "10.00", 9), *EXPECTED_ROWS[1:]], names=("STORE_ID", "Day", "Revenue", "ORDERS")
    )
    result = compare(expected, changed, REVENUE)
    assert counts(result)["changed"] == 1
    assert result.diff["examples"]["changed"][0]["columns"] == {
        "orders": {"expected": 2, "actual": 9}
    }


def test_missing_and_extra_columns_give_a_schema_diff() -> None:
    expected = revenue_table(EXPECTED_ROWS)
    actual = (
        revenue_table(EXPECTED_ROWS)
        .drop_columns(["orders"])
        .append_column("n_orders", pa.array([1, 1, 1, 1]))
    )
    result = compare(expected, actual, REVENUE)
    assert not result.equal
    assert counts(result) == {**dict.fromkeys(KINDS, 0), "schema": 2}
    assert result.diff["examples"]["schema"] == [
        {"missing_columns": ["orders"], "extra_columns": ["n_orders"], "ambiguous_columns": []}
    ]
    assert result.diff["right_rows_share"] == 0.0


def test_only_a_missing_column_is_a_schema_diff() -> None:
    result = compare(
        revenue_table(EXPECTED_ROWS),
        revenue_table(EXPECTED_ROWS).drop_columns(["revenue"]),
        REVENUE,
    )
    assert counts(result)["schema"] == 1
    assert result.diff["examples"]["schema"][0]["missing_columns"] == ["revenue"]


def test_an_extra_column_alone_is_a_schema_diff() -> None:
    actual = revenue_table(EXPECTED_ROWS).append_column("note", pa.array(["x"] * 4))
    result = compare(revenue_table(EXPECTED_ROWS), actual, REVENUE)
    assert not result.equal
    assert result.diff["examples"]["schema"][0]["extra_columns"] == ["note"]


def test_two_columns_differing_only_in_case_are_ambiguous() -> None:
    actual = revenue_table(EXPECTED_ROWS).append_column(
        "Orders", pa.array([2, 1, 3, 1], pa.int64())
    )
    result = compare(revenue_table(EXPECTED_ROWS), actual, REVENUE)
    assert not result.equal
    assert result.diff["examples"]["schema"][0]["ambiguous_columns"] == ["Orders", "orders"]


def test_castable_actual_types_compare_by_value() -> None:
    expected = revenue_table(EXPECTED_ROWS)
    actual = pa.table(
        {
            "store_id": pa.array([r[0] for r in EXPECTED_ROWS], pa.int64()),
            "day": pa.array([r[1] for r in EXPECTED_ROWS], pa.date32()),
            "revenue": pa.array([float(r[2]) for r in EXPECTED_ROWS], pa.float64()),
            "orders": pa.array([r[3] for r in EXPECTED_ROWS], pa.int32()),
        }
    )
    assert compare(expected, actual, REVENUE).equal
    wrong = actual.set_column(2, "revenue", pa.array([10.0, 5.5, 7.26, 1.0]))
    result = compare(expected, wrong, REVENUE)
    assert counts(result)["changed"] == 1
    assert result.diff["examples"]["changed"][0]["columns"]["revenue"] == {
        "expected": "7.25",
        "actual": "7.26",
    }


def test_decimal_with_more_scale_compares_by_value() -> None:
    expected = revenue_table(EXPECTED_ROWS)
    actual = expected.set_column(
        2, "revenue", pa.array([Decimal(r[2]) for r in EXPECTED_ROWS], pa.decimal128(38, 6))
    )
    assert compare(expected, actual, REVENUE).equal


def test_a_value_that_does_not_cast_shows_as_changed() -> None:
    target = kv_target("INTEGER")
    result = compare(kv([1], [5], pa.int32()), kv([1], ["five"], pa.string()), target)
    assert not result.equal
    assert counts(result)["changed"] == 1


def test_a_value_that_does_not_cast_never_equals_null() -> None:
    target = kv_target("INTEGER")
    assert not compare(kv([1], [None], pa.int32()), kv([1], ["garbage"], pa.string()), target).equal


def test_target_column_named_same_is_compared() -> None:
    target = TargetSpec(name="t", columns={"k": "INTEGER", "same": "INTEGER"}, key=["k"])
    expected = pa.table({"k": pa.array([1], pa.int32()), "same": pa.array([1], pa.int32())})
    actual = pa.table({"k": pa.array([1], pa.int32()), "same": pa.array([2], pa.int32())})
    assert not compare(expected, actual, target).equal


def test_target_columns_named_like_helper_columns_are_reported_correctly() -> None:
    target = TargetSpec(
        name="t", columns={"k": "INTEGER", "x": "INTEGER", "actual_x": "INTEGER"}, key=["k"]
    )
    expected = pa.table(
        {
            "k": pa.array([1], pa.int32()),
            "x": pa.array([1], pa.int32()),
            "actual_x": pa.array([1], pa.int32()),
        }
    )
    actual = pa.table(
        {
            "k": pa.array([1], pa.int32()),
            "x": pa.array([2], pa.int32()),
            "actual_x": pa.array([1], pa.int32()),
        }
    )
    result = compare(expected, actual, target)
    assert result.diff["examples"]["changed"][0]["columns"] == {"x": {"expected": 1, "actual": 2}}


def test_missing_examples_sort_by_key_when_the_key_is_not_the_first_column() -> None:
    target = TargetSpec(name="t", columns={"name": "VARCHAR", "id": "INTEGER"}, key=["id"])
    expected = pa.table({"name": ["a", "b", "c", "d"], "id": pa.array([4, 3, 2, None], pa.int32())})
    actual = pa.table({"name": pa.array([], pa.string()), "id": pa.array([], pa.int32())})
    result = compare(expected, actual, target)
    assert [r["id"] for r in result.diff["examples"]["missing"]] == [None, 2, 3]


# ---------------------------------------------------------------------------------------------
# right_rows_share


def test_right_rows_share_counts_exact_matches_over_the_larger_side() -> None:
    expected = revenue_table(EXPECTED_ROWS)
    one_changed = revenue_table([(1, D1, "10.00", 99), *EXPECTED_ROWS[1:]])
    assert compare(expected, one_changed, REVENUE).diff["right_rows_share"] == 0.75
    half = revenue_table(EXPECTED_ROWS[:2])
    assert compare(expected, half, REVENUE).diff["right_rows_share"] == 0.5
    doubled = revenue_table(EXPECTED_ROWS + [(9, D1, "1.00", 1)] * 4)
    assert compare(expected, doubled, REVENUE).diff["right_rows_share"] == 0.5
    assert compare(expected, revenue_table([]), REVENUE).diff["right_rows_share"] == 0.0


def test_right_rows_share_never_decides_the_verdict() -> None:
    expected = revenue_table([(s, D1, "1.00", 1) for s in range(1000)])
    actual = revenue_table([(s, D1, "1.00", 1) for s in range(999)] + [(999, D1, "1.01", 1)])
    result = compare(expected, actual, REVENUE)
    assert result.diff["right_rows_share"] == 0.999
    assert not result.equal


# ---------------------------------------------------------------------------------------------
# jsonable


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (Decimal("12.50"), "12.50"),
        (Decimal("-0.01"), "-0.01"),
        (dt.datetime(2026, 3, 1, 12, 30, 5), "2026-03-01T12:30:05"),
        (dt.datetime(2026, 3, 1, 12, 30, 5, 123456), "2026-03-01T12:30:05.123456"),
        (dt.date(2026, 3, 1), "2026-03-01"),
        (dt.time(7, 5), "07:05:00"),
        (NAN, "nan"),
        (INF, "inf"),
        (-INF, "-inf"),
        (1.5, 1.5),
        (3, 3),
        (True, True),
        ("x", "x"),
        (None, None),
        (b"\x01\xff", "01ff"),
    ],
)
def test_jsonable(value, expected) -> None:
    result = jsonable(value)
    assert result == expected
    assert type(result) is type(expected)
    json.dumps(result, allow_nan=False)


def test_jsonable_keeps_bool_as_bool_not_int() -> None:
    assert jsonable(False) is False


def test_nan_and_infinity_examples_are_spelled_out_in_the_diff() -> None:
    target = kv_target("DOUBLE")
    result = compare(kv([1, 2, 3], [NAN, INF, 0.5], pa.float64()), kv([], [], pa.float64()), target)
    assert result.diff["examples"]["missing"] == [
        {"k": 1, "v": "nan"},
        {"k": 2, "v": "inf"},
        {"k": 3, "v": 0.5},
    ]
    json.dumps(result.diff, allow_nan=False)


# ---------------------------------------------------------------------------------------------
# Lossless conversion: a value equals the oracle's only if converting it loses nothing


def _revenue_with(column: str, values: list, type_: pa.DataType) -> pa.Table:
    table = revenue_table(EXPECTED_ROWS)
    return table.set_column(table.column_names.index(column), column, pa.array(values, type_))


@pytest.mark.parametrize(
    ("column", "values", "type_"),
    [
        ("revenue", [10.004, 5.5, 7.25, 1.0], pa.float64()),
        ("orders", [2.6, 1.0, 3.0, 1.0], pa.float64()),
        ("orders", [Decimal("2.4"), 1, 3, 1], pa.decimal128(10, 1)),
        ("revenue", [Decimal(v) for v in ("10.004", "5.5", "7.25", "1")], pa.decimal128(18, 3)),
        ("orders", ["2.0", "1", "3", "1"], pa.string()),
    ],
)
def test_regression_a_lossy_conversion_is_a_changed_value(column, values, type_) -> None:
    """The comparison used TRY_CAST(actual AS declared type), which rounds: DOUBLE revenue 0.004
    too high passed for DECIMAL(18,2), and 2.6 orders passed for 3."""
    result = compare(revenue_table(EXPECTED_ROWS), _revenue_with(column, values, type_), REVENUE)
    assert not result.equal and counts(result)["changed"] == 1
    example = result.diff["examples"]["changed"][0]["columns"][column]
    assert "without loss" in example["reason"]
    assert example["actual"] not in (example["expected"], None)


def test_regression_a_timestamp_with_a_time_of_day_is_not_its_date() -> None:
    midnight = [dt.datetime.combine(r[1], dt.time()) for r in EXPECTED_ROWS]
    assert compare(
        revenue_table(EXPECTED_ROWS), _revenue_with("day", midnight, pa.timestamp("us")), REVENUE
    ).equal
    with_time = [midnight[0].replace(hour=10), *midnight[1:]]
    result = compare(
        revenue_table(EXPECTED_ROWS), _revenue_with("day", with_time, pa.timestamp("us")), REVENUE
    )
    assert not result.equal
    assert counts(result)["extra"] == 1 and counts(result)["missing"] == 1
    assert "without loss" in result.diff["examples"]["extra"][0]["reason"]


def test_floating_point_noise_of_an_exact_value_still_equals_it() -> None:
    """SUM(amount::DOUBLE) lands within a few ulps of the DECIMAL sum: that is the same revenue."""
    noisy = [10.000000000000002, 5.499999999999999, 7.250000000000001, 1.0]
    assert compare(
        revenue_table(EXPECTED_ROWS), _revenue_with("revenue", noisy, pa.float64()), REVENUE
    ).equal
    assert compare(
        revenue_table(EXPECTED_ROWS),
        _revenue_with("orders", [2.0, 1.0, 3.0, 1.0], pa.float64()),
        REVENUE,
    ).equal


def _double_as(declared: str, expected: object, actual: float) -> bool:
    """Does a DOUBLE `actual` equal the `declared` value `expected`?"""
    kind = pa.decimal128(18, 2) if declared.startswith("DECIMAL") else pa.int64()
    return compare(
        kv([1], [expected], kind), kv([1], [actual], pa.float64()), kv_target(declared)
    ).equal


def test_regression_a_double_off_by_a_fraction_of_a_cent_passed_for_a_large_decimal() -> None:
    """The noise allowance was 1e-9 of the value: from 5e6 on it reached half a cent, so DOUBLE
    5000000.004 passed for DECIMAL(18,2) 5000000.00 (and 500000000.4 for BIGINT 500000000)."""
    assert not _double_as("DECIMAL(18,2)", Decimal("5000000.00"), 5000000.004)
    assert not _double_as("DECIMAL(18,2)", Decimal("50000000.00"), 50000000.004)
    assert not _double_as("BIGINT", 500000000, 500000000.4)


def test_regression_a_double_half_a_cent_away_matches_neither_neighbour() -> None:
    """5000000.005 is as far from .00 as from .01: it names no DECIMAL(18,2) value."""
    assert not _double_as("DECIMAL(18,2)", Decimal("5000000.00"), 5000000.005)
    assert not _double_as("DECIMAL(18,2)", Decimal("5000000.01"), 5000000.005)


def test_floating_point_noise_of_a_large_exact_value_still_equals_it() -> None:
    """The cap leaves real noise alone: a DOUBLE sum a few ulps off a large DECIMAL passes."""
    big = 12345678.91
    assert _double_as("DECIMAL(18,2)", Decimal("12345678.91"), big)
    assert _double_as("DECIMAL(18,2)", Decimal("12345678.91"), big + 4 * math.ulp(big))
    assert _double_as("BIGINT", 900000000, 900000000.0000001)


def test_regression_a_key_that_does_not_convert_never_matches_a_null_key() -> None:
    """A key value that failed to cast became NULL and matched the oracle's NULL key."""
    target = TargetSpec(name="t", columns={"k": "INTEGER", "v": "INTEGER"}, key=["k"])
    expected = pa.table({"k": pa.array([None, 1], pa.int32()), "v": pa.array([7, 8], pa.int32())})
    actual = pa.table(
        {"k": pa.array(["oops", "1"], pa.string()), "v": pa.array([7, 8], pa.int32())}
    )
    result = compare(expected, actual, target)
    assert not result.equal
    assert counts(result)["missing"] == 1 and counts(result)["extra"] == 1
