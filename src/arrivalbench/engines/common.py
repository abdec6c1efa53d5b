"""What the engines' own modules share: a bounded read of a result's rows, the screen of a
statement by its kind and leading keywords, and where a replay's files go."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Collection
from typing import Any

from arrivalbench.engines import Statement
from arrivalbench.errors import UsageError

SCRATCH_DIR_ENV = "ARRIVALBENCH_SCRATCH_DIR"
RAM_FOLDER = "/dev/shm"
RAM_RESERVE_BYTES = 2 << 30
"""What a RAM folder must keep free beyond a caller's need before it is used (other programs
share it)."""


def chosen_scratch_dir() -> str | None:
    """$ARRIVALBENCH_SCRATCH_DIR when set; a UsageError when it is not a folder this user can
    make files in (else every replay would end as an ERROR and a server would not start)."""
    chosen = os.environ.get(SCRATCH_DIR_ENV)
    if not chosen:
        return None
    chosen = os.path.expanduser(chosen)
    if not os.path.isdir(chosen) or not os.access(chosen, os.W_OK | os.X_OK):
        raise UsageError(
            f"{SCRATCH_DIR_ENV}={chosen!r} is not a folder this user can write to: create it, or "
            f"unset the variable (replay files then go to {RAM_FOLDER} or the temporary folder)."
        )
    return chosen


def scratch_parent(need_bytes: int) -> str:
    """The folder a replay's files (a SQLite file, a PostgreSQL data directory) are made in:
    $ARRIVALBENCH_SCRATCH_DIR when set, else a RAM file system (/dev/shm) with `need_bytes` and a
    reserve free, else the system's temporary folder.

    Every replay creates and deletes files, and on a disk file system (ext4 seen here) making a
    file right after others were deleted scans for a free inode that was not recently used: a
    PostgreSQL database copied from its template (~300 files) took ~200 ms of the server's CPU
    after a drop, 9 ms on tmpfs. The files are never larger than the engine's memory limit
    (max_page_count, the database-size check), so keeping them in RAM changes no bound.
    """
    chosen = chosen_scratch_dir()
    if chosen:
        return chosen
    try:
        stats = os.statvfs(RAM_FOLDER)
    except OSError:
        return tempfile.gettempdir()
    free = stats.f_bavail * stats.f_frsize
    if free >= need_bytes + RAM_RESERVE_BYTES and os.access(RAM_FOLDER, os.W_OK | os.X_OK):
        return RAM_FOLDER
    return tempfile.gettempdir()


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
