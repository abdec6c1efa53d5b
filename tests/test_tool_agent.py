"""The agent scaffold (agent/tool_agent.py, agent/tools.py), driven offline by Inspect's mockllm
with scripted tool calls and by recorded replies: every way a cell ends, and the tools' rules.

Every mock output carries `usage`: without it mockllm counts tokens with tiktoken, which downloads
its encoding.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

pytest.importorskip("inspect_ai")

from inspect_ai.model import ModelOutput, ModelUsage, get_model

from arrivalbench.agent.generate import generate, load_transcripts
from arrivalbench.agent.inspect_model import InspectModel
from arrivalbench.agent.models import ReplayModel
from arrivalbench.agent.prompts import arm_sha256, build_prompt
from arrivalbench.agent.tool_agent import (
    AgentCellResult,
    Budgets,
    agent_arm_sha256,
    agent_loop,
    agent_prompt,
    cell_from_transcript,
)
from arrivalbench.agent.tools import (
    QUERY_BYTES,
    QUERY_ROWS,
    ToolPool,
    read_only_refusal,
    render_result,
)
from arrivalbench.engines import Limits, get_engine
from arrivalbench.errors import UsageError
from arrivalbench.schedules import build_schedule
from arrivalbench.spec import get_task
from arrivalbench.store import sha256_text

pytestmark = pytest.mark.filterwarnings(
    "ignore:The 'initial' parameter is deprecated:DeprecationWarning"
)
TASK = get_task("daily_revenue")
GOLD = (TASK.folder / "gold.sql").read_text(encoding="utf-8")
ERROR = {"verdict": "ERROR", "error_class": "sql_error", "statement": 1, "message": "boom"}


def call(tool: str, **arguments: str) -> ModelOutput:
    out = ModelOutput.for_tool_call("mockllm/model", tool, arguments)
    out.usage = ModelUsage(input_tokens=100, output_tokens=10, total_tokens=110)
    return out


def prose(text: str = "I am thinking about it.") -> ModelOutput:
    out = ModelOutput.from_content("mockllm/model", text)
    out.usage = ModelUsage(input_tokens=100, output_tokens=10, total_tokens=110)
    return out


def mock(outputs: list[ModelOutput]) -> InspectModel:
    return InspectModel(get_model("mockllm/model", custom_outputs=outputs, memoize=False))


class Fake:
    """Tools that answer without a worker: the test's entry and a query's rows."""

    def __init__(self, entry: dict[str, Any] = ERROR, rows: str = "| n (int64) |\n| 1 |") -> None:
        self.entry, self.rows = entry, rows
        self.tested: list[str] = []

    async def check(self, task: Any, script: str) -> dict[str, Any]:
        self.tested.append(script)
        return self.entry

    async def query(self, task: Any, sql: str) -> tuple[str, str, str]:
        return "rows", self.rows, self.rows


def run(
    outputs: list[ModelOutput], fake: Fake | None = None, arm: str = "unhinted", **budgets: Any
) -> AgentCellResult:
    fake = fake or Fake()
    limits = Budgets(**budgets)
    prompt = agent_prompt(TASK, arm, "duckdb", limits)
    return asyncio.run(agent_loop(TASK, prompt, 0, mock(outputs), fake.check, fake.query, limits))


def test_submit_ends_the_cell_and_the_submitted_script_is_the_artifact() -> None:
    fake = Fake()
    result = run(
        [call("test", script="SELECT 1"), call("submit", script=GOLD), call("query", sql="x")],
        fake,
    )
    assert (result.end_reason, result.stop_reason) == ("submit", "submit")
    assert result.script == GOLD and result.no_artifact_reason is None
    assert len(result.turns) == 2  # the third output is never asked for
    assert result.snapshot_by_turn == ("ERROR",)
    assert result.usage() == {
        "queries": 0,
        "tests": 1,
        "tool_calls": 2,
        "submitted_untested": True,
    }
    assert result.tokens == 2 * 110


def test_no_submit_leaves_no_artifact() -> None:
    """A model that stops calling tools is nudged once; the second such reply ends the cell."""
    result = run([call("test", script=GOLD), prose(), prose("Done: the script is above.")])
    assert result.script is None
    assert result.no_artifact_reason == "no_submit"
    assert result.end_reason == "no_tool_call"
    assert result.turns[1].nudge is not None and result.turns[2].nudge is None


def test_tool_call_budget_ends_the_cell_without_an_artifact() -> None:
    outputs = [call("query", sql="SELECT 1") for _ in range(3)] + [call("submit", script=GOLD)]
    result = run(outputs, max_tool_calls=3)
    assert (result.end_reason, result.no_artifact_reason) == ("tool_budget", "no_submit")
    assert result.usage()["queries"] == 3 and result.script is None


def test_tests_past_their_budget_are_refused_as_a_tool_result() -> None:
    fake = Fake()
    outputs = [call("test", script=f"SELECT {i}") for i in range(3)] + [call("submit", script=GOLD)]
    result = run(outputs, fake, max_tests=2)
    assert fake.tested == ["SELECT 0", "SELECT 1"]  # the third never reached the sandbox
    third = result.turns[2].tool_calls[0]
    assert third.outcome == "over_budget" and "No test runs are left" in third.result
    assert result.end_reason == "submit"


def test_token_budget_ends_the_cell() -> None:
    result = run([call("query", sql="SELECT 1")] * 3, token_budget=200)
    assert (result.end_reason, result.no_artifact_reason) == ("token_budget", "no_submit")
    assert len(result.turns) == 2  # 110 tokens, then 220 >= 200


def test_a_leak_in_a_tool_result_aborts_the_cell_loudly() -> None:
    leaky = Fake(rows="| status (varchar) |\n| late |")
    result = run(
        [call("query", sql="SELECT status FROM sales_batch"), call("submit", script=GOLD)], leaky
    )
    assert result.leak is not None and "late" in result.leak
    assert (result.stop_reason, result.no_artifact_reason, result.script) == ("leak", "leak", None)
    warned = run([call("query", sql="SELECT 1"), call("submit", script=GOLD)], leaky, arm="hint")
    assert warned.leak is None and warned.script == GOLD  # the hint arm may read the word


def test_a_malformed_tool_call_is_a_result_the_model_reads() -> None:
    result = run([call("drop_everything", sql="x"), call("test"), call("submit", script=GOLD)])
    first, second = result.turns[0].tool_calls[0], result.turns[1].tool_calls[0]
    assert first.outcome == "invalid" and "the tools are query, test and submit" in first.result
    assert second.outcome == "invalid" and "`script`" in second.result
    assert result.end_reason == "submit"


def test_the_agent_prompt_is_the_loop_prompt_plus_one_tool_paragraph() -> None:
    loop = build_prompt(TASK, "arch")
    agent = agent_prompt(TASK, "arch", "duckdb", Budgets(max_tool_calls=7, max_tests=2))
    assert agent.system == loop.system
    assert agent.user.startswith(loop.user.rstrip("\n") + "\n\n")
    paragraph = agent.user[len(loop.user.rstrip("\n")) :]
    assert (
        "`sales_batch`" in paragraph
        and "7 tool calls" in paragraph
        and "at most 2 times" in paragraph
    )
    assert agent_arm_sha256("arch") != arm_sha256("arch")


@pytest.mark.parametrize(
    "sql",
    ["SELECT 1", "WITH a AS (SELECT 1) SELECT * FROM a", "DESCRIBE t", "SUMMARIZE t", "FROM t"],
)
def test_read_only_statements_may_run(sql: str) -> None:
    assert read_only_refusal(get_engine("duckdb").split(sql)) is None


@pytest.mark.parametrize(
    "sql, reason",
    [
        ("DROP TABLE sales_batch", "found DROP"),
        ("INSERT INTO t VALUES (1)", "found INSERT"),
        ("WITH a AS (SELECT 1) INSERT INTO t SELECT * FROM a", "found WITH"),
        ("SHOW TABLES", "found SHOW"),
        ("SELECT 1; SELECT 2", "exactly one statement (found 2)"),
    ],
)
def test_other_statements_are_refused_with_the_reason(sql: str, reason: str) -> None:
    refusal = read_only_refusal(get_engine("duckdb").split(sql))
    assert refusal is not None and reason in refusal


def test_a_query_result_is_typed_and_capped() -> None:
    table = pa.table(
        {"n": pa.array(range(QUERY_ROWS + 1), pa.int64()), "s": ["x"] * (QUERY_ROWS + 1)}
    )
    text = render_result(table)
    assert text.splitlines()[0] == "| n (int64) | s (string) |"
    assert text.splitlines()[-1] == f"({QUERY_ROWS} of more than {QUERY_ROWS} rows shown)"
    wide = render_result(pa.table({"s": ["y" * 1000] * 20}))
    assert len(wide.encode()) <= QUERY_BYTES + 100 and wide.endswith("(8 of 20 rows shown)")


def test_an_agent_transcript_round_trips(tmp_path: Path) -> None:
    result = run([call("query", sql="SELECT 1"), call("submit", script=GOLD)])
    data = json.loads(json.dumps(result.transcript()))
    again = cell_from_transcript(data)
    assert isinstance(again, AgentCellResult)
    assert again.transcript() == data
    assert data["scaffold"] == "agent" and data["usage"]["submitted_untested"] is True


@pytest.fixture(scope="module")
def pool() -> Any:
    tools = ToolPool(0, Limits())
    yield tools
    tools.close()


@pytest.mark.slow
def test_query_sees_the_snapshot_delivery_only(pool: ToolPool) -> None:
    """The visible log as one batch: the snapshot's rows, and nothing of the hidden log."""
    outcome, text, _ = pool.query(
        TASK, "SELECT count(*) AS n, count(DISTINCT _batch_id) AS batches FROM sales_batch"
    )
    schedule, _ = build_schedule(TASK, "snapshot", 0)
    assert outcome == "rows"
    assert text.splitlines()[0] == "| n (int64) | batches (int64) |"
    assert text.splitlines()[2] == f"| {len(schedule.deliveries[0].rows)} | 1 |"
    tables = pool.query(TASK, "SELECT count(*) AS n FROM duckdb_tables() WHERE NOT temporary")
    assert tables[1].splitlines()[2] == "| 0 |"  # no persistent table: no oracle, no hidden log
    refused = pool.query(TASK, "DELETE FROM sales_batch")
    assert refused[0] == "refused" and "found DELETE" in refused[1]
    failed = pool.query(TASK, "SELECT nope FROM sales_batch")
    assert failed[0] == "query_error" and "nope" in failed[1]
    external = pool.query(TASK, "SELECT * FROM read_csv('/etc/passwd')")
    assert external[0] in ("refused", "query_error")


