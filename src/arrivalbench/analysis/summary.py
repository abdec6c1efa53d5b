"""The summary of one graded run: per arm, its rates over tasks and the gap's 95% interval.

What `arrivalbench summary` and `grade-run` print under a run; the report (report/) shows the
same rates with every test beside them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from arrivalbench.analysis.stats import ArmSummary, Estimate, arm_summaries, estimate, outcomes

if TYPE_CHECKING:
    from arrivalbench.store import RunDir


def run_summary(run: RunDir) -> list[tuple[ArmSummary, Estimate]]:
    """One (rates, gap interval) pair per arm of `run`, in arm order."""
    cells = run.cells()
    tasks = run.tasks()
    verdicts = run.verdicts()
    gap = estimate(outcomes(cells, verdicts, tasks), "gap")
    return [(s, gap[s.arm]) for s in arm_summaries(cells, verdicts, tasks)]
