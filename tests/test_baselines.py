"""Naive baselines and key templates on daily_revenue: scripts the engine accepts, failing exactly
where a hurried engineer's pipeline would (or loudly, for the declared key), and no baseline at
all for an oracle of more than one statement."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from arrivalbench.baselines import BASELINES, NAIVE, TEMPLATES, baseline_script
from arrivalbench.engines import get_engine
from arrivalbench.grade import Grader
from arrivalbench.logs import task_log
from arrivalbench.oracle import compute_oracle
from arrivalbench.spec import get_task, load_suite, load_task

ORACLES = Path(__file__).parent / "fixtures" / "oracles"
SCHEDULES = ["snapshot", "in_order_stream", "duplicate_delivery", "late_arrival", "crash_retry"]
EXPECTED = {
    # keeps every delivered copy: right unless a row arrives twice
    "naive_append": {
        "snapshot": "PASS",
        "in_order_stream": "PASS",
        "duplicate_delivery": "FAIL",
        "late_arrival": "PASS",
    },
    # drops a row older than the newest stored one
    "naive_watermark": {"snapshot": "PASS", "in_order_stream": "PASS", "late_arrival": "FAIL"},
    # forgets every earlier delivery: right only when everything arrives at once
    "batch_only": {"snapshot": "PASS", "in_order_stream": "FAIL"},
    # a declared key and a plain INSERT: right in order, a constraint error on a second copy
    "pk_constraint": {
        "snapshot": "PASS",
        "in_order_stream": "PASS",
        "late_arrival": "PASS",
        "duplicate_delivery": "ERROR",
        "crash_retry": "ERROR",
    },
    # the key, unseen events only, one row per event_id of the batch: right everywhere
    "pk_dedup": dict.fromkeys(SCHEDULES, "PASS"),
}


@pytest.fixture(scope="module")
def grader():
    with Grader() as g:
        yield g


@pytest.fixture(scope="module")
def daily_revenue():
    return get_task("daily_revenue")


def test_every_baseline_has_an_expected_pattern():
    assert set(EXPECTED) == set(BASELINES)


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_baseline_script_is_sql_the_engine_splits_and_allows(daily_revenue, name):
    script = baseline_script(daily_revenue, name)
    assert script is not None
    engine = get_engine()
    statements = engine.split(script)
    history = 0 if name == "batch_only" else 2  # create the history table, then append to it
    assert len(statements) == history + 2  # ... the view named like the source, the target
    assert len(duckdb.extract_statements(script)) == len(statements)
    assert [engine.refusal(s) for s in statements] == [None] * len(statements)
    assert "CREATE OR REPLACE TEMP VIEW sales AS" in statements[-2].text
    assert statements[-1].text.startswith("CREATE OR REPLACE TABLE daily_revenue AS")
    assert "GROUP BY store_id, CAST(ts_event AS DATE)" in statements[-1].text  # the oracle's query


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BASELINES))
def test_baseline_verdicts_on_daily_revenue(grader, daily_revenue, name):
    record, _ = grader.grade(daily_revenue, baseline_script(daily_revenue, name), SCHEDULES)
    verdicts = {s: v["verdict"] for s, v in record["verdicts"].items()}
    assert set(verdicts) == set(SCHEDULES)
    assert {s: verdicts[s] for s in EXPECTED[name]} == EXPECTED[name], verdicts
    if name in NAIVE:
        assert "ERROR" not in verdicts.values()  # a naive baseline is wrong silently, never loudly
    else:
        for schedule, entry in record["verdicts"].items():
            if entry["verdict"] == "ERROR":  # loud, and loud about the key
                assert entry["error_class"] == "sql_error", schedule
                assert "constraint" in entry["message"].lower(), entry["message"]


def test_templates_are_built_from_the_declared_columns_and_key():
    """No per-task SQL: the history table takes each source's task.yaml columns and types and
    declares event_id its primary key; a multi-source task gets one history per source."""
    task = get_task("daily_revenue")
    for name in TEMPLATES:
        script = baseline_script(task, name)
        columns = ", ".join(
            f'"{c}" {t}{" PRIMARY KEY" if c == "event_id" else ""}'
            for c, t in task.spec.source.columns.items()
        )
        assert f"CREATE TABLE IF NOT EXISTS tpl_sales_history ({columns})" in script
    assert "row_number()" in baseline_script(task, "pk_dedup")
    assert "row_number()" not in baseline_script(task, "pk_constraint")
    multi = next(t for t in load_suite().values() if len(t.spec.sources) > 1)
    script = baseline_script(multi, "pk_dedup")
    for source in multi.spec.sources:
        assert f"tpl_{source.name}_history" in script


@pytest.mark.slow
def test_pk_templates_under_schema_evolution_and_backfill(grader):
    """The templates insert by name, so a column that appears later is NULL in earlier rows."""
    task = next(
        t
        for t in load_suite().values()
        if "schema_evolution" in t.spec.hazards and baseline_script(t, "pk_dedup")
    )
    schedules = ["snapshot", "schema_evolution", "backfill"]
    record, _ = grader.grade(task, baseline_script(task, "pk_dedup"), schedules)
    assert {s: v["verdict"] for s, v in record["verdicts"].items()} == dict.fromkeys(
        schedules, "PASS"
    )
    record, _ = grader.grade(task, baseline_script(task, "pk_constraint"), schedules)
    assert [record["verdicts"][s]["verdict"] for s in schedules] == ["PASS", "PASS", "ERROR"]


def test_oracle_of_two_statements_has_no_baseline(copy_task):
    folder = copy_task("daily_revenue")
    shutil.copyfile(ORACLES / "daily_revenue_two_statements.sql", folder / "oracle.sql")
    task = load_task(folder)
    assert len(duckdb.extract_statements(task.oracle_sql)) == 2
    # The fixture is a sound oracle (same target as the built-in one); only its shape differs.
    engine, built_in = get_engine(), get_task("daily_revenue")
    log = task_log(task, "visible", 1)
    order = [("store_id", "ascending"), ("day", "ascending")]
    split = compute_oracle(task, log, engine).sort_by(order)
    assert split.num_rows > 0
    assert split.equals(compute_oracle(built_in, log, engine).sort_by(order))
    assert {name: baseline_script(task, name) for name in BASELINES} == dict.fromkeys(BASELINES)


def test_oracle_that_does_not_parse_has_no_baseline(copy_task):
    """Regression: baseline_script raised DuckDB's ParserException on an oracle with a typo, so
    the gate and make-corpus crashed instead of naming the oracle."""
    folder = copy_task("daily_revenue")
    shutil.copyfile(ORACLES / "daily_revenue_syntax_error.sql", folder / "oracle.sql")
    task = load_task(folder)
    with pytest.raises(duckdb.ParserException):
        duckdb.extract_statements(task.oracle_sql)
    assert {name: baseline_script(task, name) for name in BASELINES} == dict.fromkeys(BASELINES)


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
@pytest.mark.parametrize("name", ["naive_append", "naive_watermark"])  # those with a history
def test_naive_baselines_errored_on_sqlite_and_postgres_by_union_by_name(engine, name):
    """The naive history appended with DuckDB's UNION ALL BY NAME, which sqlglot carries verbatim
    and neither SQLite nor PostgreSQL parses, so every verdict was an ERROR; for another engine it
    appends with INSERT ... BY NAME, spelled with the declared columns, and the DuckDB text is
    the same as before."""
    from arrivalbench.dialects import delivery_columns, transpile

    task = get_task("page_views_schema")  # the evolving column must be in the history too
    authored = baseline_script(task, name)
    assert authored is not None and "UNION ALL BY NAME" in authored
    assert baseline_script(task, name, "duckdb") == authored
    script = transpile(baseline_script(task, name, engine), engine, name, delivery_columns(task))
    assert "BY NAME" not in script.upper()
    insert = next(
        s for s in script.split(";\n") if s.startswith("INSERT INTO naive_clicks_history")
    )
    assert "page" in insert.split("SELECT")[0]  # the evolving column is appended by name
