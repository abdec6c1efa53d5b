"""The runs a report reads, labelled, and the analysis every table and figure draws on.

Arms are labelled once, when the runs are loaded, so that no two runs share a label; from then on
every table and figure sees labelled cell outcomes only. Estimates are computed once per metric and
the idioms of the artifacts once per report.
"""

from __future__ import annotations

import dataclasses
import functools
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arrivalbench.analysis.guards import GuardSplit, artifact_idioms, guard_split
from arrivalbench.analysis.idioms import Idioms
from arrivalbench.analysis.roles import ArmRole, arm_roles
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
from arrivalbench.engines import DEFAULT_ENGINE
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

    @property
    def engine(self) -> str:
        """The engine the run was graded on (its manifest's `engine`)."""
        return str(self.run.manifest.get("engine") or DEFAULT_ENGINE)


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


@dataclass(frozen=True)
class TaskFilter:
    """report --tasks / --tasks-from-arm: the tasks every table and test is computed over."""

    given: tuple[str, ...] | None
    from_arm: str | None
    kept: tuple[str, ...]
    usable_in: tuple[str, ...] | None = None  # --tasks-usable-in: arms (labels or stored names)

    def definition(self) -> str:
        parts = []
        if self.given is not None:
            parts.append(f"the tasks named by --tasks ({', '.join(self.given)})")
        if self.from_arm is not None:
            parts.append(f"the tasks arm {self.from_arm} has cells for (--tasks-from-arm)")
        if self.usable_in is not None:
            parts.append(
                f"the tasks usable in every one of the arms {', '.join(self.usable_in)} "
                "(--tasks-usable-in: each has a gap-usable cell there, snapshot-passing with no "
                "ERROR on a declared hazard)"
            )
        return (
            "Every table, figure and test is over "
            + " that are also ".join(parts)
            + f": {len(self.kept)} task{'s' * (len(self.kept) != 1)} ({', '.join(self.kept)}); "
            "every other task's cells are left out of every denominator."
        )


def filter_tasks(
    sources: Sequence[Source],
    tasks: Sequence[str] | None,
    from_arm: str | None,
    usable_in: Sequence[str] | None = None,
) -> tuple[list[Source], TaskFilter | None]:
    """The sources with only the cells of the chosen tasks (None: no filter given).

    `usable_in` keeps the tasks where every named arm (a stored name stands for each of its
    labels) has a gap-usable cell, the tasks a paired comparison of those arms is over.
    """
    if tasks is None and from_arm is None and usable_in is None:
        return list(sources), None
    present = sorted({o.task for s in sources for o in s.outcomes})
    kept = set(present)
    if tasks is not None:
        for task in tasks:
            if task not in present:
                raise _unknown("task", task, present, "--tasks", "the runs' tasks")
        kept &= set(tasks)
    if from_arm is not None:
        arms = {(s.labels[o.arm], o.arm): o.task for s in sources for o in s.outcomes}
        names = sorted({n for pair in arms for n in pair})
        if from_arm not in names:
            raise _unknown("arm", from_arm, names, "--tasks-from-arm", "the runs' arms and labels")
        kept &= {
            o.task for s in sources for o in s.outcomes if from_arm in (o.arm, s.labels[o.arm])
        }
    if usable_in is not None:
        from arrivalbench.analysis.rates import METRICS

        gap = METRICS["gap"]
        pairs = {(s.labels[o.arm], o.arm) for s in sources for o in s.outcomes}
        names = sorted({n for pair in pairs for n in pair})
        for arm in usable_in:
            if arm not in names:
                raise _unknown("arm", arm, names, "--tasks-usable-in", "the runs' arms and labels")
        for arm in usable_in:
            for label in sorted({label for label, stored in pairs if arm in (label, stored)}):
                kept &= {
                    o.task
                    for s in sources
                    for o in s.outcomes
                    if s.labels[o.arm] == label and gap(o) is not None
                }
    chosen = tuple(sorted(kept))
    filtered = [
        dataclasses.replace(s, outcomes=[o for o in s.outcomes if o.task in kept]) for s in sources
    ]
    return filtered, TaskFilter(
        tuple(tasks) if tasks is not None else None,
        from_arm,
        chosen,
        tuple(usable_in) if usable_in is not None else None,
    )


