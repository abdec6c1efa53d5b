"""The console script, run as a user runs it: output shapes, exit codes, and one-line user errors."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from arrivalbench.grade import Grader, dumps
from arrivalbench.scaffold import new_task
from arrivalbench.schedules import default_schedules
from arrivalbench.seeds import DEFAULT_SEED
from arrivalbench.spec import SUITE_DIR, SUITE_PATH_ENV, get_task
from arrivalbench.store import RunDir
from conftest import CliResult

SCRIPT = Path(sys.executable).parent / "arrivalbench"
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "arrivalbench.cli"]
STABLE = ("daily_revenue", "customer_state")
DEDUP_HISTORY_ONLY = "controls/dedup_history_only.sql"


@pytest.fixture(scope="module")
def task():
    return get_task("daily_revenue")


@pytest.fixture(scope="module")
def gold(task) -> Path:
    return task.folder / "gold.sql"


@pytest.fixture(scope="module")
def control(task) -> Path:
    return task.folder / DEDUP_HISTORY_ONLY


# --- the console script itself: a subprocess, since its exit codes are the point ------------------


@pytest.mark.slow
def test_console_script_and_python_m_exit_0_for_help_and_2_for_a_user_error(tmp_path):
    """The installed entry point (arrivalbench.cli:main), `python -m arrivalbench` and
    `python -m arrivalbench.cli` all run the same app: help exits 0, a missing pipeline is one
    line on stderr and exit code 2."""
    import subprocess

    env = {**os.environ, "NO_COLOR": "1"}
    for command in (COMMAND, [sys.executable, "-m", "arrivalbench"]):
        done = subprocess.run([*command, "--help"], capture_output=True, text=True, env=env)
        assert done.returncode == 0, done.stderr
        assert "new-task" in done.stdout and "generators" in done.stdout
        missing = tmp_path / "missing.sql"
        done = subprocess.run(
            [*command, "grade", "-t", "daily_revenue", "-p", str(missing)],
            capture_output=True,
            text=True,
            env=env,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.strip().splitlines() == [
            f"arrivalbench: error: {missing}: pipeline file not found; pass the path of a .sql file."
        ]


def test_loading_the_cli_imports_none_of_the_grading_machinery():
    """Every command module imports its machinery inside the command: --help and a typo are
    answered without DuckDB, Arrow, numpy, sqlglot or pydantic (issue 23's start-up)."""
    import subprocess

    heavy = ("duckdb", "pyarrow", "numpy", "sqlglot", "pydantic", "yaml", "scipy")
    code = f"import sys, arrivalbench.cli; print([m for m in {heavy!r} if m in sys.modules])"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


# --- tasks ----------------------------------------------------------------------------------------


def test_tasks_lists_the_built_in_tasks(cli):
    done = cli("tasks")
    assert done.returncode == 0, done.stderr
    for task_id in STABLE:
        assert task_id in done.stdout


def test_tasks_json_lists_every_task_with_its_declarations(cli):
    done = cli("tasks", "--json")
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert isinstance(rows, list)
    for row in rows:
        assert {"id", "mode", "difficulty", "scenario", "hazards", "controls"} <= set(row)
        assert row["mode"] in ("create", "modify", "repair")
        assert row["difficulty"] in ("easy", "medium", "hard")
        assert isinstance(row["hazards"], list)
        for c in row["controls"]:
            assert set(c) == {"file", "fails"} and set(c["fails"]) <= set(row["hazards"])
        # Every declaration is listed in some control's fails (the gate checks it is earned).
        assert set(row["hazards"]) == {h for c in row["controls"] for h in c["fails"]}
        assert isinstance(row["order_sensitive"], bool)
    by_id = {row["id"]: row for row in rows}
    assert len(by_id) == len(rows)
    for task_id in STABLE:
        spec = get_task(task_id).spec
        row = by_id[task_id]
        assert (row["mode"], row["difficulty"], row["scenario"]) == (
            spec.mode,
            spec.difficulty,
            spec.scenario,
        )
        assert row["hazards"] == list(spec.hazards)
        assert row["controls"] == [{"file": c.file, "fails": list(c.fails)} for c in spec.controls]


def test_tasks_hash_is_one_sha256(cli):
    done = cli("tasks", "--hash")
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"[0-9a-f]{64}\n", done.stdout)


def test_tasks_off_a_terminal_never_cuts_a_task_id_at_a_narrow_width(cli):
    """rich fitted the table to the console's 80 (or $COLUMNS) columns even in a pipe, so a long
    task id came out wrapped over two lines or cut with an ellipsis."""
    done = cli("tasks", env={"COLUMNS": "40"})
    assert done.returncode == 0, done.stderr
    for task_id in (*STABLE, "rolling_orders_3d_modify", "funnel_conversion_modify"):
        assert re.search(rf"\b{task_id}\b", done.stdout), task_id
    assert "…" not in done.stdout


def test_print_table_widens_a_table_off_a_terminal_and_leaves_a_narrow_one_as_is():
    import io

    from rich.console import Console
    from rich.table import Table

    from arrivalbench.cli.output import print_table

    name = "controls/a_rather_long_artifact_name_of_a_negative_control.sql"
    table = Table(box=None)
    table.add_column("artifact")
    table.add_column("snapshot")
    table.add_row(name, "PASS")
    narrow = Console(file=io.StringIO(), width=20)
    print_table(table, narrow)
    assert name in narrow.file.getvalue()
    small = Table(box=None)
    small.add_column("a")
    small.add_row("b")
    fits = Console(file=io.StringIO(), width=20)
    print_table(small, fits)
    assert fits.file.getvalue().splitlines() == [" a ", " b "]


# --- generators -----------------------------------------------------------------------------------


