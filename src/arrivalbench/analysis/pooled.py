"""Per-hazard counts pooled over cells, the rule the paper's Section 4.4 applies to the human arm
(its per-task cell counts run from one to four, so a mean over tasks weighs one cell as much as
four).

Two denominators, side by side. The per-hazard rule counts a hazard over the cells with an
artifact whose verdict on it is PASS or FAIL (an ERROR on that hazard leaves the cell out of that
hazard only), as the per-hazard temporal-pass does. The strict rule counts every hazard over the
gap's own cells: snapshot-passing, with no ERROR on any declared hazard, so one fixed set of cells
faces all five. The weakest-link margin is the weaker ordering hazard's pooled rate minus the
weakest idempotency hazard's, under each rule.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from arrivalbench.analysis.outcomes import CellOutcome
from arrivalbench.analysis.rates import METRICS
from arrivalbench.hazards import IDEMPOTENCY, ORDERING


@dataclass(frozen=True)
class Pooled:
    """One arm's per-hazard PASS counts pooled over cells under one rule: hazard -> (x, n)."""

    counts: dict[str, tuple[int, int]]

    def rate(self, hazard: str) -> float | None:
        x, n = self.counts.get(hazard, (0, 0))
        return x / n if n else None

    @property
    def weakest_link(self) -> float | None:
        """Weakest ordering rate minus weakest idempotency rate; None without both groups."""
        ordering = [r for h in ORDERING if (r := self.rate(h)) is not None]
        idempotency = [r for h in IDEMPOTENCY if (r := self.rate(h)) is not None]
        if not ordering or not idempotency:
            return None
        return min(ordering) - min(idempotency)


def pooled_hazards(outcomes: Iterable[CellOutcome], strict: bool = False) -> dict[str, Pooled]:
    """arm -> its pooled per-hazard counts under the per-hazard rule, or the strict one."""
    gap = METRICS["gap"]
    counts: dict[str, dict[str, list[int]]] = {}
    for o in outcomes:
        if not o.artifact:
            continue
        if strict and gap(o) is None:
            continue
        arm = counts.setdefault(o.arm, {})
        for h in (*ORDERING, *IDEMPOTENCY):
            if h not in o.hazards or o.verdicts.get(h) not in ("PASS", "FAIL"):
                continue
            x_n = arm.setdefault(h, [0, 0])
            x_n[0] += o.verdicts[h] == "PASS"
            x_n[1] += 1
    return {
        arm: Pooled({h: (x, n) for h, (x, n) in found.items()})
        for arm, found in sorted(counts.items())
    }
