"""Gating tasks: one task at each gate seed, the suite on a pool, and the TaskGate they return."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from arrivalbench.cache import VerdictCache
from arrivalbench.engines import DEFAULT_ENGINE, get_engine
from arrivalbench.gate.checks import check, earned_by
from arrivalbench.gate.matrix import task_matrix
from arrivalbench.gate.violations import Violation
from arrivalbench.grade import Grader
from arrivalbench.pool import in_order as per_task_pool
from arrivalbench.schedules import default_schedules
from arrivalbench.seeds import GATE_SEED_COUNT, PrivateSeed, gate_seeds
from arrivalbench.spec import Task


@dataclass
class TaskGate:
    task: Task
    schedules: list[str]
    verdicts: dict[str, dict[str, str]] = field(default_factory=dict)
    """artifact -> schedule -> PASS | FAIL | ERROR (gold, controls and naive baselines)"""
    earned_by: dict[str, list[str]] = field(default_factory=dict)
    """declared hazard -> the authored controls that pass the in-order stream and fail under it"""
    violations: list[Violation] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    """The seeds it was gated at; `verdicts` are the first's, `earned_by` holds at every one."""
    oracle_runs: bool = True
    """False when oracle.sql did not run: nothing else was checked, at this seed or any later."""

    @property
    def admitted(self) -> bool:
        return not self.violations


def gate_task_at_seeds(task: Task, grader: Grader, seeds: list[int]) -> TaskGate:
    """Gate one task at each of `seeds` it is scoped to (all of them unless task.yaml's `seeds:`
    says otherwise); admitted only if admitted at each. The grader's seed is moved per seed.

    Seed-independent checks and the naive baselines run at the first seed only.
    """
    scope = task.spec.seeds
    at = [s for s in seeds if scope is None or s in scope]
    result = TaskGate(task=task, schedules=default_schedules(task))
    if scope is not None and (grader.private is not None or not at):
        where = "a private seed" if grader.private is not None else f"the gate seeds {seeds}"
        result.violations.append(
            Violation(
                task.id,
                "task.yaml",
                None,
                f"its declarations are scoped to seeds {scope} (`seeds:`), none of which is "
                f"gated here ({where}); gate it at those seeds or make its controls hold at every "
                "gate seed and drop `seeds:`",
            )
        )
        return result
    for index, seed in enumerate(at):
        grader.seed = seed
        one = gate_task(task, grader, seed_independent=index == 0)
        tag = seed if len(at) > 1 and grader.private is None else None
        result.violations += [dataclasses.replace(v, seed=tag) for v in one.violations]
        result.seeds.append(seed)
        if not one.oracle_runs:  # a defect of the task itself: another seed would repeat it
            result.oracle_runs = False
            break
        if index == 0:
            result.verdicts, result.earned_by = one.verdicts, one.earned_by
        else:
            result.earned_by = {
                hazard: [c for c in controls if c in one.earned_by.get(hazard, [])]
                for hazard, controls in result.earned_by.items()
            }
    return result


def gate_task(task: Task, grader: Grader, seed_independent: bool = True) -> TaskGate:
    """Run every check on one task at the grader's seed; violations are collected, never raised.

    `seed_independent=False` skips what gives the same answer at every seed (the text, the
    existing pipeline) and the naive baselines (they never earn a declaration).
    """
    matrix = task_matrix(task, grader, seed_independent)
    return TaskGate(
        task=task,
        schedules=list(matrix.schedules),
        verdicts={g.name: g.row for g in matrix.graded if g.role != "existing" and not g.error},
        earned_by=earned_by(matrix) if matrix.oracle_runs else {},
        violations=check(matrix),
        seeds=[grader.seed],
        oracle_runs=matrix.oracle_runs,
    )


_GRADER: Grader | None = None


def _gate_in_worker(
    task: Task,
    seeds: list[int],
    private: PrivateSeed | None,
    cache_dir: Path | None,
    engine: str = DEFAULT_ENGINE,
) -> TaskGate:
    global _GRADER
    if _GRADER is None or _GRADER.engine_name != engine:
        _GRADER = Grader(
            seed=seeds[0], private=private, cache=_cache(cache_dir), engine_name=engine
        )
    return gate_task_at_seeds(task, _GRADER, seeds)


def gate_suite(
    tasks: Iterable[Task],
    seed: int,
    jobs: int = 1,
    on_task: Callable[[TaskGate], None] | None = None,
    private: PrivateSeed | None = None,
    seed_count: int = GATE_SEED_COUNT,
    cache_dir: Path | None = None,
    engine: str = DEFAULT_ENGINE,
) -> list[TaskGate]:
    """Gate every task at `seed_count` seeds from `seed` (seeds.gate_seeds), `jobs` tasks at a
    time; results come back in the order given.

    `engine` runs the gold, controls and baselines (transpiled from DuckDB SQL, or the task's
    override file for that engine); the oracle is DuckDB's on every engine. With `private`, the
    hidden logs (benign controls, hazards, the oracle checks) descend from that secret, as in an
    official run, and the snapshot from `seed`: one seed is gated. With `cache_dir`, verdicts
    come from and go to the verdict cache (cache.py), so a later sweep of the same artifacts
    reuses them.
    """
    tasks = list(tasks)
    get_engine(engine)  # a server engine starts here, so every pool worker shares it
    seeds = gate_seeds(1 if private is not None else seed_count, seed)
    if jobs <= 1 or len(tasks) <= 1:
        results = []
        with Grader(
            seed=seed, private=private, cache=_cache(cache_dir), engine_name=engine
        ) as grader:
            for task in tasks:
                results.append(gate_task_at_seeds(task, grader, seeds))
                if on_task:
                    on_task(results[-1])
        return results
    calls = [(task, seeds, private, cache_dir, engine) for task in tasks]
    return per_task_pool(_gate_in_worker, calls, jobs, on_task)


def _cache(cache_dir: Path | None) -> VerdictCache | None:
    return VerdictCache(cache_dir) if cache_dir is not None else None