@pytest.mark.slow
def test_generate_replays_a_recorded_agent_transcript(tmp_path: Path) -> None:
    """The replay format's tool-call form through `generate --scaffold agent`; the plan and
    arm_info record the scaffold and its budgets, the cell row its end reason."""
    replies = tmp_path / "agent.json"
    replies.write_text(
        json.dumps(
            {
                "daily_revenue": [
                    {
                        "text": "Look first.",
                        "tool_calls": [
                            {"function": "query", "arguments": {"sql": "DESCRIBE sales_batch"}}
                        ],
                    },
                    {"tool_calls": [{"function": "test", "arguments": {"script": GOLD}}]},
                    {"tool_calls": [{"function": "submit", "arguments": {"script": GOLD}}]},
                ],
                "customer_state": ["I would rather describe it.", "Still prose."],
            }
        )
    )
    budgets = Budgets(max_tool_calls=5)
    run_dir = generate(
        ReplayModel(replies),
        arms=["unhinted"],
        k=1,
        out=tmp_path / "run",
        scaffold="agent",
        budgets=budgets,
        log=lambda line: None,
    )
    cells = {c.task: c for c in run_dir.cells()}
    assert cells["daily_revenue"].artifact_sha256 == sha256_text(GOLD)
    assert cells["daily_revenue"].snapshot_by_turn == ("PASS",)
    assert cells["daily_revenue"].stop_reason == "submit"
    assert (cells["customer_state"].no_artifact_reason, cells["customer_state"].stop_reason) == (
        "no_submit",
        "no_tool_call",
    )
    info = run_dir.manifest["arm_info"]["unhinted"]
    assert info["scaffold"] == "agent" and info["budgets"] == budgets.config()
    assert info["prompt_sha256"] == agent_arm_sha256("unhinted")
    assert run_dir.manifest["config"]["generation"]["budgets"]["max_tool_calls"] == 5
    [done] = [r for r in load_transcripts(run_dir.path) if r.task == "daily_revenue"]
    assert [c.function for s in done.turns for c in s.tool_calls] == ["query", "test", "submit"]  # type: ignore[attr-defined]
    assert done.turns[0].tool_calls[0].result.startswith("| column_name (string)")  # type: ignore[attr-defined]
    with pytest.raises(UsageError, match="interrupted generation with --scaffold agent"):
        (run_dir.path / "manifest.json").rename(tmp_path / "manifest.json")
        generate(
            ReplayModel(replies), arms=["unhinted"], k=1, out=run_dir.path, log=lambda line: None
        )


