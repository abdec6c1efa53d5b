"""Does repairing against the snapshot test make pipelines worse under delivery? (docs/metrics.md)

Among generated cells whose final script passes the snapshot, compare the ones that needed a
repair turn (turn 1 did not pass) with the ones that passed at once, on the share that fail at
least one declared hazard, silently or by crashing. Two estimates:

- pooled: both shares pooled over cells, with a task-clustered bootstrap (a resampled task
  carries all its cells, of every arm). Repaired cells sit on harder tasks, so this difference
  mixes the loop's effect with task difficulty;
- within: the mean, over (arm, task) strata holding both kinds of cell, of the stratum's
  repaired-minus-immediate difference, bootstrapped over tasks. Arm and task are held fixed.

These are the only rates in the package pooled over cells besides the guard split: whether a
cell needed a repair is a property of the sample, not of the task.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from arrivalbench.analysis.stats import (
    DEFAULT_BOOTSTRAP_SEED,
    CellOutcome,
    Estimate,
    percentile_interval,
)
from arrivalbench.seeds import rng as seeded_rng

ALL = "all arms"


@dataclass(frozen=True)
class RepairEffect:
    arm: str  # an arm, or ALL
    immediate_cells: int
    immediate_failing: int
    repaired_cells: int
    repaired_failing: int
    pooled: Estimate  # repaired minus immediate failure share, pooled over cells
    strata: int  # (arm, task) strata holding both kinds of cell
    within: Estimate  # mean over those strata of the repaired-minus-immediate difference

    @property
    def immediate_rate(self) -> float | None:
        return self.immediate_failing / self.immediate_cells if self.immediate_cells else None

    @property
    def repaired_rate(self) -> float | None:
        return self.repaired_failing / self.repaired_cells if self.repaired_cells else None


def _kind(o: CellOutcome) -> tuple[bool, bool] | None:
    """(needed a repair, fails a declared hazard) for a generated cell whose final script passes the snapshot."""
    if not o.snapshot_by_turn or not o.graded or not o.snapshot_pass:
        return None
    failing = any(o.verdicts.get(h) in ("FAIL", "ERROR") for h in o.hazards)
    return o.snapshot_by_turn[0] != "PASS", failing


def _effect(
    arm: str, cells: list[tuple[str, str, bool, bool]], resamples: int, seed: int
) -> RepairEffect:
    """cells: (arm, task, repaired, failing)."""
    tasks = sorted({task for _, task, _, _ in cells})
    index = {t: i for i, t in enumerate(tasks)}
    # per task: failing and cells, for immediate (column 0) and repaired (column 1)
    failing = np.zeros((len(tasks), 2))
    count = np.zeros((len(tasks), 2))
    strata: dict[tuple[str, str], list[list[bool]]] = defaultdict(lambda: [[], []])
    for cell_arm, task, repaired, fails in cells:
        failing[index[task], int(repaired)] += fails
        count[index[task], int(repaired)] += 1
        strata[(cell_arm, task)][int(repaired)].append(fails)
    generator = seeded_rng(seed, "repair_effect", arm)
    draws = generator.integers(0, len(tasks), size=(resamples, len(tasks))) if tasks else None

    with np.errstate(invalid="ignore", divide="ignore"):
        totals_f, totals_n = failing.sum(axis=0), count.sum(axis=0)
        value = (totals_f[1] / totals_n[1] - totals_f[0] / totals_n[0]) if totals_n.all() else None
        pooled = Estimate(value=value, low=None, high=None, tasks=len(tasks))
        if value is not None and draws is not None:
            f, n = failing[draws].sum(axis=1), count[draws].sum(axis=1)
            low, high = percentile_interval(f[:, 1] / n[:, 1] - f[:, 0] / n[:, 0])
            pooled = Estimate(value=float(value), low=low, high=high, tasks=len(tasks))

        both = {
            key: (float(np.mean(r)) - float(np.mean(i)))
            for key, (i, r) in strata.items()
            if i and r
        }
        sums, sizes = np.zeros(len(tasks)), np.zeros(len(tasks))
        for (_, task), difference in both.items():
            sums[index[task]] += difference
            sizes[index[task]] += 1
        within = Estimate(value=None, low=None, high=None, tasks=int((sizes > 0).sum()))
        if both and draws is not None:
            low, high = percentile_interval(sums[draws].sum(axis=1) / sizes[draws].sum(axis=1))
            within = Estimate(
                value=float(np.mean(list(both.values()))),
                low=low,
                high=high,
                tasks=int((sizes > 0).sum()),
            )
    return RepairEffect(
        arm=arm,
        immediate_cells=int(count[:, 0].sum()),
        immediate_failing=int(failing[:, 0].sum()),
        repaired_cells=int(count[:, 1].sum()),
        repaired_failing=int(failing[:, 1].sum()),
        pooled=pooled,
        strata=len(both),
        within=within,
    )


def repair_effect(
    outcomes: Iterable[CellOutcome], *, resamples: int = 10_000, seed: int = DEFAULT_BOOTSTRAP_SEED
) -> list[RepairEffect]:
    """Per arm with generated cells, then over all arms together (ALL), in that order."""
    cells = []
    for o in outcomes:
        kind = _kind(o)
        if kind is not None:
            cells.append((o.arm, o.task, *kind))
    arms = sorted({arm for arm, *_ in cells})
    out = [_effect(arm, [c for c in cells if c[0] == arm], resamples, seed) for arm in arms]
    if len(arms) > 1:
        out.append(_effect(ALL, cells, resamples, seed))
    return out
