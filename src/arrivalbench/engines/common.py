"""What the engines' own modules share: a bounded read of a result's rows, and the screen of a
statement by its kind and leading keywords."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from arrivalbench.engines import Statement


def bounded_rows(cursor: Any, names: list[str], max_bytes: int | None) -> list[tuple] | None:
    """A DB-API cursor's rows, fetched in chunks; None once past `max_bytes` (the column names,
    text and blobs count their bytes, every other value eight)."""
    size = sum(len(n.encode()) for n in names)
    if max_bytes is not None and size > max_bytes:
        return None
    rows: list[tuple[Any, ...]] = []
    while chunk := cursor.fetchmany(4096):
        for row in chunk:
            size += sum(len(v) if isinstance(v, str | bytes) else 8 for v in row)
        if max_bytes is not None and size > max_bytes:
            return None
        rows.extend(chunk)
    return rows


def refused_kind(
    statement: Statement,
    words: list[str],
    allowed: Collection[str],
    creatable: Collection[str],
    modifiers: Collection[str],
) -> str | None:
    """Why a statement of a kind the engine does not allow, or a CREATE of an object it does
    not let a pipeline make, may not run; None otherwise."""
    if statement.kind not in allowed:
        verb = " ".join(words[:2]) or statement.kind
        return f"{verb} statements are not allowed in a pipeline ({statement.kind})"
    if statement.kind == "CREATE":
        rest = [w for w in words[1:] if w not in modifiers]
        made = rest[0] if rest else "?"
        if made not in creatable:
            return (
                f"CREATE {made} is not allowed in a pipeline "
                f"(it may create {', '.join(sorted(creatable))})"
            )
    return None
