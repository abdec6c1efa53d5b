"""pool.py: the one process pool of gate, audit and sweep."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from arrivalbench.pool import WorkersDied, as_completed, in_order

pytestmark = pytest.mark.slow  # each starts a process pool (2-4 s)


def square(x: int) -> int:
    return x * x


def fail_on_three(x: int) -> int:
    if x == 3:
        raise ValueError(f"three: {x}")
    return x


def die_once(x: int, marker: str) -> int:
    """Kills its worker the first time it sees x == 2 (the marker file remembers)."""
    if x == 2 and not Path(marker).exists():
        Path(marker).touch()
        os._exit(1)
    return x


def always_die(x: int) -> int:
    os._exit(1)


def test_in_order_gives_the_results_in_the_order_of_the_calls():
    seen: list[int] = []
    results = in_order(square, [(x,) for x in range(6)], jobs=2, on_result=seen.append)
    assert results == [0, 1, 4, 9, 16, 25]
    assert seen == results


def test_in_order_raises_the_error_of_a_call():
    with pytest.raises(ValueError, match="three: 3"):
        in_order(fail_on_three, [(x,) for x in range(5)], jobs=2)


def test_as_completed_replaces_a_pool_whose_worker_died(tmp_path: Path):
    marker = str(tmp_path / "died")
    results = list(as_completed(die_once, [0, 1, 2, 3], 2, marker))
    assert sorted(results) == [0, 1, 2, 3]
    assert Path(marker).exists()


def test_as_completed_gives_up_after_its_restarts():
    with pytest.raises(WorkersDied) as caught:
        list(as_completed(always_die, [0], 1, restarts=1))
    assert caught.value.restarts == 2