def test_generators_lists_every_generator_with_the_columns_and_params_it_declares(cli):
    from arrivalbench.generators import generator_kinds, get_generator

    done = cli("generators", "--json")
    assert done.returncode == 0, done.stderr
    listed = {g["kind"]: g for g in json.loads(done.stdout)}
    assert sorted(listed) == generator_kinds()
    for kind, entry in listed.items():
        generator = get_generator(kind)
        assert entry["columns"] == {"event_id": "BIGINT"} | generator.columns(generator.params())
        assert [p["name"] for p in entry["parameters"]] == list(generator.params.model_fields)
    events = next(p for p in listed["sales"]["parameters"] if p["name"] == "events")
    assert events == {
        "name": "events",
        "type": "int",
        "default": 300,
        "required": False,
        "bounds": {"ge": 10, "le": 10_000_000},
    }
    table = cli("generators")
    assert table.returncode == 0, table.stderr
    for kind, entry in listed.items():
        assert kind in table.stdout
        for column, sql_type in entry["columns"].items():
            assert f"{column} {sql_type}" in table.stdout


# --- grade ----------------------------------------------------------------------------------------


def test_grade_json_on_the_gold(cli, task, gold):
    done = cli("grade", "--task", "daily_revenue", "--pipeline", gold, "--json")
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert {
        "format",
        "task",
        "artifact_sha256",
        "engine",
        "engine_version",
        "harness_version",
        "seed",
        "verdicts",
    } == set(record)
    assert record["task"] == "daily_revenue"
    assert record["artifact_sha256"] == __import__("hashlib").sha256(gold.read_bytes()).hexdigest()
    assert list(record["verdicts"]) == sorted(
        default_schedules(task)
    )  # sorted keys: the canonical form
    assert all(entry["verdict"] == "PASS" for entry in record["verdicts"].values())
    assert done.stdout == dumps(record)


@pytest.mark.slow
def test_grade_json_is_the_same_bytes_as_grading_in_process(cli, task, control):
    names = ["snapshot", "duplicate_delivery"]
    done = cli(
        "grade", "-t", "daily_revenue", "-p", control, "--schedules", ",".join(names), "--json"
    )
    assert done.returncode == 0, done.stderr
    with Grader() as grader:
        record, _ = grader.grade(task, control.read_text(encoding="utf-8"), names)
    assert done.stdout == dumps(record)
    assert record["verdicts"]["duplicate_delivery"]["verdict"] == "FAIL"


