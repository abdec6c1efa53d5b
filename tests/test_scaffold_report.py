"""Loop against agent arms (analysis/scaffolds.py, report/scaffolds.py): pairing, tool use, the tables."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from arrivalbench.analysis.outcomes import CellOutcome
from arrivalbench.analysis.scaffolds import gap_by_tests, scaffold_of, scaffold_pairs, tool_use


def test_an_arm_without_a_scaffold_is_a_loop_arm() -> None:
    assert scaffold_of({"model": "m"}) == "loop"
    assert scaffold_of({"scaffold": "agent"}) == "agent"


def test_agent_arms_pair_with_the_loop_arm_of_the_same_model_prompt_and_engine() -> None:
    info = {
        "unhinted (loop)": {"model": "m", "prompt_arm": "unhinted"},
        "hint (loop)": {"model": "m", "prompt_arm": "hint"},
        "unhinted (agent)": {"model": "m", "prompt_arm": "unhinted", "scaffold": "agent"},
        "unhinted (other)": {"model": "n", "prompt_arm": "unhinted", "scaffold": "agent"},
    }
    engines = dict.fromkeys(info, "duckdb")
    assert scaffold_pairs(info, engines) == [("unhinted (loop)", "unhinted (agent)")]
    assert scaffold_pairs(info, {**engines, "unhinted (loop)": "sqlite"}) == []


def test_tool_use_is_pooled_over_cells() -> None:
    logs = [
        {"usage": {"queries": 3, "tests": 2, "submitted_untested": False}, "tokens": 100},
        {"usage": {"queries": 1, "tests": 0, "submitted_untested": True}, "tokens": 300},
        {"usage": {"queries": 0, "tests": 1, "submitted_untested": None}, "tokens": None},
    ]
    use = tool_use("a", logs)
    assert (use.cells, use.queries, use.tests, use.tokens) == (3, 4 / 3, 1.0, 200.0)
    assert (use.tested, use.submitted, use.untested) == (2, 2, 1)


def _cell(sample: int, hazard: str) -> CellOutcome:
    return CellOutcome(
        arm="a",
        task="t",
        sample=sample,
        scenario="s",
        hazards=("late_arrival",),
        verdicts={"snapshot": "PASS", "late_arrival": hazard},
        error_classes={},
        artifact=True,
        no_artifact_reason=None,
        snapshot_by_turn=("PASS",),
    )


def test_gap_by_tests_counts_silent_failures_among_gap_cells() -> None:
    cells = [_cell(0, "FAIL"), _cell(1, "PASS"), _cell(2, "FAIL"), _cell(3, "ERROR")]
    tests = {0: 0, 1: 3, 2: 2, 3: 1}
    split = gap_by_tests(cells, lambda o: tests[o.sample])
    assert split == {"0": (1, 1), "2+": (1, 2)}  # the hazard ERROR is in no gap denominator


@pytest.mark.slow
def test_the_report_pairs_a_loop_run_with_an_agent_run(tmp_path: Path) -> None:
    """One recorded file answers both scaffolds (text for the loop, tool calls for the agent), so
    the two runs share a model; the report then prints the three scaffold tables."""
    from arrivalbench.agent.generate import generate
    from arrivalbench.agent.models import ReplayModel
    from arrivalbench.report.render import build_report
    from arrivalbench.spec import get_task
    from arrivalbench.store import RunDir
    from arrivalbench.sweep import sweep

    gold = (get_task("daily_revenue").folder / "gold.sql").read_text(encoding="utf-8")
    replies = tmp_path / "both.json"
    replies.write_text(
        json.dumps(
            {
                "daily_revenue": [
                    {
                        "text": f"```sql\n{gold}```",
                        "tool_calls": [{"function": "test", "arguments": {"script": gold}}],
                    },
                    {"tool_calls": [{"function": "submit", "arguments": {"script": gold}}]},
                ]
            }
        )
    )
    paths = []
    for scaffold in ("loop", "agent"):
        out = tmp_path / scaffold
        generate(
            ReplayModel(replies),
            arms=["unhinted"],
            k=1,
            out=out,
            scaffold=scaffold,
            log=lambda line: None,
        )
        sweep(RunDir.open(out), workers=1)
        paths.append(out)
    report = build_report(paths, resamples=200)
    tables = {b.key: b for b in report.blocks if hasattr(b, "rows")}
    assert [r[2] for r in tables["scaffolds"].rows] == [
        "gap",
        "snapshot-pass",
        "error",
        "all-in failure",
    ]
    assert tables["scaffolds"].rows[0][1] == "unhinted (loop) / unhinted (agent)"
    [use] = tables["tool_use"].rows
    assert use[0] == "unhinted (agent)" and use[3] == "1.0"
    assert tables["tests_gap"].rows[0][:2] == ("unhinted (agent)", "1")
    loop_only = build_report(paths[:1], resamples=200)
    assert not {"scaffolds", "tool_use", "tests_gap"} & {b.key for b in loop_only.blocks}
