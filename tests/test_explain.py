"""explain: shrinking to a 1-minimal counterexample, first divergence, counterfactual diagnosis, CLI."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from arrivalbench.explain import diagnose_schedule, explain
from arrivalbench.explain.divergence import Step, first_divergence
from arrivalbench.explain.runner import Runner
from arrivalbench.explain.shrink import shrink
from arrivalbench.schedules import Crash, Delivery, build_schedule
from arrivalbench.spec import get_task

ANTI_JOIN_ONLY = """
CREATE TABLE IF NOT EXISTS hist (event_id BIGINT, ts_event TIMESTAMP, store_id INTEGER,
                                 amount DECIMAL(12,2));
INSERT INTO hist SELECT event_id, ts_event, store_id, amount FROM sales_batch b
WHERE NOT EXISTS (SELECT 1 FROM hist h WHERE h.event_id = b.event_id);
CREATE OR REPLACE TABLE daily_revenue AS
SELECT store_id, CAST(ts_event AS DATE) AS day, CAST(SUM(amount) AS DECIMAL(18,2)) AS revenue,
       COUNT(*) AS orders
FROM hist GROUP BY ALL;
"""

WATERMARK = """
CREATE TABLE IF NOT EXISTS hist (event_id BIGINT PRIMARY KEY, ts_event TIMESTAMP,
                                 store_id INTEGER, amount DECIMAL(12,2));
INSERT INTO hist
SELECT event_id, ts_event, store_id, amount FROM sales_batch
WHERE ts_event > (SELECT coalesce(max(ts_event), TIMESTAMP '1900-01-01') FROM hist)
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;
CREATE OR REPLACE TABLE daily_revenue AS
SELECT store_id, CAST(ts_event AS DATE) AS day, CAST(SUM(amount) AS DECIMAL(18,2)) AS revenue,
       COUNT(*) AS orders
FROM hist GROUP BY ALL;
"""

NON_ATOMIC_UPSERT = """
CREATE TABLE IF NOT EXISTS seen (event_id BIGINT PRIMARY KEY);
CREATE TABLE IF NOT EXISTS daily_revenue (store_id INTEGER, day DATE, revenue DECIMAL(18,2),
                                          orders BIGINT);
CREATE TEMP TABLE fresh AS
SELECT store_id, CAST(ts_event AS DATE) AS day, SUM(amount) AS revenue, COUNT(*) AS orders
FROM (SELECT DISTINCT ON (event_id) * FROM sales_batch
      WHERE event_id NOT IN (SELECT event_id FROM seen))
GROUP BY ALL;
UPDATE daily_revenue t SET revenue = t.revenue + f.revenue, orders = t.orders + f.orders
FROM fresh f WHERE t.store_id = f.store_id AND t.day = f.day;
INSERT INTO daily_revenue SELECT * FROM fresh f
WHERE NOT EXISTS (SELECT 1 FROM daily_revenue t WHERE t.store_id = f.store_id AND t.day = f.day);
INSERT INTO seen SELECT DISTINCT event_id FROM sales_batch ON CONFLICT DO NOTHING;
"""

LAST_RECEIVED_WINS = """
CREATE TABLE IF NOT EXISTS customer_state (customer_id INTEGER PRIMARY KEY, status VARCHAR,
                                           tier VARCHAR, updated_at TIMESTAMP);
