"""What the admitted suite is made of: the counts the suite is held to (modes, difficulty bands,
scenarios, declared hazards, order-sensitive tasks, negative controls), printed under the gate."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from arrivalbench.gate.suite import TaskGate
from arrivalbench.spec import HAZARDS


def composition(results: Iterable[TaskGate]) -> str:
    """Counts the suite is held to: modes, difficulty bands, scenarios, declarations, controls."""
    specs = [r.task.spec for r in results]
    modes = Counter(s.mode for s in specs)
    bands = Counter(s.difficulty for s in specs)
    declared = Counter(h for s in specs for h in s.hazards)
    lines = [
        "modes: " + ", ".join(f"{m} {modes[m]}" for m in ("create", "modify", "repair")),
        "difficulty: " + ", ".join(f"{d} {bands[d]}" for d in ("easy", "medium", "hard")),
        f"scenarios: {len({s.scenario for s in specs})}",
        "declared: " + ", ".join(f"{h} {declared[h]}" for h in HAZARDS),
        f"order-sensitive: {sum(s.order_sensitive for s in specs)}",
        f"negative controls: {sum(len(s.controls) for s in specs)}",
    ]
    return "\n".join(lines)
