"""Run directories: atomic files, content-addressed artifacts, journal folding, locks, bad files."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from arrivalbench.store import (
    Cell,
    RunDir,
    RunStoreError,
    check_new_run_path,
    sha256_text,
    verdict_row,
)


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


# --- a manifest that cannot be used is named, field by field ----------------------------------------


def _edit_manifest(run: RunDir, change) -> Path:
    path = run.path / "manifest.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "field",
    [
        "format",
        "harness_version",
        "engine",
        "engine_version",
        "suite_hash",
        "task_hashes",
        "base_seed",
        "arms",
        "config",
        "created_at",
    ],
)
def test_manifest_missing_a_field_names_the_file_and_the_field(tmp_path: Path, field: str) -> None:
    """Regression: a manifest without base_seed (or config, task_hashes, arms) opened, and the
    sweep crashed later with a KeyError, or silently used a default."""
    run = make_run(tmp_path / "run")
    path = _edit_manifest(run, lambda m: m.pop(field))
    with pytest.raises(RunStoreError) as caught:
        RunDir.open(run.path)
    assert str(caught.value).startswith(f"{path}: field '{field}' is missing; restore it")


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        (
            lambda m: m.update(base_seed="7"),
            "field 'base_seed' is a string (\"7\"), expected a seed",
        ),
        (lambda m: m.update(base_seed=7.5), "field 'base_seed' is a number (7.5)"),
        (lambda m: m.update(base_seed=True), "field 'base_seed' is a boolean (true)"),
        (lambda m: m.update(base_seed=-1), "field 'base_seed' is -1, expected a seed"),
        (lambda m: m.update(base_seed=2**64 + 5), f"field 'base_seed' is {2**64 + 5}"),
        (lambda m: m.update(config=None), "field 'config' is null, expected an object"),
        (lambda m: m.update(arms="gold"), "field 'arms' is a string (\"gold\")"),
        (lambda m: m.update(arms=["gold", 3]), "field 'arms[1]' is an integer (3)"),
        (lambda m: m.update(task_hashes=[]), "field 'task_hashes' is a list"),
        (lambda m: m.update(task_hashes={"t": None}), "field 'task_hashes.t' is null"),
        (lambda m: m.update(arm_info={"m": "x"}), "field 'arm_info.m' is a string"),
        (lambda m: m["config"].update(schedules=5), "field 'config.schedules' is an integer (5)"),
        (
            lambda m: m["config"].update(statement_timeout="10"),
            "field 'config.statement_timeout' is a string",
        ),
        (lambda m: m["config"].update(memory_limit=1), "field 'config.memory_limit' is an integer"),
        (lambda m: m.update(seed_commitment="x" * 64), "field 'seed_commitment' is a string"),
        (lambda m: m.update(seed_commitment=1), "field 'seed_commitment' is an integer"),
        (lambda m: m.update(regraded_from="run"), "field 'regraded_from' is a string"),
        (lambda m: m.update(suite_dirs="mine"), "field 'suite_dirs' is a string"),
        (lambda m: m.update(suite_dirs=["a", None]), "field 'suite_dirs[1]' is null"),
        (
            lambda m: m["config"].update(replay_timeout=None),
            "field 'config.replay_timeout' is null",
        ),
        (lambda m: m.update(format=True), "run format true, this harness reads 1"),
        (lambda m: m.update(format=2), "run format 2, this harness reads 1"),
    ],
)
def test_manifest_field_of_the_wrong_type_names_the_file_and_the_field(
    tmp_path: Path, change, phrase: str
) -> None:
    """Regression: base_seed "7" or 7.5 was silently turned into 7 by int(); a string for arms
    or config crashed later with a traceback."""
    run = make_run(tmp_path / "run")
    path = _edit_manifest(run, change)
    with pytest.raises(RunStoreError) as caught:
        RunDir.open(run.path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ") and phrase in message, message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("text", "phrase"),
    [
        ("{not json", "not JSON (line 1:"),
        ("[1, 2]", "holds a list, not a JSON object"),
        ("7", "an integer"),
    ],
)
def test_manifest_that_is_not_a_json_object_is_named(
    tmp_path: Path, text: str, phrase: str
) -> None:
    """Regression: a manifest holding a JSON list crashed RunDir.open with an AttributeError."""
    run = make_run(tmp_path / "run")
    (run.path / "manifest.json").write_text(text, encoding="utf-8")
    with pytest.raises(RunStoreError, match="restore it from a copy") as caught:
        RunDir.open(run.path)
    assert phrase in str(caught.value)


def test_manifest_without_the_later_arm_info_still_opens(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    _edit_manifest(run, lambda m: m.pop("arm_info"))
    assert RunDir.open(run.path).arm_info() == {}


# --- a damaged journal line that is not the torn last one ---------------------------------------------


def _timing(schedule: str) -> dict:
    return {
        "arm": "gold",
        "task": "daily_revenue",
        "sample": 0,
        "schedule": schedule,
        "wall_seconds": 0.1,
        "statement_seconds": 0.0,
    }


@pytest.mark.parametrize(
    ("garbage", "phrase"),
    [
        (b"{garbage\n", "not JSON"),
        (b"\xff\xfe\n", "not UTF-8 text"),
        (b"[1, 2]\n", "expected an object with 'verdict' and 'timing'"),
        (b'{"verdict": {}, "timing": {}}\n', "verdict: no 'arm'"),
    ],
)
def test_damaged_journal_line_names_the_line_and_keeps_the_journal(
    tmp_path: Path, garbage: bytes, phrase: str
) -> None:
    """Regression: a garbage line before the last one crashed every reader with a traceback."""
    run = make_run(tmp_path / "run")
    cell = run.cells()[0]
    run.append([verdict_row(cell, "snapshot", 7, entry())], [_timing("snapshot")])
    with open(run.journal_path, "ab") as handle:
        handle.write(garbage)
    run.append([verdict_row(cell, "backfill", 7, entry())], [_timing("backfill")])
    before = run.journal_path.read_bytes()
    for read in (run.verdicts, run.timings, run.done, run.compact):
        with pytest.raises(RunStoreError) as caught:
            read()
        message = str(caught.value)
        assert message.startswith(f"{run.journal_path}: line 2 is not a verdict row (")
        assert phrase in message and "move the journal aside" in message
    assert run.journal_path.read_bytes() == before
    assert not (run.path / "verdicts.parquet").exists()


def test_journal_row_with_a_field_of_the_wrong_type_is_named(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    row = verdict_row(run.cells()[0], "snapshot", 7, entry())
    run.append([{**row, "sample": "0"}], [_timing("snapshot")])
    run.append([{**row, "schedule": "backfill"}], [_timing("backfill")])
    with pytest.raises(
        RunStoreError, match=r"line 1 is not a verdict row \(verdict: 'sample' is a string"
    ):
        run.verdicts()


# --- where a new run may be written ---------------------------------------------------------------------


def test_new_run_path_must_be_new_or_empty(tmp_path: Path) -> None:
    check_new_run_path(tmp_path / "new")
    (tmp_path / "empty").mkdir()
    check_new_run_path(tmp_path / "empty")
    (tmp_path / "file").write_text("x")
    with pytest.raises(RunStoreError, match="exists and is not a folder"):
        check_new_run_path(tmp_path / "file")
    with pytest.raises(RunStoreError, match="not empty; give --out a new folder name"):
        check_new_run_path(tmp_path)
    make_run(tmp_path / "run")
    with pytest.raises(RunStoreError, match="a run already exists here"):
        check_new_run_path(tmp_path / "run", "-o")


def test_journal_row_written_before_seed_commitment_existed_is_read(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    row = verdict_row(run.cells()[0], "snapshot", 7, entry())
    del row["seed_commitment"]
    run.append([row], [_timing("snapshot")])
    (read,) = run.verdicts().to_pylist()
    assert read["seed_commitment"] is None and read["schedule"] == "snapshot"


# --- a run directory is input, not truth (issue 21) -------------------------------------------------


def test_regression_manifest_limits_may_only_tighten_the_defaults(tmp_path: Path) -> None:
    """Regression: a crafted manifest raised memory_limit to 4GB (a worker reached 4 GB RSS against
    1 GB + 768 MB) and grade-run used it; now a looser limit takes an explicit flag."""
    run = make_run(tmp_path / "run")
    _edit_manifest(run, lambda m: m["config"].update(memory_limit="4GB", statement_timeout=2.0))
    opened = RunDir.open(run.path)
    with pytest.raises(RunStoreError, match=r"--memory-limit 4GB to grant that explicitly") as e:
        opened.limits()
    assert "\n" not in str(e.value)
    granted = opened.limits({"memory_limit": "4GB", "statement_timeout": None})
    assert (granted.memory_limit, granted.statement_timeout) == ("4GB", 2.0)  # 2 s: tighter, kept


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        (
            lambda m: m["config"].update(statement_timeout=1e7),
            "field 'config.statement_timeout' is 10000000.0, expected a number of seconds up to 3600",
        ),
        (
            lambda m: m["config"].update(memory_limit="1PB"),
            "field 'config.memory_limit' is a string",
        ),
        (
            lambda m: m["config"].update(max_script_bytes=-1),
            "field 'config.max_script_bytes' is -1",
        ),
        (lambda m: m["config"].update(surprise=1), "field 'config.surprise' is not a field"),
        (lambda m: m.update(extra={}), "field 'extra' is not a field of run format 1"),
        (lambda m: m.update(arms=["../../x"]), "field 'arms[0]' is a string"),
    ],
)
def test_regression_manifest_numbers_are_bounded_and_fields_known(
    tmp_path: Path, change, phrase: str
) -> None:
    """Regression: `statement_timeout: 1e7` crashed grade-run with an OverflowError traceback, and
    unknown fields were silently carried along."""
    run = make_run(tmp_path / "run")
    _edit_manifest(run, change)
    with pytest.raises(RunStoreError) as caught:
        RunDir.open(run.path)
    assert phrase in str(caught.value) and "\n" not in str(caught.value), str(caught.value)


@pytest.mark.parametrize("name", ["/abs/path", "../../x", "..", "a/b", "", "gold\x00"])
def test_regression_names_that_leave_the_run_are_refused(tmp_path: Path, name: str) -> None:
    """Regression: an Inspect arm named /abs/path or ../../x made import-inspect write outside
    --out; one validator now refuses it for every importer and for the store."""
    from arrivalbench.store import check_name

    with pytest.raises(RunStoreError, match="an arm name is"):
        check_name("arm", name)
    with pytest.raises(RunStoreError):
        RunDir(tmp_path / "run").transcript_path(name, "daily_revenue", 0)
    with pytest.raises(RunStoreError):
        make_run(tmp_path / "run", [Cell(name, "daily_revenue", 0)])
    assert not (tmp_path / "run").exists() or not any((tmp_path / "run").rglob("*.json"))


def test_regression_a_symlinked_transcript_is_refused_not_read(tmp_path: Path) -> None:
    """Regression: `report` embedded a symlinked transcript's host file in report.html."""
    from arrivalbench.report.analysis import transcript

    run = make_run(tmp_path / "run")
    secret = tmp_path / "host-secret.json"
    secret.write_text('{"user": "the host file"}', encoding="utf-8")
    link = run.path / "transcripts" / "gold" / "daily_revenue" / "0.json"
    link.parent.mkdir(parents=True)
    link.symlink_to(secret)
    with pytest.raises(RunStoreError, match="a symlink inside the run directory") as caught:
        transcript(run, "gold", "daily_revenue", 0)
    assert "\n" not in str(caught.value)


