"""The scaffold tables: each model's loop arm beside its agent arm, the agents' tool use, and testing
against the gap. Built only when the runs hold an agent arm (analysis/scaffolds.py)."""

from __future__ import annotations

from typing import Any

from arrivalbench.analysis.outcomes import CellOutcome
from arrivalbench.analysis.scaffolds import (
    AGENT,
    gap_by_tests,
    scaffold_of,
    scaffold_pairs,
    tool_use,
)
from arrivalbench.report import format as fmt
from arrivalbench.report.analysis import Analysis, transcript
from arrivalbench.report.format import Table

METRICS = (
    ("gap", "gap"),
    ("snapshot_pass", "snapshot-pass"),
    ("error", "error"),
    ("all_in", "all-in failure"),
)


def _transcripts(a: Analysis, label: str) -> dict[tuple[str, int], dict[str, Any]]:
    source, arm = a.source_of(label)
    found = {}
    for o in source.outcomes:
        if o.arm == arm:
            data = transcript(source.run, arm, o.task, o.sample)
            if data is not None:
                found[(o.task, o.sample)] = data
    return found


def scaffold_tables(a: Analysis) -> list[Table]:
    """The three tables, or none when no arm of the runs is an agent."""
    info = a.arm_info()
    agents = sorted(label for label, i in info.items() if scaffold_of(i) == AGENT)
    if not agents:
        return []
    tables = []
    pairs = scaffold_pairs(info, a.engine_of)
    if pairs:
        rows = []
        for loop, agent in pairs:
            for metric, name in METRICS:
                estimates = a.estimates(metric)
                rows.append(
                    (
                        str(info[agent].get("model")),
                        f"{loop} / {agent}",
                        name,
                        fmt.interval(estimates.get(loop)),
                        fmt.interval(estimates.get(agent)),
                        fmt.interval(a.paired(metric, loop, agent), signed=True),
                    )
                )
        tables.append(
            Table(
                key="scaffolds",
                title="Loop and agent scaffolds of the same model and prompt",
                caption=(
                    "Each model's repair-loop arm beside its tool-using agent arm (same prompt arm and engine): "
                    "means over tasks with 95% bootstrap intervals, and the agent's minus the loop's in percentage "
                    "points over the tasks usable in both, resampling those tasks once for both arms."
                ),
                columns=("model", "loop / agent", "metric", "loop", "agent", "agent − loop"),
                rows=tuple(rows),
                labels=3,
            )
        )
    uses = [tool_use(label, _transcripts(a, label).values()) for label in agents]
    tables.append(
        Table(
            key="tool_use",
            title="Tool use of the agent arms",
            caption=(
                "Pooled over each agent arm's cells (behaviour, not a benchmark rate): queries, tests and tokens "
                "per cell, the cells that ran the test at least once, and, of the cells that submitted a script, "
                "those that submitted one they had never tested."
            ),
            columns=(
                "arm",
                "cells",
                "queries/cell",
                "tests/cell",
                "tokens/cell",
                "tested ≥ once",
                "submitted untested",
            ),
            rows=tuple(
                (
                    u.arm,
                    fmt.count(u.cells),
                    f"{u.queries:.1f}",
                    f"{u.tests:.1f}",
                    "—" if u.tokens is None else f"{u.tokens:,.0f}",
                    fmt.share(u.tested, u.cells),
                    fmt.share(u.untested, u.submitted),
                )
                for u in uses
            ),
        )
    )
    rows = []
    for label in agents:
        logs = _transcripts(a, label)

        def tests_of(
            o: CellOutcome, logs: dict[tuple[str, int], dict[str, Any]] = logs
        ) -> int | None:
            data = logs.get((o.task, o.sample))
            return None if data is None else int((data.get("usage") or {}).get("tests", 0))

        split = gap_by_tests([o for o in a.outcomes if o.arm == label], tests_of)
        for tests, (silent, n) in split.items():
            rows.append((label, tests, fmt.share(silent, n)))
    tables.append(
        Table(
            key="tests_gap",
            title="Testing more and the gap, within each agent arm",
            caption=(
                "Among each agent arm's cells that pass the snapshot with no ERROR on a declared hazard, the share "
                "with a FAIL on one, by how many times the cell ran the test; pooled over cells. An association "
                "only: an agent tests more when its scripts fail, so cells that tested more are not a random subset."
            ),
            columns=("arm", "tests run", "gap"),
            rows=tuple(rows),
            labels=2,
        )
    )
    return tables
