"""The suite's DuckDB scripts carried into other engines' SQL (dialects.py): rewrites whose
meaning must survive the trip, checked by running the transpiled SQL on the engine itself."""

from __future__ import annotations

import sqlite3

import pytest

from arrivalbench.dialects import decimal_names, orphan_overrides, source_decimals, transpile
from arrivalbench.gate import gate_task
from arrivalbench.grade import Grader
from arrivalbench.spec import get_task, load_task

# Amounts whose float sum depends on the order of addition: (0.3 + 0.2) + 0.1 < (0.1 + 0.2) + 0.3,
# so product 2 (summed the second way) outranks product 1 unless the sums are rounded.
ORDERS = [(1, 1, 0.3), (1, 2, 0.2), (1, 3, 0.1), (2, 6, 0.1), (2, 5, 0.2), (2, 4, 0.3)]


def _sqlite(script: str, rows: list[tuple]) -> list[tuple]:
    con = sqlite3.connect(":memory:")
    con.execute("CREATE TABLE sales_batch (product_id INTEGER, event_id INTEGER, amount REAL)")
    con.executemany("INSERT INTO sales_batch VALUES (?, ?, ?)", rows)
    *setup, last = [s for s in script.split(";\n") if s.strip()]
    for statement in setup:
        con.execute(statement)
    return con.execute(last).fetchall()


def test_regression_float_sums_broke_ties_between_equal_decimal_revenues_on_sqlite():
    """SQLite keeps DuckDB's exact DECIMAL as a float: two products with the same revenue summed
    in another order differed in the last bit, so the tie went to the wrong product (the SQLite
    gate rejected top3_products_daily and top_stores_repair)."""
    duckdb_sql = """
        SELECT product_id, row_number() OVER (ORDER BY SUM(amount) DESC, product_id) AS rank
        FROM sales_batch GROUP BY product_id ORDER BY rank"""
    assert sum(a for _, _, a in ORDERS[:3]) < sum(a for _, _, a in ORDERS[3:])  # the trap is real
    assert _sqlite(transpile(duckdb_sql, "sqlite"), ORDERS) == [(2, 1), (1, 2)]  # unrounded
    script = transpile(duckdb_sql, "sqlite", decimals={"amount": 2})
    assert "ROUND(SUM(amount), 2)" in script
    assert _sqlite(script, ORDERS) == [(1, 1), (2, 2)]  # tied: the smaller product_id first


def test_regression_a_decimal_balance_of_exactly_zero_summed_as_floats_was_below_zero():
    """0.3 - 0.1 - 0.2 is -2.8e-17 in binary floats: overdraft_days' controls listed an account
    whose closing balance is exactly 0 as overdrawn on SQLite."""
    rows = [(1, 1, 0.3), (1, 2, -0.1), (1, 3, -0.2)]
    assert (0.3 - 0.1) - 0.2 < 0  # the trap is real
    duckdb_sql = """
        CREATE TABLE balances (product_id INTEGER, balance DECIMAL(18,2));
        INSERT INTO balances SELECT product_id, 0 FROM sales_batch GROUP BY product_id;
        UPDATE balances SET balance = balance + amount FROM sales_batch
        WHERE sales_batch.event_id = 1 AND balances.product_id = sales_batch.product_id;
        UPDATE balances SET balance = balance + amount FROM sales_batch
        WHERE sales_batch.event_id = 2 AND balances.product_id = sales_batch.product_id;
        UPDATE balances SET balance = balance + amount FROM sales_batch
        WHERE sales_batch.event_id = 3 AND balances.product_id = sales_batch.product_id;
        SELECT product_id, SUM(amount) OVER (ORDER BY event_id) AS running
        FROM sales_batch QUALIFY running < 0 AND event_id = 3
        UNION ALL SELECT product_id, balance FROM balances WHERE balance < 0"""
    script = transpile(duckdb_sql, "sqlite", decimals={"amount": 2})
    assert "ROUND(balance + amount, 2)" in script  # a sum assigned to a DECIMAL column
    assert _sqlite(script, rows) == []


