"""analysis/minutes.py: minutes per task of a human study, from config.human."""

from __future__ import annotations

import pytest

from arrivalbench.analysis.minutes import TaskMinutes, minutes_per_task


def test_minutes_per_task_are_medians_and_ranges_over_participants_in_study_order() -> None:
    human = {
        "plan": {"tasks": ["b_task", "a_task"]},
        "participants": [
            {"name": "p0", "seconds": {"a_task": 60.0, "b_task": 120.0}},
            {"name": "p1", "seconds": {"a_task": 180.0, "b_task": 30.0}},
            {"name": "p2", "seconds": {"a_task": 300.0, "b_task": 90.0}},
        ],
    }
    assert minutes_per_task(human) == [
        TaskMinutes("b_task", 3, 1.5, 0.5, 2.0),
        TaskMinutes("a_task", 3, 3.0, 1.0, 5.0),
    ]


@pytest.mark.parametrize("human", [None, {}, {"plan": {"tasks": ["t"]}, "participants": []}])
def test_a_run_without_finished_participants_has_no_minutes(human: dict | None) -> None:
    assert minutes_per_task(human) == []