@pytest.mark.parametrize("where", ["transcripts/gold/daily_revenue/0.json", "transcripts/gold"])
def test_regression_copy_ungraded_refuses_symlinks(tmp_path: Path, where: str) -> None:
    """Regression: `regrade --out` copied a symlinked host file into the new run."""
    run = make_run(tmp_path / "run")
    host = tmp_path / "host"
    host.mkdir()
    (host / "daily_revenue").mkdir()
    (host / "daily_revenue" / "0.json").write_text("{}", encoding="utf-8")
    link = run.path / where
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(host / "daily_revenue" / "0.json" if where.endswith(".json") else host)
    with pytest.raises(RunStoreError, match="a symlink inside the run directory"):
        run.copy_ungraded(tmp_path / "copy")
    assert not (tmp_path / "copy" / "manifest.json").exists()


def test_regression_a_symlinked_artifact_or_manifest_is_refused(tmp_path: Path) -> None:
    run = make_run(tmp_path / "run")
    (sha,) = {c.artifact_sha256 for c in run.cells() if c.artifact_sha256}
    artifact = run.path / "artifacts" / f"{sha}.sql"
    host = tmp_path / "host.sql"
    host.write_bytes(artifact.read_bytes())
    artifact.unlink()
    artifact.symlink_to(host)
    with pytest.raises(RunStoreError, match="a symlink"):
        run.artifact(sha)
    manifest = run.path / "manifest.json"
    (tmp_path / "m.json").write_bytes(manifest.read_bytes())
    manifest.unlink()
    manifest.symlink_to(tmp_path / "m.json")
    with pytest.raises(RunStoreError, match="a symlink"):
        RunDir.open(run.path)
