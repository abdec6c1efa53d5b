"""The DuckDB column types a task may declare, and their Arrow equivalents.

Loading a task spec validates its types here, so this module imports pyarrow only when an Arrow
type is asked for: `arrivalbench grade --task typo` answers without loading Arrow.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pyarrow as pa

_SIMPLE: dict[str, tuple[str, ...]] = {
    "BIGINT": ("int64",),
    "INTEGER": ("int32",),
    "SMALLINT": ("int16",),
    "DOUBLE": ("float64",),
    "FLOAT": ("float32",),
    "REAL": ("float32",),
    "VARCHAR": ("string",),
    "BOOLEAN": ("bool_",),
    "DATE": ("date32",),
    "TIMESTAMP": ("timestamp", "us"),
}
"""Each name's Arrow type, as the pyarrow factory and its arguments."""
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
    import pyarrow as pa

    t = normalise(type_name)
    if t in _SIMPLE:
        factory, *args = _SIMPLE[t]
        return getattr(pa, factory)(*args)
    m = _DECIMAL.match(t)
    if not m:
        raise ValueError(f"unsupported type {type_name!r}; supported: {SUPPORTED}")
    return pa.decimal128(int(m.group(1)), int(m.group(2)))


def is_float(type_name: str) -> bool:
    return normalise(type_name) in FLOAT_TYPES


def declared_type(field: pa.Field, *, double: str, decimal: str) -> str:
    """The SQL type a delivery column is declared with on an engine that loads it by INSERT
    (SQLite, PostgreSQL): the engines differ only in how they name a double and a decimal."""
    import pyarrow as pa

    t = field.type
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_integer(t):
        return "BIGINT" if t.bit_width > 32 else "INTEGER"
    if pa.types.is_floating(t):
        return double
    if pa.types.is_decimal(t):
        return f"{decimal}({t.precision},{t.scale})"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP"
    if pa.types.is_date(t):
        return "DATE"
    return "TEXT"
