"""The supervisor's scratch: made one replay ahead on its own thread, reclaimed when asked."""

from __future__ import annotations

import threading

import pytest

from arrivalbench import scratch as scratch_module
from arrivalbench.engines import Limits
from arrivalbench.scratch import Failed, Made, Scratch


class _Server:
    """An engine whose scratch is a numbered database; records what happened, on which thread."""

    errors = (RuntimeError,)
    scratch_ahead = True

    def __init__(self, fail_at: frozenset[int] = frozenset(), none: bool = False) -> None:
        self.made: list[int] = []
        self.dropped: list[object] = []
        self.threads: set[str] = set()
        self.fail_at, self.none, self._next = fail_at, none, 0

    def provision(self, limits: Limits) -> object:
        self.threads.add(threading.current_thread().name)
        self._next += 1
        if self._next in self.fail_at:
            raise RuntimeError(f"out of shared memory at {self._next}")
        if self.none:
            return None
        self.made.append(self._next)
        return self._next

    def reclaim(self, scratch: object) -> None:
        self.threads.add(threading.current_thread().name)
        self.dropped.append(scratch)


@pytest.fixture(autouse=True)
def _no_pause(monkeypatch):
    monkeypatch.setattr(scratch_module, "RETRY_PAUSE_SECONDS", 0.0)


def test_the_next_replays_database_is_made_while_this_one_runs() -> None:
    server, scratch = _Server(), Scratch()
    first = scratch.take(server, Limits())
    assert first == Made(1)
    scratch._ahead[(id(server), Limits())][1].result()  # the replay runs; its successor is made
    assert server.made == [1, 2]
    assert scratch.take(server, Limits()) == Made(2)  # ready: made before it was asked for
    assert scratch.reclaim(server, 1) == Made(None)
    assert scratch.close() == []
    assert server.dropped == [1, 3]  # the one made ahead of a replay that never came
    assert any(name.startswith("arrivalbench-scratch") for name in server.threads)


def test_scratch_made_ahead_is_never_handed_to_two_replays() -> None:
    server, scratch = _Server(), Scratch()
    handed = [scratch.take(server, Limits()).value for _ in range(5)]
    scratch.close()
    assert handed == [1, 2, 3, 4, 5]
    assert sorted(server.dropped) == [6]


def test_other_limits_get_their_own_scratch() -> None:
    server, scratch = _Server(), Scratch()
    assert scratch.take(server, Limits()) == Made(1)
    assert scratch.take(server, Limits(statement_timeout=1.0)) == Made(3)  # 2 is for Limits()
    assert scratch.take(server, Limits()) == Made(2)
    scratch.close()


def test_a_failure_made_ahead_is_tried_again_when_the_replay_comes() -> None:
    """The server was briefly out of a resource while the previous replay ran: the replay
    that comes later gets a database made at its own time, not that old failure."""
    server, scratch = _Server(fail_at=frozenset({2, 3})), Scratch()
    assert scratch.take(server, Limits()) == Made(1)  # 2 and 3 (its retry) fail ahead
    assert scratch.take(server, Limits()) == Made(4)
    scratch.close()


def test_a_failure_to_make_it_now_is_the_replays_error() -> None:
    server, scratch = _Server(fail_at=frozenset({1, 2})), Scratch()
    made = scratch.take(server, Limits())
    assert made == Failed("out of shared memory at 2")
    assert scratch._ahead == {}  # nothing is made ahead of a failure
    scratch.close()


def test_an_instance_in_the_workers_memory_is_never_made_ahead() -> None:
    server, scratch = _Server(none=True), Scratch()
    assert scratch.take(server, Limits()) == Made(None)
    assert scratch.take(server, Limits()) == Made(None)
    assert scratch._thread is None and scratch._ahead == {}
    assert scratch.close() == []


def test_scratch_that_costs_nothing_to_make_is_made_when_asked() -> None:
    """A folder (SQLite's) is made per replay, as before: nothing waits for it."""
    server, scratch = _Server(), Scratch()
    server.scratch_ahead = False
    assert [scratch.take(server, Limits()).value for _ in range(3)] == [1, 2, 3]
    assert server.made == [1, 2, 3] and scratch._thread is None
    scratch.close()


def test_only_a_server_engine_makes_its_scratch_ahead() -> None:
    from arrivalbench.engines import get_engine

    assert [getattr(get_engine(n), "scratch_ahead", False) for n in ("duckdb", "sqlite")] == [
        False,
        False,
    ]
    from arrivalbench.engines.postgres import PostgresEngine

    assert PostgresEngine.scratch_ahead is True
