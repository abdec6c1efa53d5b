"""The Engine protocol's shared pieces: limits that bound what one replay may spend."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from arrivalbench.engines import ENGINES, Limits, memory_bytes
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


# --- the observer: a committed-state fingerprint that proves a statement changed nothing ---------

FINGERPRINT_LIMITS = Limits(statement_timeout=5.0, memory_limit="256MB")


def _changes(engine, steps: list[tuple[str, str]]) -> list[bool]:
    """For each (kind, sql) run in one script session: whether the observer's fingerprint,
    taken before and after it, differs."""
    from arrivalbench.engines import Statement

    database = engine.open(FINGERPRINT_LIMITS)
    session, observer = database.session(), database.observer()
    try:
        seen = []
        for i, (kind, sql) in enumerate(steps):
            statement = Statement(index=i + 1, text=sql, kind=kind)
            before = observer.committed_state(statement)
            session.execute(sql)
            seen.append(observer.committed_state(statement) != before)
        return seen
    finally:
        session.close()
        observer.close()
        database.close()


def test_duckdb_fingerprint_moves_with_every_committed_change_and_nothing_else():
    from arrivalbench.engines import get_engine

    steps = [
        ("SELECT", "SELECT 1"),
        ("CREATE", "CREATE TABLE t (x INTEGER)"),
        ("INSERT", "INSERT INTO t VALUES (1)"),
        ("INSERT", "INSERT INTO t VALUES (1)"),  # a duplicate row: the bag changed
        ("UPDATE", "UPDATE t SET x = 2"),
        ("SELECT", "SELECT count(*) FROM t"),
        ("CREATE", "CREATE SEQUENCE s"),
        ("SELECT", "SELECT nextval('s')"),
        ("CREATE", "CREATE MACRO plus_one(v) AS v + 1"),
        ("CREATE", "CREATE TYPE mood AS ENUM ('happy', 'sad')"),
        ("CREATE", "CREATE VIEW v AS SELECT x FROM t"),
        ("CREATE", "CREATE TEMP TABLE scratch AS SELECT 1 AS y"),  # vanishes with the session
        ("CREATE", "CREATE TABLE IF NOT EXISTS t (x INTEGER)"),  # exists: nothing changes
    ]
    assert _changes(get_engine("duckdb"), steps) == [
        False, True, True, True, True, False, True, True, True, True, True, False, False
    ]  # fmt: skip


def test_regression_fingerprint_sees_no_uncommitted_work_and_a_commit_as_one_change():
    """What a crash would keep: an open transaction's rows, macros and tables roll back, so
    nothing changes until the COMMIT."""
    from arrivalbench.engines import get_engine

    steps = [
        ("CREATE", "CREATE TABLE t (x INTEGER)"),
        ("TRANSACTION", "BEGIN TRANSACTION"),
        ("INSERT", "INSERT INTO t VALUES (1)"),
        ("CREATE", "CREATE MACRO m() AS 1"),
        ("CREATE", "CREATE TABLE u (y INTEGER)"),
        ("TRANSACTION", "COMMIT"),
    ]
    assert _changes(get_engine("duckdb"), steps) == [True, False, False, False, False, True]
    sqlite_steps = [(k, sql) for k, sql in steps if "MACRO" not in sql]
    assert _changes(get_engine("sqlite"), sqlite_steps) == [True, False, False, False, True]


def test_regression_fingerprint_is_not_fooled_by_macros_shadowing_its_built_ins():
    """A script's macro named `hash`, `sum`, `count` or `duckdb_tables` answered the harness's
    own query when it called the built-ins unqualified: every later INSERT looked like no change."""
    from arrivalbench.engines import get_engine

    steps = [
        ("CREATE", "CREATE TABLE t (x INTEGER)"),
        ("CREATE", "CREATE MACRO hash(v) AS 42"),
        ("CREATE", "CREATE MACRO sum(v) AS 0"),
        ("CREATE", "CREATE MACRO count(v) AS 0"),
        ("CREATE", "CREATE MACRO duckdb_tables() AS TABLE SELECT 1 AS x"),
        ("CREATE", "CREATE MACRO duckdb_sequences() AS TABLE SELECT 1 AS x"),
        ("INSERT", "INSERT INTO t VALUES (1)"),
        ("UPDATE", "UPDATE t SET x = 5"),
    ]
    assert _changes(get_engine("duckdb"), steps) == [True] * len(steps)


def test_sqlite_fingerprint_moves_with_committed_writes_only():
    from arrivalbench.engines import get_engine

    steps = [
        ("SELECT", "SELECT 1"),
        ("CREATE", "CREATE TABLE t (x INTEGER)"),
        ("INSERT", "INSERT INTO t VALUES (1)"),
        ("CREATE", "CREATE TEMP TABLE scratch (y INTEGER)"),
        ("SELECT", "SELECT count(*) FROM t"),
        ("CREATE", "CREATE INDEX tx ON t (x)"),
    ]
    assert _changes(get_engine("sqlite"), steps) == [False, True, True, False, False, True]


def test_postgres_fingerprint_moves_with_committed_changes_and_sequence_values(postgres_engine):
    steps = [
        ("SELECT", "SELECT 1"),
        ("CREATE", "CREATE TABLE t (x INTEGER)"),
        ("INSERT", "INSERT INTO t VALUES (1)"),
        ("CREATE", "CREATE SEQUENCE s"),
        ("TRANSACTION", "BEGIN"),
        ("INSERT", "INSERT INTO t VALUES (2)"),
        ("SELECT", "SELECT nextval('s')"),  # not transactional: a crash keeps it
        ("COMMIT", "COMMIT"),
    ]
    assert _changes(postgres_engine, steps) == [False, True, True, True, False, False, True, True]


# --- the registry: each engine declared once, everything else reads the declaration ------------


@pytest.mark.parametrize("name", ENGINES)
def test_each_engine_class_carries_its_registered_declaration(name):
    from importlib import import_module

    from arrivalbench.engines import REGISTRY

    info = REGISTRY[name]
    module, _, cls = info.factory.partition(":")
    engine_class = getattr(import_module(module), cls)
    assert engine_class.info is info and engine_class.name == name


@pytest.mark.parametrize("name", ENGINES)
def test_each_engine_declares_a_prompt_a_constraint_wording_and_a_rewrite(name):
    from arrivalbench.agent.prompts import PROMPT_DIR
    from arrivalbench.analysis.stats import CONSTRAINT_MESSAGES
    from arrivalbench.dialects import DIALECTS
    from arrivalbench.engines import REGISTRY

    info = REGISTRY[name]
    assert (PROMPT_DIR / info.prompt_file).is_file()
    assert info.constraint_errors and set(info.constraint_errors) <= set(CONSTRAINT_MESSAGES)
    assert (
        name in DIALECTS
    ) is not info.authored  # the authored engine runs the scripts as written


def test_one_authored_engine_is_the_default_and_computes_the_oracle():
    from arrivalbench.engines import AUTHORED, DEFAULT_ENGINE, REGISTRY, oracle_engine

    assert [e.name for e in REGISTRY.values() if e.authored] == [AUTHORED.name] == [DEFAULT_ENGINE]
    assert oracle_engine().info is AUTHORED


def test_an_unknown_engine_name_says_which_was_meant():
    from arrivalbench.engines import check_engine
    from arrivalbench.errors import UnknownNameError

    assert check_engine("sqlite") == "sqlite"
    with pytest.raises(UnknownNameError, match=re.escape("Did you mean 'sqlite'?")):
        check_engine("sqlit")


def test_the_registry_loads_no_engine_library():
    """The CLI validates --engine and the report reads error wording before any command runs:
    the declarations must not import DuckDB, Arrow, sqlglot or psycopg (start-up, issue 23)."""
    code = (
        "import sys, arrivalbench.engines as e; e.engine_info('postgres'); "
        "print(sorted(m for m in ('duckdb', 'pyarrow', 'sqlglot', 'psycopg') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_replay_files_go_to_the_folder_the_environment_names(monkeypatch, tmp_path):
    from arrivalbench.engines import common

    monkeypatch.setenv(common.SCRATCH_DIR_ENV, str(tmp_path))
    assert common.scratch_parent(1 << 40) == str(tmp_path)


def test_replay_files_go_to_ram_only_where_the_need_and_a_reserve_fit(monkeypatch, tmp_path):
    import os
    import tempfile

    from arrivalbench.engines import common

    monkeypatch.delenv(common.SCRATCH_DIR_ENV, raising=False)
    monkeypatch.setattr(common, "RAM_FOLDER", str(tmp_path))
    free = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize
    room = free - common.RAM_RESERVE_BYTES
    assert room > 1 << 20, "the test folder's file system needs a few GB free"
    assert common.scratch_parent(room - (1 << 20)) == str(tmp_path)
    assert common.scratch_parent(room + (1 << 30)) == tempfile.gettempdir()
    monkeypatch.setattr(common, "RAM_FOLDER", str(tmp_path / "absent"))
    assert common.scratch_parent(0) == tempfile.gettempdir()
