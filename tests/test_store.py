"""Run directories: atomic files, content-addressed artifacts, journal folding, locks, bad files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from arrivalbench.store import Cell, RunDir, RunStoreError, sha256_text, verdict_row


def make_run(path: Path, cells: list[Cell] | None = None) -> RunDir:
    script = "SELECT 1;\n"
    sha = sha256_text(script)
    cells = cells or [
        Cell("gold", "daily_revenue", 0, artifact_sha256=sha),
        Cell("m", "daily_revenue", 1, no_artifact_reason="refusal"),
    ]
    return RunDir.create(
        path,
        suite_hash="abc",
        task_hashes={},
        base_seed=7,
        engine="duckdb",
        engine_version="x",
        config={"schedules": None},
        cells=cells,
        artifacts={sha: script},
    )


def entry(verdict: str = "PASS") -> dict:
    return {"verdict": verdict, "schedule_sha256": "s" * 64}


def test_create_writes_manifest_cells_and_artifacts(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text())
    assert (
        manifest["base_seed"] == 7 and manifest["arms"] == ["gold", "m"] and manifest["format"] == 1
    )
    cells = run.cells()
    assert [c.key for c in cells] == [("gold", "daily_revenue", 0), ("m", "daily_revenue", 1)]
    assert cells[1].artifact_sha256 is None and cells[1].no_artifact_reason == "refusal"
    assert run.artifact(cells[0].artifact_sha256) == "SELECT 1;\n"


def test_create_refuses_an_existing_run(tmp_path: Path) -> None:
    make_run(tmp_path / "run")
    with pytest.raises(RunStoreError, match="already exists"):
        make_run(tmp_path / "run")


def test_open_without_manifest_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(RunStoreError, match=r"no manifest\.json"):
        RunDir.open(tmp_path)


def test_altered_artifact_is_detected(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    sha = run.cells()[0].artifact_sha256
    run.artifact_path(sha).write_text("SELECT 2;\n")
    with pytest.raises(RunStoreError, match=r"does not match its sha256"):
        run.artifact(sha)


def test_missing_artifact_is_named(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    sha = run.cells()[0].artifact_sha256
    run.artifact_path(sha).unlink()
    with pytest.raises(RunStoreError, match="missing"):
        run.artifact(sha)


def test_truncated_parquet_names_the_file(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    data = (run.path / "cells.parquet").read_bytes()
    (run.path / "cells.parquet").write_bytes(data[: len(data) // 2])
    with pytest.raises(RunStoreError, match=r"cells\.parquet: unreadable Parquet"):
        run.cells()


def test_journal_rows_are_read_and_folded_without_duplicates(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    cell = run.cells()[0]
    rows = [verdict_row(cell, s, 7, entry()) for s in ("snapshot", "backfill")]
    timings = [
        {
            "arm": "gold",
            "task": "daily_revenue",
            "sample": 0,
            "schedule": s,
            "wall_seconds": 0.1,
            "statement_seconds": 0.05,
        }
        for s in ("snapshot", "backfill")
    ]
    run.append(rows, timings)
    run.append(rows[:1], timings[:1])  # a unit graded again after a kill: the first row stands
    assert run.verdicts().num_rows == 2
    run.compact()
    assert not run.journal_path.exists()
    table = pq.read_table(run.path / "verdicts.parquet")
    assert table.column("schedule").to_pylist() == ["backfill", "snapshot"]
    assert run.done() == {
        ("gold", "daily_revenue", 0, "backfill"),
        ("gold", "daily_revenue", 0, "snapshot"),
    }


def test_torn_last_journal_line_is_ignored(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    cell = run.cells()[0]
    run.append(
        [verdict_row(cell, "snapshot", 7, entry())],
        [
            {
                "arm": "gold",
                "task": "daily_revenue",
                "sample": 0,
                "schedule": "snapshot",
                "wall_seconds": 0.0,
                "statement_seconds": 0.0,
            }
        ],
    )
    with open(run.journal_path, "a") as handle:
        handle.write('{"verdict": {"arm": "gold"')  # killed mid-write
    assert run.verdicts().num_rows == 1


def test_verdict_row_keeps_the_canonical_record(tmp_path: Path) -> None:
    cell = Cell("gold", "daily_revenue", 0, artifact_sha256="a" * 64)
    e = {
        "verdict": "FAIL",
        "diff": {"counts": {"changed": 3, "missing": 0}, "right_rows_share": 0.5},
        "schedule_sha256": "b" * 64,
    }
    row = verdict_row(cell, "late_arrival", 7, e)
    assert row["changed"] == 3 and row["missing"] == 0 and row["right_rows_share"] == 0.5
    assert json.loads(row["record"]) == e
    assert row["record"] == json.dumps(e, sort_keys=True, separators=(",", ":"))


def test_lock_refuses_a_live_holder_and_takes_over_a_dead_one(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    (run.path / "sweep.lock").write_text(str(os.getppid()))  # a live process that is not us
    with pytest.raises(RunStoreError, match="another sweep"), run.lock():
        pass
    (run.path / "sweep.lock").write_text("999999999")  # no such process: a stale lock
    with run.lock():
        assert (run.path / "sweep.lock").read_text() == str(os.getpid())
    assert not (run.path / "sweep.lock").exists()
