"""The audit: every task's second oracle (oracle.py, Python) must agree with oracle.sql on every log.

oracle.sql is what grading trusts; a wrong one silently grades every pipeline against the wrong
table. So each task also ships `oracle.py`, written independently from the task text, defining
`oracle(tables: dict[str, pyarrow.Table]) -> pyarrow.Table` over the same complete logs (one table
per source, named as in task.yaml). The audit computes both on the visible and the hidden log of
several seeds and compares them with the grader's own comparison (oracle.sql as expected); it
reports, per log, the diff and Cohen's kappa between the two oracles over the target's keys.
A Python oracle that raises or returns the wrong columns is a failed log, never a crash.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import math
import sys
from collections.abc import Callable, Hashable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa

from arrivalbench.analysis.agreement import cohen_kappa
from arrivalbench.compare import compare, jsonable
from arrivalbench.errors import ArrivalBenchError
from arrivalbench.logs import LogKind, task_log
from arrivalbench.oracle import compute_oracle, conform
from arrivalbench.replay import bounded_message
from arrivalbench.seeds import DEFAULT_SEED, derive_seed, gate_seeds
from arrivalbench.spec import TargetSpec, Task

ORACLE_PY = "oracle.py"
EXTRA_SEEDS = 5
"""Seeds audited besides the base seed, derived as derive_seed("audit", i)."""
KINDS: tuple[LogKind, ...] = ("visible", "hidden")
MESSAGE_BYTES = 500
ABSENT = "absent"
"""The label of a key that one oracle's result does not hold."""

PythonOracle = Callable[[dict[str, pa.Table]], pa.Table]


class PythonOracleError(ArrivalBenchError):
    """A task's oracle.py is missing, does not import, or defines no `oracle` function."""


def audit_seeds(extra: int = EXTRA_SEEDS, base: int = DEFAULT_SEED) -> list[int]:
    """The gate seeds from `base`, then `extra` seeds derived from ("audit", i): the same on
    every machine."""
    return [*gated_seeds(base), *(derive_seed("audit", i) for i in range(extra))]


def gated_seeds(base: int = DEFAULT_SEED) -> list[int]:
    """The seeds at which a disagreement rejects a task: the gate's (seeds.gate_seeds)."""
    return gate_seeds(base=base)


def load_python_oracle(task: Task) -> PythonOracle:
    """The `oracle` function of the task's oracle.py, imported by path under a module name of its own."""
    path = task.folder / ORACLE_PY
    fix = "see docs/task-authoring.md, 'The second oracle'"
    if not path.is_file():
        raise PythonOracleError(
            f"{path}: task '{task.id}' has no oracle.py; write its second oracle there ({fix})."
        )
    digest = hashlib.sha256(str(path.resolve()).encode()).hexdigest()[:12]
    name = f"_arrivalbench_oracle_{task.id}_{digest}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PythonOracleError(f"{path}: cannot be imported as a Python module ({fix}).")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses and pickling look a module up by name
    try:
        spec.loader.exec_module(module)
    except BaseException as exc:
        sys.modules.pop(name, None)
        if isinstance(exc, KeyboardInterrupt):
            raise
        raise PythonOracleError(
            f"{path}: failed to import: {_one_line(exc)}; fix the file and rerun."
        ) from None
    function = getattr(module, "oracle", None)
    if not callable(function):
        raise PythonOracleError(
            f"{path}: defines no function `oracle(tables)`; "
            f"add `def oracle(tables: dict[str, pyarrow.Table]) -> pyarrow.Table` ({fix})."
        )
    return function


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".replace("\n", " ").strip()
    return bounded_message(text, MESSAGE_BYTES)