def test_grade_prints_a_table_and_the_replay_command_for_a_failure(cli, control):
    done = cli(
        "grade", "-t", "daily_revenue", "-p", control, "--schedules", "snapshot,duplicate_delivery"
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert any("snapshot" in line and "PASS" in line for line in lines)
    assert any(
        "duplicate_delivery" in line and "FAIL" in line and "changed" in line for line in lines
    )
    assert "Replay one of these with:" in done.stdout
    assert (
        f"arrivalbench grade --task daily_revenue --pipeline {control} --schedules duplicate_delivery"
        in done.stdout
    )


def test_grade_of_a_gold_prints_no_replay_hint(cli, gold):
    done = cli("grade", "-t", "daily_revenue", "-p", gold, "--schedules", "snapshot")
    assert done.returncode == 0, done.stderr
    assert "PASS" in done.stdout
    assert "Replay" not in done.stdout


# --- untrusted text in the output: shown, never obeyed (terminal.py) -----------------------------

# An engine message with the three escapes issue 21 names, and Rich markup, each a short word so
# that the table's folding cannot split it.
HOSTILE_ERROR = (
    "SELECT error('osc52: ' || chr(27) || ']52;c;eA==' || chr(7) || ' clear: ' || chr(27) || "
    "'[2J link: ' || chr(27) || ']8;;http://e' || chr(27) || '\\ markup: [/] [bold]b[/bold]');\n"
)
SHOWN_ERROR = (
    "\\x1b]52;c;eA==\\x07",
    "\\x1b[2J",
    "\\x1b]8;;http://e\\x1b\\",
    "[/]",
    "[bold]b[/bold]",
)


@pytest.mark.slow
def test_regression_escape_sequences_in_an_engine_message_reached_grades_stdout(cli, tmp_path):
    """OSC 52 (set the clipboard), clear-screen and OSC 8 (a hyperlink) from SELECT error(...)
    were written to the terminal as they came, and `[/]` in the message raised MarkupError."""
    pipeline = tmp_path / "hostile.sql"
    pipeline.write_text(HOSTILE_ERROR, encoding="utf-8")
    result = cli(
        "grade", "-t", "daily_revenue", "-p", pipeline, "--schedules", "snapshot", "--no-cache"
    )
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    for shown in SHOWN_ERROR:
        assert shown in result.output
    assert "Replay one of these with:" in result.output
    record = json.loads(
        cli(
            "grade", "-t", "daily_revenue", "-p", pipeline, "--schedules", "snapshot", "--json"
        ).output
    )
    assert "\x1b]52;c;eA==\x07" in record["verdicts"]["snapshot"]["message"]  # the engine's words


@pytest.mark.slow
def test_regression_rich_markup_in_a_file_name_was_read_as_markup(cli, tmp_path, gold, monkeypatch):
    monkeypatch.chdir(tmp_path)
    shutil.copy(gold, tmp_path / "[bold]p.sql")
    result = cli("grade", "-t", "daily_revenue", "-p", "[bold]p.sql", "--schedules", "snapshot")
    assert result.exit_code == 0, result.output
    assert "[bold]p.sql" in result.output


@pytest.mark.slow
def test_regression_markup_and_escapes_in_a_target_value_crashed_explain(cli, tmp_path):
    """The story table printed the pipeline's values as Rich markup: `[/]` raised MarkupError."""
    pipeline = tmp_path / "value.sql"
    pipeline.write_text(
        "CREATE OR REPLACE TABLE daily_revenue AS SELECT store_id, CAST(ts_event AS DATE) AS day, "
        "'[/] [link=http://e]l ' || chr(27) || ']52;c;eA==' || chr(7) AS revenue, "
        "count(*) AS orders FROM sales_batch GROUP BY ALL;\n",
        encoding="utf-8",
    )
    result = cli(
        "explain", "-t", "daily_revenue", "-p", pipeline, "-s", "snapshot",
        "--budget-seconds", "20", "--max-replays", "40",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "\x1b" not in result.output and "\x07" not in result.output
    assert "[/] [link=http://e]l" in result.output and "\\x1b]52;c;eA==\\x07" in result.output
    assert "Diagnosis:" in result.output


def test_regression_an_escape_in_a_user_error_reached_stderr(cli):
    done = cli("grade", "--task", "x\x1b[2J\x1b]52;c;eA==\x07", "-p", "none.sql")
    assert_one_line_user_error(done, "Unknown task 'x\\x1b[2J\\x1b]52;c;eA==\\x07'")


def test_regression_escapes_in_a_gate_violation_reached_the_terminal(cli, tmp_path):
    """A task author's oracle.sql raising an error with ESC sequences and markup: gate printed
    the violation as it came."""
    folder = tmp_path / "my_tasks"
    new_task("hostile_oracle", suite_dir=folder)
    (folder / "hostile_oracle" / "oracle.sql").write_text(HOSTILE_ERROR, encoding="utf-8")
    done = cli("gate", "--suite-dir", folder, "--tasks", "hostile_oracle", "--jobs", "1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    for shown in SHOWN_ERROR:
        assert shown in done.stdout


def test_schedule_file_written_by_schedule_replays_the_same_schedule(cli, tmp_path, control):
    out = tmp_path / "dup.json"
    made = cli("schedule", "-t", "daily_revenue", "-s", "duplicate_delivery", "--out", out)
    assert made.returncode == 0, made.stderr
    assert made.stdout == ""
    assert made.stderr.startswith(f"wrote {out}")
    data = json.loads(out.read_text(encoding="utf-8"))
    assert (data["name"], data["task"]) == ("duplicate_delivery", "daily_revenue")
    assert data["deliveries"] and all(d["event_ids"] for d in data["deliveries"])
    assert not out.with_name(out.name + ".tmp").exists()

    replayed = cli("grade", "-t", "daily_revenue", "-p", control, "--schedule-file", out, "--json")
    named = cli(
        "grade", "-t", "daily_revenue", "-p", control, "--schedules", "duplicate_delivery", "--json"
    )
    assert replayed.returncode == named.returncode == 0, replayed.stderr + named.stderr
    from_file = json.loads(replayed.stdout)["verdicts"]
    by_name = json.loads(named.stdout)["verdicts"]
    assert list(from_file) == ["duplicate_delivery"]
    assert from_file == by_name
    assert from_file["duplicate_delivery"]["verdict"] == "FAIL"


def test_schedule_to_stdout_is_json(cli):
    done = cli("schedule", "-t", "customer_state", "-s", "crash_retry")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["name"] == "crash_retry"
    assert sum(1 for d in data["deliveries"] if d["crash"]) > 0


# --- bad input: exit 2, one line on stderr, no traceback -----------------------------------------


@pytest.fixture(scope="module")
def crash_retry_file(cli, tmp_path_factory) -> Path:
    """A real crash_retry schedule file of daily_revenue, written by the CLI once per module."""
    path = tmp_path_factory.mktemp("schedules") / "crash_retry.json"
    done = cli("schedule", "-t", "daily_revenue", "-s", "crash_retry", "--out", path)
    assert done.returncode == 0, done.stderr
    return path


def _broken(tmp_path: Path, good: Path, change) -> Path:
    """A copy of a good schedule file with one field broken by `change`."""
    data = json.loads(good.read_text(encoding="utf-8"))
    change(data)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(data), encoding="utf-8")
    return bad


def _bad_input(name: str, tmp_path: Path, gold: Path, good: Path) -> tuple[list[str | Path], str]:
    """(arguments, a phrase the error line must contain) for one kind of bad input."""
    grade = ["grade", "-t", "daily_revenue", "-p"]

    if name == "unknown task":
        return ["grade", "-t", "daily_revenu", "-p", gold], "Did you mean 'daily_revenue'?"
    if name == "missing pipeline":
        return [*grade, tmp_path / "nope.sql"], "not found"
    if name == "pipeline is a directory":
        return [*grade, tmp_path], "not a file"
    if name == "not UTF-8":
        (tmp_path / "latin1.sql").write_bytes("SELECT 'caf\xe9';".encode("latin-1"))
        return [*grade, tmp_path / "latin1.sql"], "UTF-8"
    if name == "empty":
        (tmp_path / "empty.sql").write_text("", encoding="utf-8")
        return [*grade, tmp_path / "empty.sql"], "empty"
    if name == "comments only":
        (tmp_path / "comments.sql").write_text("-- TODO\n/* later */\n", encoding="utf-8")
        return [*grade, tmp_path / "comments.sql"], "only comments"
    if name == "unknown schedule":
        return [*grade, gold, "--schedules", "snapshot,late_arival"], "Did you mean 'late_arrival'?"
    if name == "unknown schedule to build":
        return ["schedule", "-t", "daily_revenue", "-s", "shuffle"], "Unknown schedule 'shuffle'"
    if name == "schedule file not JSON":
        (tmp_path / "s.json").write_text("{not json", encoding="utf-8")
        return [*grade, gold, "--schedule-file", tmp_path / "s.json"], "not JSON"
    if name == "schedule file missing":
        return [*grade, gold, "--schedule-file", tmp_path / "none.json"], "cannot read"
    if name == "schedule file without deliveries key":
        return [
            *grade,
            gold,
            "--schedule-file",
            _broken(tmp_path, good, lambda d: d.pop("deliveries")),
        ], "malformed"
    if name == "schedule file of another format":
        return [
            *grade,
            gold,
            "--schedule-file",
            _broken(tmp_path, good, lambda d: d.update(format=99)),
        ], "format"
    if name == "schedule file for another task":
        bad = _broken(tmp_path, good, lambda d: d.update(task="customer_state"))
        return [*grade, gold, "--schedule-file", bad], "customer_state"
    if name == "schedule file with an unknown event":
        bad = _broken(tmp_path, good, lambda d: d["deliveries"][0]["event_ids"].append(-5))
        return [*grade, gold, "--schedule-file", bad], "malformed"
    if name == "schedule file with a foreign log":
        bad = _broken(tmp_path, good, lambda d: d["log"].update(fingerprint="0" * 64))
        return [*grade, gold, "--schedule-file", bad], "fingerprint"
    if name == "empty schedule list":
        return [*grade, gold, "--schedules", ",,"], "--schedules ',,': names no schedule"
    if name == "blank schedule list":
        return [*grade, gold, "--schedules", " "], "--schedules ' ': names no schedule"
    if name == "schedule file with a repeated batch id":
        bad = _broken(tmp_path, good, lambda d: d["deliveries"][1].update(batch_id=1))
        return [*grade, gold, "--schedule-file", bad], "deliveries[1] (batch 1): batch id"
    if name == "schedule file with batch ids out of order":
        bad = _broken(tmp_path, good, lambda d: d["deliveries"][3].update(batch_id=2))
        return [*grade, gold, "--schedule-file", bad], "is not above batch 3"
    if name == "schedule file with a negative seed":
        bad = _broken(tmp_path, good, lambda d: d.update(seed=-1))
        return [*grade, gold, "--schedule-file", bad], "seed: a seed is an integer from 0"
    if name == "schedule file with a log seed beyond 64 bits":
        bad = _broken(tmp_path, good, lambda d: d["log"].update(seed=2**64 + 5))
        return [*grade, gold, "--schedule-file", bad], "log.seed: a seed is an integer from 0"
    if name == "schedule file without a log fingerprint":
        bad = _broken(tmp_path, good, lambda d: d["log"].pop("fingerprint"))
        return [*grade, gold, "--schedule-file", bad], "log.fingerprint: Field required"
    if name == "schedule file with deliveries as an object":
        bad = _broken(tmp_path, good, lambda d: d.update(deliveries={}))
        return [*grade, gold, "--schedule-file", bad], "deliveries: Input should be a valid list"
    if name == "schedule file with a string for a boolean":
        bad = _broken(tmp_path, good, lambda d: d["deliveries"][0].update(add_synthetic="no"))
        return [*grade, gold, "--schedule-file", bad], "deliveries[0].add_synthetic"
    if name == "schedule file with a misspelt field":
        bad = _broken(tmp_path, good, lambda d: d["deliveries"][0].update(omit_column=[]))
        return [*grade, gold, "--schedule-file", bad], "deliveries[0].omit_column: Extra inputs"
    if name == "schedule file with perturbation as a list":
        bad = _broken(tmp_path, good, lambda d: d.update(perturbation=[]))
        return [*grade, gold, "--schedule-file", bad], "perturbation:"
    if name == "non-positive timeout":
        return [*grade, gold, "--statement-timeout", "0"], "timeout"
    if name == "unreadable memory limit":
        return [*grade, gold, "--memory-limit", "lots"], "memory limit"
    raise AssertionError(name)


BAD_INPUTS = [
    "unknown task",
    "missing pipeline",
    "pipeline is a directory",
    "not UTF-8",
    "empty",
    "comments only",
    "unknown schedule",
    "unknown schedule to build",
    "schedule file not JSON",
    "schedule file missing",
    "schedule file without deliveries key",
    "schedule file of another format",
    "schedule file for another task",
    "schedule file with an unknown event",
    "schedule file with a foreign log",
    "empty schedule list",
    "blank schedule list",
    "schedule file with a repeated batch id",
    "schedule file with batch ids out of order",
    "schedule file with a negative seed",
    "schedule file with a log seed beyond 64 bits",
    "schedule file without a log fingerprint",
    "schedule file with deliveries as an object",
    "schedule file with a string for a boolean",
    "schedule file with a misspelt field",
    "schedule file with perturbation as a list",
    "non-positive timeout",
    "unreadable memory limit",
]


def assert_one_line_user_error(done: CliResult, phrase: str) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("arrivalbench: error: ")
    assert phrase in lines[0]
    assert done.stdout == ""


@pytest.mark.parametrize("name", BAD_INPUTS)
def test_bad_input_is_one_line_on_stderr_and_exit_2(cli, name, tmp_path, gold, crash_retry_file):
    args, phrase = _bad_input(name, tmp_path, gold, crash_retry_file)
    assert_one_line_user_error(cli(*args), phrase)


def test_schedule_file_with_an_overflowing_seed_is_a_user_error(
    cli, tmp_path, gold, crash_retry_file
):
    good = _broken(tmp_path, crash_retry_file, lambda d: None)
    text = re.sub(r'("seed": )\d+', r"\g<1>1e400", good.read_text(encoding="utf-8"), count=1)
    good.write_text(text, encoding="utf-8")
    assert_one_line_user_error(
        cli("grade", "-t", "daily_revenue", "-p", gold, "--schedule-file", good), "malformed"
    )


@pytest.mark.parametrize("omit", [["sales.no_such_column"], ["amount"]])
def test_schedule_file_with_a_bad_omitted_column_is_a_user_error(
    cli, tmp_path, gold, crash_retry_file, omit
):
    def change(data):
        data["deliveries"][0]["omit_columns"] = omit

    bad = _broken(tmp_path, crash_retry_file, change)
    assert_one_line_user_error(
        cli("grade", "-t", "daily_revenue", "-p", gold, "--schedule-file", bad), "omit"
    )


# --- gate -----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_gate_admits_daily_revenue(cli):
    done = cli("gate", "--tasks", "daily_revenue", "--seeds", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "admitted daily_revenue" in done.stdout
    assert "rejected" not in done.stdout.split("gate summary")[0]
    line = next(x for x in done.stdout.splitlines() if "admitted daily_revenue" in x)
    assert re.search(r"\[1/1, elapsed \d+:\d\d\]$", line.rstrip()), line  # progress, done


def test_schedule_file_with_an_impossible_crash_is_a_user_error(
    cli, tmp_path, gold, crash_retry_file
):
    def change(data):
        crashed = next(d for d in data["deliveries"] if d["crash"])
        crashed["crash"] = {"slot": 0, "of": 0}

    bad = _broken(tmp_path, crash_retry_file, change)
    assert_one_line_user_error(
        cli("grade", "-t", "daily_revenue", "-p", gold, "--schedule-file", bad), "crash"
    )


# --- regressions ----------------------------------------------------------------------------------


@pytest.mark.slow
def test_schedule_file_grade_recorded_the_default_seed_and_hinted_another_schedule(
    cli, tmp_path, control
):
    """Regression: `grade --schedule-file` recorded and printed the default --seed, not the file's,
    so its "Replay one of these with" hint (`--schedules NAME --seed 20260101`) replayed a different
    schedule than the file's."""
    path = tmp_path / "dup7.json"
    made = cli(
        "schedule", "-t", "daily_revenue", "-s", "duplicate_delivery", "--seed", 7, "-o", path
    )
    assert made.returncode == 0, made.stderr
    file_seed = json.loads(path.read_text(encoding="utf-8"))["seed"]
    graded = cli("grade", "-t", "daily_revenue", "-p", control, "--schedule-file", path, "--json")
    assert graded.returncode == 0, graded.stderr
    record = json.loads(graded.stdout)
    assert record["seed"] == file_seed != DEFAULT_SEED
    assert record["verdicts"]["duplicate_delivery"]["verdict"] == "FAIL"

    shown = cli("grade", "-t", "daily_revenue", "-p", control, "--schedule-file", path)
    assert shown.returncode == 0, shown.stderr
    assert f"seed {file_seed}" in shown.stdout and f"seed {DEFAULT_SEED}" not in shown.stdout
    hint = shown.stdout.split("Replay one of these with:")[1].strip().splitlines()[0]
    assert (
        hint
        == f"arrivalbench grade --task daily_revenue --pipeline {control} --schedule-file {path}"
    )
    replayed = cli(*hint.split()[1:], "--json")
    assert replayed.returncode == 0, replayed.stderr
    assert json.loads(replayed.stdout) == record


@pytest.fixture(scope="module")
def graded_run(tmp_path_factory) -> Path:
    """A graded one-task reference corpus (a development run)."""
    from arrivalbench.corpus import make_corpus
    from arrivalbench.sweep import sweep

    run = make_corpus(tmp_path_factory.mktemp("graded") / "run", task_ids=["daily_revenue"])
    sweep(run, workers=2)
    return run.path


@pytest.mark.slow
def test_regrade_never_read_its_verify_flag(cli, graded_run, tmp_path):
    """Regression: `regrade` declared --verify (default True) but never read it, so `regrade RUN`
    always verified and the flag could not be turned off. Now --verify compares, --out NEW writes a
    re-graded copy, and neither is one line naming both; the stored verdicts never change."""
    stored = {p.name: p.read_bytes() for p in graded_run.iterdir() if p.is_file()}
    neither = cli("regrade", graded_run)
    assert_one_line_user_error(neither, "--verify")
    assert "--out NEW_RUN" in neither.stderr

    copy = tmp_path / "again"
    done = cli("regrade", graded_run, "--out", copy, "--workers", 2)
    assert done.returncode == 0, done.stderr
    assert f"wrote {copy}" in done.stdout and "reproduced" not in done.stdout
    again = RunDir.open(copy)
    assert again.verdicts().equals(RunDir.open(graded_run).verdicts())
    assert again.manifest["regraded_from"]["path"] == str(graded_run.resolve())
    assert {p.name: p.read_bytes() for p in graded_run.iterdir() if p.is_file()} == stored

    verified = cli("regrade", graded_run, "--verify", "--workers", 2)
    assert verified.returncode == 0, verified.stderr
    assert "reproduced byte for byte" in verified.stdout
    assert {p.name: p.read_bytes() for p in graded_run.iterdir() if p.is_file()} == stored


# --- a task folder of one's own: --suite-dir and ARRIVALBENCH_SUITE_PATH --------------------------

MINE = "mine_daily"


@pytest.fixture(scope="module")
def mine(tmp_path_factory) -> Path:
    """A folder of task folders holding one scaffolded task that is in no other suite folder."""
    folder = tmp_path_factory.mktemp("suite") / "my_tasks"
    new_task(MINE, suite_dir=folder)
    return folder


def test_tasks_lists_and_hashes_a_task_of_a_suite_dir(cli, mine):
    listed = cli("tasks", "--json", "--suite-dir", mine)
    assert listed.returncode == 0, listed.stderr
    rows = {row["id"]: row for row in json.loads(listed.stdout)}
    assert rows[MINE]["suite_dir"] == str(mine.resolve())
    assert rows["daily_revenue"]["suite_dir"] == str(SUITE_DIR.resolve())
    table = cli("tasks", "--suite-dir", mine)
    assert any(MINE in line and str(mine.resolve()) in line for line in table.stdout.splitlines())
    assert MINE not in cli("tasks").stdout

    builtin = cli("tasks", "--hash").stdout
    flag = cli("tasks", "--hash", "--suite-dir", mine).stdout
    env = cli("tasks", "--hash", env={SUITE_PATH_ENV: str(mine)}).stdout
    assert re.fullmatch(r"[0-9a-f]{64}\n", flag)
    assert flag == env != builtin


@pytest.mark.slow
def test_grade_a_task_of_a_suite_dir_and_replay_its_failure(cli, mine):
    control = mine / MINE / DEDUP_HISTORY_ONLY
    args = ("grade", "-t", MINE, "-p", control, "--schedules", "snapshot,duplicate_delivery")
    done = cli(*args, "--suite-dir", mine)
    assert done.returncode == 0, done.stderr
    assert any("duplicate_delivery" in line and "FAIL" in line for line in done.stdout.splitlines())
    (replay,) = [line.strip() for line in done.stdout.splitlines() if "--schedules" in line]
    assert replay.startswith(f"arrivalbench grade --suite-dir {mine.resolve()} --task {MINE} ")
    again = cli(*replay.split()[1:], "--json")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["verdicts"]["duplicate_delivery"]["verdict"] == "FAIL"

    by_env = cli(*args, "--json", env={SUITE_PATH_ENV: str(mine)})
    assert by_env.returncode == 0, by_env.stderr
    assert json.loads(by_env.stdout)["verdicts"]["snapshot"]["verdict"] == "PASS"
    assert_one_line_user_error(cli(*args), f"Unknown task '{MINE}'")


@pytest.mark.slow
def test_gate_admits_a_task_found_through_the_environment_variable(cli, mine):
    done = cli("gate", "--tasks", MINE, env={SUITE_PATH_ENV: str(mine)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"admitted {MINE} (create, easy)" in done.stdout


@pytest.mark.slow
def test_corpus_grade_run_summary_and_report_of_a_task_of_a_suite_dir(cli, mine, tmp_path):
    run = tmp_path / "run"
    made = cli("make-corpus", "--suite-dir", mine, "--tasks", MINE, "--out", run)
    assert made.returncode == 0, made.stderr
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["suite_dirs"] == [str(mine.resolve())]
    assert list(manifest["task_hashes"]) == [MINE]

    # graded later without the folder: one line naming the task and the flag; nothing written
    assert_one_line_user_error(
        cli("grade-run", run, "--workers", "1"),
        f"task '{MINE}' is not on the suite path; the run was made with it from "
        f"{mine.resolve()}: pass --suite-dir {mine.resolve()}",
    )
    assert not (run / "verdicts.parquet").exists() and not (run / "verdicts.journal").exists()

    graded = cli("grade-run", run, "--workers", "2", "--suite-dir", mine)
    assert graded.returncode == 0, graded.stderr
    assert "gold" in graded.stdout and "100.0%" in graded.stdout
    rows = pq.read_table(run / "verdicts.parquet").to_pylist()
    assert {r["task"] for r in rows} == {MINE}
    assert {r["verdict"] for r in rows if r["arm"] == "gold"} == {"PASS"}
    assert "FAIL" in {r["verdict"] for r in rows if r["arm"] == "controls"}

    summary = cli("summary", run, env={SUITE_PATH_ENV: str(mine)})
    assert summary.returncode == 0, summary.stderr
    assert "controls" in summary.stdout
    assert_one_line_user_error(cli("summary", run), f"pass --suite-dir {mine.resolve()}")
    report = cli(
        "report", run, "--out", tmp_path / "report", "--resamples", "200", "--suite-dir", mine
    )
    assert report.returncode == 0, report.stderr
    written = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert f"suite {manifest['suite_hash'][:12]}" in written and "naive_watermark" in written


def test_import_scripts_of_a_task_of_a_suite_dir_prints_a_grade_command_that_works(
    cli, mine, tmp_path
):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    shutil.copy(mine / MINE / "gold.sql", scripts / f"{MINE}.sql")
    args = ("import-scripts", scripts, "--arm", "human", "--out", tmp_path / "run")
    assert_one_line_user_error(cli(*args), "tasks of your own need --suite-dir DIR")
    done = cli(*args, "--suite-dir", mine)
    assert done.returncode == 0, done.stderr
    hint = done.stdout.split("grade it with: ")[1].splitlines()[0].split()
    assert hint == ["arrivalbench", "grade-run", str(tmp_path / "run"), "--suite-dir", str(mine)]
    graded = cli(*hint[1:], "--workers", "1")
    assert graded.returncode == 0, graded.stderr
    assert "graded 1 cells" in graded.stdout


def test_a_broken_task_of_a_suite_dir_does_not_block_grading_another(cli, mine, tmp_path):
    shutil.copytree(mine / MINE, tmp_path / MINE)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "task.yaml").write_text("id: broken\n", encoding="utf-8")
    done = cli(
        "grade",
        "--suite-dir",
        tmp_path,
        "-t",
        MINE,
        "-p",
        tmp_path / MINE / "gold.sql",
        "--schedules",
        "snapshot",
    )
    assert done.returncode == 0, done.stderr
    assert "PASS" in done.stdout
    assert_one_line_user_error(cli("tasks", "--suite-dir", tmp_path), "broken/task.yaml")


@pytest.mark.parametrize(
    "case", ["duplicate id", "missing flag folder", "missing env folder", "empty folder"]
)
def test_a_bad_suite_path_is_one_line_and_exit_2(cli, case, tmp_path):
    env = {}
    if case == "duplicate id":
        shutil.copytree(SUITE_DIR / "daily_revenue", tmp_path / "daily_revenue")
        args, phrase = ["--suite-dir", tmp_path], "'daily_revenue' is defined in two suite folders"
    elif case == "missing flag folder":
        args, phrase = ["--suite-dir", tmp_path / "nope"], "(from --suite-dir): no such folder"
    elif case == "missing env folder":
        env = {SUITE_PATH_ENV: str(tmp_path / "nope")}
        args, phrase = [], f"(from {SUITE_PATH_ENV}): no such folder"
    else:
        args, phrase = ["--suite-dir", tmp_path], "holds no task folder"
    assert_one_line_user_error(cli("tasks", "--hash", *args, env=env), phrase)


# --- option values refused before anything runs: one line, exit 2 ------------------------------

REPLAY = Path(__file__).parent.parent / "examples" / "replay.json"
SEED_COMMANDS = {
    "grade": ["grade", "-t", "daily_revenue", "-p", "{gold}"],
    "schedule": ["schedule", "-t", "daily_revenue", "-s", "snapshot"],
    "gate": ["gate", "--tasks", "daily_revenue"],
    "make-corpus": ["make-corpus", "--out", "{tmp}/run", "--tasks", "daily_revenue"],
    "generate": ["generate", "-m", f"replay:{REPLAY}", "--out", "{tmp}/run"],
    "import-scripts": ["import-scripts", "{tmp}", "--arm", "human", "--out", "{tmp}/run"],
}


def _fill(args: list[str], tmp_path: Path, gold: Path) -> list[str]:
    return [a.format(tmp=tmp_path, gold=gold) for a in args]


@pytest.mark.parametrize("seed", ["-1", str(2**64 + 5)])
@pytest.mark.parametrize("command", list(SEED_COMMANDS))
def test_seed_out_of_range_is_refused_by_every_command(cli, command, seed, tmp_path, gold):
    """Regression: a negative seed (or one past 64 bits) was accepted; grade-run then crashed
    writing it to Parquet, after the run was made."""
    done = cli(*_fill(SEED_COMMANDS[command], tmp_path, gold), "--seed", seed)
    assert_one_line_user_error(done, f"--seed {seed}: a seed is an integer from 0 to 2**63 - 1")
    assert not (tmp_path / "run").exists()


def test_seed_range_ends_at_2_to_the_63_minus_1(cli):
    args = ("schedule", "-t", "daily_revenue", "-s", "snapshot", "--seed")
    largest = cli(*args, str(2**63 - 1))
    assert largest.returncode == 0, largest.stderr
    assert json.loads(largest.stdout)["name"] == "snapshot"
    assert_one_line_user_error(cli(*args, str(2**63)), f"--seed {2**63}: a seed is")


@pytest.mark.parametrize(
    ("args", "phrase"),
    [
        (["grade-run", "{tmp}", "--workers", "-1"], "--workers -1: must be at least 1"),
        (["grade-run", "{tmp}", "--workers", "0"], "--workers 0: must be at least 1"),
        (["regrade", "{tmp}", "--verify", "--workers", "0"], "--workers 0: must be at least 1"),
        (["regrade", "{tmp}", "--verify", "-w", "-3"], "--workers -3: must be at least 1"),
        (["gate", "--jobs", "0"], "--jobs 0: must be at least 1"),
        (["gate", "-j", "-1"], "--jobs -1: must be at least 1"),
        (["generate", "-m", f"replay:{REPLAY}", "-o", "{tmp}/run", "-k", "0"], "-k 0:"),
        (["generate", "-m", f"replay:{REPLAY}", "-o", "{tmp}/run", "-k", "-2"], "-k -2:"),
        (["generate", "-m", f"replay:{REPLAY}", "-o", "{tmp}/run", "--turns", "0"], "--turns 0:"),
        (
            ["generate", "-m", f"replay:{REPLAY}", "-o", "{tmp}/run", "--concurrency", "0"],
            "--concurrency 0:",
        ),
        (
            ["generate", "-m", f"replay:{REPLAY}", "-o", "{tmp}/run", "-c", "-1"],
            "--concurrency -1:",
        ),
        (
            ["generate", "-m", f"replay:{REPLAY}", "-o", "{tmp}/run", "--max-retries", "-1"],
            "--max-retries -1: must be at least 0",
        ),
        (
            ["generate", "-m", f"replay:{REPLAY}", "-o", "{tmp}/run", "--timeout", "0"],
            "--timeout 0: must be at least 1",
        ),
        (["report", "{tmp}", "--out", "{tmp}/report", "--resamples", "0"], "--resamples 0"),
        (["report", "{tmp}", "--out", "{tmp}/report", "--resamples", "-5"], "--resamples -5"),
        (["report", "{tmp}", "--out", "{tmp}/report", "--unit", "bogus"], "--unit 'bogus'"),
    ],
)
def test_count_below_its_minimum_is_refused(cli, args, phrase, tmp_path, gold):
    """Regression: --workers -1 crashed with a ValueError traceback from the process pool,
    --workers 0 and --jobs 0 silently meant "one per core", and generate took --timeout 0."""
    done = cli(*_fill(args, tmp_path, gold))
    assert_one_line_user_error(done, phrase)
    assert not (tmp_path / "run").exists() and not (tmp_path / "report").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["gate", "--tasks", ","],
        ["make-corpus", "--out", "{tmp}/run", "--tasks", ","],
        ["generate", "-m", f"replay:{REPLAY}", "-o", "{tmp}/run", "--tasks", " , "],
    ],
)
def test_task_list_naming_no_task_is_refused(cli, args, tmp_path, gold):
    """Regression: generate --tasks ',' silently generated every task of the replay file, and
    gate and make-corpus said "Unknown task ''"."""
    done = cli(*_fill(args, tmp_path, gold))
    assert_one_line_user_error(done, "--tasks")
    assert "names no task" in done.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["gate", "--tasks", "daily_revenue,daily_revenu"],
        ["make-corpus", "--out", "{tmp}/run", "--tasks", "daily_revenue,daily_revenu"],
        ["generate", "-m", f"replay:{REPLAY}", "-o", "{tmp}/run", "--tasks", "daily_revenu"],
    ],
)
def test_unknown_task_in_a_task_list_is_refused(cli, args, tmp_path, gold):
    done = cli(*_fill(args, tmp_path, gold))
    assert_one_line_user_error(done, "Unknown task 'daily_revenu'. Did you mean 'daily_revenue'?")
    assert not (tmp_path / "run").exists()


