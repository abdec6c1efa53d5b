"""The tables of a run directory: cells, verdict rows, timings, and the journal's line check.

Verdict rows are byte-stable: a row is a pure function of (cell, schedule, grade record entry),
its `record` column the entry's canonical JSON, so re-grading a stored run reproduces it byte
for byte. Every whole-file write goes to a temporary name first and is renamed into place.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from arrivalbench.store.errors import RunStoreError
from arrivalbench.verdict import Verdict, compact

CELL_KEY = ("arm", "task", "sample")
VERDICT_KEY = (*CELL_KEY, "schedule")

CELLS_SCHEMA = pa.schema(
    [
        ("arm", pa.string()),
        ("task", pa.string()),
        ("sample", pa.int64()),
        ("artifact_sha256", pa.string()),
        ("no_artifact_reason", pa.string()),
        ("snapshot_by_turn", pa.list_(pa.string())),
        ("tokens", pa.int64()),
        ("stop_reason", pa.string()),
        ("prompt_sha256", pa.string()),
        ("served_model", pa.string()),
    ]
)
# Columns added after format 1 was first written; older files read with these as nulls.
OPTIONAL_COLUMNS = {"prompt_sha256", "seed_commitment", "served_model"}
ROLES = ("model", "intervention", "reference", "human")
"""An arm's role in `arm_info`: a model's own behaviour (the unhinted prompt), a prompt
intervention, a model-free reference (gold, controls, baselines, templates), or people."""
VERDICTS_SCHEMA = pa.schema(
    [
        ("arm", pa.string()),
        ("task", pa.string()),
        ("sample", pa.int64()),
        ("schedule", pa.string()),
        ("artifact_sha256", pa.string()),
        ("verdict", pa.string()),
        ("error_class", pa.string()),
        ("batch", pa.int64()),
        ("statement", pa.int64()),
        ("missing", pa.int64()),
        ("extra", pa.int64()),
        ("duplicate_key", pa.int64()),
        ("changed", pa.int64()),
        ("schema", pa.int64()),
        ("right_rows_share", pa.float64()),
        ("seed", pa.int64()),
        ("schedule_sha256", pa.string()),
        ("record", pa.string()),
        ("seed_commitment", pa.string()),
    ]
)
TIMINGS_SCHEMA = pa.schema(
    [
        ("arm", pa.string()),
        ("task", pa.string()),
        ("sample", pa.int64()),
        ("schedule", pa.string()),
        ("wall_seconds", pa.float64()),
        ("statement_seconds", pa.float64()),
    ]
)


def _json_kind(value: object) -> str:
    """How a JSON value reads in a message: 'a string ("x")', 'null', 'a list'."""
    kinds = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return f"{kinds.get(type(value), type(value).__name__)} ({json.dumps(value)[:40]})"


@dataclass(frozen=True)
class Cell:
    arm: str
    task: str
    sample: int
    artifact_sha256: str | None = None
    no_artifact_reason: str | None = None
    snapshot_by_turn: tuple[str, ...] = ()
    tokens: int | None = None
    stop_reason: str | None = None
    prompt_sha256: str | None = None
    served_model: str | None = None  # the model id the provider reported serving, when it did

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.arm, self.task, self.sample)

    @classmethod
    def from_row(cls, row: Mapping[str, Any]) -> Cell:
        """A cell from a cells.parquet row or a sample's cell metadata; a field the row lacks
        takes its default."""
        given = {f.name: row[f.name] for f in fields(cls) if row.get(f.name) is not None}
        return cls(**{**given, "snapshot_by_turn": tuple(row.get("snapshot_by_turn") or ())})


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _write_parquet(path: Path, table: pa.Table) -> None:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    _atomic_write(path, sink.getvalue().to_pybytes())


def _read_parquet(path: Path, schema: pa.Schema) -> pa.Table:
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise RunStoreError(
            f"{path}: unreadable Parquet ({exc}); restore it from a copy, or delete it to re-grade."
        ) from None
    for name in OPTIONAL_COLUMNS & set(schema.names) - set(table.column_names):
        table = table.append_column(name, pa.nulls(table.num_rows, schema.field(name).type))
    missing = [f.name for f in schema if f.name not in table.column_names]
    if missing:
        raise RunStoreError(
            f"{path}: missing columns {missing}; it was not written by this version of ArrivalBench."
        )
    return table.select(schema.names).cast(schema)


def verdict_row(
    cell: Cell,
    schedule: str,
    seed: int,
    entry: Verdict | Mapping[str, Any],
    seed_commitment: str | None = None,
) -> dict[str, Any]:
    """One verdict row from a verdict, or a grade record's entry (its JSON), for one schedule.

    `seed` is the run's public base seed; `seed_commitment` is set when the schedule's log came
    from the run's secret instead.
    """
    if isinstance(entry, Verdict):
        entry = entry.to_json()
    counts = entry.get("diff", {}).get("counts", {})
    return {
        "arm": cell.arm,
        "task": cell.task,
        "sample": cell.sample,
        "schedule": schedule,
        "artifact_sha256": cell.artifact_sha256,
        "verdict": entry["verdict"],
        "error_class": entry.get("error_class"),
        "batch": entry.get("batch"),
        "statement": entry.get("statement"),
        **{
            kind: counts.get(kind)
            for kind in ("missing", "extra", "duplicate_key", "changed", "schema")
        },
        "right_rows_share": entry.get("diff", {}).get("right_rows_share")
        if entry["verdict"] == "FAIL"
        else None,
        "seed": seed,
        "schedule_sha256": entry.get("schedule_sha256"),
        "record": compact(entry),
        "seed_commitment": seed_commitment,
    }


def _json_columns(schema: pa.Schema) -> tuple[tuple[str, tuple[type, ...], bool], ...]:
    """(name, Python types JSON gives it, may be null) per column; the key columns never are null."""
    json_of = {pa.string(): (str,), pa.int64(): (int,), pa.float64(): (int, float)}
    return tuple((f.name, json_of[f.type], f.name not in VERDICT_KEY) for f in schema)


JOURNAL_PARTS = {"verdict": _json_columns(VERDICTS_SCHEMA), "timing": _json_columns(TIMINGS_SCHEMA)}


def _journal_problem(entry: object) -> str | None:
    """What keeps a journal line from being a (verdict row, timing row) pair; None when it is one.

    Types are compared exactly (type(x) in ...), so a boolean is no integer; a journal is read
    whole on every resume, so this stays a few comparisons per field.
    """
    if not isinstance(entry, dict) or set(entry) != {"verdict", "timing"}:
        return "expected an object with 'verdict' and 'timing'"
    for part, columns in JOURNAL_PARTS.items():
        row = entry[part]
        if not isinstance(row, dict):
            return f"{part}: {_json_kind(row)}, not an object"
        for name, kinds, nullable in columns:
            if name not in row:
                if name in OPTIONAL_COLUMNS:  # a row journalled before the column existed
                    continue
                return f"{part}: no '{name}'"
            value = row[name]
            if type(value) not in kinds and not (value is None and nullable):
                return f"{part}: '{name}' is {_json_kind(value)}"
    return None
