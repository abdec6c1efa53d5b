"""A list of rows with fast `index` and `insert`, for duplicate_delivery on large logs."""

from __future__ import annotations

from bisect import bisect_right
from itertools import accumulate, chain


class ChunkedList:
    """A list of rows with `index` and `insert` in about sqrt(n) steps instead of n, so that
    duplicate_delivery stays fast on a user's million-event log (a plain list took minutes)
    while giving exactly the plain list's result. `index` finds a row's first occurrence; rows
    are distinct until copies are inserted, and a copy is always inserted after its original."""

    def __init__(self, rows: list[int]) -> None:
        self._size = max(64, int(len(rows) ** 0.5))
        size = self._size
        self._chunks = [rows[i : i + size] for i in range(0, len(rows), size)] or [[]]
        self._lens = [len(c) for c in self._chunks]
        self._home = {row: c for c in self._chunks for row in c}
        self._reindex()

    def _reindex(self) -> None:
        self._at = {id(c): i for i, c in enumerate(self._chunks)}

    def __len__(self) -> int:
        return sum(self._lens)

    def index(self, row: int) -> int:
        chunk = self._home[row]
        i = self._at[id(chunk)]
        return sum(self._lens[:i]) + chunk.index(row)

    def insert(self, k: int, row: int) -> None:
        ends = list(accumulate(self._lens))
        i = min(bisect_right(ends, k), len(self._chunks) - 1)
        chunk = self._chunks[i]
        chunk.insert(k - (ends[i] - self._lens[i]), row)
        self._lens[i] += 1
        if self._lens[i] > 2 * self._size:
            kept, moved = chunk[: self._size], chunk[self._size :]
            del chunk[self._size :]
            originals = set(kept)
            for x in moved:
                if x not in originals and self._home.get(x) is chunk:
                    self._home[x] = moved
            self._chunks.insert(i + 1, moved)
            self._lens[i : i + 1] = [len(kept), len(moved)]
            self._reindex()

    def to_list(self) -> list[int]:
        return list(chain.from_iterable(self._chunks))
