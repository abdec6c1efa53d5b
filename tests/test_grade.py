"""Grading one artifact through its schedules: the verdict record, its determinism, and bad input."""

from __future__ import annotations

import hashlib
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from arrivalbench import __version__
from arrivalbench.compare import KINDS
from arrivalbench.errors import PipelineInputError, UnknownNameError
from arrivalbench.grade import ERROR_CLASSES, RECORD_FORMAT, Grader, artifact_sha256, dumps
from arrivalbench.schedules import SCHEDULE_NAMES, default_schedules
from arrivalbench.spec import Task, get_task

RECORD_KEYS = {
    "format",
    "task",
    "artifact_sha256",
    "engine",
    "engine_version",
    "harness_version",
    "seed",
    "verdicts",
}
DEDUP_HISTORY_ONLY = "controls/dedup_history_only.sql"


@pytest.fixture(scope="module")
def daily_revenue() -> Task:
    return get_task("daily_revenue")


@pytest.fixture(scope="module")
def customer_state() -> Task:
    return get_task("customer_state")


@pytest.fixture(scope="module")
def grader():
    with Grader() as g:
        yield g


@pytest.fixture(scope="module")
def gold_record(grader, daily_revenue):
    return grader.grade(daily_revenue, daily_revenue.gold_sql, default_schedules(daily_revenue))


# --- determinism ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_gold_record_is_byte_identical_across_two_graders(gold_record, daily_revenue):
    first, _ = gold_record
    with Grader() as other:
        second, _ = other.grade(
            daily_revenue, daily_revenue.gold_sql, default_schedules(daily_revenue)
        )
    assert dumps(first) == dumps(second)
    assert dumps(first).encode() == dumps(json.loads(dumps(first))).encode()


@pytest.mark.slow
def test_fail_and_error_records_are_deterministic_too(grader, daily_revenue):
    control = daily_revenue.controls[DEDUP_HISTORY_ONLY]
    broken = "CREATE TABLE daily_revenue AS SELECT store_id, 1 / 0 AS x FROM sales_batch;\nSELECT * FROM nowhere;"
    names = ["snapshot", "duplicate_delivery"]
    with Grader() as other:
        for script in (control, broken):
            assert dumps(grader.grade(daily_revenue, script, names)[0]) == dumps(
                other.grade(daily_revenue, script, names)[0]
            )


def test_record_depends_on_the_seed(daily_revenue, gold_record):
    record, _ = gold_record
    with Grader(seed=record["seed"] + 1) as other:
        shifted, _ = other.grade(daily_revenue, daily_revenue.gold_sql, ["in_order_stream"])
    assert shifted["seed"] == record["seed"] + 1
    assert shifted["verdicts"]["in_order_stream"]["verdict"] == "PASS"
    assert (
        shifted["verdicts"]["in_order_stream"]["schedule_sha256"]
        != record["verdicts"]["in_order_stream"]["schedule_sha256"]
    )


# --- the record's schema ------------------------------------------------------------------------


def test_pass_record_schema(gold_record, daily_revenue, grader):
    record, timings = gold_record
    assert set(record) == RECORD_KEYS
    assert record["format"] == RECORD_FORMAT
    assert record["task"] == "daily_revenue"
    assert record["artifact_sha256"] == hashlib.sha256(daily_revenue.gold_sql.encode()).hexdigest()
    assert record["artifact_sha256"] == artifact_sha256(daily_revenue.gold_sql)
    assert record["engine"] == "duckdb"
    assert record["harness_version"] == __version__
    assert record["seed"] == grader.seed
    assert list(record["verdicts"]) == default_schedules(daily_revenue)
    for name, entry in record["verdicts"].items():
        assert entry["verdict"] == "PASS", (name, entry)
        assert set(entry) == {"verdict", "schedule_sha256"}
        assert len(entry["schedule_sha256"]) == 64 and int(entry["schedule_sha256"], 16) >= 0
    assert len({e["schedule_sha256"] for e in record["verdicts"].values()}) == len(
        record["verdicts"]
    )
    # Timings are kept beside the record, never inside it.
    assert set(timings) == set(record["verdicts"])
    assert all(set(t) == {"wall_seconds", "statement_seconds"} for t in timings.values())
    assert "seconds" not in dumps(record)


