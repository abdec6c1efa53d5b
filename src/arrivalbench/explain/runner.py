"""One warm sandbox worker that replays candidate schedules of one (task, artifact, log).

Shrinking replays a few hundred small schedules; each is a sandbox job like any grade (the
pipeline is untrusted), sent to the same worker, and graded against the oracle recomputed over
the distinct events that candidate delivers. Outcomes are memoised: the search revisits
candidates, and a replay is deterministic.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import partial

import pyarrow as pa

from arrivalbench.compare import compare
from arrivalbench.engines import DEFAULT_ENGINE, Engine, Limits, get_engine, oracle_engine
from arrivalbench.grade import result_cap
from arrivalbench.logs import Log
from arrivalbench.oracle import oracle_over
from arrivalbench.replay import ReplayResult
from arrivalbench.sandbox import ReplayJob, Sandbox
from arrivalbench.schedules import Delivery, Schedule
from arrivalbench.spec import Task
from arrivalbench.verdict import judge

Deliveries = tuple[Delivery, ...]
Verdict = tuple[str, ...]
"""("PASS",), ("FAIL",) or ("ERROR", error_class): what a smaller schedule must keep
(verdict.Verdict.key)."""


def distinct_rows(deliveries: Deliveries) -> list[int]:
    """The spine positions delivered at least once, in log order."""
    return sorted({row for d in deliveries for row in d.rows})


def renumbered(deliveries: Deliveries) -> Deliveries:
    """Batch ids 1..n, as a schedule file requires (increasing, positive)."""
    return tuple(dataclasses.replace(d, batch_id=i + 1) for i, d in enumerate(deliveries))


@dataclass(frozen=True)
class Outcome:
    verdict: Verdict
    expected: pa.Table | None
    result: ReplayResult


def verdict_name(verdict: Verdict) -> str:
    return verdict[0] if len(verdict) == 1 else f"{verdict[0]} ({verdict[1]})"


@dataclass
class Runner:
    """Replays candidates of one schedule in one warm worker; counts the replays it made."""

    task: Task
    script: str
    schedule: Schedule
    log: Log
    limits: Limits = field(default_factory=Limits)
    engine_name: str = DEFAULT_ENGINE
    """The engine the pipeline runs on; expected tables and diagnoses are the oracle's (DuckDB)."""
    replays: int = 0
    sandbox: Sandbox | None = None
    """A worker to share (the caller closes it); None: the runner starts and closes its own."""
    _memo: dict[Deliveries, Outcome] = field(default_factory=dict, init=False, repr=False)
    _oracles: dict[tuple[int, ...], pa.Table] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        get_engine(self.engine_name)  # an unknown name is one line here; a server starts here
        self.engine: Engine = oracle_engine()
        self._owned = self.sandbox is None
        self._sandbox = self.sandbox if self.sandbox is not None else Sandbox()

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._owned:
            self._sandbox.close()

    def candidate(self, deliveries: Deliveries) -> Schedule:
        """The schedule that delivers these batches of the same log, graded on what it delivers."""
        partial = len(distinct_rows(deliveries)) < self.log.n
        return dataclasses.replace(
            self.schedule, deliveries=renumbered(deliveries), partial=partial, perturbation={}
        )

    def oracle(self, rows: list[int]) -> pa.Table:
        """The oracle over these spine positions (distinct events, log order)."""
        key = tuple(rows)
        if key not in self._oracles:
            tables = self.log.subset_tables(rows)
            self._oracles[key] = oracle_over(self.task, tables, self.engine, "the delivered events")
        return self._oracles[key]

    def run(self, deliveries: Deliveries, observe: bool = False) -> Outcome:
        """Replay these deliveries in the worker and grade them against the delivered events."""
        deliveries = renumbered(deliveries)
        if not observe and deliveries in self._memo:
            return self._memo[deliveries]
        expected = self.oracle(distinct_rows(deliveries)) if deliveries else None
        job = ReplayJob(
            task=self.task,
            schedule=self.candidate(deliveries),
            script=self.script,
            limits=self.limits,
            engine=self.engine_name,
            cap=result_cap(expected) if expected is not None else None,
            observe=observe,
        )
        self.replays += 1
        result = self._sandbox.run(job)
        verdict = judge(
            result, expected, partial(compare, target=self.task.spec.target, with_severity=True)
        )
        outcome = Outcome(verdict.key, expected, result)
        if not observe:
            self._memo[deliveries] = outcome
        return outcome