def test_unknown_executor_is_one_line_without_a_progress_bar(cli, tmp_path):
    """Regression: grade-run --executor bogus printed a progress bar above the error line."""
    from arrivalbench.corpus import make_corpus

    make_corpus(tmp_path / "run", task_ids=["daily_revenue"])
    done = cli("grade-run", tmp_path / "run", "--executor", "bogus")
    assert_one_line_user_error(done, "--executor 'bogus': expected 'local' or 'ray'")
    assert not (tmp_path / "run" / "verdicts.parquet").exists()


def test_ray_address_without_the_ray_executor_is_refused(cli, tmp_path):
    """Regression: grade-run --ray-address without --executor ray graded locally, silently."""
    done = cli("grade-run", tmp_path, "--ray-address", "ray://head:10001")
    assert_one_line_user_error(done, "--ray-address 'ray://head:10001' is for the Ray executor")


# --- new runs, stored runs -------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["make-corpus", "import-scripts"])
def test_out_that_is_a_folder_with_files_is_refused(cli, command, tmp_path, gold):
    """Regression: make-corpus and import-scripts wrote a run into any existing folder, among its
    files (an interrupted generation's folder became a run of the wrong cells)."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "daily_revenue.sql").write_bytes(gold.read_bytes())
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "notes.txt").write_text("mine", encoding="utf-8")
    args = {
        "make-corpus": ["make-corpus", "--tasks", "daily_revenue"],
        "import-scripts": ["import-scripts", scripts, "--arm", "human"],
    }[command]
    done = cli(*args, "--out", taken)
    assert_one_line_user_error(done, f"{taken}: not empty; give --out a new folder name")
    assert sorted(p.name for p in taken.iterdir()) == ["notes.txt"]
    made = cli(*args, "--out", tmp_path / "empty")
    assert made.returncode == 0, made.stderr


def test_import_scripts_arm_that_is_a_path_is_refused(cli, tmp_path, gold):
    """Regression: import-scripts --arm ../../x wrote transcripts outside the run directory."""
    scripts = tmp_path / "in" / "scripts"
    scripts.mkdir(parents=True)
    (scripts / "daily_revenue.sql").write_bytes(gold.read_bytes())
    done = cli("import-scripts", scripts, "--arm", "../../x", "--out", tmp_path / "in" / "run")
    assert_one_line_user_error(done, "--arm '../../x': an arm name is")
    assert sorted(p.name for p in (tmp_path / "in").iterdir()) == ["scripts"]
    assert not (tmp_path / "x").exists()


def test_regression_a_second_import_of_an_arm_entered_the_tests_as_another_arm(cli, tmp_path, gold):
    """Regression (issue 26): every import-scripts run recorded run 1, so a second import of the
    same arm was counted by the sign tests and the signature as a second first-run arm."""
    from arrivalbench.analysis.roles import arm_roles

    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "daily_revenue.sql").write_bytes(gold.read_bytes())
    made = {}
    for index in (1, 2):
        out = tmp_path / f"run{index}"
        args = ["import-scripts", scripts, "--arm", "m", "--role", "model", "--out", out]
        done = cli(*args, *(["--run", "2"] if index == 2 else []))
        assert done.returncode == 0, done.stderr
        assert ("(run 2)" in done.stdout) == (index == 2)
        made[out.name] = RunDir.open(out).arm_info()
    assert made["run1"]["m"]["run"] == 1 and made["run2"]["m"]["run"] == 2
    # given in either order, the recorded index decides: run2 is never a first run
    for order in (["run1", "run2"], ["run2", "run1"]):
        roles = arm_roles([(name, made[name], ["m"]) for name in order])
        assert {name: roles[(name, "m")].run for name in order} == {"run1": 1, "run2": 2}
    assert_one_line_user_error(
        cli("import-scripts", scripts, "--arm", "m", "--run", "0", "--out", tmp_path / "r0"),
        "--run 0: must be at least 1",
    )


def test_import_scripts_on_a_missing_folder_is_one_line(cli, tmp_path):
    done = cli("import-scripts", tmp_path / "nope", "--arm", "human", "--out", tmp_path / "run")
    assert_one_line_user_error(done, "not a folder")
    assert not (tmp_path / "run").exists()


@pytest.fixture
def corpus_run(tmp_path) -> Path:
    """An ungraded one-task corpus run, made in process."""
    from arrivalbench.corpus import make_corpus

    return make_corpus(tmp_path / "run", task_ids=["daily_revenue"]).path


@pytest.mark.parametrize("command", [["grade-run"], ["regrade", "--verify"], ["summary"]])
def test_manifest_without_base_seed_is_one_line_naming_the_field(cli, command, corpus_run):
    """Regression: a manifest without base_seed crashed grade-run with a KeyError traceback."""
    path = corpus_run / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    del manifest["base_seed"]
    path.write_text(json.dumps(manifest), encoding="utf-8")
    done = cli(*command, corpus_run)
    assert_one_line_user_error(done, f"{path}: field 'base_seed' is missing")
    assert not (corpus_run / "verdicts.parquet").exists()


@pytest.mark.parametrize("command", ["grade-run", "summary"])
def test_damaged_journal_line_is_one_line_and_the_journal_is_kept(cli, command, corpus_run):
    """Regression: a garbage line in the middle of verdicts.journal crashed with a traceback."""
    from arrivalbench.store import RunDir, verdict_row

    run = RunDir.open(corpus_run)
    cell = run.cells()[0]
    row = verdict_row(cell, "snapshot", 7, {"verdict": "PASS"})
    timing = {k: row[k] for k in ("arm", "task", "sample", "schedule")}
    timing.update(wall_seconds=0.1, statement_seconds=0.0)
    run.append([row], [timing])
    with open(run.journal_path, "a", encoding="utf-8") as handle:
        handle.write("{garbage\n")
    run.append([{**row, "schedule": "single_batch"}], [{**timing, "schedule": "single_batch"}])
    before = run.journal_path.read_bytes()
    done = cli(command, corpus_run)
    assert_one_line_user_error(done, f"{run.journal_path}: line 2 is not a verdict row")
    assert "move the journal aside" in done.stderr
    assert run.journal_path.read_bytes() == before
    assert not (corpus_run / "verdicts.parquet").exists()


def test_gate_on_a_task_whose_oracle_does_not_parse_reports_it(cli, tmp_path):
    """Regression: an oracle.sql with a syntax error crashed `gate` with DuckDB's ParserException."""
    folder = tmp_path / "my_tasks"
    new_task("oracle_typo", suite_dir=folder)
    fixture = Path(__file__).parent / "fixtures" / "oracles" / "daily_revenue_syntax_error.sql"
    oracle = folder / "oracle_typo" / "oracle.sql"
    oracle.write_text(fixture.read_text(encoding="utf-8"), encoding="utf-8")
    done = cli("gate", "--suite-dir", folder, "--tasks", "oracle_typo", "--jobs", "1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert "rejected (1) oracle_typo" in done.stdout
    (line,) = [x for x in done.stdout.splitlines() if "oracle.sql" in x]
    assert line.strip().startswith("- oracle_typo: oracle.sql: ")
    assert "syntax error" in line and "were not graded" in line


@pytest.mark.parametrize("engine", ["duckdb", "sqlite"])
@pytest.mark.parametrize("place", ["absent", "a file"])
def test_regression_an_unusable_scratch_dir_is_one_line_not_an_error_per_replay(
    cli, tmp_path, gold, engine, place
):
    """A $ARRIVALBENCH_SCRATCH_DIR that names no folder made every SQLite replay an ERROR and
    stopped the PostgreSQL server from starting; it is one user error before any replay."""
    scratch = tmp_path / "scratch"
    if place == "a file":
        scratch.write_text("", encoding="utf-8")
    done = cli(
        "grade",
        "-t",
        "daily_revenue",
        "-p",
        gold,
        "--engine",
        engine,
        "--schedules",
        "snapshot",
        env={"ARRIVALBENCH_SCRATCH_DIR": str(scratch)},
    )
    assert_one_line_user_error(done, "ARRIVALBENCH_SCRATCH_DIR=")