def _unknown(kind: str, name: str, known: list[str], option: str, what: str) -> UsageError:
    import difflib

    close = difflib.get_close_matches(name, known, n=1)
    hint = f" Did you mean '{close[0]}'?" if close else f" {what}: {', '.join(known)}."
    return UsageError(f"{option} {name}: no {kind} '{name}' in the runs given.{hint}")


@dataclass(frozen=True)
class PooledRuns:
    """report --pool-runs: each named arm's cells from every run holding it, as one arm."""

    runs: dict[str, tuple[str, ...]]  # pooled label -> the runs whose cells it holds
    outcomes: tuple[CellOutcome, ...]  # arms as the pooled labels, samples renumbered

    def definition(self) -> str:
        arms = "; ".join(f"{label} pools runs {', '.join(r)}" for label, r in self.runs.items())
        return (
            f"{arms}. A pooled arm holds the cells of every run of the arm (its name as stored), "
            "each run's samples of a task numbered after the previous run's, so a task's rate is "
            "over all its samples in all runs and a resampled task carries them all; the runs' "
            "own rows stay in every other table."
        )


POOLED = " (pooled)"


def pool_runs(sources: Sequence[Source], arms: Sequence[str]) -> PooledRuns:
    """The named arms' cells pooled over the runs holding them (each must be in two or more)."""
    stored = sorted({arm for s in sources for arm in s.labels})
    runs: dict[str, tuple[str, ...]] = {}
    pooled: list[CellOutcome] = []
    for arm in arms:
        if arm not in stored:
            raise _unknown("arm", arm, stored, "--pool-runs", "the runs' arms as stored")
        holding = [s for s in sources if arm in s.labels]
        if len(holding) < 2:
            raise UsageError(
                f"--pool-runs {arm}: the arm is in one run only ({holding[0].name}); give the "
                "other runs of the arm too, or leave it out of --pool-runs."
            )
        label = arm + POOLED
        runs[label] = tuple(s.name for s in holding)
        offset: dict[str, int] = {}
        for s in holding:
            own = sorted((o for o in s.outcomes if o.arm == arm), key=lambda o: (o.task, o.sample))
            base = dict(offset)
            for o in own:
                sample = base.get(o.task, 0) + o.sample
                pooled.append(dataclasses.replace(o, arm=label, sample=sample))
                offset[o.task] = max(offset.get(o.task, 0), sample + 1)
    return PooledRuns(runs=runs, outcomes=tuple(pooled))


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
    chosen_arms: tuple[str, ...] | None = None  # report --arms: arms the tests count
    chosen_runs: frozenset[int] | None = None  # report --runs: run indices the tests count
    pooled: PooledRuns | None = None  # report --pool-runs
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

    # -- roles and the arms each test counts ----------------------------------------------------

    @functools.cached_property
    def roles(self) -> dict[str, ArmRole]:
        """label -> the arm's role and run index (recorded in arm_info, else inferred; roles.py)."""
        found = arm_roles(
            [(s.name, s.run.arm_info(), sorted(s.labels)) for s in self.sources],
            engines={s.name: s.engine for s in self.sources},
        )
        return {s.labels[arm]: found[(s.name, arm)] for s in self.sources for arm in s.labels}

    def role(self, label: str) -> str:
        return self.roles[label].role

    # -- engines ----------------------------------------------------------------------------------

    @functools.cached_property
    def engines(self) -> list[str]:
        """The engines the runs were graded on, in the order the runs were given."""
        return list(dict.fromkeys(s.engine for s in self.sources))

    @property
    def several_engines(self) -> bool:
        return len(self.engines) > 1

    @functools.cached_property
    def engine_of(self) -> dict[str, str]:
        """label -> the engine of the run holding it."""
        return {label: s.engine for s in self.sources for label in s.labels.values()}

    @property
    def runs(self) -> frozenset[int]:
        return self.chosen_runs or frozenset({1})

    @functools.cached_property
    def tested(self) -> list[str]:
        """The labels the sign tests and the signature count, in the report's arm order.

        By default the model arms (unhinted) of run 1; `--arms` names arms (by label or by name
        as stored) instead of the model role, and `--runs` other run indices instead of 1. When the
        runs span several engines, the default counts the model arms on the first run's engine
        only: the same answers graded on another engine are not further draws.
        """
        if self.chosen_arms is None:
            picked = {
                label
                for label, r in self.roles.items()
                if r.role == "model" and self.engine_of[label] == self.engines[0]
            }
        else:
            stored = {label: arm for s in self.sources for arm, label in s.labels.items()}
            unknown = [
                name
                for name in self.chosen_arms
                if name not in self.roles and name not in stored.values()
            ]
            if unknown:
                raise UsageError(
                    f"--arms: no arm named {', '.join(unknown)} in these runs; the arms are "
                    f"{', '.join(sorted(self.roles))}."
                )
            wanted = set(self.chosen_arms)
            picked = {label for label in self.roles if label in wanted or stored[label] in wanted}
        return [arm for arm in self.arms if arm in picked and self.roles[arm].run in self.runs]

    @functools.cached_property
    def replicated(self) -> set[str]:
        """Labels the replication tables may compare: model arms, or the `--arms` named."""
        if self.chosen_arms is None:
            return {label for label, r in self.roles.items() if r.role == "model"}
        stored = {label: arm for s in self.sources for arm, label in s.labels.items()}
        wanted = set(self.chosen_arms)
        return {label for label in self.roles if label in wanted or stored[label] in wanted}

    def source_of(self, label: str) -> tuple[Source, str]:
        """The run holding a label, and the arm's name as stored there."""
        for s in self.sources:
            for arm, own in s.labels.items():
                if own == label:
                    return s, arm
        raise KeyError(label)

    @functools.cached_property
    def served_models(self) -> dict[tuple[str, str, int], str]:
        """(label, task, sample) -> the model id(s) the provider reported serving the cell.

        Read from the stored cell (`served_model`, in runs that record it) or else from the cell's
        transcript (its `served_model`, or those of its turns); cells without one are absent.
        """
        found: dict[tuple[str, str, int], str] = {}
        for s in self.sources:
            for cell in s.run.cells():
                if cell.arm not in s.labels:
                    continue
                served = getattr(cell, "served_model", None) or _served(
                    transcript(s.run, cell.arm, cell.task, cell.sample)
                )
                if served:
                    found[(s.labels[cell.arm], cell.task, cell.sample)] = str(served)
        return found


