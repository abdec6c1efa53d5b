"""dbt microbatch models: the event-time window each delivery's `dbt run` covers.

A microbatch model (incremental_strategy='microbatch') is replayed with dbt's own batching:
each delivery runs `dbt run --event-time-start S --event-time-end E`. The clock of delivery i
is the newest event time delivered so far; S is the batch holding the previous delivery's clock,
moved back `lookback` batches, and E the end of the batch holding this delivery's clock: the
union of the windows dbt's flagless scheduled runs would cover had dbt run at every moment of
event time in between. The first delivery (and the full refresh) starts at the batch of its
oldest event. An event older than S when it lands is never processed, as in production.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

import numpy as np

from arrivalbench.errors import CheckInputError

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Microbatch:
    """A microbatch model's batching: dbt's batch_size (hour, day, month, year) and lookback."""

    batch_size: str
    lookback: int

    @classmethod
    def of(cls, node: Any) -> Microbatch | None:
        """The model's batching from its parsed manifest node; None for any other strategy."""
        config = node.config
        if getattr(config, "incremental_strategy", None) != "microbatch":
            return None
        if not getattr(config, "event_time", None):
            path = getattr(node, "original_file_path", node.name)
            raise CheckInputError(
                f"--model {node.name}: a microbatch model needs event_time ({path}); add "
                "config(event_time='COLUMN') naming its event-time column."
            )
        return cls(str(config.batch_size), int(config.lookback or 0))

    def _truncate(self, when: dt.datetime) -> dt.datetime:
        from dbt.materializations.incremental.microbatch import MicrobatchBuilder

        return MicrobatchBuilder.truncate_timestamp(when, self.batch_size)

    def _offset(self, when: dt.datetime, by: int) -> dt.datetime:
        from dbt.materializations.incremental.microbatch import MicrobatchBuilder

        return MicrobatchBuilder.offset_timestamp(when, self.batch_size, by)

    def window(self, delivered: np.ndarray, clock: int | None) -> tuple[dt.datetime, dt.datetime]:
        """[start, end) for a delivery of event times `delivered` (microseconds) after a
        previous clock (None for the first delivery or the full refresh)."""
        newest = max(int(delivered.max()), clock if clock is not None else -(2**62))
        end = self._offset(_utc(newest), 1)
        if clock is None:
            start = self._truncate(_utc(int(delivered.min())))
        else:
            start = self._offset(_utc(clock), -self.lookback)
        return start, end

    def flags(self, delivered: np.ndarray, clock: int | None) -> list[str]:
        start, end = self.window(delivered, clock)
        text = "%Y-%m-%dT%H:%M:%S"
        return ["--event-time-start", start.strftime(text), "--event-time-end", end.strftime(text)]


def _utc(micros: int) -> dt.datetime:
    return EPOCH + dt.timedelta(microseconds=micros)
