"""A task's two logical logs: the visible one (snapshot test) and the hidden one (every other schedule)."""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pyarrow as pa

from arrivalbench.generators import make_log
from arrivalbench.seeds import derive_seed
from arrivalbench.spec import SourceSpec, Task

LogKind = Literal["visible", "hidden"]


@dataclass(frozen=True, eq=False)
class Log:
    """One logical log of one source, in canonical order (event time, ties by event id)."""

    task_id: str
    kind: LogKind
    seed: int
    source: SourceSpec
    table: pa.Table = field(repr=False)

    @property
    def n(self) -> int:
        return self.table.num_rows

    def event_ids(self) -> np.ndarray:
        return self.table.column("event_id").to_numpy()

    def ts_micros(self) -> np.ndarray:
        return self.table.column("ts_event").cast(pa.int64()).to_numpy()

    def column(self, name: str) -> np.ndarray:
        return self.table.column(name).to_numpy(zero_copy_only=False)

    def fingerprint(self) -> str:
        """sha256 over event ids and times: identifies the log a schedule file was built from."""
        digest = hashlib.sha256()
        digest.update(self.event_ids().astype("<i8").tobytes())
        digest.update(self.ts_micros().astype("<i8").tobytes())
        return digest.hexdigest()


def log_seed(task_id: str, kind: LogKind, base_seed: int) -> int:
    return derive_seed(task_id, "log", kind, base_seed)


_CACHE: OrderedDict[tuple[str, str, int, str], Log] = OrderedDict()
_CACHE_SIZE = 16


def task_log(task: Task, kind: LogKind, base_seed: int) -> Log:
    """The visible or hidden log of a task for a base seed (cached: generation is deterministic)."""
    return log_from_seed(task, kind, log_seed(task.id, kind, base_seed))


def log_from_seed(task: Task, kind: LogKind, seed: int) -> Log:
    source = task.spec.source
    key = (task.id, kind, seed, source.model_dump_json())
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    log = Log(task_id=task.id, kind=kind, seed=seed, source=source, table=make_log(source, seed))
    _CACHE[key] = log
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return log
