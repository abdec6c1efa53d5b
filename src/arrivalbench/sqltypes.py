"""The DuckDB column types a task may declare, and their Arrow equivalents."""

from __future__ import annotations

import re

import pyarrow as pa

_SIMPLE: dict[str, pa.DataType] = {
    "BIGINT": pa.int64(),
    "INTEGER": pa.int32(),
    "SMALLINT": pa.int16(),
    "DOUBLE": pa.float64(),
    "FLOAT": pa.float32(),
    "REAL": pa.float32(),
    "VARCHAR": pa.string(),
    "BOOLEAN": pa.bool_(),
    "DATE": pa.date32(),
    "TIMESTAMP": pa.timestamp("us"),
}
_DECIMAL = re.compile(r"^DECIMAL\((\d+),\s*(\d+)\)$")
FLOAT_TYPES = frozenset({"DOUBLE", "FLOAT", "REAL"})
SUPPORTED = ", ".join([*_SIMPLE, "DECIMAL(p,s)"])


def normalise(type_name: str) -> str:
    """Upper-case and canonical spacing, e.g. 'decimal(12, 2)' -> 'DECIMAL(12,2)'."""
    text = re.sub(r"\s+", "", type_name.upper())
    return text


def is_supported(type_name: str) -> bool:
    t = normalise(type_name)
    return t in _SIMPLE or bool(_DECIMAL.match(t))


def arrow_type(type_name: str) -> pa.DataType:
    """Arrow type for a declared DuckDB type (validated earlier by is_supported)."""
    t = normalise(type_name)
    if t in _SIMPLE:
        return _SIMPLE[t]
    m = _DECIMAL.match(t)
    if not m:
        raise ValueError(f"unsupported type {type_name!r}; supported: {SUPPORTED}")
    return pa.decimal128(int(m.group(1)), int(m.group(2)))


def is_float(type_name: str) -> bool:
    return normalise(type_name) in FLOAT_TYPES
