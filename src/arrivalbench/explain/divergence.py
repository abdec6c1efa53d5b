"""First divergence: after each delivery, the target against the oracle over what was delivered so far.

The replay is the grader's own, in the sandbox worker, asked to read the target after every
delivery as well (ReplayJob.observe). After batch k the truth is the oracle over the distinct
events of batches 1..k; the first k where the target exists and differs from it is where the
state left the truth. A target built only at the end (it does not exist before the last batch)
has no earlier state to compare, and the report says so.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from arrivalbench.compare import compare, jsonable
from arrivalbench.explain.runner import Deliveries, Runner, distinct_rows
from arrivalbench.spec import TargetSpec

SHOWN_ROWS = 5
"""Rows shown per side of a difference; the counts say how many there were in all."""


def rows_of(table: pa.Table, target: TargetSpec) -> list[dict[str, Any]]:
    """The table's rows as JSON-able dicts over the target's columns (matched case-insensitively),
    sorted NULL-safely."""
    by_lower = {n.lower(): n for n in table.column_names}
    names = [c for c in target.columns if c.lower() in by_lower]
    columns = [table.column(by_lower[c.lower()]).to_pylist() for c in names]
    rows = [
        {c: jsonable(v) for c, v in zip(names, values, strict=True)}
        for values in zip(*columns, strict=True)
    ]
    return sorted(rows, key=lambda r: [(v is None, str(v)) for v in r.values()])


def _cast_like(actual: pa.Table, expected: pa.Table) -> pa.Table:
    """Actual's columns cast to the expected types where that is lossless, so equal rows print alike."""
    by_lower = {n.lower(): n for n in actual.column_names}
    arrays, names = [], []
    for name, field in zip(expected.column_names, expected.schema, strict=True):
        if name.lower() not in by_lower:
            continue
        column = actual.column(by_lower[name.lower()])
        with contextlib.suppress(pa.ArrowInvalid, pa.ArrowNotImplementedError):
            column = column.cast(field.type)
        arrays.append(column)
        names.append(name)
    return pa.table(arrays, names=names)


def row_diff(
    expected: pa.Table, actual: pa.Table, target: TargetSpec
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the target's rows the oracle lacks, the oracle's rows the target lacks), as bags."""
    got = rows_of(_cast_like(actual, expected), target)
    want = rows_of(expected, target)
    key = lambda r: tuple(sorted((k, str(v)) for k, v in r.items()))  # noqa: E731
    extra = Counter(map(key, got)) - Counter(map(key, want))
    missing = Counter(map(key, want)) - Counter(map(key, got))
    return _take(got, extra, key), _take(want, missing, key)


def _take(rows: list[dict[str, Any]], counts: Counter, key: Any) -> list[dict[str, Any]]:
    out = []
    left = Counter(counts)
    for row in rows:
        k = key(row)
        if left[k] > 0:
            left[k] -= 1
            out.append(row)
    return out


@dataclass(frozen=True)
class Step:
    """One delivery of a replay, observed."""

    batch: int
    """1-based."""
    delivered: list[dict[str, Any]]
    defined: bool
    """Whether the target existed after this delivery."""
    equal: bool
    target_rows: list[dict[str, Any]]
    """The target's rows the oracle after this batch lacks."""
    oracle_rows: list[dict[str, Any]]
    """The oracle's rows (after this batch) the target lacks."""
    error: str | None = None
    """The ERROR this batch ended in ("class: message"), if it did."""


def observe(runner: Runner, deliveries: Deliveries) -> tuple[list[Step], str | None]:
    """Each delivery's step, or (steps so far, the ERROR class) when the replay ended in ERROR."""
    outcome = runner.run(deliveries, observe=True)
    trace = outcome.result.trace or ()
    target = runner.task.spec.target
    steps = []
    for k, seen in enumerate(trace):
        expected = runner.oracle(distinct_rows(deliveries[: k + 1]))
        delivered = _delivered(runner, deliveries[k].rows)
        if seen is None:
            steps.append(Step(k + 1, delivered, False, False, [], []))
            continue
        equal = compare(expected, seen, target).equal
        extra, missing = ([], []) if equal else row_diff(expected, seen, target)
        steps.append(Step(k + 1, delivered, True, equal, extra, missing))
    failure = outcome.result.error
    if failure is not None and len(steps) < len(deliveries):
        delivered = _delivered(runner, deliveries[len(steps)].rows)
        what = f"{failure.error_class}: {failure.message}"
        steps.append(Step(len(steps) + 1, delivered, False, False, [], [], what))
    return steps, failure.error_class if failure else None


def _delivered(runner: Runner, rows: tuple[int, ...]) -> list[dict[str, Any]]:
    """The delivered rows, in arrival order, with their source's columns (copies kept)."""
    log = runner.log
    out = []
    for row in rows:
        name = log.sources[int(log.spine.source[row])].name
        table = log.tables[name].slice(int(log.spine.row[row]), 1)
        values = {c: jsonable(table.column(c)[0].as_py()) for c in table.column_names}
        out.append({"source": name, **values} if len(log.sources) > 1 else values)
    return out


@dataclass(frozen=True)
class Divergence:
    batch: int | None
    """1-based; None when the target never differed where it was defined."""
    note: str
    target_rows: list[dict[str, Any]]
    oracle_rows: list[dict[str, Any]]


def first_divergence(steps: list[Step], error: str | None) -> Divergence:
    """The first batch whose target differs from the truth so far, with what differs there."""
    steps = [s for s in steps if s.error is None]
    for step in steps:
        if step.defined and not step.equal:
            note = f"after batch {step.batch} the target first differs from the truth so far"
            if not all(s.defined for s in steps[: step.batch - 1]):
                note += " (it did not exist after every earlier batch)"
            return Divergence(
                step.batch, note, step.target_rows[:SHOWN_ROWS], step.oracle_rows[:SHOWN_ROWS]
            )
    if steps and not any(s.defined for s in steps[:-1]) and len(steps) > 1:
        return Divergence(
            None,
            "the target does not exist before the last batch: no earlier state to compare",
            [],
            [],
        )
    if error is not None:
        last = len(steps) + 1
        return Divergence(
            last,
            f"the replay ended in ERROR ({error}) in batch {last}; the state before it "
            "matched the truth wherever the target existed",
            [],
            [],
        )
    return Divergence(None, "the target matched the truth after every batch", [], [])
