"""The idioms of a run's scripts, and the within-batch guard split they support.

idioms.py reads one script; this module reads a graded run. Every artifact is read once with its
task's sources and target (`artifact_idioms`), and each cell (a `stats.CellOutcome`) is then looked
up by its artifact's sha256: per arm, the share of scripts using each feature (`idiom_table`), and
the silent FAIL and ERROR rates on duplicate delivery of scripts with a within-batch guard against
those without (`guard_split`), with a sign test across arms (`guard_sign_test`). The guard rule
itself, and why it is deliberately broad, is in idioms.py.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from arrivalbench.analysis.idioms import FEATURES, Idioms, idioms
from arrivalbench.analysis.stats import CellOutcome, bound_of_three, sign_test
from arrivalbench.spec import Task
from arrivalbench.store import Cell, RunDir

__all__ = [
    "GuardSignTest",
    "GuardSplit",
    "IdiomShare",
    "artifact_idioms",
    "guard_sign_test",
    "guard_split",
    "idiom_table",
]


def artifact_idioms(run: RunDir, tasks: Mapping[str, Task]) -> dict[str, Idioms]:
    """The idioms of every artifact of a run, keyed by sha256, read with its task's sources and target.

    An artifact of a task not in `tasks` is read without them (any `*_batch` table is the batch).
    """
    found: dict[str, Idioms] = {}
    for cell in run.cells():
        sha = cell.artifact_sha256
        if sha is None or sha in found:
            continue
        task = tasks.get(cell.task)
        sources = [s.name for s in task.spec.sources] if task else ()
        found[sha] = idioms(run.artifact(sha), sources, task.spec.target.name if task else None)
    return found


@dataclass(frozen=True)
class GuardSplit:
    """One arm's snapshot-passing cells that declare the hazard, with or without a guard.

    `fail_bound` / `error_bound` are the one-sided 95% bounds of stats.bound_of_three (exact
    below 30 cells, else the rule of three), given only when the observed rate is exactly 0%
    (upper) or 100% (lower).
    """

    arm: str
    guarded: bool
    cells: int
    fail: int
    error: int

    @property
    def fail_rate(self) -> float | None:
        return self.fail / self.cells if self.cells else None

    @property
    def error_rate(self) -> float | None:
        return self.error / self.cells if self.cells else None

    @property
    def fail_bound(self) -> float | None:
        return bound_of_three(self.fail_rate, self.cells)

    @property
    def error_bound(self) -> float | None:
        return bound_of_three(self.error_rate, self.cells)


def guard_split(
    cells: Iterable[CellOutcome], found: Mapping[str, Idioms], hazard: str = "duplicate_delivery"
) -> list[GuardSplit]:
    """Per arm, silent FAIL and ERROR on one hazard for guarded against unguarded cells.

    Rates here are pooled over cells, the one place they are not averaged over tasks: whether the
    guard is kept varies between samples of one task, so it is a property of a cell, and averaging
    by task would weigh a task's single guarded sample like another task's five. Only cells that
    pass the snapshot, declare the hazard and have a verdict on it are counted.
    """
    counts: dict[tuple[str, bool], list[int]] = {}
    for cell in cells:
        verdict = cell.verdicts.get(hazard)
        if hazard not in cell.hazards or verdict is None or cell.artifact_sha256 is None:
            continue
        if not cell.snapshot_pass:
            continue
        if cell.artifact_sha256 not in found:
            raise ValueError(
                f"no idioms for artifact {cell.artifact_sha256} of {cell.arm}/{cell.task}/{cell.sample}; "
                "compute them with artifact_idioms over the same run"
            )
        guarded = found[cell.artifact_sha256].guard
        for key in ((cell.arm, True), (cell.arm, False)):
            counts.setdefault(key, [0, 0, 0])
        tally = counts[(cell.arm, guarded)]
        tally[0] += 1
        tally[1] += verdict == "FAIL"
        tally[2] += verdict == "ERROR"
    return [
        GuardSplit(arm, guarded, *counts[(arm, guarded)])
        for arm, guarded in sorted(counts, key=lambda k: (k[0], not k[1]))
    ]


@dataclass(frozen=True)
class GuardSignTest:
    """Arms where guarded cells fail silently less often (wins), as often (ties), or more (losses)."""

    arms: tuple[str, ...]
    wins: int
    ties: int
    losses: int
    trials: int
    p: float


def guard_sign_test(
    splits: Iterable[GuardSplit], min_cells: int = 10, drop_ties: bool = False
) -> GuardSignTest:
    """One-sided sign test over arms with at least `min_cells` cells in both groups.

    A tie is not a win. By default it stays among the trials, as in the paper (12 wins of 13 arms,
    one tie: p = 14/8192); `drop_ties` gives the textbook sign test, which leaves ties out.
    """
    groups: dict[str, dict[bool, GuardSplit]] = defaultdict(dict)
    for split in splits:
        groups[split.arm][split.guarded] = split
    wins = ties = losses = 0
    arms = []
    for arm, pair in sorted(groups.items()):
        if len(pair) < 2 or min(pair[True].cells, pair[False].cells) < min_cells:
            continue
        arms.append(arm)
        with_guard, without = pair[True].fail_rate, pair[False].fail_rate
        wins += with_guard < without
        ties += with_guard == without
        losses += with_guard > without
    trials = wins + losses if drop_ties else len(arms)
    return GuardSignTest(tuple(arms), wins, ties, losses, trials, sign_test(wins, trials, 0.5))


@dataclass(frozen=True)
class IdiomShare:
    """Per arm, the share of cells with an artifact whose script has each feature (and the guard)."""

    arm: str
    cells: int
    shares: Mapping[str, float]


def idiom_table(
    cells: Iterable[CellOutcome | Cell], found: Mapping[str, Idioms]
) -> list[IdiomShare]:
    """Feature shares per arm over cells with an artifact; a script two samples share counts twice.

    The cells may be a run's stored cells as well as their outcomes: only arm and sha256 are read.
    """
    by_arm: dict[str, list[Idioms]] = defaultdict(list)
    for cell in cells:
        if cell.artifact_sha256 is not None and cell.artifact_sha256 in found:
            by_arm[cell.arm].append(found[cell.artifact_sha256])
    names = (*FEATURES, "guard", "parsed")
    return [
        IdiomShare(arm, len(rows), {n: sum(getattr(r, n) for r in rows) / len(rows) for n in names})
        for arm, rows in sorted(by_arm.items())
    ]