def test_fail_record_carries_a_typed_diff(grader, daily_revenue):
    """The dedup-against-history control double counts orders sent twice in one batch."""
    record, _ = grader.grade(
        daily_revenue,
        daily_revenue.controls[DEDUP_HISTORY_ONLY],
        ["snapshot", "duplicate_delivery"],
    )
    assert record["verdicts"]["snapshot"]["verdict"] == "PASS"
    entry = record["verdicts"]["duplicate_delivery"]
    assert set(entry) == {"verdict", "diff", "schedule_sha256"}
    assert entry["verdict"] == "FAIL"
    diff = entry["diff"]
    assert set(diff["counts"]) == set(KINDS)
    counts = diff["counts"]
    assert counts["changed"] > 0
    assert counts["missing"] == counts["extra"] == counts["duplicate_key"] == counts["schema"] == 0
    assert diff["expected_rows"] == diff["actual_rows"] > counts["changed"]
    assert diff["right_rows_share"] == round(
        (diff["expected_rows"] - counts["changed"]) / diff["expected_rows"], 6
    )
    examples = diff["examples"]["changed"]
    assert 1 <= len(examples) <= 3
    keys = [(e["key"]["store_id"], e["key"]["day"]) for e in examples]
    assert keys == sorted(keys)
    for example in examples:
        assert set(example["key"]) == {"store_id", "day"}
        assert set(example["columns"]) <= {"revenue", "orders"}
        orders = example["columns"]["orders"]
        assert orders["actual"] > orders["expected"]  # only ever over-counted
    json.loads(dumps(record))


def test_error_record_schema(grader, daily_revenue):
    record, _ = grader.grade(
        daily_revenue,
        "SELECT 1;\nCREATE TABLE daily_revenue AS SELECT * FROM no_such_table;",
        ["snapshot", "in_order_stream"],
    )
    for entry in record["verdicts"].values():
        assert set(entry) == {
            "verdict",
            "error_class",
            "batch",
            "statement",
            "message",
            "schedule_sha256",
        }
        assert entry["verdict"] == "ERROR"
        assert entry["error_class"] in ERROR_CLASSES
        assert (entry["error_class"], entry["batch"], entry["statement"]) == ("sql_error", 1, 2)
        assert "no_such_table" in entry["message"]


def test_parse_error_is_an_error_verdict_on_every_schedule(grader, daily_revenue):
    record, _ = grader.grade(
        daily_revenue, "CREATE TABLE daily_revenue AS SELEC 1;", ["snapshot", "backfill"]
    )
    assert list(record["verdicts"]) == ["snapshot", "backfill"]
    for entry in record["verdicts"].values():
        assert set(entry) == {
            "verdict",
            "error_class",
            "batch",
            "statement",
            "message",
            "schedule_sha256",
        }
        assert (entry["verdict"], entry["error_class"], entry["batch"]) == ("ERROR", "sql_error", 1)
        assert entry["statement"] in (None, 1)
        assert "SELEC" in entry["message"]


def test_refused_script_is_an_error_verdict_on_every_schedule(grader, daily_revenue):
    script = daily_revenue.gold_sql + "\nATTACH ':memory:' AS side;"
    n = len(grader.engine.split(script))
    record, _ = grader.grade(daily_revenue, script, ["snapshot", "crash_retry"])
    for entry in record["verdicts"].values():
        assert (entry["verdict"], entry["error_class"], entry["batch"], entry["statement"]) == (
            "ERROR",
            "sandbox_refused",
            1,
            n,
        )


# --- bad input ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("script", "words"),
    [
        ("", "is empty"),
        ("   \n\t\n", "is empty"),
        ("-- nothing but a comment\n", "contains only comments"),
        ("/* block */\n-- and line\n", "contains only comments"),
        (";\n;;\n", None),
    ],
)
def test_empty_or_comment_only_script_is_bad_input(grader, daily_revenue, script, words):
    with pytest.raises(PipelineInputError) as info:
        grader.grade(daily_revenue, script, ["snapshot"], where="my/pipeline.sql")
    message = str(info.value)
    assert message.startswith("my/pipeline.sql: ")
    if words:
        assert words in message
    assert "\n" not in message


def test_unknown_schedule_name_is_a_user_error(grader, daily_revenue):
    with pytest.raises(UnknownNameError, match="Did you mean 'late_arrival'"):
        grader.grade(daily_revenue, daily_revenue.gold_sql, ["late_arival"])


# --- the golds hold under any seed ----------------------------------------------------------------


