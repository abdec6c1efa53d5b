"""`new-task`: a scaffold folder that loads and passes the gate, and refusals that say what to fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from arrivalbench.errors import ArrivalBenchError, UnknownNameError, UsageError
from arrivalbench.gate import gate_task
from arrivalbench.grade import Grader
from arrivalbench.scaffold import new_task
from arrivalbench.spec import folder_hash, load_task

SCRIPT = Path(sys.executable).parent / "arrivalbench"
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "arrivalbench.cli"]


def cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    return subprocess.run(
        [*COMMAND, *map(str, args)], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.fixture(scope="module")
def grader():
    with Grader() as g:
        yield g


@pytest.mark.slow
def test_new_task_loads_and_is_admitted(tmp_path, grader):
    folder = new_task("events_per_day", suite_dir=tmp_path)
    assert folder == tmp_path / "events_per_day"
    task = load_task(folder)
    assert (task.id, task.spec.mode, task.spec.target.name) == (
        "events_per_day",
        "create",
        "events_per_day",
    )
    assert task.existing_sql is None
    assert not (folder / "existing.sql").exists()
    assert set(task.controls) == {c.file for c in task.spec.controls} and task.controls
    result = gate_task(task, grader)
    assert [str(v) for v in result.violations] == []
    assert result.admitted


@pytest.mark.parametrize("mode", ["modify", "repair"])
def test_modify_and_repair_write_existing_sql(tmp_path, mode):
    folder = new_task(f"events_{mode}", mode=mode, suite_dir=tmp_path)
    task = load_task(folder)
    assert task.spec.mode == mode
    assert (folder / "existing.sql").is_file()
    assert task.existing_sql == (folder / "existing.sql").read_text(encoding="utf-8")
    assert f"CREATE OR REPLACE TABLE events_{mode}" in task.existing_sql


@pytest.mark.slow
def test_modify_scaffold_is_admitted(tmp_path, grader):
    result = gate_task(
        load_task(new_task("events_modify", mode="modify", suite_dir=tmp_path)), grader
    )
    assert [str(v) for v in result.violations] == []


REFUSALS = {
    # case: (arguments, error class, phrase in the message)
    "existing name": ({"name": "taken"}, UsageError, "already exists; choose another name"),
    "bad name": (
        {"name": "Bad-Name"},
        UsageError,
        "use lower-case letters, digits and underscores",
    ),
    "bad mode": (
        {"name": "fresh", "mode": "rewrite"},
        UsageError,
        "expected create, modify or repair",
    ),
    "unknown generator": (
        {"name": "fresh", "generator": "salez"},
        UnknownNameError,
        "Unknown generator kind 'salez'. Did you mean 'sales'?",
    ),
}


@pytest.mark.parametrize("case", list(REFUSALS))
def test_new_task_refuses_with_a_clear_message(tmp_path, case):
    kwargs, error, phrase = REFUSALS[case]
    new_task("taken", suite_dir=tmp_path)
    before = {p.name: folder_hash(p) for p in tmp_path.iterdir()}
    with pytest.raises(error) as raised:
        new_task(suite_dir=tmp_path, **kwargs)
    assert isinstance(raised.value, ArrivalBenchError)
    assert phrase in str(raised.value)
    assert "\n" not in str(raised.value)
    assert {p.name: folder_hash(p) for p in tmp_path.iterdir()} == before  # nothing written


def test_cli_new_task_creates_then_refuses_a_duplicate(tmp_path):
    done = cli("new-task", "events_per_day", "--suite-dir", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"created {tmp_path / 'events_per_day'}"
    assert load_task(tmp_path / "events_per_day").id == "events_per_day"

    again = cli("new-task", "events_per_day", "--suite-dir", tmp_path)
    assert again.returncode == 2
    assert "Traceback" not in again.stderr
    (line,) = again.stderr.splitlines()
    assert line.startswith("arrivalbench: error: ")
    assert "already exists" in line
    assert again.stdout == ""