def _served(data: dict[str, Any] | None) -> str | None:
    if not data:
        return None
    if data.get("served_model"):
        return str(data["served_model"])
    turns = data.get("turns")
    ids = sorted(
        {str(t["served_model"]) for t in turns if isinstance(t, dict) and t.get("served_model")}
        if isinstance(turns, list)
        else set()
    )
    return ", ".join(ids) or None


def transcript(run: Path | RunDir, arm: str, task: str, sample: int) -> dict[str, Any] | None:
    """A generated cell's transcript (run/transcripts/<arm>/<task>/<sample>.json), or None.

    Read through RunDir, so a symlink in its way is refused (a report never embeds a host file).
    """
    run = run if isinstance(run, RunDir) else RunDir(Path(run))
    return run.transcript(arm, task, sample)


def not_passing_records(
    sources: Sequence[Source],
) -> dict[tuple[str, str, int, str], dict[str, Any]]:
    """(arm label, task, sample, schedule) -> the stored verdict record of every verdict that did
    not PASS, read from each run's verdict rows (a row whose record does not parse is left out)."""
    records: dict[tuple[str, str, int, str], dict[str, Any]] = {}
    for s in sources:
        table = s.run.verdicts()
        if "record" not in table.column_names:
            continue
        for row in table.select(
            ["arm", "task", "sample", "schedule", "verdict", "record"]
        ).to_pylist():
            if row["verdict"] != "PASS" and row["record"] and row["arm"] in s.labels:
                try:
                    records[(s.labels[row["arm"]], row["task"], row["sample"], row["schedule"])] = (
                        json.loads(row["record"])
                    )
                except ValueError:
                    continue
    return records


def diagnosis_counts(
    sources: Sequence[Source],
) -> tuple[dict[str, dict[str, int]], dict[str, int]]:
    """(arm label -> diagnosis label -> FAIL verdicts carrying it, arm label -> FAIL verdicts
    diagnosed), from each run's explanations.parquet (`grade-run --explain`; none: empty)."""
    from arrivalbench.explain.diagnoses import read_explanations

    counts: dict[str, dict[str, int]] = {}
    totals: dict[str, int] = {}
    for source in sources:
        table = read_explanations(source.run)
        for row in table.to_pylist() if table is not None else []:
            arm = source.labels.get(row["arm"], row["arm"])
            totals[arm] = totals.get(arm, 0) + 1
            for label in row["diagnosis"]:
                counts.setdefault(arm, {})[label] = counts.get(arm, {}).get(label, 0) + 1
    return counts, totals
