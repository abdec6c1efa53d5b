"""The sweep lock of a run directory: one writer at a time; a lock whose process is gone is
taken over."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from arrivalbench.store.errors import RunStoreError


@contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold the lock file at `path` (its content: this process's pid) for the duration."""
    while True:
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            break
        except FileExistsError:
            try:
                holder = int(path.read_text().strip() or "0")
            except (OSError, ValueError):
                holder = 0
            if holder and _alive(holder):
                raise RunStoreError(
                    f"{path}: another sweep (pid {holder}) is writing to this run; wait for it or stop it."
                ) from None
            path.unlink(missing_ok=True)
    try:
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        yield
    finally:
        path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