def test_the_replay_format_keeps_its_old_form_and_refuses_a_bad_tool_call(tmp_path: Path) -> None:
    old = tmp_path / "old.json"
    old.write_text(
        json.dumps({"daily_revenue": ["```sql\nSELECT 1;\n```", {"text": "x", "stop": "length"}]})
    )
    replies = ReplayModel(old).replies["daily_revenue"]
    assert [r.tool_calls for r in replies] == [(), ()]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"daily_revenue": [{"tool_calls": [{"name": "query"}]}]}))
    with pytest.raises(UsageError, match="tool_calls is a list of"):
        ReplayModel(bad)


class ScriptedAgent:
    """A mockllm script for an eval: daily_revenue queries, tests and submits the gold; any other
    task answers in prose and never submits."""

    def __call__(self, input: Any, tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        step = sum(m.role == "assistant" for m in input)
        if "Daily revenue per store" not in input[1].text:
            return prose()
        assert [t.name for t in tools] == ["query", "test", "submit"]
        return [
            call("query", sql="SELECT count(*) AS n FROM sales_batch"),
            call("test", script=GOLD),
            call("submit", script=GOLD),
        ][step]


@pytest.mark.slow
def test_inspect_eval_runs_the_agent_scaffold_and_imports(tmp_path: Path) -> None:
    from inspect_ai import eval as inspect_eval

    from arrivalbench.agent.inspect_import import import_inspect
    from arrivalbench.agent.inspect_task import SCRIPT, TRANSCRIPT

    model = get_model("mockllm/model", custom_outputs=ScriptedAgent(), memoize=False)
    [log] = inspect_eval(
        "arrivalbench/arrivalbench",
        model=model,
        task_args={"k": 1, "tasks": "daily_revenue,customer_state", "scaffold": "agent"},
        log_dir=str(tmp_path / "logs"),
        display="none",
        limit=2,
    )
    assert log.status == "success", log.error
    assert log.samples is not None
    by_task = {s.metadata["task"]: s for s in log.samples}
    assert by_task["daily_revenue"].store[SCRIPT] == GOLD
    assert by_task["daily_revenue"].store[TRANSCRIPT]["end_reason"] == "submit"
    assert by_task["customer_state"].store["arrivalbench:no_artifact_reason"] == "no_submit"
    roles = [m.role for m in by_task["daily_revenue"].messages]
    assert roles.count("tool") == 3  # the viewer shows each tool call's result
    run = import_inspect(tmp_path / "logs", tmp_path / "run")
    assert run.manifest["arm_info"]["unhinted"]["scaffold"] == "agent"
    cells = {c.task: c for c in run.cells()}
    assert cells["daily_revenue"].snapshot_by_turn == ("PASS",)
    assert cells["customer_state"].no_artifact_reason == "no_submit"


def test_wall_time_ends_the_cell() -> None:
    result = run([call("submit", script=GOLD)], wall_seconds=1e-9)
    assert (result.end_reason, result.no_artifact_reason, result.turns) == (
        "wall_time",
        "no_submit",
        [],
    )


def test_budgets_refuse_impossible_values() -> None:
    with pytest.raises(UsageError, match="--max-tool-calls 0"):
        Budgets(max_tool_calls=0)


def test_the_tool_texts_name_no_hazard_and_every_agent_prompt_builds() -> None:
    from arrivalbench.agent.prompts import ARMS, WARNED, text
    from arrivalbench.leak import scan
    from arrivalbench.spec import load_suite

    assert scan(text("tools.md")) == [] and scan(text("tools_continue.md")) == []
    for task in load_suite().values():
        for arm in ARMS:
            prompt = agent_prompt(task, arm, "duckdb", Budgets())
            assert prompt.user.endswith("You have 20 tool calls in all.\n")
            if arm not in WARNED:
                assert scan(prompt.user) == []
