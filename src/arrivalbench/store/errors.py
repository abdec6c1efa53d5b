"""The store's one error: a run directory (or a file bound for one) that cannot be used as it is."""

from __future__ import annotations

from arrivalbench.errors import ArrivalBenchError


class RunStoreError(ArrivalBenchError):
    """A run directory that cannot be used as it is."""