def test_decimal_names_follow_declarations_casts_and_aliases_but_not_integers():
    import sqlglot

    parsed = sqlglot.parse(
        """CREATE TABLE t (revenue DECIMAL(18,2), units INTEGER, rate DECIMAL(10,4));
           SELECT SUM(amount) AS total, SUM(units) AS n, CAST(x AS DECIMAL(9,3)) AS priced FROM s;
           SELECT SUM(total) AS grand FROM q""",
        read="duckdb",
    )
    names = decimal_names(parsed, {"amount": 2})
    assert names == {
        "amount": 2,
        "revenue": 2,
        "rate": 4,
        "total": 2,
        "priced": 3,
        "grand": 2,
    }
    assert source_decimals(get_task("top3_products_daily")) == {"amount": 2}


def test_regression_a_bare_decimal_was_rounded_to_whole_numbers_on_sqlite():
    """A column declared DECIMAL without (p, s) got scale 0, so its sums were rounded to whole
    numbers; DuckDB's bare DECIMAL is DECIMAL(18,3)."""
    import sqlglot

    parsed = sqlglot.parse("CREATE TABLE t (a DECIMAL, b DECIMAL(9), c NUMERIC(10,2))", "duckdb")
    assert decimal_names(parsed, {}) == {"a": 3, "b": 0, "c": 2}
    script = transpile("SELECT CAST(x AS DECIMAL) AS y FROM s", "sqlite")
    assert "ROUND(x, 3)" in script


def test_integer_sums_are_left_alone_on_sqlite():
    script = transpile("SELECT SUM(units) AS n FROM s", "sqlite", decimals={"amount": 2})
    assert "ROUND" not in script


@pytest.mark.slow
def test_regression_override_left_behind_by_a_dropped_control_is_a_gate_violation(copy_task):
    """funnel_conversion_modify kept first_received_view.sqlite.sql and .postgres.sql after the
    control itself was dropped: overrides nothing reads, which no gate ever checked."""
    folder = copy_task("daily_revenue")
    (folder / "controls" / "gone.sqlite.sql").write_text("SELECT 1;\n", encoding="utf-8")
    (folder / "gold.postgres.sql").write_text("SELECT 1;\n", encoding="utf-8")  # a real one
    task = load_task(folder)
    assert orphan_overrides(task) == ["controls/gone.sqlite.sql"]
    with Grader() as grader:
        result = gate_task(task, grader)
    orphans = [v for v in result.violations if v.artifact == "controls/gone.sqlite.sql"]
    assert len(orphans) == 1 and "delete it" in orphans[0].message
    assert not result.admitted


def test_no_builtin_task_has_an_orphan_override():
    from arrivalbench.spec import load_suite

    assert {t: o for t, task in load_suite().items() if (o := orphan_overrides(task))} == {}


def test_regression_rounding_a_filtered_sum_split_it_from_its_filter():
    """ROUND went around SUM(...) inside SUM(...) FILTER (WHERE ...), which SQLite refuses
    ("FILTER may not be used with non-aggregate ROUND()"): net_revenue's gold raised."""
    rows = [(1, 1, 0.3), (1, 2, 0.2), (2, 3, 0.1)]
    duckdb_sql = """
        SELECT product_id,
               coalesce(SUM(amount) FILTER (WHERE event_id < 3), 0) AS early,
               SUM(amount) FILTER (WHERE event_id > 1) OVER () AS late
        FROM sales_batch GROUP BY product_id, amount, event_id ORDER BY event_id"""
    script = transpile(duckdb_sql, "sqlite", decimals={"amount": 2})
    assert _sqlite(script, rows) == [(1, 0.3, 0.3), (1, 0.2, 0.3), (2, 0, 0.3)]
