"""Each replay's scratch on the host (a folder, a server database and role), made one replay ahead.

A PostgreSQL replay needs a new database copied from the template and a new role: ~0.15 s idle
and ~0.4 s on a loaded machine, mostly the server's own work and waits, which used to sit between
every two replays. `Scratch` makes the next replay's scratch on a background thread while the
current replay runs, so a replay finds its database ready. The scratch handed to a replay is
still made for it alone and never handed to a second one; only *when* it is made changes.

Every make and reclaim runs on that one thread, in the order asked (an engine's admin connection
is never used from two threads). A reclaim is waited for: a database that could not be dropped
stays that replay's ERROR, as before. What was made ahead and never used is reclaimed at `close`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

from arrivalbench.engines import Engine, Limits
from arrivalbench.replay import bounded_message

RETRY_PAUSE_SECONDS = 0.5
"""Between the two tries at making or reclaiming a replay's scratch."""


@dataclass(frozen=True)
class Made:
    value: object


@dataclass(frozen=True)
class Failed:
    message: str


def twice(engine: Engine, action: Callable[[], object]) -> Made | Failed:
    """`action` once more after a failure (the server may have been briefly out of a resource
    another replay held); the second failure's message. Only the engine's and the OS's errors
    count: anything else is a harness defect and propagates."""
    errors = (OSError, *engine.errors)
    try:
        return Made(action())
    except errors:
        time.sleep(RETRY_PAUSE_SECONDS)
    try:
        return Made(action())
    except errors as exc:
        return Failed(bounded_message(str(exc) or type(exc).__name__))


def _worth_making_ahead(engine: Engine) -> bool:
    """The engine declares its scratch slow to make (`scratch_ahead`: a server database)."""
    return bool(getattr(engine, "scratch_ahead", False))


class Scratch:
    """The supervisor's maker of scratch: `take` one for a replay, `reclaim` it after."""

    def __init__(self) -> None:
        self._thread: ThreadPoolExecutor | None = None
        self._ahead: dict[tuple[int, Limits], tuple[Engine, Future[Made | Failed]]] = {}
        """(engine, limits) -> the scratch being made for the next replay with them."""

    def _call(self, engine: Engine, action: Callable[[], object]) -> Future[Made | Failed]:
        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="arrivalbench-scratch")
        return self._thread.submit(twice, engine, action)

    def take(self, engine: Engine, limits: Limits) -> Made | Failed:
        """This replay's scratch: the one made ahead if there is one, else made now (a failure
        made ahead is tried again now: the server's state then is not its state now). An engine
        whose scratch is None (an instance in the worker's memory), or costs nothing to make (a
        folder), is never made ahead."""
        ahead = self._ahead.pop((id(engine), limits), None)
        made = ahead[1].result() if ahead is not None else None
        if not isinstance(made, Made):
            made = twice(engine, lambda: engine.provision(limits))
        if isinstance(made, Made) and made.value is not None and _worth_making_ahead(engine):
            next_one = self._call(engine, lambda: engine.provision(limits))
            self._ahead[(id(engine), limits)] = (engine, next_one)
        return made

    def reclaim(self, engine: Engine, scratch: object) -> Made | Failed:
        """Drop one replay's scratch (after anything made ahead of it), waiting for the outcome."""
        if self._thread is None:
            return twice(engine, lambda: engine.reclaim(scratch))
        return self._call(engine, lambda: engine.reclaim(scratch)).result()

    def drop(self, engine: Engine, scratch: object) -> bool:
        """One try at reclaiming a leftover (one whose reclaim failed before): whether it went."""

        def once() -> bool:
            try:
                engine.reclaim(scratch)
            except Exception:
                return False
            return True

        if self._thread is None:
            return once()
        return self._thread.submit(once).result()

    def close(self) -> list[tuple[Engine, object]]:
        """Reclaim what was made ahead and never used; the scratch that could not be dropped."""
        kept: list[tuple[Engine, object]] = []
        for engine, ahead in self._ahead.values():
            made = ahead.result()
            if (
                isinstance(made, Made)
                and made.value is not None
                and isinstance(self.reclaim(engine, made.value), Failed)
            ):
                kept.append((engine, made.value))
        self._ahead.clear()
        if self._thread is not None:
            self._thread.shutdown(wait=True)
            self._thread = None
        return kept
