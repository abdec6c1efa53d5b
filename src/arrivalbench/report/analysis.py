"""The runs a report reads, labelled, and the analysis every table and figure draws on.

Arms are labelled once, when the runs are loaded, so that no two runs share a label; from then on
every table and figure sees labelled cell outcomes only. Estimates are computed once per metric and
the idioms of the artifacts once per report.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arrivalbench.analysis.guards import GuardSplit, artifact_idioms, guard_split
from arrivalbench.analysis.idioms import Idioms
from arrivalbench.analysis.stats import (
    IDEMPOTENCY,
    LOUD,
    ORDERING,
    CellOutcome,
    Estimate,
    Unit,
    estimate,
    paired,
    run_outcomes,
)
from arrivalbench.errors import ArrivalBenchError, UsageError
from arrivalbench.spec import get_task
from arrivalbench.store import RunDir

GUARD_HAZARD = "duplicate_delivery"


class ReportInputError(ArrivalBenchError):
    """A run directory the report cannot read as a graded run."""


@dataclass(frozen=True)
class Source:
    """One run given to the report, with its cells labelled as they appear in the report."""

    run: RunDir
    name: str
    labels: dict[str, str]  # arm as stored -> label in the report
    outcomes: list[CellOutcome]  # arms as stored


# -- reading the runs ------------------------------------------------------------------------------


def load_sources(paths: Sequence[Path]) -> list[Source]:
    """Open each run, refuse ungraded ones, and label arms so that no two runs share a label."""
    if not paths:
        raise UsageError("report: no run directory given; pass at least one graded run directory.")
    runs = []
    for path in paths:
        run = RunDir.open(Path(path))
        if run.verdicts().num_rows == 0:
            raise ReportInputError(
                f"{run.path}: the run has no verdicts yet; grade it first with 'arrivalbench grade-run {run.path}'."
            )
        runs.append(run)
    if len({run.path.resolve() for run in runs}) < len(runs):
        given = ", ".join(str(run.path) for run in runs)
        raise UsageError(f"report: a run directory was given twice ({given}); pass each run once.")
    names = [run.path.name for run in runs]
    if len(set(names)) < len(names):
        names = [str(run.path) for run in runs]
    found = [run_outcomes(run) for run in runs]
    arms = [{o.arm for o in outcomes} for outcomes in found]
    sources = []
    for run, name, own, outcomes in zip(runs, names, arms, found, strict=True):
        shared = {arm for arm in own if sum(arm in other for other in arms) > 1}
        labels = {arm: f"{arm} ({name})" if arm in shared else arm for arm in sorted(own)}
        sources.append(Source(run=run, name=name, labels=labels, outcomes=outcomes))
    return sources


def labelled(sources: Sequence[Source]) -> list[CellOutcome]:
    """Every run's outcomes with each arm under its label."""
    return [dataclasses.replace(o, arm=s.labels[o.arm]) for s in sources for o in s.outcomes]


# -- the analysis ----------------------------------------------------------------------------------


@dataclass
class Analysis:
    """The labelled outcomes of every run, with estimates computed once per metric."""

    sources: Sequence[Source]
    outcomes: list[CellOutcome]
    unit: Unit
    resamples: int
    seed: int
    _cache: dict[str, dict[str, Estimate]] = dataclasses.field(default_factory=dict)

    def estimates(self, metric: str) -> dict[str, Estimate]:
        if metric not in self._cache:
            self._cache[metric] = estimate(
                self.outcomes, metric, unit=self.unit, resamples=self.resamples, seed=self.seed
            )
        return self._cache[metric]

    def paired(self, metric: str, arm_a: str, arm_b: str) -> Estimate:
        return paired(
            self.outcomes,
            metric,
            arm_a,
            arm_b,
            unit=self.unit,
            resamples=self.resamples,
            seed=self.seed,
        )

    @functools.cached_property
    def arms(self) -> list[str]:
        """Labels sorted by gap, lowest first; arms with no usable gap last."""
        gap = {arm: est.value for arm, est in self.estimates("gap").items()}

        def order(arm: str) -> tuple[bool, float, str]:
            value = gap.get(arm)
            return (value is None, value or 0.0, arm)

        return sorted({o.arm for o in self.outcomes}, key=order)

    def hazards(self) -> list[str]:
        """Hazards some cell declares, in the registry's order: ordering, idempotency, then loud."""
        declared = {h for o in self.outcomes for h in o.hazards}
        return [h for h in (*ORDERING, *IDEMPOTENCY, *LOUD) if h in declared]

    @functools.cached_property
    def idioms(self) -> dict[str, Idioms]:
        """The idioms of every artifact of every run, read statically, by sha256."""
        found: dict[str, Idioms] = {}
        for s in self.sources:
            tasks = {t: get_task(t) for t in sorted({o.task for o in s.outcomes})}
            found.update(artifact_idioms(s.run, tasks))
        return found

    @functools.cached_property
    def guard_splits(self) -> dict[str, dict[bool, GuardSplit]]:
        """label -> guarded? -> the arm's split on the guard hazard (guards.py)."""
        by_arm: dict[str, dict[bool, GuardSplit]] = {}
        for split in guard_split(self.outcomes, self.idioms, hazard=GUARD_HAZARD):
            by_arm.setdefault(split.arm, {})[split.guarded] = split
        return by_arm

    def arm_info(self) -> dict[str, dict[str, Any]]:
        """label -> arm_info entry (model, prompt_arm), for generated arms only."""
        return {
            s.labels[arm]: info
            for s in self.sources
            for arm, info in s.run.arm_info().items()
            if arm in s.labels
        }
