"""Loop arms against agent arms: which arms pair, how agents used their tools, and whether testing more
went with a smaller gap.

An agent arm (arm_info `scaffold: agent`) pairs with the loop arm (no `scaffold`, or `loop`) of
the same model, prompt arm and engine. Tool use is read from each agent cell's transcript
(`usage`, written by agent/tool_agent.py) and pooled over cells: it describes behaviour, not a
rate of the benchmark, so it is not a mean over tasks. The testing-and-gap split is pooled over
cells within an arm and is an association only: an agent tests more when its first scripts fail,
so cells that tested more are not a random subset.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from arrivalbench.analysis.outcomes import CellOutcome
from arrivalbench.analysis.rates import METRICS

LOOP, AGENT = "loop", "agent"


def scaffold_of(info: Mapping[str, Any]) -> str:
    """An arm's scaffold from its arm_info entry: absent means the loop (every run before agents)."""
    return str(info.get("scaffold") or LOOP)


def scaffold_pairs(
    arm_info: Mapping[str, Mapping[str, Any]], engine_of: Mapping[str, str]
) -> list[tuple[str, str]]:
    """(loop label, agent label) for each agent arm whose model, prompt arm and engine a loop arm shares."""
    pairs = []
    for agent, info in sorted(arm_info.items()):
        if scaffold_of(info) != AGENT:
            continue
        for loop, other in sorted(arm_info.items()):
            if (
                scaffold_of(other) == LOOP
                and other.get("model") == info.get("model")
                and other.get("prompt_arm") == info.get("prompt_arm")
                and engine_of.get(loop) == engine_of.get(agent)
            ):
                pairs.append((loop, agent))
                break
    return pairs


@dataclass(frozen=True)
class ToolUse:
    """One agent arm's tool use, pooled over its cells with a transcript."""

    arm: str
    cells: int
    queries: float  # per cell
    tests: float  # per cell
    tokens: float | None  # per cell, over cells that report tokens
    tested: int  # cells that tested at least once
    submitted: int  # cells that submitted a script
    untested: int  # of those, cells whose submitted script was never tested


def tool_use(arm: str, transcripts: Iterable[Mapping[str, Any]]) -> ToolUse:
    usage = [(t.get("usage") or {}, t.get("tokens")) for t in transcripts]
    n = len(usage)
    tokens = [int(k) for _, k in usage if k is not None]
    return ToolUse(
        arm=arm,
        cells=n,
        queries=sum(u.get("queries", 0) for u, _ in usage) / n if n else 0.0,
        tests=sum(u.get("tests", 0) for u, _ in usage) / n if n else 0.0,
        tokens=sum(tokens) / len(tokens) if tokens else None,
        tested=sum(u.get("tests", 0) > 0 for u, _ in usage),
        submitted=sum(u.get("submitted_untested") is not None for u, _ in usage),
        untested=sum(u.get("submitted_untested") is True for u, _ in usage),
    )


def gap_by_tests(
    outcomes: Iterable[CellOutcome], tests_of: Callable[[CellOutcome], int | None]
) -> dict[str, tuple[int, int]]:
    """Within one arm, pooled over gap-eligible cells: tests run ("0", "1", "2+") -> (cells with a
    silent FAIL, cells)."""
    gap = METRICS["gap"]
    split: dict[str, list[int]] = {}
    for o in outcomes:
        value, tests = gap(o), tests_of(o)
        if value is None or tests is None:
            continue
        key = "2+" if tests >= 2 else str(tests)
        counts = split.setdefault(key, [0, 0])
        counts[0] += int(value == 1.0)
        counts[1] += 1
    return {k: (v[0], v[1]) for k, v in sorted(split.items())}
