"""Regressions a dbt user hit with `arrivalbench check` (issue 27), each named for its bug.

The real-dbt ones are slow (dbt's import and parse take 10-40 s on a loaded 2-core machine):
one project with a seed and a model with a missing column covers two bugs in one check.
"""

from __future__ import annotations

import json
import os
import re
import runpy
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from arrivalbench.check.dbt import (
    BAD_PROJECT,
    DbtProject,
    WorkerStartError,
    engine_text,
    parsed_project,
)
from arrivalbench.check.log import LogColumns, read_log
from arrivalbench.check.verdict import first_difference, likely_cause
from arrivalbench.errors import CheckInputError
from arrivalbench.replay import ReplayResult, RunError
from conftest import run_cli

ROOT = Path(__file__).resolve().parents[1]
SHOP = ROOT / "examples" / "dbt_shop"
make_log = runpy.run_path(str(SHOP / "make_log.py"))["make_log"]
COLUMNS = LogColumns("order_id", "ordered_at")
LOG_ARGS = ("--key", "order_id", "--event-time", "ordered_at")
SQL_ARGS = ("--source-table", "raw_orders", "--target", "daily_orders")


@pytest.fixture(scope="module")
def orders(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_log(tmp_path_factory.mktemp("log") / "orders.parquet", orders=120, seed=3)


def test_regression_a_header_only_or_empty_csv_log_was_a_type_or_column_complaint(
    tmp_path: Path,
):
    """A header-only CSV said "`ordered_at` is VARCHAR; cast it", a 0-byte one "no such column
    (columns: column0)": both hold no rows, and say so, as a Parquet log without rows does."""
    header = tmp_path / "header.csv"
    header.write_text("order_id,ordered_at\n", encoding="utf-8")
    empty = tmp_path / "empty.csv"
    empty.write_bytes(b"")
    pq.write_table(
        pa.table(
            {"order_id": pa.array([], pa.string()), "ordered_at": pa.array([], pa.timestamp("us"))}
        ),
        tmp_path / "empty.parquet",
    )
    for log in (header, empty, tmp_path / "empty.parquet"):
        with pytest.raises(CheckInputError, match=r"the log has no rows\.$"):
            read_log(str(log), COLUMNS, "raw_orders")


def test_regression_a_relative_path_not_found_did_not_say_where_it_was_looked_for(
    tmp_path: Path,
):
    """`--log orders.parquet` run from another folder said only "file not found"."""
    (tmp_path / "p.sql").write_text("SELECT 1;", encoding="utf-8")
    done = run_cli(
        "check", "--pipeline", "p.sql", "--log", "orders.parquet", *SQL_ARGS, *LOG_ARGS,
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    assert f"(looked for {tmp_path.resolve() / 'orders.parquet'})" in done.stderr
    done = run_cli(
        "check", "--pipeline", "nowhere.sql", "--log", "orders.parquet", *SQL_ARGS, *LOG_ARGS,
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2 and str(tmp_path.resolve() / "nowhere.sql") in done.stderr


def test_regression_dbts_wrapper_line_hid_the_engines_message():
    """A model error showed "Runtime Error in model stg_events (models/stg_events.sql)" and the
    table cut the engine's words, which name the missing column."""
    message = (
        "Runtime Error in model stg_events (models/stg_events.sql)\n"
        '  Binder Error: Referenced column "amount_usd" not found in FROM clause!\n'
        '  Candidate bindings: "amount"\n'
    )
    shown = engine_text(message)
    assert shown.splitlines()[0] == (
        'Binder Error: Referenced column "amount_usd" not found in FROM clause!'
    )
    assert "Runtime Error" not in shown
    assert engine_text("Binder Error: x") == "Binder Error: x"  # no wrapper: as it is


def test_regression_a_slow_worker_start_was_reported_as_a_project_that_does_not_parse():
    """Under load the worker took over the fixed 120 s to parse, and check said "dbt could not
    parse the project" with exit 2: a slow start is not bad input."""
    project = DbtProject("/nowhere", "m", "", "", "")
    slow = ReplayResult(None, RunError("timeout", 1, None, "did not start within 600 s"), 0.0, 0)
    with pytest.raises(WorkerStartError, match=r"took longer than 600 s.*--startup-timeout"):
        parsed_project(project, slow, 600.0)
    assert not issubclass(WorkerStartError, CheckInputError)
    bad = ReplayResult(None, RunError(BAD_PROJECT, None, None, "does not parse"), 0.0, 0)
    with pytest.raises(CheckInputError):
        parsed_project(project, bad, 600.0)


def test_regression_a_slow_start_said_nothing_then_exited_2(orders: Path):
    """Nothing was printed while dbt parsed, and the timeout ended as exit 2 (bad input)."""
    pytest.importorskip("dbt.adapters.duckdb")
    done = run_cli(
        "check", "--dbt-project", SHOP, "--model", "orders_fixed", "--source", "raw.orders",
        "--log", orders, *LOG_ARGS, "--startup-timeout", "0.01",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert lines[0].startswith("check: parsing the dbt project… (")
    assert len(lines) == 2 and "took longer than 0.01 s" in lines[1]
    assert "does not parse" not in done.stderr and "Traceback" not in done.stderr


def test_regression_a_fail_showed_counts_only(orders: Path, tmp_path: Path):
    """A FAIL printed its diff's counts; it now prints the first differing row and the mistake
    the diff's shape points to, as grade's diagnosis does."""
    diff = {
        "counts": {"missing": 3, "extra": 0, "duplicate_key": 0, "changed": 0},
        "examples": {"missing": [{"order_id": "o-000004", "amount": "12.50"}]},
    }
    assert first_difference(diff) == "missing {order_id: o-000004, amount: 12.50}"
    assert likely_cause("late_arrival", diff) == "late_dropped"
    doubled = {"counts": {"duplicate_key": 2}, "examples": {"duplicate_key": [{"k": 1}]}}
    assert likely_cause("duplicate_delivery", doubled) == "duplicates_counted"
    changed = {
        "counts": {"changed": 1},
        "examples": {"changed": [{"key": {"day": "2026-03-01"}, "columns": {"orders": {"expected": 4, "actual": 3}}}]},
    }  # fmt: skip
    assert first_difference(changed) == "changed {day: 2026-03-01}: orders expected 4, got 3"
    pipeline = tmp_path / "replace.sql"
    pipeline.write_text(
        "CREATE TABLE IF NOT EXISTS daily_orders (day DATE, orders BIGINT);\n"
        "DELETE FROM daily_orders WHERE day IN (SELECT DISTINCT ordered_at::DATE FROM raw_orders);\n"
        "INSERT INTO daily_orders SELECT ordered_at::DATE, count(*) FROM raw_orders GROUP BY 1;\n",
        encoding="utf-8",
    )
    done = run_cli(
        "check", "--pipeline", pipeline, "--log", orders, *SQL_ARGS, *LOG_ARGS,
        "--schedules", "late_arrival",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert re.search(
        r"late_arrival: first differing row: changed \{day: 2026-03-\d\d\}", done.stdout
    )
    assert "--schedules late_arrival --json" in done.stdout


def test_regression_the_github_actions_example_ran_a_script_only_this_repository_has():
    """docs/check.md's workflow installed from a checkout of ArrivalBench and ran
    examples/dbt_shop/make_log.py: a user's repository has neither."""
    text = (ROOT / "docs" / "check.md").read_text(encoding="utf-8")
    workflow = text[text.index("```yaml") : text.index("```", text.index("```yaml") + 3)]
    assert "examples/" not in workflow and "pip install -e" not in workflow
    assert "git+https://" in workflow
    assert "named **`check`**" in text and "dbt tests run only with `--with-tests`" in text


def _as_a_shell_starts_it() -> None:
    """A foreground command from a shell: SIGINT handled by default and not blocked. A process
    started with SIGINT ignored keeps it ignored (POSIX), and a non-interactive shell starts a
    background job (`make test &`, `nohup ... &`) with SIGINT ignored: the tests inherited it, and
    the check ran to PASS and exit 0 through the Ctrl-C this test sends."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def _signal_state() -> list[str]:
    """This test process's blocked and ignored signal masks, for a failure's message."""
    with open("/proc/self/status", encoding="ascii") as status:
        return [line.strip() for line in status if line.startswith(("SigBlk", "SigIgn"))]


@pytest.mark.slow
def test_regression_ctrl_c_printed_the_workers_keyboardinterrupt_traceback(
    orders: Path, tmp_path: Path
):
    """Ctrl-C during a SQL check printed 14-26 lines of the worker's traceback: one line, 130."""
    pipeline = tmp_path / "slow.sql"
    pipeline.write_text(
        "CREATE OR REPLACE TABLE daily_orders AS SELECT count(*) AS n FROM range(100000000000);",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "NO_COLOR": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "arrivalbench", "check", "--pipeline", str(pipeline),
         "--log", str(orders), *SQL_ARGS, *LOG_ARGS, "--schedules", "single_batch"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True,
        preexec_fn=_as_a_shell_starts_it,
    )  # fmt: skip

    def children() -> list[str]:  # of every thread: the worker may be started from any
        return [
            pid
            for task in Path(f"/proc/{process.pid}/task").glob("*")
            for pid in (task / "children").read_text().split()
        ]

    deadline = time.monotonic() + 60
    while not children() and time.monotonic() < deadline:
        time.sleep(0.2)  # until the replay worker runs
    assert children(), "the check started no replay worker within 60 s"
    time.sleep(3)  # the worker is inside the statement
    os.killpg(process.pid, signal.SIGINT)  # a terminal's Ctrl-C reaches the whole group
    _, stderr = process.communicate(timeout=60)
    lines = stderr.decode().strip().splitlines()
    assert process.returncode == 130, (stderr, _signal_state())
    assert lines == ["arrivalbench: interrupted"], stderr


SEEDED_MODEL = """
{{ config(materialized='incremental', unique_key='order_id') }}
select o.order_id, o.amount, r.region
from {{ source('raw', 'orders') }} o left join {{ ref('regions') }} r using (customer_id)
"""


@pytest.mark.slow
def test_regression_a_model_that_refs_a_seed_errored_on_every_schedule(
    orders: Path, tmp_path: Path
):
    """`dbt seed` never ran, so a model ref()ing a seed ERRORed on every schedule. The same
    project's model with a missing column shows the engine's words (one check each)."""
    shop = tmp_path / "shop"
    shutil.copytree(SHOP, shop, ignore=shutil.ignore_patterns("target", "logs", "*.parquet"))
    (shop / "seeds").mkdir()
    rows = "\n".join(f"{i},{'north' if i % 2 else 'south'}" for i in range(1, 41))
    (shop / "seeds" / "regions.csv").write_text(f"customer_id,region\n{rows}\n", encoding="utf-8")
    (shop / "models" / "with_regions.sql").write_text(SEEDED_MODEL, encoding="utf-8")
    (shop / "models" / "bad_column.sql").write_text(
        "select order_id, amount_usd from {{ source('raw', 'orders') }}", encoding="utf-8"
    )
    common = ("--dbt-project", shop, "--source", "raw.orders", "--log", orders, *LOG_ARGS)
    done = run_cli("check", *common, "--model", "with_regions", "--schedules", "single_batch")
    assert done.returncode == 0, done.stdout + done.stderr
    done = run_cli("check", *common, "--model", "bad_column", "--schedules", "single_batch")
    assert done.returncode == 1
    assert 'Referenced column "amount_usd" not found' in done.stdout
    assert "Runtime Error in model" not in done.stdout


# --- dbt on PostgreSQL (issue 27, item 1) ---------------------------------------------------------


def test_dbt_postgres_missing_is_one_line_exit_2(
    orders: Path, monkeypatch: pytest.MonkeyPatch, postgres_engine
):
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "dbt.adapters.postgres" else real(name, *a),
    )
    done = run_cli(
        "check", "--dbt-project", SHOP, "--model", "orders_fixed", "--source", "raw.orders",
        "--log", orders, *LOG_ARGS, "--engine", "postgres",
    )  # fmt: skip
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "needs dbt-postgres, which is not installed" in lines[0]


@pytest.mark.slow
def test_dbt_shop_on_postgres_watermark_fails_late_arrival_and_fixed_passes(
    orders: Path, postgres_engine
):
    """The example project on dbt-duckdb and dbt-postgres side by side (`--engine` twice): the
    watermark model FAILs late_arrival on both; the fixed one PASSes on PostgreSQL."""
    pytest.importorskip("dbt.adapters.postgres")
    import json

    args = (
        "--dbt-project", SHOP, "--source", "raw.orders", "--log", orders, *LOG_ARGS,
        "--arrival-column", "_loaded_at", "--ignore-column", "_loaded_at",
        "--schedules", "in_order_stream,late_arrival", "--json",
    )  # fmt: skip
    both = ("--engine", "duckdb", "--engine", "postgres")
    done = run_cli("check", *args, *both, "--model", "orders_watermark")
    assert done.returncode == 1, done.stderr
    records = json.loads(done.stdout)["engines"]
    assert list(records) == ["duckdb", "postgres"]
    assert "dbt-postgres 1.11" in records["postgres"]["dbt_version"]
    for record in records.values():
        got = {name: entry["verdict"] for name, entry in record["verdicts"].items()}
        assert got == {"in_order_stream": "PASS", "late_arrival": "FAIL"}, record["engine"]
    done = run_cli("check", *args, "--engine", "postgres", "--model", "orders_fixed")
    assert done.returncode == 0, done.stdout


# --- dbt microbatch models (issue 27, item 2) -----------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("engine", ["duckdb", "postgres"])
def test_dbt_shop_microbatch_passes_lateness_within_lookback_and_fails_beyond(
    tmp_path: Path, engine: str, request: pytest.FixtureRequest
):
    """orders_microbatch (batch_size day, lookback 1): on a one-day log every late order lands
    within the lookback (PASS); on the ten-day log the deep tail lands days late and is lost.
    The same on dbt-postgres, whose microbatch needs the unique_key dbt-duckdb's refuses."""
    pytest.importorskip(f"dbt.adapters.{engine}")
    if engine == "postgres":
        request.getfixturevalue("postgres_engine")
    common = (
        "--dbt-project", SHOP, "--model", "orders_microbatch", "--source", "raw.orders",
        *LOG_ARGS, "--arrival-column", "_loaded_at", "--ignore-column", "_loaded_at", "--json",
        "--engine", engine,
    )  # fmt: skip
    one_day = make_log(tmp_path / "day.parquet", orders=240, seed=3, days=1)
    done = run_cli("check", *common, "--log", one_day, "--schedules", "late_arrival")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["verdicts"]["late_arrival"]["verdict"] == "PASS"
    ten_days = make_log(tmp_path / "ten.parquet", orders=240, seed=3)
    done = run_cli(
        "check", *common, "--log", ten_days, "--schedules", "in_order_stream,late_arrival"
    )
    assert done.returncode == 1, done.stderr
    found = json.loads(done.stdout)["verdicts"]
    assert found["in_order_stream"]["verdict"] == "PASS"
    assert found["late_arrival"]["verdict"] == "FAIL"
    assert found["late_arrival"]["diff"]["counts"]["missing"] >= 10  # the 5% deep tail at least


def test_a_microbatch_model_without_event_time_is_bad_input():
    from types import SimpleNamespace

    from arrivalbench.check.microbatch import Microbatch

    config = SimpleNamespace(incremental_strategy="microbatch", event_time=None)
    node = SimpleNamespace(name="m", original_file_path="models/m.sql", config=config)
    with pytest.raises(CheckInputError, match=r"--model m: a microbatch model needs event_time"):
        Microbatch.of(node)


def test_a_microbatch_window_starts_lookback_days_before_the_previous_clock():
    import numpy as np

    from arrivalbench.check.microbatch import Microbatch

    day, hour = 86_400_000_000, 3_600_000_000
    batching = Microbatch("day", 1)
    first = np.array([2 * day + 5 * hour, 3 * day + 20 * hour])
    assert [w.day for w in batching.window(first, None)] == [3, 5]  # [Jan 3, Jan 5)
    late = np.array([1 * day, 4 * day + 1 * hour])  # an order of Jan 2 lands with one of Jan 5
    assert [w.day for w in batching.window(late, clock=int(first.max()))] == [3, 6]


@pytest.mark.slow
def test_regression_a_replay_worker_that_did_not_parse_ran_microbatch_batches_in_parallel(
    tmp_path: Path,
):
    """A worker retires after a job that leaves it mapping over a GiB (dbt's do), so most
    replays run in a worker that did not parse: it had a plain dbtRunner, whose own parse let
    dbt run the middle batches on its one-thread pool, which the model's runner held: a hang.
    A worker that did not parse now parses once and keeps the batches sequential."""
    pytest.importorskip("dbt.adapters.duckdb")
    probe = f"""
from pathlib import Path
from arrivalbench.check.dbt import _RUNNERS, _warm_runner, copy_project
from arrivalbench.engines import Limits
project = copy_project(Path({str(SHOP)!r}), "orders_microbatch", "raw.orders", {str(tmp_path)!r},
                       Limits())
assert not _RUNNERS  # this process never ran a ParseJob
runner = _warm_runner(project)
assert _warm_runner(project) is runner  # parsed once per worker
node = next(n for n in runner.manifest.nodes.values() if n.name == "orders_microbatch")
print(node.config.concurrent_batches)
"""
    import arrivalbench

    here = str(Path(arrivalbench.__file__).parents[1])  # this checkout's, not an installed one
    env = {**os.environ, "PYTHONPATH": here}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


@pytest.mark.slow
def test_a_microbatch_model_without_event_time_is_one_line_exit_2(tmp_path: Path, orders: Path):
    pytest.importorskip("dbt.adapters.duckdb")
    project = tmp_path / "shop"
    shutil.copytree(SHOP, project, ignore=shutil.ignore_patterns("target", "logs", "*.duckdb"))
    model = project / "models" / "orders_microbatch.sql"
    model.write_text(model.read_text().replace("event_time='ordered_at',", ""))
    done = run_cli(
        "check", "--dbt-project", project, "--model", "orders_microbatch",
        "--source", "raw.orders", "--log", orders, *LOG_ARGS, "--schedules", "in_order_stream",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    lines = [line for line in done.stderr.splitlines() if not line.startswith("check: ")]
    assert len(lines) == 1, done.stderr
    assert "orders_microbatch" in lines[0] and "event_time" in lines[0], lines[0]


def test_regression_a_failed_microbatch_batch_showed_partial_success_without_its_error():
    """dbt-postgres refused every batch after the first ("requires a `unique_key` config"), and
    check's ERROR read "dbt run failed": the batch's error is only one of dbt's events, and the
    node's message "PARTIAL SUCCESS (1/2)". The event's text is now the ERROR's."""
    from types import SimpleNamespace

    from arrivalbench.check import dbt

    node = SimpleNamespace(
        status="partial success",
        message="PARTIAL SUCCESS (1/2)",
        node=SimpleNamespace(name="orders_microbatch"),
    )
    result = SimpleNamespace(exception=None, result=SimpleNamespace(results=[node]))
    assert dbt._failure(result) == "dbt run failed"  # no event seen: nothing more to say
    event = SimpleNamespace(
        info=SimpleNamespace(name="GenericExceptionOnRun", msg="Unhandled error while executing"),
        data=SimpleNamespace(
            exc="Exception on worker thread. Compilation Error in model orders_microbatch "
            "(models/orders_microbatch.sql)\n  dbt-postgres 'microbatch' requires a `unique_key`"
        ),
    )
    dbt._RUN_ERRORS.clear()
    dbt._on_event(event)
    try:
        assert dbt._failure(result) == (
            "orders_microbatch: PARTIAL SUCCESS (1/2): dbt-postgres 'microbatch' requires a "
            "`unique_key`"
        )
    finally:
        dbt._RUN_ERRORS.clear()


@pytest.mark.slow
def test_regression_a_dbt_check_printed_a_leaked_semaphore_warning(orders: Path, tmp_path: Path):
    """A worker that ran dbt exited with "resource_tracker: There appear to be 2 leaked
    semaphore objects to clean up at shutdown" on the terminal, between check's own lines."""
    pytest.importorskip("dbt.adapters.duckdb")
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "NO_COLOR": "1",
        "ARRIVALBENCH_CACHE_DIR": str(tmp_path / "cache"),
    }
    done = subprocess.run(
        [sys.executable, "-m", "arrivalbench", "check", "--dbt-project", str(SHOP),
         "--model", "orders_fixed", "--source", "raw.orders", "--log", str(orders), *LOG_ARGS,
         "--arrival-column", "_loaded_at", "--ignore-column", "_loaded_at",
         "--schedules", "single_batch"],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "leaked semaphore" not in done.stderr and "Warning" not in done.stderr, done.stderr
    said = [line for line in done.stderr.splitlines() if not line.startswith("check: [")]
    assert said[0].startswith("check: parsing the dbt project… (") and "first parse" in said[0]
    assert said[1].startswith("check: parsed the dbt project in ")
