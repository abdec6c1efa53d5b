"""Shared fixtures: copies of built-in task folders to break or extend, one edit at a time."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from arrivalbench.spec import SUITE_DIR, SUITE_PATH_ENV, Task, load_task

# A developer's official seed file must not turn the tests' public runs private.
os.environ.pop("ARRIVALBENCH_SEED_FILE", None)
# The CLI's consoles (cli/output.py) read COLUMNS once, when first imported: whichever test imports
# them first, inside run_cli's isolation or not, every test sees the 200 columns run_cli promises
# (under pytest-xdist a worker's first import came outside it, and long paths wrapped at 80).
os.environ["COLUMNS"] = "200"

CopyTask = Callable[..., Path]
EditSpec = Callable[[Path, Callable[[dict], object]], None]


@pytest.fixture(scope="session", autouse=True)
def _builtin_suite_only():
    """Tests see the built-in suite whatever the developer's ARRIVALBENCH_SUITE_PATH says; a test
    that wants folders of its own adds them itself (the CLI subprocesses inherit this)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv(SUITE_PATH_ENV, raising=False)
        yield


@pytest.fixture(scope="session", autouse=True)
def _private_verdict_cache(tmp_path_factory: pytest.TempPathFactory):
    """Tests never read or fill the developer's verdict cache (the CLI subprocesses inherit this)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("ARRIVALBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("verdict-cache")))
        yield


@pytest.fixture(autouse=True)
def _no_suite_dirs_left_over(monkeypatch: pytest.MonkeyPatch) -> None:
    """Folders a test put on this process's suite path (spec.use_suite_dirs) end with the test."""
    monkeypatch.setattr("arrivalbench.spec._configured", None)


@dataclass(frozen=True)
class CliResult:
    """What one CLI invocation did, named as subprocess.run names it."""

    returncode: int
    stdout: str
    stderr: str

    @property
    def exit_code(self) -> int:
        return self.returncode

    @property
    def output(self) -> str:
        """Everything the command printed, stdout then stderr."""
        return self.stdout + self.stderr


Cli = Callable[..., CliResult]


def run_cli(
    *args: str | Path, env: dict[str, str | None] | None = None, cwd: Path | None = None
) -> CliResult:
    """The console script's `run` in this process, under Typer's CliRunner isolation: stdout and
    stderr captured apart, `env` over os.environ (None removes a variable), no colour, 200
    columns; a user error is exit code 2 and one line on stderr, as from the console script."""
    from typer.testing import CliRunner

    from arrivalbench.cli import run

    overrides = {"NO_COLOR": "1", "COLUMNS": "200", **(env or {})}
    code = 0
    place = contextlib.chdir(cwd) if cwd is not None else contextlib.nullcontext()
    with CliRunner().isolation(env=overrides) as (stdout, stderr, _), place:
        try:
            run([str(a) for a in args])
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else int(exc.code is not None)
        finally:  # flushed and read inside: the isolation closes its streams on leaving
            sys.stdout.flush()
            sys.stderr.flush()
            printed = (stdout.getvalue(), stderr.getvalue())
    return CliResult(code, *(text.decode("utf-8", "replace") for text in printed))


@pytest.fixture(scope="session")
def cli() -> Cli:
    """Run the CLI in this process (see run_cli): `cli("grade", "--task", ...)` returns its exit
    code, stdout and stderr. Tests about signals or the installed console script start a
    subprocess instead."""
    return run_cli


@pytest.fixture
def copy_task(tmp_path: Path) -> CopyTask:
    """Copy a built-in task folder into tmp_path, under its own name unless `folder_name` is given."""

    def _copy(task_id: str = "daily_revenue", folder_name: str | None = None) -> Path:
        dest = tmp_path / (folder_name or task_id)
        shutil.copytree(SUITE_DIR / task_id, dest, ignore=shutil.ignore_patterns("__pycache__"))
        return dest

    return _copy


def edit_task_yaml(folder: Path, change: Callable[[dict], object]) -> None:
    """Load task.yaml, let `change` mutate the mapping in place, write it back."""
    path = folder / "task.yaml"
    raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    change(raw)
    path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")


@pytest.fixture
def edit_spec() -> EditSpec:
    return edit_task_yaml


def add_evolving_quantity(raw: dict) -> None:
    """daily_revenue plus an evolving `quantity` column and the schema_evolution hazard."""
    raw["source"]["columns"]["quantity"] = "INTEGER"
    raw["source"]["evolving_column"] = "quantity"
    raw["hazards"].append("schema_evolution")


@pytest.fixture(scope="session")
def evolving_task(tmp_path_factory: pytest.TempPathFactory) -> Task:
    """A copy of daily_revenue whose source gains `quantity INTEGER` as its evolving column."""
    folder = tmp_path_factory.mktemp("evolving") / "daily_revenue"
    shutil.copytree(
        SUITE_DIR / "daily_revenue", folder, ignore=shutil.ignore_patterns("__pycache__")
    )
    edit_task_yaml(folder, add_evolving_quantity)
    return load_task(folder)


def postgres_missing() -> str | None:
    """Why the PostgreSQL engine cannot run here, or None. The tests start the server themselves
    (the engine does, in a temporary folder); only the binaries and psycopg must be installed."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed: pip install -e '.[dev]' (make test does)"
    from arrivalbench.engines.postgres import PostgresUnavailable, _binary

    try:
        _binary("initdb")
        _binary("pg_ctl")
    except PostgresUnavailable as exc:  # pragma: no cover - make test installs the package
        return f"PostgreSQL server binaries are absent ({exc})"
    return None


def engine_params() -> list:
    """Every engine as a pytest parameter; PostgreSQL's skipped (with the reason) when missing."""
    missing = postgres_missing()
    return [
        pytest.param(
            name,
            marks=pytest.mark.skipif(name == "postgres" and bool(missing), reason=missing or ""),
        )
        for name in ("duckdb", "sqlite", "postgres")
    ]


@pytest.fixture(scope="session")
def postgres_engine():
    """The PostgreSQL engine, its server started once for the session as test_engine_postgres.py
    starts it (engines.postgres: a temporary folder, the postgres user when run as root); the CLI
    subprocesses of a test inherit its socket (ARRIVALBENCH_POSTGRES). Skipped, like that module,
    without psycopg or the server binaries."""
    missing = postgres_missing()
    if missing:  # pragma: no cover - make test installs the package
        pytest.skip(missing)
    from arrivalbench.engines import get_engine

    return get_engine("postgres")
