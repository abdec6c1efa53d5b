"""verdict.py: one judge, one record shape, one canonical serialisation.

The golden files under fixtures/verdicts were written by the grading code before verdicts were
typed (grade.py, check/runner.py each building its own dict); regrading the same artifacts must
give the same bytes. Regenerate them only when a verdict byte is meant to change, and say so in
the commit.
"""

from __future__ import annotations

import json
import re
import runpy
from pathlib import Path

import pytest

from arrivalbench.corpus import corpus_cells
from arrivalbench.grade import Grader, dumps
from arrivalbench.schedules import graded_schedules
from arrivalbench.spec import get_task
from arrivalbench.store import verdict_row

ROOT = Path(__file__).resolve().parents[1]
GOLDEN = Path(__file__).parent / "fixtures" / "verdicts"
GOLDEN_TASKS = ("daily_revenue", "store_sales_schema", "customer_state_modify")
VERSIONS = re.compile(r'"(engine_version|harness_version)": "([^"]*)"')


def same_versions(produced: str, golden: str) -> str:
    """`produced` with the golden file's engine and harness versions: a release changes them,
    and nothing else may change."""
    stored = dict(VERSIONS.findall(golden))
    return VERSIONS.sub(lambda m: f'"{m[1]}": "{stored[m[1]]}"', produced)


@pytest.mark.slow
def test_regrading_the_reference_corpus_gives_the_golden_verdict_bytes():
    cells, artifacts = corpus_cells(list(GOLDEN_TASKS))
    with Grader() as grader:
        for task_id in GOLDEN_TASKS:
            task = get_task(task_id)
            names = graded_schedules(task, "all")
            records, rows = [], []
            for cell in (c for c in cells if c.task == task_id):
                assert cell.artifact_sha256 is not None
                script = artifacts[cell.artifact_sha256]
                record, _ = grader.grade(task, script, names, empty_is_error=True)
                records.append(dumps(record))
                for schedule, entry in record["verdicts"].items():
                    row = verdict_row(cell, schedule, grader.seed, entry)
                    rows.append(json.dumps(row, sort_keys=True) + "\n")
            golden = (GOLDEN / f"{task_id}.records.json").read_text(encoding="utf-8")
            assert same_versions("".join(records), golden) == golden, task_id
            golden_rows = (GOLDEN / f"{task_id}.rows.jsonl").read_text(encoding="utf-8")
            assert "".join(rows) == golden_rows, task_id


@pytest.mark.slow
def test_checking_a_user_pipeline_gives_the_golden_verdict_bytes(tmp_path: Path):
    from arrivalbench.check.log import LogColumns
    from arrivalbench.check.runner import Check, CheckConfig
    from arrivalbench.engines import Limits

    shop = ROOT / "examples" / "dbt_shop"
    log = runpy.run_path(str(shop / "make_log.py"))["make_log"](
        tmp_path / "orders.parquet", orders=240, seed=3
    )
    pipelines = runpy.run_path(str(Path(__file__).parent / "test_check.py"))
    scripts = (
        pipelines["DEDUP_BATCH"],
        pipelines["REPLACE_DAYS"],
        "INSERT INTO daily_orders SELECT * FROM raw_orders;",
    )
    texts = []
    for script in scripts:
        config = CheckConfig(
            log=str(log),
            columns=LogColumns("order_id", "ordered_at"),
            seed=0,
            limits=Limits(),
            pipeline=Path("p.sql"),
            source_table="raw_orders",
            target="daily_orders",
        )
        record, _ = Check(config).run(script)
        texts.append(dumps(record))
    golden = (GOLDEN / "check.records.json").read_text(encoding="utf-8")
    assert same_versions("".join(texts), golden) == golden


def _result(target=None, error=None):
    from arrivalbench.replay import ReplayResult

    return ReplayResult(target=target, error=error, statement_seconds=0.0, statements_run=1)


def _equal_unless(differs: bool):
    from arrivalbench.compare import Comparison

    diff = {
        "counts": {"schema": 0, "missing": 1, "extra": 0, "duplicate_key": 0, "changed": 0},
        "examples": {"missing": [{"id": 1}]},
        "expected_rows": 2,
        "actual_rows": 1,
        "right_rows_share": 0.5,
    }
    return lambda expected, actual: Comparison(not differs, diff)


def test_judge_gives_the_replays_error_first_then_the_oracles_then_the_comparison():
    import pyarrow as pa

    from arrivalbench.replay import RunError
    from arrivalbench.verdict import ORACLE_FAILED, judge

    table = pa.table({"id": [1]})
    error = RunError("sql_error", 2, 1, "no such table")
    assert judge(_result(error=error), table, _equal_unless(True)).key == ("ERROR", "sql_error")
    oracle = judge(_result(target=table), RunError("sql_error", 1, 3, "boom"), _equal_unless(True))
    assert oracle.key == ("ERROR", ORACLE_FAILED) and oracle.batch is None
    assert oracle.message == "the full refresh over the complete log failed: boom"
    assert judge(_result(target=table), table, _equal_unless(False)).to_json() == {
        "verdict": "PASS"
    }
    failed = judge(_result(target=table), table, _equal_unless(True))
    assert failed.outcome == "FAIL" and failed.diff is not None
    assert failed.diff.counts["missing"] == 1


def test_verdict_json_keeps_an_errors_null_fields_and_round_trips():
    from arrivalbench.replay import RunError
    from arrivalbench.verdict import Verdict, compact, summary

    verdict = Verdict.errored(RunError("timeout", None, None, "took too long")).replayed("ab")
    data = verdict.to_json()
    assert data == {
        "verdict": "ERROR",
        "error_class": "timeout",
        "batch": None,
        "statement": None,
        "message": "took too long",
        "schedule_sha256": "ab",
    }
    assert Verdict.from_json(data) == verdict
    assert compact(data).startswith('{"batch":null,"error_class":"timeout"')
    assert summary(verdict) == "timeout at the run: took too long"


def test_a_records_json_round_trips_with_what_check_adds():
    from arrivalbench.verdict import Record, Verdict, dumps

    record = Record(
        task="t",
        artifact_sha256="a",
        engine="duckdb",
        engine_version="1",
        harness_version="0",
        seed=7,
        verdicts={"late_arrival": Verdict.passed().replayed("s")},
        extra={"mode": "batch", "skipped": {}},
    )
    data = record.to_json()
    assert data["mode"] == "batch" and "seed_commitment" not in data
    assert Record.from_json(data) == record
    assert dumps(data) == dumps(Record.from_json(data).to_json())


def test_as_stored_drops_severity_only_for_a_fail_stored_without_one():
    from arrivalbench.verdict import as_stored

    diff = {"counts": {}, "right_rows_share": 0.5}
    new = {"verdict": "FAIL", "diff": {**diff, "severity": {"wrong_rows_share": 0.5}}}
    assert as_stored(new, {"verdict": "FAIL", "diff": diff}) == {"verdict": "FAIL", "diff": diff}
    assert as_stored(new, new) == new
    assert as_stored(new, {"verdict": "PASS"}) == new  # a changed outcome stays visible
    assert as_stored({"verdict": "PASS"}, {"verdict": "FAIL", "diff": diff}) == {"verdict": "PASS"}
