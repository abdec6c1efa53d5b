"""Grading sweeps over a run directory: resume after kills, byte-identical regrade, executors."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arrivalbench.corpus import make_corpus
from arrivalbench.scaffold import new_task
from arrivalbench.spec import SUITE_PATH_ENV
from arrivalbench.store import RunDir, RunStoreError
from arrivalbench.sweep import sweep, verify

TASK = "daily_revenue"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> pa.Table:
    """Verdicts of an uninterrupted sweep of the one-task corpus."""
    run = make_corpus(tmp_path_factory.mktemp("ref") / "run", task_ids=[TASK])
    sweep(run, workers=2)
    return run.verdicts()


@pytest.mark.slow
def test_sweep_grades_every_cell_and_schedule(reference: pa.Table) -> None:
    arms = set(reference.column("arm").to_pylist())
    assert {"gold", "controls", "naive_append"} <= arms
    gold = [r for r in reference.to_pylist() if r["arm"] == "gold"]
    assert {r["verdict"] for r in gold} == {"PASS"}
    assert (
        len({(r["arm"], r["sample"], r["schedule"]) for r in reference.to_pylist()})
        == reference.num_rows
    )


@pytest.mark.slow
def test_second_sweep_has_nothing_to_do(tmp_path: Path, reference: pa.Table) -> None:
    run = make_corpus(tmp_path / "run", task_ids=[TASK])
    first = sweep(run, workers=1)
    again = sweep(run, workers=1)
    assert first.rows == reference.num_rows and again.units == 0 and again.rows == 0
    assert run.verdicts().equals(reference)


@pytest.mark.slow
def test_resume_after_repeated_kills_matches_uninterrupted_sweep(
    tmp_path: Path, reference: pa.Table
) -> None:
    run = make_corpus(tmp_path / "run", task_ids=[TASK])
    command = [
        sys.executable,
        "-m",
        "arrivalbench.cli",
        "grade-run",
        str(run.path),
        "--workers",
        "1",
    ]
    chance = random.Random(20261130)
    # A cache of its own: verdicts another test in this process cached would let the sweep finish
    # before the first kill, and the kills would test nothing.
    env = {**os.environ, "ARRIVALBENCH_CACHE_DIR": str(tmp_path / "empty-cache")}
    for _ in range(4):
        process = subprocess.Popen(
            command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env=env,
        )
        time.sleep(chance.uniform(1.0, 4.0))
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    finished = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)
    assert finished.returncode == 0, finished.stderr
    assert run.verdicts().equals(reference)
    assert not run.journal_path.exists() and not (run.path / "sweep.lock").exists()


@pytest.mark.slow
def test_regrade_verify_reproduces_every_row(tmp_path: Path) -> None:
    run = make_corpus(tmp_path / "run", task_ids=[TASK])
    sweep(run, workers=2)
    assert verify(run, workers=2) == []


@pytest.mark.slow
def test_regrade_verify_detects_a_planted_altered_verdict(tmp_path: Path) -> None:
    run = make_corpus(tmp_path / "run", task_ids=[TASK])
    sweep(run, workers=2)
    table = pq.read_table(run.path / "verdicts.parquet")
    verdicts = table.column("verdict").to_pylist()
    i = verdicts.index("FAIL")
    verdicts[i] = "PASS"
    altered = table.set_column(
        table.schema.get_field_index("verdict"), "verdict", pa.array(verdicts)
    )
    pq.write_table(altered, run.path / "verdicts.parquet")
    mismatches = verify(run, workers=2)
    assert len(mismatches) == 1 and "differs in verdict" in mismatches[0]


@pytest.mark.slow
def test_regrade_verify_of_a_run_graded_before_severity_compares_the_bytes_it_has(
    tmp_path: Path,
) -> None:
    """Record format 2 adds a FAIL's severity; a run graded before it (its FAIL records without
    one) still verifies, and a changed byte among those it has is still found."""
    import json

    from arrivalbench.verdict import compact

    run = make_corpus(tmp_path / "run", task_ids=[TASK])
    sweep(run, workers=2)
    table = pq.read_table(run.path / "verdicts.parquet")
    records = []
    for text in table.column("record").to_pylist():
        entry = json.loads(text)
        if "diff" in entry:
            assert "severity" in entry["diff"]
            del entry["diff"]["severity"]
        records.append(compact(entry))
    older = table.set_column(table.schema.get_field_index("record"), "record", pa.array(records))
    pq.write_table(older, run.path / "verdicts.parquet")
    assert verify(run, workers=2) == []
    i = next(i for i, text in enumerate(records) if '"right_rows_share"' in text)
    entry = json.loads(records[i])
    entry["diff"]["expected_rows"] += 1
    records[i] = compact(entry)
    pq.write_table(
        older.set_column(older.schema.get_field_index("record"), "record", pa.array(records)),
        run.path / "verdicts.parquet",
    )
    mismatches = verify(run, workers=2)
    assert len(mismatches) == 1 and "differs in record" in mismatches[0]


def test_sweep_refuses_a_run_whose_task_changed(tmp_path: Path) -> None:
    run = make_corpus(tmp_path / "run", task_ids=[TASK])
    recorded = run.manifest["task_hashes"][TASK]
    manifest = (run.path / "manifest.json").read_text().replace(recorded, "0" * 64)
    (run.path / "manifest.json").write_text(manifest)
    with pytest.raises(RunStoreError, match="has changed since the run was made"):
        sweep(RunDir.open(run.path), workers=1)


@pytest.mark.slow
def test_ray_executor_matches_local(tmp_path: Path, reference: pa.Table) -> None:
    pytest.importorskip("ray")
    run = make_corpus(tmp_path / "run", task_ids=[TASK])
    sweep(run, workers=2, executor="ray")
    assert run.verdicts().equals(reference)


# --- tasks of the user's own suite folders --------------------------------------------------------

MINE = "mine_sweep"


@pytest.fixture
def mine_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[RunDir, Path]:
    """A corpus run of a task that lives only in a tmp suite folder, made with the folder on
    ARRIVALBENCH_SUITE_PATH, which is unset again before the test grades it."""
    mine = tmp_path / "mine"
    new_task(MINE, suite_dir=mine)
    monkeypatch.setenv(SUITE_PATH_ENV, str(mine))
    run = make_corpus(tmp_path / "run", task_ids=[MINE])
    monkeypatch.delenv(SUITE_PATH_ENV)
    return run, mine


def _assert_graded(run: RunDir) -> None:
    rows = run.verdicts().to_pylist()
    assert rows and {r["task"] for r in rows} == {MINE}
    assert {r["verdict"] for r in rows if r["arm"] == "gold"} == {"PASS"}
    assert "FAIL" in {r["verdict"] for r in rows if r["arm"] == "controls"}


@pytest.mark.slow
@pytest.mark.parametrize("executor", ["local", "ray"])
def test_workers_are_given_the_suite_dirs_not_the_environment(mine_run, executor: str) -> None:
    if executor == "ray":
        pytest.importorskip("ray")
    run, mine = mine_run
    assert run.manifest["suite_dirs"] == [str(mine.resolve())]
    report = sweep(run, workers=2, executor=executor, suite_dirs=[mine])
    assert report.units > 0
    _assert_graded(run)
    assert verify(run, workers=2, suite_dirs=[mine]) == []


def test_sweep_without_the_run_suite_dir_names_the_task_and_the_flag(mine_run) -> None:
    run, mine = mine_run
    with pytest.raises(RunStoreError) as raised:
        sweep(run, workers=1)
    message = str(raised.value)
    assert f"task '{MINE}' is not on the suite path" in message
    assert f"pass --suite-dir {mine.resolve()}" in message
    assert not (run.path / "verdicts.parquet").exists()


def _edit_config(run: RunDir, **changes: object) -> RunDir:
    import json

    path = run.path / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest["config"].update(changes)
    path.write_text(json.dumps(manifest), encoding="utf-8")
    return RunDir.open(run.path)


def test_regression_a_narrowed_manifest_schedule_set_still_plans_the_declared_set(
    tmp_path: Path,
) -> None:
    """Regression: `config.schedules: snapshot` in a crafted manifest graded the watermark
    control on the snapshot alone (gap 0%, and regrade --verify said reproduced)."""
    from arrivalbench.schedules import default_schedules
    from arrivalbench.spec import get_task
    from arrivalbench.sweep import SweepConfig, plan

    run = _edit_config(make_corpus(tmp_path / "run", task_ids=[TASK]), schedules="snapshot")
    units = plan(run, SweepConfig.from_manifest(run.manifest))
    declared = tuple(default_schedules(get_task(TASK)))
    assert units and all(u.schedules == declared for u in units), declared


def test_regression_grade_run_refuses_a_manifest_that_loosens_limits_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: `memory_limit: 4GB` in a manifest was obeyed, and `statement_timeout: 1e7`
    crashed grade-run with an OverflowError traceback; both are now one line and exit 2, and
    --memory-limit grants a looser limit explicitly (checked against the ceiling)."""
    from arrivalbench.cli import main

    run = _edit_config(make_corpus(tmp_path / "run", task_ids=[TASK]), memory_limit="4GB")
    for argv, phrase in [
        ([str(run.path)], "config.memory_limit 4GB is looser than the harness's 1GB"),
        ([str(run.path), "--memory-limit", "1TB"], "--memory-limit 1TB is above the ceiling"),
        ([str(run.path), "--statement-timeout", "1e7"], "--statement-timeout 1e+07 is above"),
    ]:
        monkeypatch.setattr(sys, "argv", ["arrivalbench", "grade-run", *argv])
        with pytest.raises(SystemExit) as exit_:
            main()
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and len(err.splitlines()) == 1 and phrase in err, err
    assert run.verdicts().num_rows == 0