@dataclass(frozen=True)
class LogAudit:
    """One log (seed, kind): both oracles' row counts, their agreement, the diff and the kappa."""

    seed: int
    kind: LogKind
    gated: bool
    sql_rows: int | None
    py_rows: int | None
    equal: bool
    counts: dict[str, int] = field(default_factory=dict)
    """The grader's diff counts with oracle.sql as expected: `missing` rows are in oracle.sql only."""
    examples: dict[str, Any] = field(default_factory=dict)
    items: int = 0
    """Keys in the union of both results (the kappa's items)."""
    agreeing: int = 0
    kappa: float | None = None
    """Cohen's kappa over those keys; None when undefined (no key, or one label throughout)."""
    error: str | None = None

    def describe(self) -> str:
        """One line for a disagreement: where, and what differs."""
        where = f"{self.kind} log, seed {self.seed}"
        if self.error:
            return f"{where}: {self.error}"
        counts = ", ".join(f"{k} {v}" for k, v in self.counts.items() if v)
        first = next(iter(self.examples.items()), None)
        example = f"; e.g. {first[0]} {_compact(first[1][0])}" if first and first[1] else ""
        return f"{where}: {counts} (oracle.sql {self.sql_rows} rows, oracle.py {self.py_rows}){example}"


def _compact(value: object) -> str:
    return bounded_message(json.dumps(value, sort_keys=True, default=str), MESSAGE_BYTES)


@dataclass(frozen=True)
class TaskAudit:
    task_id: str
    oracle_py: str
    logs: tuple[LogAudit, ...] = ()
    error: str | None = None
    """Why no log was audited: no oracle.py, or one that does not import or define `oracle`."""
    kappa: float | None = None
    """Cohen's kappa over the keys of every log together."""

    @property
    def agrees(self) -> bool:
        return self.error is None and bool(self.logs) and all(log.equal for log in self.logs)

    @property
    def first_disagreement(self) -> str | None:
        if self.error is not None:
            return self.error
        return next((log.describe() for log in self.logs if not log.equal), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "task": self.task_id,
            "oracle_py": self.oracle_py,
            "agrees": self.agrees,
            "error": self.error,
            "kappa": self.kappa,
            "logs_checked": len(self.logs),
            "logs_agreeing": sum(log.equal for log in self.logs),
            "first_disagreement": self.first_disagreement,
            "logs": [asdict(log) for log in self.logs],
        }


def _value_match(a: object, b: object, tolerance: Any) -> bool:
    """The comparator's rule for one value: exact, or within a float column's tolerance."""
    if tolerance is None or a is None or b is None:
        return a == b and (a is None) == (b is None)
    a, b = float(a), float(b)  # type: ignore[arg-type]
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= max(tolerance.abs, tolerance.rel * max(abs(a), abs(b)))


def _labels(
    sql: pa.Table, py: pa.Table, target: TargetSpec
) -> tuple[list[Hashable], list[Hashable]]:
    """Per key in the union of both results, each oracle's label: its row's values, or ABSENT.

    A python row that matches the sql row (floats within tolerance) takes the sql row's label, so
    the labels agree exactly when the comparator would call the rows equal.
    """
    keys, values = target.key, [c for c in target.columns if c not in target.key]
    tolerances = [target.tolerance_for(c) for c in values]

    def rows(table: pa.Table) -> dict[tuple[object, ...], list[tuple[object, ...]]]:
        grouped: dict[tuple[object, ...], list[tuple[object, ...]]] = {}
        for row in table.select([*keys, *values]).to_pylist():
            key = tuple(jsonable(row[k]) for k in keys)
            grouped.setdefault(key, []).append(tuple(row[c] for c in values))
        return grouped

    left, right = rows(sql), rows(py)
    a: list[Hashable] = []
    b: list[Hashable] = []
    for key in sorted(left.keys() | right.keys(), key=repr):
        mine, theirs = left.get(key), right.get(key)
        label_a = ABSENT if mine is None else (key, tuple(sorted(map(repr, mine))))
        label_b = ABSENT if theirs is None else (key, tuple(sorted(map(repr, theirs))))
        if (
            mine is not None
            and theirs is not None
            and len(mine) == len(theirs) == 1
            and all(
                _value_match(x, y, t)
                for x, y, t in zip(mine[0], theirs[0], tolerances, strict=True)
            )
        ):
            label_b = label_a
        a.append(label_a)
        b.append(label_b)
    return a, b


def _kappa(a: Sequence[Hashable], b: Sequence[Hashable]) -> float | None:
    if not a:
        return None
    kappa = cohen_kappa(a, b)
    return None if math.isnan(kappa) else kappa


