"""The Engine protocol's shared pieces: limits that bound what one replay may spend."""

from __future__ import annotations

import subprocess
import sys

import pytest

from arrivalbench.engines import Limits, memory_bytes
from arrivalbench.errors import UsageError


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("statement_timeout", float("inf")),
        ("statement_timeout", float("nan")),
        ("statement_timeout", 0.0),
        ("statement_timeout", -1.0),
        ("replay_timeout", float("inf")),
        ("replay_timeout", float("nan")),
        ("memory_limit", "1KB"),
        ("memory_limit", "63MB"),
        ("memory_limit", "lots"),
        ("max_script_bytes", 0),
    ],
)
def test_regression_limits_that_bound_nothing_are_refused(field, value):
    """`--statement-timeout inf` or `nan` disabled the watchdog; `--memory-limit 1KB` was accepted
    and made every replay an engine crash."""
    with pytest.raises(UsageError):
        Limits(**{field: value})


def test_memory_sizes_use_the_engines_units():
    assert memory_bytes("1GB") == 10**9
    assert memory_bytes("1GiB") == 1 << 30
    assert memory_bytes(" 512 mb ") == 512 * 10**6
    assert Limits(memory_limit="64MB").memory_bytes == 64 * 10**6


@pytest.mark.parametrize(
    "option", [["--statement-timeout", "inf"], ["--statement-timeout", "nan"],
               ["--memory-limit", "1KB"], ["--replay-timeout", "0"]]
)  # fmt: skip
def test_regression_grade_refuses_unbounded_limits_with_one_line(tmp_path, option):
    pipeline = tmp_path / "p.sql"
    pipeline.write_text("CREATE TABLE daily_revenue AS SELECT 1 AS x;")
    done = subprocess.run(
        [sys.executable, "-m", "arrivalbench.cli", "grade", "--task", "daily_revenue",
         "--pipeline", str(pipeline), *option],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and option[0] in lines[0] and "Traceback" not in done.stderr


def test_regression_the_replay_command_carries_every_limit_that_is_not_the_default():
    """The printed replay command dropped --replay-timeout and --max-script-bytes, so a verdict
    graded under other limits replayed under the defaults."""
    from arrivalbench.grade import replay_command

    limits = Limits(statement_timeout=3.0, replay_timeout=30.0, max_script_bytes=5000)
    command = replay_command("daily_revenue", "late_arrival", 7, "p.sql", limits)
    assert "--statement-timeout 3 " in command + " "
    assert "--replay-timeout 30" in command and "--max-script-bytes 5000" in command
    assert "--memory-limit" not in command
    assert replay_command("daily_revenue", "snapshot", 7, "p.sql", Limits()).endswith("--seed 7")


def test_regression_postgres_without_psycopg_was_a_traceback(tmp_path):
    """`--engine postgres` on an install without the `postgres` extra died in an ImportError
    traceback; it is one line naming the extra, exit 2."""
    import os

    fake = tmp_path / "psycopg"
    fake.mkdir()
    (fake / "__init__.py").write_text("raise ImportError('not installed here')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    done = subprocess.run(
        [sys.executable, "-m", "arrivalbench.cli", "gate", "--engine", "postgres",
         "--tasks", "daily_revenue", "--seeds", "1"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "pip install -e '.[postgres]'" in done.stderr