@pytest.mark.slow
@settings(
    max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(seed=st.integers(min_value=0, max_value=2**63 - 1))
def test_gold_passes_every_schedule_under_any_base_seed(
    grader, daily_revenue, customer_state, seed
):
    """The golds are the reference: a seed on which one of them FAILs or ERRORs is a defect to report."""
    original = grader.seed
    grader.seed = seed  # caches are keyed by seed, so one worker serves every example
    try:
        for task in (daily_revenue, customer_state):
            record, _ = grader.grade(task, task.gold_sql, SCHEDULE_NAMES)
            assert record["seed"] == seed
            bad = {
                name: entry
                for name, entry in record["verdicts"].items()
                if entry["verdict"] != "PASS"
            }
            assert not bad, f"{task.id} gold under seed {seed}: {bad}"
    finally:
        grader.seed = original


def test_regression_grader_caches_are_keyed_by_task_content_not_folder() -> None:
    """A task edited in memory (same folder, a 3x larger log) used to get the cached oracle and
    schedules of the original, so its own gold FAILed every schedule."""
    from arrivalbench.spec import Task

    task = get_task("daily_revenue")
    source = task.spec.source
    bigger = source.model_copy(
        update={
            "generator": source.generator.model_copy(
                update={"params": {**source.generator.params, "events": 900}}
            )
        }
    )
    edited = Task(
        spec=task.spec.model_copy(update={"sources": [bigger]}),
        folder=task.folder,
        oracle_sql=task.oracle_sql,
        gold_sql=task.gold_sql,
        controls=task.controls,
        existing_sql=task.existing_sql,
    )
    with Grader() as grader:
        first, _ = grader.grade(task, task.gold_sql, ["single_batch"])
        second, _ = grader.grade(edited, edited.gold_sql, ["single_batch"])
    assert first["verdicts"]["single_batch"]["verdict"] == "PASS"
    assert second["verdicts"]["single_batch"]["verdict"] == "PASS"
    assert (
        first["verdicts"]["single_batch"]["schedule_sha256"]
        != second["verdicts"]["single_batch"]["schedule_sha256"]
    )


def test_replay_command_carries_non_default_limits() -> None:
    from arrivalbench.engines import Limits
    from arrivalbench.grade import replay_command

    plain = replay_command("daily_revenue", "crash_retry", 7, "p.sql", Limits())
    assert (
        plain
        == "arrivalbench grade --task daily_revenue --pipeline p.sql --schedules crash_retry --seed 7"
    )
    tight = replay_command(
        "daily_revenue",
        "crash_retry",
        7,
        "p.sql",
        Limits(statement_timeout=1.5, memory_limit="256MB"),
    )
    assert tight.endswith("--seed 7 --statement-timeout 1.5 --memory-limit 256MB")


# --- the target may be a VIEW ---------------------------------------------------------------------

HISTORY_VIEW = """
CREATE TABLE IF NOT EXISTS sales_history (
    event_id BIGINT PRIMARY KEY, ts_event TIMESTAMP, store_id INTEGER, amount DECIMAL(12,2)
);
INSERT INTO sales_history
SELECT event_id, ts_event, store_id, amount FROM sales_batch
QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1
ON CONFLICT DO NOTHING;
CREATE OR REPLACE VIEW daily_revenue AS
SELECT store_id, CAST(ts_event AS DATE) AS day, CAST(SUM(amount) AS DECIMAL(18,2)) AS revenue,
       COUNT(*) AS orders
FROM sales_history GROUP BY ALL;
"""


@pytest.mark.slow
def test_a_view_target_over_a_history_table_is_graded_by_its_rows(grader, daily_revenue):
    """docs/decisions.md: the target is read by name, so a persistent VIEW over the pipeline's
    own history passes every schedule when its rows are right, and FAILs (not ERROR) when not."""
    names = default_schedules(daily_revenue)
    record, _ = grader.grade(daily_revenue, HISTORY_VIEW, names)
    assert {n: e["verdict"] for n, e in record["verdicts"].items()} == dict.fromkeys(names, "PASS")
    copies_kept = HISTORY_VIEW.replace("event_id BIGINT PRIMARY KEY", "event_id BIGINT").replace(
        "QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1\n"
        "ON CONFLICT DO NOTHING",
        "",
    )
    record, _ = grader.grade(daily_revenue, copies_kept, ["snapshot", "duplicate_delivery"])
    assert record["verdicts"]["snapshot"]["verdict"] == "PASS"
    assert record["verdicts"]["duplicate_delivery"]["verdict"] == "FAIL"
