"""The audit: oracle.py against oracle.sql, log by log, with the diff named and Cohen's kappa."""

from __future__ import annotations

import json
import sys

import pytest

from arrivalbench.audit import (
    EXTRA_SEEDS,
    MESSAGE_BYTES,
    PythonOracleError,
    audit_seeds,
    audit_suite,
    audit_task,
    gated_seeds,
    load_python_oracle,
)
from arrivalbench.engines import get_engine
from arrivalbench.errors import ArrivalBenchError
from arrivalbench.logs import task_log
from arrivalbench.oracle import compute_oracle
from arrivalbench.seeds import DEFAULT_SEED, GATE_SEED_COUNT, derive_seed, gate_seeds
from arrivalbench.spec import Task, get_task, load_suite, load_task

SEEDS = [DEFAULT_SEED, derive_seed("audit", 0)]  # a gated seed and an audited one: four logs

CORRECT = '''\
"""Daily revenue per store, written for the tests."""
from collections import defaultdict
from decimal import Decimal
import pyarrow as pa


def rows(sales):
    revenue, orders = defaultdict(Decimal), defaultdict(int)
    for sale in sales.to_pylist():
        key = (sale["store_id"], sale["ts_event"].date())
        revenue[key] += sale["amount"]
        orders[key] += 1
    return [
        {"store_id": k[0], "day": k[1], "revenue": revenue[k], "orders": orders[k]} for k in orders
    ]


def table(rows):
    return pa.table({
        "store_id": pa.array([r["store_id"] for r in rows], pa.int32()),
        "day": pa.array([r["day"] for r in rows], pa.date32()),
        "revenue": pa.array([r["revenue"] for r in rows], pa.decimal128(18, 2)),
        "orders": pa.array([r["orders"] for r in rows], pa.int64()),
    })


def oracle(tables):
    return table(rows(tables["sales"]))
'''
MISSING_ROW = (
    CORRECT
    + """

def oracle(tables):
    return table(sorted(rows(tables["sales"]), key=lambda r: (r["store_id"], r["day"]))[1:])
"""
)
EXTRA_ROW = (
    CORRECT
    + """
import datetime

def oracle(tables):
    extra = {"store_id": 99, "day": datetime.date(2020, 1, 1), "revenue": Decimal(1), "orders": 1}
    return table(rows(tables["sales"]) + [extra])
"""
)
CHANGED_ROW = (
    CORRECT
    + """

def oracle(tables):
    found = sorted(rows(tables["sales"]), key=lambda r: (r["store_id"], r["day"]))
    found[0]["orders"] += 1
    return table(found)
"""
)


@pytest.fixture
def revenue(copy_task, edit_spec):
    """A copy of daily_revenue under its own id (`my_revenue`), so it can sit on a --suite-dir."""

    def _make(oracle_py: str | None, name: str = "my_revenue") -> Task:
        folder = copy_task("daily_revenue", name)
        edit_spec(folder, lambda raw: raw.update(id=name))
        path = folder / "oracle.py"
        path.unlink(missing_ok=True)
        if oracle_py is not None:
            path.write_text(oracle_py, encoding="utf-8")
        return load_task(folder)

    return _make


def expected_rows(task: Task, seed: int, kind: str) -> int:
    return compute_oracle(task, task_log(task, kind, seed), get_engine()).num_rows


# --- seeds ----------------------------------------------------------------------------------------


def test_audit_seeds_are_the_gate_seeds_then_derived_ones():
    seeds = audit_seeds()
    assert len(seeds) == GATE_SEED_COUNT + EXTRA_SEEDS == 8
    assert seeds[:GATE_SEED_COUNT] == gate_seeds() == gated_seeds()
    assert seeds[0] == DEFAULT_SEED
    assert seeds[GATE_SEED_COUNT:] == [derive_seed("audit", i) for i in range(EXTRA_SEEDS)]
    assert len(set(seeds)) == 8
    assert audit_seeds(2, base=7) == [7, 8, 9, derive_seed("audit", 0), derive_seed("audit", 1)]


# --- agreement ------------------------------------------------------------------------------------


def test_a_correct_oracle_py_agrees_on_every_log(revenue):
    task = revenue(CORRECT)
    audit = audit_task(task, SEEDS, gated=gated_seeds())
    assert audit.agrees and audit.error is None and audit.first_disagreement is None
    assert [(log.seed, log.kind) for log in audit.logs] == [
        (seed, kind) for seed in SEEDS for kind in ("visible", "hidden")
    ]
    assert [log.gated for log in audit.logs] == [True, True, False, False]
    for log in audit.logs:
        assert log.equal and log.counts == {} and log.error is None
        assert (
            log.sql_rows
            == log.py_rows
            == log.items
            == log.agreeing
            == expected_rows(task, log.seed, log.kind)
        )
        assert log.kappa == 1.0
    assert audit.kappa == 1.0