INSERT INTO customer_state
SELECT customer_id, status, tier, ts_event FROM customers_batch
QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY _arrival_seq DESC) = 1
ON CONFLICT (customer_id) DO UPDATE
SET status = excluded.status, tier = excluded.tier, updated_at = excluded.updated_at;
"""

# (task, pipeline, schedule, label, most batches, most rows) from issue 13's "Done when".
CASES = {
    "anti_join_only": ("daily_revenue", ANTI_JOIN_ONLY, "duplicate_delivery", "duplicates_counted"),
    "watermark": ("daily_revenue", WATERMARK, "late_arrival", "late_dropped"),
    "last_received_wins": (
        "customer_state",
        LAST_RECEIVED_WINS,
        "out_of_order",
        "arrival_order_wins",
    ),
    "non_atomic_upsert": ("daily_revenue", NON_ATOMIC_UPSERT, "crash_retry", "crash_partial_apply"),
}


@pytest.fixture(scope="module")
def explained(cli, tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict, Path, Path]]:
    """Each case explained once through the CLI (--json --out): (its JSON, the pipeline, --out)."""
    root = tmp_path_factory.mktemp("explain")
    results = {}
    for name, (task, script, schedule, _) in CASES.items():
        pipeline, minimal = root / f"{name}.sql", root / f"{name}.min.json"
        pipeline.write_text(script, encoding="utf-8")
        done = cli(
            "explain", "--task", task, "--pipeline", pipeline, "--schedule", schedule,
            "--json", "--out", minimal,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        results[name] = (json.loads(done.stdout), pipeline, minimal)
    return results


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_each_done_when_case_gets_its_diagnosis(explained, name: str) -> None:
    data, _, _ = explained[name]
    task, _, schedule, label = CASES[name]
    assert data["task"] == task and data["schedule"] == schedule and data["verdict"] == "FAIL"
    assert label in data["diagnosis"]
    assert data["explanation"] and "unclassified" not in data["diagnosis"]
    assert set(data) >= {
        "task", "schedule", "seed", "verdict", "minimal", "first_divergent_batch",
        "diagnosis", "explanation", "story",
    }  # fmt: skip
    assert len(data["story"]) == len(data["minimal"]["batches"])
    assert isinstance(data["first_divergent_batch"], int) and data["first_divergent_batch"] >= 1


def test_anti_join_only_shrinks_to_one_batch_holding_one_event_twice(explained) -> None:
    minimal = explained["anti_join_only"][0]["minimal"]
    assert len(minimal["batches"]) == 1
    batch = minimal["batches"][0]
    assert len(batch) <= 3 and any(batch.count(e) == 2 for e in batch)


def test_watermark_shrinks_to_two_batches_and_at_most_three_rows(explained) -> None:
    minimal = explained["watermark"][0]["minimal"]
    assert len(minimal["batches"]) == 2 and minimal["rows_delivered"] <= 3


def test_non_atomic_upsert_keeps_a_crash_in_its_minimal_schedule(explained) -> None:
    minimal = explained["non_atomic_upsert"][0]["minimal"]
    assert minimal["crashes"], minimal


@pytest.mark.slow
@pytest.mark.parametrize("name", list(CASES))
def test_out_file_replayed_by_grade_reproduces_the_fail(cli, explained, name: str) -> None:
    data, pipeline, minimal = explained[name]
    task = CASES[name][0]
    written = json.loads(minimal.read_text(encoding="utf-8"))
    assert written["partial"] is True and written["format"] == 1
    ids = [d["event_ids"] for d in written["deliveries"]]
    assert ids == data["minimal"]["batches"]
    done = cli(
        "grade", "--task", task, "--pipeline", pipeline, "--schedule-file", minimal, "--json"
    )
    assert done.returncode == 0, done.stderr
    verdicts = json.loads(done.stdout)["verdicts"]
    assert [v["verdict"] for v in verdicts.values()] == ["FAIL"]


def test_explaining_the_out_file_again_finds_it_already_minimal(cli, explained) -> None:
    data, pipeline, minimal = explained["watermark"]
    done = cli(
        "explain", "--task", "daily_revenue", "--pipeline", pipeline, "--schedule", minimal,
        "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    again = json.loads(done.stdout)
    assert again["verdict"] == "FAIL" and again["minimal"] == data["minimal"]
    assert again["diagnosis"] == data["diagnosis"]


@pytest.mark.slow
def test_a_passing_schedule_has_nothing_to_explain(cli, tmp_path: Path) -> None:
    gold = get_task("daily_revenue").folder / "gold.sql"
    done = cli(
        "explain", "--task", "daily_revenue", "--pipeline", gold, "--schedule", "late_arrival"
    )
    assert done.returncode == 0, done.stderr
    assert "PASS: nothing to explain" in done.stdout
    out = tmp_path / "min.json"
    done = cli(
        "explain", "--task", "daily_revenue", "--pipeline", gold, "--schedule", "late_arrival",
        "--json", "--out", out,
    )  # fmt: skip
    data = json.loads(done.stdout)
    assert data["verdict"] == "PASS" and data["diagnosis"] == [] and data["minimal"] is None
    assert not out.exists()


@pytest.mark.slow
def test_human_output_prints_the_story_table_and_the_replay_command(cli, tmp_path: Path) -> None:
    pipeline, out = tmp_path / "p.sql", tmp_path / "min.json"
    pipeline.write_text(ANTI_JOIN_ONLY, encoding="utf-8")
    done = cli(
        "explain", "--task", "daily_revenue", "--pipeline", pipeline,
        "--schedule", "duplicate_delivery", "--out", out,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Minimal counterexample: 1 batch, 2 rows delivered" in done.stdout
    assert "Diagnosis: duplicates_counted" in done.stdout
    assert f"--schedule-file {out}" in done.stdout


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--schedule", "duplicate_delivry"], "Did you mean 'duplicate_delivery'"),
        (["--schedule", "duplicate_delivery", "--budget-seconds", "0"], "--budget-seconds"),
        (["--schedule", "duplicate_delivery", "--max-replays", "0"], "--max-replays"),
        (["--schedule", "missing.json"], "missing.json"),
    ],
)
def test_bad_input_exits_2_with_one_line(cli, tmp_path: Path, args: list[str], says: str) -> None:
    pipeline = tmp_path / "p.sql"
    pipeline.write_text(ANTI_JOIN_ONLY, encoding="utf-8")
    done = cli("explain", "--task", "daily_revenue", "--pipeline", pipeline, *args, cwd=tmp_path)
    assert done.returncode == 2
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


def test_missing_pipeline_exits_2_with_one_line(cli, tmp_path: Path) -> None:
    done = cli(
        "explain", "--task", "daily_revenue", "--pipeline", tmp_path / "none.sql",
        "--schedule", "late_arrival",
    )  # fmt: skip
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_an_exhausted_budget_is_reported_with_the_best_schedule_found() -> None:
    task = get_task("daily_revenue")
    schedule, log = build_schedule(task, "duplicate_delivery", 0)
    with Runner(task, ANTI_JOIN_ONLY, schedule, log) as runner:
        verdict = runner.run(schedule.deliveries).verdict
        shrunk = shrink(runner, schedule.deliveries, verdict, max_replays=2)
        assert shrunk.exhausted and shrunk.replays == 2
        assert runner.run(shrunk.deliveries).verdict == ("FAIL",)
    explanation = explain(task, ANTI_JOIN_ONLY, schedule, log, max_replays=1)
    assert explanation.to_json()["shrink"]["budget_exhausted"] is True


def test_first_divergence_says_when_the_target_is_built_only_at_the_end() -> None:
    def step(batch: int, defined: bool, equal: bool) -> Step:
        return Step(batch, [], defined, equal, [{"x": 1}] if not equal else [], [])

    late = first_divergence(
        [step(1, False, False), step(2, False, False), step(3, True, False)], None
    )
    assert late.batch == 3 and "did not exist" in late.note
    never = first_divergence([step(1, False, False), step(2, False, False)], None)
    assert never.batch is None and "does not exist before the last batch" in never.note
    assert first_divergence([step(1, True, True), step(2, True, False)], None).batch == 2


# --- 1-minimality, as a property ------------------------------------------------------------------

SUITE_CONTROLS = sorted(control.file for control in get_task("daily_revenue").spec.controls)


@pytest.fixture(scope="module")
def runners():
    """One warm worker per suite control of daily_revenue, over its hidden log."""
    task = get_task("daily_revenue")
    schedule, log = build_schedule(task, "in_order_stream", 0)
    opened = {
        name: Runner(task, (task.folder / name).read_text(encoding="utf-8"), schedule, log)
        for name in SUITE_CONTROLS
    }
    yield opened
    for runner in opened.values():
        runner.close()


@pytest.mark.slow
@settings(
    max_examples=8,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    control=st.sampled_from(SUITE_CONTROLS),
    batches=st.lists(
        st.tuples(
            st.lists(st.integers(min_value=0, max_value=40), min_size=1, max_size=4),
            st.booleans(),
        ),
        min_size=1,
        max_size=3,
    ),
)
def test_shrunk_schedules_fail_and_lose_the_failure_without_any_one_event(
    runners, control: str, batches: list[tuple[list[int], bool]]
) -> None:
    """Random small schedules (events of the log, copies, crashes) against the suite's controls."""
    runner = runners[control]
    deliveries = tuple(
        Delivery(batch_id=i + 1, rows=tuple(rows), crash=Crash(0, 1) if crashed else None)
        for i, (rows, crashed) in enumerate(batches)
    )
    verdict = runner.run(deliveries).verdict
    assume(verdict != ("PASS",))
    shrunk = shrink(runner, deliveries, verdict, budget_seconds=60)
    assert not shrunk.exhausted
    assert runner.run(shrunk.deliveries).verdict == verdict
    events = {row for d in shrunk.deliveries for row in d.rows}
    for event in events:
        fewer = tuple(
            dataclasses.replace(d, rows=rows)
            for d in shrunk.deliveries
            if (rows := tuple(r for r in d.rows if r != event))
        )
        assert not fewer or runner.run(fewer).verdict != verdict


