"""What a sandbox worker may say to its supervisor: plain data, never a pickle.

The worker runs untrusted SQL in an engine written in C; a memory-safety bug there would let the
script choose the worker's bytes. Unpickling them would turn that into code execution in the
grader, so a reply is a JSON header (the result record, a heartbeat, a failure) followed by
Arrow IPC streams for tables, and anything else is a `ProtocolError` (the job's ERROR). The
other direction (jobs, from the grader) stays a pickle: it is the trusted side.
"""

from __future__ import annotations

import json
import math
import struct
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from arrivalbench.replay import ReplayResult, RunError

KINDS = frozenset({"beat", "done", "out_of_memory", "harness_error"})
_LENGTH = struct.Struct(">I")


class ProtocolError(Exception):
    """A worker's reply is not of this module's format (a broken or subverted worker)."""


@dataclass(frozen=True)
class Reply:
    kind: str
    batch: int | None = None
    statement: int | None = None
    result: ReplayResult | None = None
    retire: bool = False
    spare: bool = False
    """The job ran on an instance the worker opened ahead, while the grader compared."""
    message: str = ""


def beat(batch: int, statement: int | None) -> bytes:
    return _frame({"kind": "beat", "batch": batch, "statement": statement}, [])


def failure(kind: str, message: str) -> bytes:
    return _frame({"kind": kind, "message": message}, [])


def done(result: ReplayResult, retire: bool, spare: bool) -> bytes:
    error = result.error
    header = {
        "kind": "done",
        "retire": retire,
        "spare": spare,
        "error": None
        if error is None
        else {
            "error_class": error.error_class,
            "batch": error.batch,
            "statement": error.statement,
            "message": error.message,
        },
        "statement_seconds": result.statement_seconds,
        "statements_run": result.statements_run,
        "empty_script": result.empty_script,
        "trace": result.trace is not None,
        "beside": result.beside,
    }
    return _frame(header, [result.target, *(result.trace or ())])


def _frame(header: dict[str, Any], tables: list[pa.Table | None]) -> bytes:
    blobs = [b"" if t is None else _ipc(t) for t in tables]
    header["tables"] = [None if t is None else len(b) for t, b in zip(tables, blobs, strict=True)]
    text = json.dumps(header, allow_nan=False).encode()
    return _LENGTH.pack(len(text)) + text + b"".join(blobs)


def _ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def _beside(value: Any) -> dict[str, Any] | None:
    if value is not None and not isinstance(value, dict):
        raise ProtocolError("beside is not a record")
    return value


def decode(data: bytes) -> Reply:
    """The reply in `data`, checked field by field; a ProtocolError for anything else."""
    if len(data) < _LENGTH.size:
        raise ProtocolError(f"a reply of {len(data)} bytes has no header")
    (size,) = _LENGTH.unpack_from(data)
    if size > len(data) - _LENGTH.size:
        raise ProtocolError("the reply's header is longer than the reply")
    try:
        header = json.loads(data[_LENGTH.size : _LENGTH.size + size])
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProtocolError(f"the reply's header is not JSON ({exc})") from None
    if not isinstance(header, dict) or header.get("kind") not in KINDS:
        raise ProtocolError("the reply's header names no known kind")
    tables = _tables(header.get("tables"), memoryview(data)[_LENGTH.size + size :])
    kind = header["kind"]
    if kind == "beat":
        return Reply(kind, _int(header, "batch"), _int(header, "statement", True))
    if kind != "done":
        return Reply(kind, message=_typed(header, "message", str))
    if not tables:
        raise ProtocolError("a result without its target slot")
    trace = tuple(tables[1:]) if _typed(header, "trace", bool) else None
    if trace is None and len(tables) != 1:
        raise ProtocolError("tables beyond the target without a trace")
    raw = header.get("error")
    error = None
    if raw is not None:
        if not isinstance(raw, dict):
            raise ProtocolError("the error is not a record")
        error = RunError(
            _typed(raw, "error_class", str),
            _int(raw, "batch", True),
            _int(raw, "statement", True),
            _typed(raw, "message", str),
        )
    seconds = header.get("statement_seconds")
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, int | float)
        or not math.isfinite(seconds)
    ):
        raise ProtocolError("statement_seconds is not a number")
    result = ReplayResult(
        tables[0],
        error,
        float(seconds),
        _int(header, "statements_run"),
        empty_script=_typed(header, "empty_script", bool),
        trace=trace,
        beside=_beside(header.get("beside")),
    )
    return Reply(
        kind,
        result=result,
        retire=_typed(header, "retire", bool),
        spare=_typed(header, "spare", bool),
    )


def _tables(lengths: object, body: memoryview) -> list[pa.Table | None]:
    if not isinstance(lengths, list) or any(
        n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0) for n in lengths
    ):
        raise ProtocolError("the reply's table lengths are not a list of sizes")
    if sum(n or 0 for n in lengths) != len(body):
        raise ProtocolError("the reply's tables do not fill its body")
    out: list[pa.Table | None] = []
    offset = 0
    for n in lengths:
        if n is None:
            out.append(None)
            continue
        try:
            table = pa.ipc.open_stream(pa.py_buffer(body[offset : offset + n])).read_all()
            table.validate(full=True)
        except (pa.ArrowException, ValueError) as exc:
            raise ProtocolError(f"a table in the reply is not valid Arrow IPC ({exc})") from None
        out.append(table)
        offset += n
    return out


def _typed(record: dict[str, Any], name: str, kind: type) -> Any:
    value = record.get(name)
    if type(value) is not kind:
        raise ProtocolError(f"{name} is not a {kind.__name__}")
    return value


def _int(record: dict[str, Any], name: str, nullable: bool = False) -> int | None:
    value = record.get(name)
    if value is None and nullable:
        return None
    if type(value) is not int:
        raise ProtocolError(f"{name} is not a whole number")
    return value
