"""`new-task`: a scaffold folder that loads and passes the gate, and refusals that say what to fix."""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path

import pytest

from arrivalbench.audit import EXTRA_SEEDS
from arrivalbench.errors import ArrivalBenchError, UnknownNameError, UsageError
from arrivalbench.gate import gate_task
from arrivalbench.grade import Grader
from arrivalbench.scaffold import new_task, new_task_dir
from arrivalbench.seeds import GATE_SEED_COUNT
from arrivalbench.spec import SUITE_DIR, SUITE_PATH_ENV, folder_hash, load_task, suite_hash


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
    assert task.spec.order_sensitive is False
    assert all(result.earned_by[h] for h in task.spec.hazards), result.earned_by


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


def test_cli_new_task_creates_then_refuses_a_duplicate(cli, tmp_path):
    done = cli("new-task", "events_per_day", "--suite-dir", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[:4] == [
        f"created {tmp_path / 'events_per_day'}",
        f"check it with: arrivalbench gate --suite-dir {tmp_path} --tasks events_per_day",
        "check its second oracle (oracle.py) with: "
        f"arrivalbench audit --suite-dir {tmp_path} --tasks events_per_day",
        "files that change together:",  # then one line each (issue 22, item 8)
    ]
    assert load_task(tmp_path / "events_per_day").id == "events_per_day"

    again = cli("new-task", "events_per_day", "--suite-dir", tmp_path)
    assert again.returncode == 2
    assert "Traceback" not in again.stderr
    (line,) = again.stderr.splitlines()
    assert line.startswith("arrivalbench: error: ")
    assert "already exists" in line
    assert again.stdout == ""


@pytest.mark.parametrize("generator", ["ledger", "clickstream"])
def test_scaffold_lists_the_chosen_generators_real_columns(tmp_path, generator):
    """The scaffold's task.yaml declared event_id and ts_event only, whatever the generator, and
    named no other column it could declare."""
    from arrivalbench.generators import get_generator

    folder = new_task("t", generator=generator, suite_dir=tmp_path)
    spec = (folder / "task.yaml").read_text(encoding="utf-8")
    made = get_generator(generator)
    for column, sql_type in made.columns(made.params()).items():
        assert f"#   {column}: {sql_type}\n" in spec
    assert f"The {generator} generator produces these columns" in spec


def test_cli_new_task_prints_the_files_that_change_together(cli, tmp_path):
    from arrivalbench.scaffold import CHANGE_TOGETHER

    done = cli("new-task", "t", "--suite-dir", tmp_path / "mine")
    assert done.returncode == 0, done.stderr
    after = done.stdout.split("files that change together:\n", 1)[1]
    printed = [line.split(":", 1)[0].strip() for line in after.splitlines()]
    assert printed == [files for files, _ in CHANGE_TOGETHER if files != "existing.sql"]
    repair = cli("new-task", "r", "--mode", "repair", "--suite-dir", tmp_path / "mine")
    assert "  existing.sql: " in repair.stdout


# --- where new-task writes ------------------------------------------------------------------------


def _builtin_state() -> tuple[list[str], str]:
    return sorted(p.name for p in SUITE_DIR.iterdir()), suite_hash()


def test_new_task_without_a_suite_dir_refuses_and_writes_nothing(cli, tmp_path):
    """From a wheel install, `new-task NAME` wrote into site-packages (the built-in suite) and
    silently changed the suite hash of every later run. Without a folder it now refuses."""
    before = _builtin_state()
    done = cli("new-task", "stray_task", cwd=tmp_path)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith("arrivalbench: error: new-task writes only into a folder you name")
    assert "pass --suite-dir DIR" in line and SUITE_PATH_ENV in line
    assert done.stdout == ""
    assert not (SUITE_DIR / "stray_task").exists()
    assert _builtin_state() == before
    assert list(tmp_path.iterdir()) == []


def test_new_task_into_a_new_folder_leaves_the_builtin_hash_unchanged(cli, tmp_path):
    before = _builtin_state()
    mine = tmp_path / "my_tasks"  # does not exist yet: new-task creates it
    done = cli("new-task", "mine", "--suite-dir", mine)
    assert done.returncode == 0, done.stderr
    assert load_task(mine / "mine").id == "mine"
    assert _builtin_state() == before
    assert suite_hash([mine]) != before[1]


def test_new_task_writes_into_the_first_entry_of_the_environment_variable(cli, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    done = cli("new-task", "mine", env={SUITE_PATH_ENV: f"{first}{os.pathsep}{second}"})
    assert done.returncode == 0, done.stderr
    assert (first / "mine" / "task.yaml").is_file() and not second.exists()
    assert f"check it with: arrivalbench gate --suite-dir {first} --tasks mine" in done.stdout


def test_new_task_refuses_an_id_of_the_builtin_suite(tmp_path):
    with pytest.raises(UsageError, match=r"task 'daily_revenue' already exists at .*daily_revenue"):
        new_task("daily_revenue", suite_dir=tmp_path)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("kwargs", "phrase"),
    [
        ({"suite_dir": SUITE_DIR}, "is the built-in suite"),
        ({"suite_dir": Path("x"), "builtin": True}, "not both"),
    ],
)
def test_new_task_dir_refuses_the_builtin_suite_unless_asked(kwargs, phrase):
    with pytest.raises(UsageError, match=phrase):
        new_task_dir(**kwargs)


def test_builtin_flag_is_for_source_checkouts_only(monkeypatch):
    monkeypatch.setattr("arrivalbench.scaffold.builtin_is_source_checkout", lambda: False)
    with pytest.raises(UsageError, match=r"only a source checkout may do; .* --suite-dir DIR"):
        new_task_dir(builtin=True)
    monkeypatch.setattr("arrivalbench.scaffold.builtin_is_source_checkout", lambda: True)
    assert new_task_dir(builtin=True) == SUITE_DIR


@pytest.mark.slow
def test_printed_check_command_admits_the_new_task(cli, tmp_path):
    done = cli("new-task", "events_mine", "--suite-dir", tmp_path / "mine")
    assert done.returncode == 0, done.stderr
    (hint,) = [line for line in done.stdout.splitlines() if line.startswith("check it with: ")]
    program, *args = shlex.split(hint.removeprefix("check it with: "))
    assert program == "arrivalbench"
    assert args == ["gate", "--suite-dir", str(tmp_path / "mine"), "--tasks", "events_mine"]
    gated = cli(*args)
    assert gated.returncode == 0, gated.stdout + gated.stderr
    assert "admitted events_mine (create, easy)" in gated.stdout


def test_printed_audit_command_finds_the_new_tasks_oracles_in_agreement(cli, tmp_path):
    done = cli("new-task", "events_audited", "--suite-dir", tmp_path / "mine", "--mode", "repair")
    assert done.returncode == 0, done.stderr
    prefix = "check its second oracle (oracle.py) with: "
    (hint,) = [line for line in done.stdout.splitlines() if line.startswith(prefix)]
    program, *args = shlex.split(hint.removeprefix(prefix))
    assert program == "arrivalbench"
    assert args == ["audit", "--suite-dir", str(tmp_path / "mine"), "--tasks", "events_audited"]
    audited = cli(*args, "--json")
    assert audited.returncode == 0, audited.stdout + audited.stderr
    (task,) = json.loads(audited.stdout)["tasks"]
    assert (task["task"], task["agrees"], task["logs_checked"], task["kappa"]) == (
        "events_audited",
        True,
        2 * (GATE_SEED_COUNT + EXTRA_SEEDS),  # two logs a seed: the gate seeds and 5 more
        1.0,
    )