def test_an_oracle_py_off_by_one_row_disagrees_and_the_diff_names_it(revenue):
    task = revenue(MISSING_ROW)
    audit = audit_task(task, SEEDS)
    assert not audit.agrees
    for log in audit.logs:
        n = expected_rows(task, log.seed, log.kind)
        assert not log.equal
        assert log.counts == {"missing": 1}
        assert (log.sql_rows, log.py_rows, log.items, log.agreeing) == (n, n - 1, n, n - 1)
        # n distinct labels for oracle.sql; oracle.py shares n - 1 of them and has one "absent":
        chance = (n - 1) / n**2
        assert log.kappa == pytest.approx(((n - 1) / n - chance) / (1 - chance))
        (missing,) = log.examples["missing"]
        assert missing["store_id"] == 1  # the first key in (store_id, day) order is dropped
    first = audit.first_disagreement
    assert first.startswith(f"visible log, seed {DEFAULT_SEED}: missing 1 (oracle.sql ")
    assert '"store_id": 1' in first


@pytest.mark.parametrize(
    ("source", "counts", "example"),
    [(EXTRA_ROW, {"extra": 1}, '"store_id": 99'), (CHANGED_ROW, {"changed": 1}, '"orders"')],
)
def test_an_extra_or_changed_row_is_a_disagreement_of_its_kind(revenue, source, counts, example):
    audit = audit_task(revenue(source), [DEFAULT_SEED])
    assert [log.counts for log in audit.logs] == [counts, counts]
    assert all(log.kappa is not None and log.kappa < 1 for log in audit.logs)
    assert example in audit.first_disagreement
    assert audit.kappa < 1


@pytest.mark.parametrize(
    ("source", "phrase"),
    [
        (
            "def oracle(tables):\n    raise ValueError('no such store ' * 200)\n",
            "ValueError: no such",
        ),
        ("def oracle(tables):\n    return 42\n", "TypeError: returned int, not a pyarrow.Table"),
        (
            "import pyarrow as pa\ndef oracle(tables):\n    return pa.table({'day': [1]})\n",
            "do not match the target",
        ),
    ],
)
def test_an_oracle_py_that_raises_or_returns_a_wrong_table_is_a_failed_log(revenue, source, phrase):
    audit = audit_task(revenue(source), SEEDS)  # returns: a failed audit, never a crash
    assert not audit.agrees and audit.error is None
    assert len(audit.logs) == 4
    for log in audit.logs:
        assert not log.equal and log.py_rows is None and log.sql_rows > 0
        assert log.error.startswith("oracle.py failed: ") and phrase in log.error
        assert len(log.error.encode()) <= MESSAGE_BYTES + len("oracle.py failed: ")
        assert "\n" not in log.error
    assert audit.first_disagreement.startswith(f"visible log, seed {DEFAULT_SEED}: oracle.py")


@pytest.mark.parametrize(
    ("source", "phrase"),
    [
        (None, "has no oracle.py; write its second oracle there"),
        ("def oracle(tables:\n", "failed to import: SyntaxError"),
        ("import no_such_module_here\n", "failed to import: ModuleNotFoundError"),
        ("def orcale(tables):\n    pass\n", "defines no function `oracle(tables)`"),
        ("oracle = 3\n", "defines no function `oracle(tables)`"),
    ],
)
def test_a_missing_or_unusable_oracle_py_is_an_error_naming_the_file(revenue, source, phrase):
    task = revenue(source)
    path = str(task.folder / "oracle.py")
    with pytest.raises(PythonOracleError) as raised:
        load_python_oracle(task)
    assert isinstance(raised.value, ArrivalBenchError)
    message = str(raised.value)
    assert message.startswith(path + ": ") and phrase in message and "\n" not in message
    audit = audit_task(task, SEEDS)  # over a suite: a failure row, not a stop
    assert (audit.agrees, audit.logs, audit.error) == (False, (), message)
    assert audit.first_disagreement == message


def test_an_oracle_py_loads_as_a_module_of_its_own_even_under_a_taken_task_id(copy_task):
    """Module names come from the task id and the file's path: a copy of a built-in task (same id,
    another folder) must neither reuse nor replace the built-in task's module."""
    folder = copy_task("daily_revenue")  # same id as the built-in task
    (folder / "oracle.py").write_text(MISSING_ROW, encoding="utf-8")
    copy, builtin = load_task(folder), get_task("daily_revenue")
    right, wrong = load_python_oracle(builtin), load_python_oracle(copy)
    assert right.__module__ != wrong.__module__
    assert {right.__module__, wrong.__module__} <= set(sys.modules)
    log = task_log(builtin, "hidden", DEFAULT_SEED)
    n = expected_rows(builtin, DEFAULT_SEED, "hidden")
    assert (right(log.tables).num_rows, wrong(log.tables).num_rows) == (n, n - 1)


