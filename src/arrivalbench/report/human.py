"""The human arm's minutes per task (runs made by `arrivalbench human`), as one table."""

from __future__ import annotations

from arrivalbench.analysis.minutes import minutes_per_task
from arrivalbench.report.analysis import Analysis
from arrivalbench.report.format import Table


def human_tables(a: Analysis) -> list[Table]:
    """One table if any run is a human study, else none (other reports are unchanged)."""
    rows = []
    for source in a.sources:
        human = source.run.manifest["config"].get("human")
        if not human:
            continue
        arm = human.get("plan", {}).get("arm")
        label = source.labels.get(arm, str(arm))
        for m in minutes_per_task(human):
            rows.append(
                (
                    label,
                    m.task,
                    str(m.participants),
                    f"{m.median:.1f}",
                    f"{m.low:.1f} to {m.high:.1f}",
                )
            )
    if not rows:
        return []
    return [
        Table(
            key="human_minutes",
            title="Human arm: minutes per task",
            caption=(
                "Runs made with 'arrivalbench human': minutes from the moment a participant was "
                "shown a task to the end of its cell (test runs included, summed over sittings), "
                "median and range over the participants who finished the study."
            ),
            columns=("arm", "task", "participants", "median min", "range min"),
            rows=tuple(rows),
            labels=2,
        )
    ]
