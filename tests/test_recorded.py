"""The recorded replies of one frontier LLM (examples/recorded/): what `make demo` shows a new user.

The fast tests pin the files' shape; the slow one generates the three recorded arms as one run,
grades it, writes the report, and checks the report's rates against rates recomputed here from the
verdict rows (means over tasks of each task's rate, k = 1), and against the README's figures.
"""

from __future__ import annotations

import asyncio
import json
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from arrivalbench.agent.models import Message, ReplayModel, Request, get_model
from arrivalbench.errors import UsageError
from arrivalbench.spec import load_suite

RECORDED = Path(__file__).parent.parent / "examples" / "recorded"
TEMPLATE = RECORDED / "frontier-llm-{arm}.json"
ARMS = ["unhinted", "hint", "arch"]


def _request(task: str, arm: str) -> Request:
    return Request(task, arm, 0, 1, (Message("user", "x"),), 0.0)


def test_a_replay_path_with_arm_reads_one_file_per_arm() -> None:
    model = get_model(f"replay:{TEMPLATE}", arms=ARMS)
    assert isinstance(model, ReplayModel)
    assert model.default_tasks() == sorted(load_suite())
    for arm in ARMS:
        own = json.loads((RECORDED / f"frontier-llm-{arm}.json").read_text())
        reply = asyncio.run(model.complete(_request("daily_revenue", arm)))
        assert reply.text == own["daily_revenue"][0]
    hint, unhinted = (
        asyncio.run(model.complete(_request("daily_revenue", arm))) for arm in ("hint", "unhinted")
    )
    assert hint.text != unhinted.text, "each arm answers from its own file"


def test_a_replay_path_with_arm_but_no_arms_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"\{arm\}"):
        ReplayModel(tmp_path / "replies-{arm}.json")
    with pytest.raises(UsageError, match=r"replies-other\.json: cannot read"):
        ReplayModel(tmp_path / "replies-{arm}.json", ["other"])


def _rates_from_verdict_rows(run: Path) -> dict[str, tuple[float, float]]:
    """(snapshot-pass, gap) per arm, each the mean over tasks, recomputed from the raw rows."""
    declared = {
        task.id: set(task.spec.hazards) - {"schema_evolution"} for task in load_suite().values()
    }
    verdicts: dict[tuple[str, str], dict[str, str]] = defaultdict(dict)
    for row in pq.read_table(run / "verdicts.parquet").to_pylist():
        verdicts[row["arm"], row["task"]][row["schedule"]] = row["verdict"]
    rates = {}
    for arm in ARMS:
        tasks = sorted(t for a, t in verdicts if a == arm)
        snapshot = [verdicts[arm, t]["snapshot"] == "PASS" for t in tasks]
        usable = [
            t
            for t in tasks
            if verdicts[arm, t]["snapshot"] == "PASS"
            and all(verdicts[arm, t][h] != "ERROR" for h in declared[t])
        ]
        gap = [any(verdicts[arm, t][h] == "FAIL" for h in declared[t]) for t in usable]
        rates[arm] = (100 * sum(snapshot) / len(tasks), 100 * sum(gap) / len(usable))
    return rates


@pytest.mark.slow
def test_recorded_arms_grade_as_their_readme_says_and_the_report_shows_the_verdict_rows(
    cli,
    tmp_path: Path,
) -> None:
    run, report = tmp_path / "recorded", tmp_path / "report"
    made = cli(
        "generate", "--model", f"replay:{TEMPLATE}", *(a for arm in ARMS for a in ("--arm", arm)),
        "-k", "1", "--out", run,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    graded = cli("grade-run", run)
    assert graded.returncode == 0, graded.stderr
    written = cli("report", run, "--out", report, "--resamples", "200")
    assert written.returncode == 0, written.stderr

    recomputed = _rates_from_verdict_rows(run)
    assert recomputed == {"unhinted": (100.0, 35.0), "hint": (100.0, 0.0), "arch": (100.0, 0.0)}
    table = json.loads((report / "report.json").read_text())["tables"]["main"]
    snapshot, gap = (
        table["columns"].index(c) for c in ("snapshot-pass % [95% CI]", "gap % [95% CI]")
    )
    shown = {row[0]: (row[snapshot], row[gap]) for row in table["rows"]}
    for arm, (snapshot_rate, gap_rate) in recomputed.items():
        assert shown[arm][0].startswith(f"{snapshot_rate:.1f}% "), (arm, shown[arm])
        assert shown[arm][1].startswith(f"{gap_rate:.1f}% "), (arm, shown[arm])
    assert (
        "replay:" in json.loads((report / "report.json").read_text())["arms"]["unhinted"]["model"]
    )