@pytest.mark.slow
def test_grade_prints_a_diagnosis_per_fail_and_the_explain_command(cli, tmp_path: Path) -> None:
    pipeline = tmp_path / "p.sql"
    pipeline.write_text(ANTI_JOIN_ONLY, encoding="utf-8")
    done = cli(
        "grade", "--task", "daily_revenue", "--pipeline", pipeline,
        "--schedules", "in_order_stream,duplicate_delivery",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (
        "duplicate_delivery: duplicates_counted: An event delivered more than once" in done.stdout
    )
    assert "in_order_stream:" not in done.stdout.split("Diagnosis:")[1]
    assert f"arrivalbench explain --task daily_revenue --pipeline {pipeline}" in done.stdout
    assert "--schedule duplicate_delivery --seed" in done.stdout


@pytest.mark.slow
def test_grade_run_explain_stores_diagnoses_and_the_report_tables_them(cli, tmp_path: Path) -> None:
    import pyarrow.parquet as pq

    run = tmp_path / "run"
    made = cli("make-corpus", "--tasks", "daily_revenue", "--out", run)
    assert made.returncode == 0, made.stderr
    graded = cli("grade-run", run, "--workers", "1", "--explain")
    assert graded.returncode == 0, graded.stderr
    assert "into explanations.parquet" in graded.stdout
    rows = pq.read_table(run / "explanations.parquet").to_pylist()
    fails = [
        r for r in pq.read_table(run / "verdicts.parquet").to_pylist() if r["verdict"] == "FAIL"
    ]
    assert len(rows) == len(fails) > 0
    by_key = {(r["arm"], r["sample"], r["schedule"]): r["diagnosis"] for r in rows}
    dedup = [
        d for (arm, _, s), d in by_key.items() if arm == "controls" and s == "duplicate_delivery"
    ]
    assert ["duplicates_counted"] in dedup
    again = cli("grade-run", run, "--workers", "1", "--explain")
    assert "diagnosed 0 new FAIL verdicts" in again.stdout
    report = cli("report", run, "--out", tmp_path / "report", "--resamples", "200")
    assert report.returncode == 0, report.stderr
    written = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "Diagnoses of FAIL verdicts per arm" in written and "duplicates_counted" in written


KEYED_HISTORY = """
CREATE TABLE IF NOT EXISTS hist (event_id BIGINT PRIMARY KEY, ts_event TIMESTAMP,
                                 store_id INTEGER, amount DECIMAL(12,2));
INSERT INTO hist SELECT event_id, ts_event, store_id, amount FROM sales_batch;
CREATE OR REPLACE TABLE daily_revenue AS
SELECT store_id, CAST(ts_event AS DATE) AS day, CAST(SUM(amount) AS DECIMAL(18,2)) AS revenue,
       COUNT(*) AS orders
FROM hist GROUP BY ALL;
"""


def test_an_error_shrinks_keeping_its_class_and_the_story_shows_it() -> None:
    task = get_task("daily_revenue")
    schedule, log = build_schedule(task, "duplicate_delivery", 0)
    data = explain(task, KEYED_HISTORY, schedule, log).to_json()
    assert data["verdict"] == "ERROR" and data["error_class"] == "sql_error"
    assert data["minimal"]["rows_delivered"] == 2 and len(data["minimal"]["batches"]) == 1
    assert "duplicate key" in data["story"][-1]["error"]
    assert "ERROR (sql_error)" in data["explanation"]


COLUMNS_FIXED_AT_FIRST_LOAD = """
CREATE TABLE IF NOT EXISTS raw AS
SELECT event_id, ts_event, user_id, action, NULL::VARCHAR AS page FROM clicks_batch LIMIT 0;
INSERT INTO raw BY NAME SELECT event_id, ts_event, user_id, action FROM clicks_batch;
CREATE OR REPLACE TABLE page_daily_views AS
SELECT coalesce(page, 'unknown') AS page, CAST(ts_event AS DATE) AS day, count(*) AS views
FROM (SELECT DISTINCT ON (event_id) * FROM raw) WHERE action = 'view' GROUP BY ALL;
"""


def test_a_column_never_picked_up_is_schema_column_lost() -> None:
    task = get_task("page_views_schema")
    schedule, log = build_schedule(task, "schema_evolution", 0)
    labels = diagnose_schedule(task, COLUMNS_FIXED_AT_FIRST_LOAD, schedule, log)
    assert labels == ["schema_column_lost"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["anti_join_only", "watermark"])
def test_regression_explain_replayed_a_sqlite_pipeline_on_duckdb(
    cli, tmp_path: Path, name: str
) -> None:
    """The explain runner replayed every candidate on DuckDB, so a SQLite or PostgreSQL run's
    FAILs (`grade-run --explain`, `grade`'s diagnosis lines) came out ERROR or unclassified, and
    the printed explain/replay commands dropped the engine."""
    from arrivalbench.dialects import transpile

    task_id, duckdb_sql, schedule, label = CASES[name]
    pipeline = tmp_path / f"{name}.sqlite.sql"
    pipeline.write_text(transpile(duckdb_sql, "sqlite"), encoding="utf-8")
    done = cli(
        "explain", "--engine", "sqlite", "--task", task_id, "--pipeline", pipeline,
        "--schedule", schedule, "--json", "--out", tmp_path / "min.json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert label in json.loads(done.stdout)["diagnosis"]
    graded = cli(
        "grade", "--engine", "sqlite", "--task", task_id, "--pipeline", pipeline,
        "--schedules", schedule, "--no-cache",
    )  # fmt: skip
    assert graded.returncode == 0, graded.stderr
    assert f"{schedule}: {label}" in graded.stdout
    commands = [line for line in graded.stdout.splitlines() if "arrivalbench " in line]
    assert len(commands) == 2 and all("--engine sqlite" in line for line in commands)
