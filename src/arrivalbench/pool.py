"""The one process pool: forkserver workers that die with their parent, stopped at once on exit.

Gate and audit run one task per call and want the results in the order given (`in_order`);
a sweep wants each unit as soon as it is graded, and a pool whose worker died replaced with the
unfinished units resubmitted (`as_completed`). Either way the pool is shut down on the way out,
cancelling what has not started and terminating the workers still busy, so Ctrl-C or SIGTERM
leaves none running (their sandbox workers follow them, see sandbox.die_with_parent); a pool
whose calls all finished is shut down normally. An exception raised by a call propagates to the
caller.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from arrivalbench.errors import ArrivalBenchError

Item = TypeVar("Item")
Result = TypeVar("Result")
MAX_RESTARTS = 3


class WorkersDied(ArrivalBenchError):
    """The pool's workers died more than MAX_RESTARTS times."""

    def __init__(self, restarts: int) -> None:
        super().__init__(f"pool workers died {restarts} times")
        self.restarts = restarts


def _pool(workers: int) -> Any:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from arrivalbench.sandbox import die_with_parent

    context = multiprocessing.get_context("forkserver")
    return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=die_with_parent)


def stop(pool: Any) -> None:
    """Shut a pool down now: cancel what has not started, stop the workers busy with the rest."""
    workers = dict(getattr(pool, "_processes", None) or {})
    pool.shutdown(wait=False, cancel_futures=True)
    for process in workers.values():
        if process.is_alive():
            process.terminate()
    for process in workers.values():
        process.join(timeout=5)


def in_order(
    function: Callable[..., Result],
    calls: Sequence[tuple[Any, ...]],
    jobs: int,
    on_result: Callable[[Result], None] | None = None,
) -> list[Result]:
    """`function(*call)` for every call on `jobs` workers (at most one per call), the results in
    the order given; `on_result` sees each as its turn comes. The first failing call, in that
    order, raises."""
    pool = _pool(max(1, min(jobs, len(calls))))
    try:
        futures = [pool.submit(function, *call) for call in calls]
        results = []
        for future in futures:
            results.append(future.result())
            if on_result:
                on_result(results[-1])
    except BaseException:
        stop(pool)
        raise
    pool.shutdown()  # every call is done: the workers exit on their own
    return results


def as_completed(
    function: Callable[..., Result],
    items: Sequence[Item],
    workers: int,
    *args: Any,
    restarts: int = MAX_RESTARTS,
) -> Iterator[Result]:
    """`function(item, *args)` for every item on `workers` workers, each result as it is done; a
    pool whose worker died is replaced and the items not yet done resubmitted, up to `restarts`
    times (then WorkersDied)."""
    from concurrent.futures import FIRST_COMPLETED, wait
    from concurrent.futures.process import BrokenProcessPool

    remaining = list(items)
    died = 0
    while remaining:
        pool = _pool(workers)
        futures = {pool.submit(function, item, *args): item for item in remaining}
        finished: list[Item] = []
        try:
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for future in done:
                    result = future.result()
                    finished.append(futures[future])
                    yield result
        except BrokenProcessPool:
            died += 1
            if died > restarts:
                raise WorkersDied(died) from None
        finally:
            stop(pool)
        done_ids = {id(item) for item in finished}
        remaining = [item for item in remaining if id(item) not in done_ids]