def test_a_tasks_content_hash_covers_oracle_py_but_not_its_bytecode(revenue):
    task = revenue(CORRECT)
    before = task.content_hash()
    load_python_oracle(task)  # importing may leave __pycache__/ in the task folder
    (task.folder / "__pycache__").mkdir(exist_ok=True)
    (task.folder / "__pycache__" / "oracle.cpython-311.pyc").write_bytes(b"bytecode")
    assert task.content_hash() == before
    (task.folder / "oracle.py").write_text(MISSING_ROW, encoding="utf-8")
    assert task.content_hash() != before
    assert load_task(task.folder).spec == task.spec  # the loader takes oracle.py in its stride


@pytest.mark.slow
def test_audit_suite_in_a_pool_gives_the_same_results_in_order(revenue):
    tasks = [revenue(CORRECT, name="pool_right"), revenue(MISSING_ROW, name="pool_wrong")]
    serial = audit_suite(tasks, [DEFAULT_SEED], jobs=1)
    pooled = audit_suite(tasks, [DEFAULT_SEED], jobs=2)
    assert [a.task_id for a in pooled] == ["pool_right", "pool_wrong"]
    assert [a.to_json() for a in pooled] == [a.to_json() for a in serial]
    assert [a.agrees for a in pooled] == [True, False]


# --- the command line -----------------------------------------------------------------------------


def test_cli_audit_exits_0_when_the_oracles_agree(cli, revenue):
    task = revenue(CORRECT)
    done = cli("audit", "--suite-dir", task.folder.parent, "--tasks", "my_revenue", "--seeds", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    row = next(line for line in done.stdout.splitlines() if "my_revenue" in line)
    assert "8/8" in row and "1.000" in row  # three gate seeds and one more, two logs each


def test_cli_audit_exits_1_and_names_the_first_disagreement(cli, revenue):
    task = revenue(MISSING_ROW)
    done = cli("audit", "--suite-dir", task.folder.parent, "--tasks", "my_revenue", "--seeds", "1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "0/8" in done.stdout
    assert f"visible log, seed {DEFAULT_SEED}: missing 1" in done.stdout
    as_json = cli(
        "audit",
        "--suite-dir",
        task.folder.parent,
        "--tasks",
        "my_revenue",
        "--seeds",
        "0",
        "--json",
    )
    assert as_json.returncode == 1
    document = json.loads(as_json.stdout)
    assert document["seeds"] == document["gated_seeds"] == gate_seeds()
    assert document["summary"]["disagree"] == 1
    (audit,) = document["tasks"]
    assert (audit["task"], audit["agrees"], audit["logs_checked"]) == ("my_revenue", False, 6)
    assert [log["counts"] for log in audit["logs"]] == [{"missing": 1}] * 6


@pytest.mark.parametrize(
    ("source", "phrase"), [(None, "has no oracle.py"), ("def oracle(:\n", "failed to import")]
)
def test_cli_audit_of_a_named_task_without_a_usable_oracle_py_exits_2(cli, revenue, source, phrase):
    task = revenue(source)
    done = cli("audit", "--suite-dir", task.folder.parent, "--tasks", "my_revenue")
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert line.startswith(f"arrivalbench: error: {task.folder / 'oracle.py'}: ")
    assert phrase in line and "Traceback" not in done.stderr
    assert done.stdout == ""


@pytest.mark.slow
def test_cli_audit_of_the_whole_suite_reports_a_missing_oracle_py_as_a_failure(cli, revenue):
    task = revenue(None)
    done = cli("audit", "--suite-dir", task.folder.parent, "--seeds", "0", "--json")
    assert done.returncode == 1, done.stderr
    by_task = {t["task"]: t for t in json.loads(done.stdout)["tasks"]}
    assert set(by_task) == {*load_suite(), "my_revenue"}
    mine = by_task["my_revenue"]
    assert (mine["agrees"], mine["logs_checked"]) == (False, 0)
    assert "has no oracle.py" in mine["error"]
    assert by_task["daily_revenue"]["agrees"] is True


@pytest.mark.parametrize(
    ("option", "value", "phrase"),
    [
        ("--seeds", "-1", "--seeds -1: must be at least 0"),
        ("--jobs", "0", "--jobs 0: must be at least 1"),
        ("--seed", "-5", "--seed -5: a seed is"),
        ("--tasks", ",", "names no task"),
    ],
)
def test_cli_audit_refuses_a_bad_option_before_auditing(cli, option, value, phrase):
    done = cli("audit", "--tasks", "daily_revenue", option, value)
    assert done.returncode == 2
    (line,) = done.stderr.splitlines()
    assert phrase in line and done.stdout == ""


# --- the suite ------------------------------------------------------------------------------------


# Every built-in oracle.py agreeing with oracle.sql over the whole suite is not a test here:
# it is `arrivalbench audit`, the last lane of `make test` (it exits 1 on any disagreement),
# and running it twice cost CI ~25 s. The rules it applies are tested above on one task.


def test_every_task_of_the_suite_has_an_oracle_py():
    missing = sorted(t.id for t in load_suite().values() if not (t.folder / "oracle.py").is_file())
    assert missing == []