def audit_log(
    task: Task, oracle: PythonOracle, seed: int, kind: LogKind, gated: bool
) -> tuple[LogAudit, list[Hashable], list[Hashable]]:
    """Both oracles on one log, compared; also the kappa labels, for the task's pooled kappa."""
    from arrivalbench.engines import get_engine

    target = task.spec.target
    log = task_log(task, kind, seed)
    base = {"seed": seed, "kind": kind, "gated": gated}
    try:
        sql = compute_oracle(task, log, get_engine())
    except ArrivalBenchError as exc:
        return LogAudit(**base, sql_rows=None, py_rows=None, equal=False, error=str(exc)), [], []
    try:
        result = oracle(dict(log.tables))
        if not isinstance(result, pa.Table):
            raise TypeError(f"returned {type(result).__name__}, not a pyarrow.Table")
        py = conform(result, target, ORACLE_PY)
    except Exception as exc:
        error = f"oracle.py failed: {_one_line(exc)}"
        return (
            LogAudit(**base, sql_rows=sql.num_rows, py_rows=None, equal=False, error=error),
            [],
            [],
        )
    comparison = compare(sql, py, target)
    a, b = _labels(sql, py, target)
    audit = LogAudit(
        **base,
        sql_rows=sql.num_rows,
        py_rows=py.num_rows,
        equal=comparison.equal,
        counts={k: v for k, v in comparison.diff["counts"].items() if v},
        examples=comparison.diff["examples"],
        items=len(a),
        agreeing=sum(x == y for x, y in zip(a, b, strict=True)),
        kappa=_kappa(a, b),
    )
    return audit, a, b


def audit_task(task: Task, seeds: Sequence[int], gated: Iterable[int] = ()) -> TaskAudit:
    """Both oracles on the visible and hidden log of every seed; a missing or broken oracle.py is a
    TaskAudit with `error` set (load_python_oracle raises it, for callers that want to stop)."""
    path = str(task.folder / ORACLE_PY)
    try:
        oracle = load_python_oracle(task)
    except PythonOracleError as exc:
        return TaskAudit(task_id=task.id, oracle_py=path, error=str(exc))
    gated = set(gated)
    logs, all_a, all_b = [], [], []
    for seed in seeds:
        for kind in KINDS:
            audit, a, b = audit_log(task, oracle, seed, kind, seed in gated)
            logs.append(audit)
            all_a += [(seed, kind, x) for x in a]
            all_b += [(seed, kind, x) for x in b]
    return TaskAudit(task_id=task.id, oracle_py=path, logs=tuple(logs), kappa=_kappa(all_a, all_b))


def _audit_in_worker(task: Task, seeds: list[int], gated: list[int]) -> TaskAudit:
    return audit_task(task, seeds, gated)


def audit_suite(
    tasks: Iterable[Task],
    seeds: Sequence[int],
    gated: Sequence[int] = (),
    jobs: int = 1,
    on_task: Callable[[TaskAudit], None] | None = None,
) -> list[TaskAudit]:
    """Audit every task, `jobs` tasks at a time; results come back in the order given."""
    tasks, seeds, gated = list(tasks), list(seeds), list(gated)
    if jobs <= 1 or len(tasks) <= 1:
        results = []
        for task in tasks:
            results.append(audit_task(task, seeds, gated))
            if on_task:
                on_task(results[-1])
        return results
    from arrivalbench.pool import in_order

    return in_order(_audit_in_worker, [(task, seeds, gated) for task in tasks], jobs, on_task)


def audit_summary(results: Sequence[TaskAudit], seconds: float) -> dict[str, Any]:
    """The counts an audit is judged by: tasks, agreeing, disagreeing, without a usable
    oracle.py, logs compared, and the seconds it took."""
    agreeing = sum(r.agrees for r in results)
    without = sum(r.error is not None for r in results)
    return {
        "tasks": len(results),
        "agree": agreeing,
        "disagree": len(results) - agreeing - without,
        "oracle_py_unusable": without,
        "logs": sum(len(r.logs) for r in results),
        "seconds": round(seconds, 1),
    }


def audit_document(
    results: Sequence[TaskAudit], seeds: Sequence[int], gated: Sequence[int], seconds: float
) -> dict[str, Any]:
    """`arrivalbench audit --json`: the seeds, the summary and every task's audit."""
    return {
        "seeds": list(seeds),
        "gated_seeds": list(gated),
        "summary": audit_summary(results, seconds),
        "tasks": [r.to_json() for r in results],
    }
