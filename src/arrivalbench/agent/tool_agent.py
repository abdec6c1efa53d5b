"""The agent scaffold: a model that calls `query`, `test` and `submit` until it submits or a budget ends it.

The conversation opens with the loop's own system and task prompts plus one paragraph naming the
tools (prompts/tools.md). Each model call is a step; each tool call it asks for runs in the
sandbox worker (agent.tools) and its result goes back as a tool message. A cell ends at the first
`submit` with a script (the artifact), or without an artifact (`no_submit`) when the model stops
calling tools twice in a row, the tool-call budget is spent, the cell's token budget or wall
time is exceeded, or a replay file runs out. `test` counts against its own budget (the loop's
turns); a test past it is a tool result saying so. Every tool result is leak-scanned as the
loop's feedback is, and a hit aborts the cell (`leak`). A tool call that fails is a result the
model reads, never a harness error.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass, field
from string import Template
from typing import Any

from arrivalbench.agent.loop import CellResult
from arrivalbench.agent.models import MAX_TOKENS, Message, Model, Request, ToolCall, temperature
from arrivalbench.agent.prompts import (
    LeakError,
    Prompt,
    arm_sha256,
    build_prompt,
    guard,
    text,
)
from arrivalbench.agent.tools import TOOL_NAMES, TOOLS, test_feedback
from arrivalbench.engines import DEFAULT_ENGINE
from arrivalbench.errors import UnknownNameError, UsageError
from arrivalbench.spec import Task
from arrivalbench.store import sha256_text

SCAFFOLDS = ("loop", "agent")
DEFAULT_SCAFFOLD = "loop"
TOOLS_PARAGRAPH = "tools.md"
CONTINUE = "tools_continue.md"
NO_TOOL_CALL_LIMIT = 2
"""Replies in a row without a tool call that end the cell (the first gets CONTINUE)."""

Check = Callable[[Task, str], Awaitable[dict[str, Any]]]
Query = Callable[[Task, str], Awaitable[tuple[str, str, str]]]
"""(outcome, what the agent reads, what the leak scan reads) of one query."""


def check_scaffold(scaffold: str) -> str:
    if scaffold not in SCAFFOLDS:
        raise UnknownNameError("scaffold", scaffold, SCAFFOLDS)
    return scaffold


@dataclass(frozen=True)
class Budgets:
    """What one agent cell may spend; recorded in the manifest so arms are compared on equal terms."""

    max_tool_calls: int = 20
    max_tests: int = 3
    token_budget: int | None = None
    """Input plus output tokens over the cell's model calls (None: no budget)."""
    wall_seconds: float = 1800.0

    def __post_init__(self) -> None:
        if (
            self.max_tool_calls < 1
            or self.max_tests < 0
            or (self.token_budget is not None and self.token_budget < 1)
            or self.wall_seconds <= 0
        ):
            raise UsageError(
                f"--max-tool-calls {self.max_tool_calls}, --max-tests {self.max_tests}, "
                f"--token-budget {self.token_budget}, --cell-timeout {self.wall_seconds:g}: "
                "tool calls and tokens must be at least 1, tests at least 0, time positive."
            )

    def config(self) -> dict[str, Any]:
        return asdict(self)


def agent_prompt(task: Task, arm: str, engine: str, budgets: Budgets) -> Prompt:
    """The loop's prompt plus the paragraph naming the tools (scanned like every text we write)."""
    loop = build_prompt(task, arm, engine)
    paragraph = Template(text(TOOLS_PARAGRAPH)).substitute(
        batch_tables=", ".join(f"`{s.name}_batch`" for s in task.spec.sources),
        max_tests=budgets.max_tests,
        max_tool_calls=budgets.max_tool_calls,
    )
    prompt = Prompt(arm=arm, system=loop.system, user=loop.user.rstrip("\n") + "\n\n" + paragraph)
    guard(arm, prompt.user, f"task prompt of {task.id} in arm {arm} (agent scaffold)")
    return prompt


def agent_arm_sha256(arm: str, engine: str = DEFAULT_ENGINE) -> str:
    """Version of an agent arm's texts: the loop arm's templates plus the tool paragraph and the
    continue message (a loop arm's hash is unchanged)."""
    digest = hashlib.sha256(b"agent\0" + arm_sha256(arm, engine).encode())
    for name in (TOOLS_PARAGRAPH, CONTINUE):
        digest.update(b"\0" + name.encode() + b"\0" + text(name).encode())
    return digest.hexdigest()


@dataclass
class ToolRecord:
    """One tool call and its result, as the transcript keeps it."""

    id: str
    function: str
    arguments: dict[str, Any]
    outcome: str  # rows, refused, query_error, PASS, FAIL, ERROR, submitted, invalid, over_budget
    result: str
    script_sha256: str | None = None


@dataclass
class Step:
    """One model call of an agent cell and the tool calls it made."""

    turn: int
    response: str
    input_tokens: int | None
    output_tokens: int | None
    stop_reason: str
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    served_model: str | None = None
    tool_calls: list[ToolRecord] = field(default_factory=list)
    nudge: str | None = None
    """The continue message sent after a reply without a tool call."""

    @property
    def snapshot(self) -> str:
        """The last test verdict of this step (NO_SCRIPT when it ran no test)."""
        tests = [c.outcome for c in self.tool_calls if c.function == "test" and c.script_sha256]
        return tests[-1] if tests else "NO_SCRIPT"


@dataclass
class AgentCellResult(CellResult):
    """A cell of the agent scaffold: `turns` holds Steps; `end_reason` says why it ended."""

    scaffold: str = "agent"
    end_reason: str | None = None
    budgets: dict[str, Any] = field(default_factory=dict)
    wall_seconds: float | None = None

    @property
    def calls(self) -> list[ToolRecord]:
        return [c for step in self.turns for c in step.tool_calls]  # type: ignore[attr-defined]

    @property
    def snapshot_by_turn(self) -> tuple[str, ...]:
        """The verdicts of the cell's test calls in order (the loop's per-turn snapshot)."""
        return tuple(
            c.outcome for c in self.calls if c.function == "test" and c.outcome in VERDICTS
        )

    @property
    def stop_reason(self) -> str | None:
        return "leak" if self.leak else self.end_reason

    def usage(self) -> dict[str, Any]:
        """Tool use of the cell: queries, tests, whether the artifact was tested before submit."""
        tested = {c.script_sha256 for c in self.calls if c.function == "test" and c.script_sha256}
        return {
            "queries": sum(c.function == "query" for c in self.calls),
            "tests": len(self.snapshot_by_turn),
            "tool_calls": len(self.calls),
            "submitted_untested": (
                None if self.artifact_sha256 is None else self.artifact_sha256 not in tested
            ),
        }

    def transcript(self) -> dict[str, Any]:
        data = super().transcript()
        data["usage"] = self.usage()
        return data

    @classmethod
    def from_transcript(cls, data: dict[str, Any]) -> AgentCellResult:
        keys = (
            "task",
            "arm",
            "sample",
            "model",
            "temperature",
            "prompt_sha256",
            "system",
            "user",
            "script",
            "no_artifact_reason",
            "leak",
            "scaffold",
            "end_reason",
            "budgets",
            "wall_seconds",
        )
        steps = [
            Step(**{**s, "tool_calls": [ToolRecord(**c) for c in s["tool_calls"]]})
            for s in data["turns"]
        ]
        return cls(
            **{k: data[k] for k in keys},
            max_tokens=data.get("max_tokens"),
            turns=steps,  # type: ignore[arg-type]
        )


VERDICTS = ("PASS", "FAIL", "ERROR")


def cell_from_transcript(data: dict[str, Any]) -> CellResult:
    """A stored transcript of either scaffold (a loop transcript has no `scaffold` key)."""
    if data.get("scaffold") == "agent":
        return AgentCellResult.from_transcript(data)
    return CellResult.from_transcript(data)


def _argument(call: ToolCall, name: str) -> str | None:
    value = call.arguments.get(name)
    return value if isinstance(value, str) else None


async def agent_loop(
    task: Task,
    prompt: Prompt,
    sample: int,
    model: Model,
    check: Check,
    query: Query,
    budgets: Budgets | None = None,
    max_tokens: int = MAX_TOKENS,
) -> AgentCellResult:
    """Run one agent cell: model calls with tools until a submit or a budget ends it."""
    budgets = budgets or Budgets()
    started = time.monotonic()
    result = AgentCellResult(
        task=task.id,
        arm=prompt.arm,
        sample=sample,
        model=model.name,
        temperature=temperature(sample),
        prompt_sha256=prompt.sha256,
        system=prompt.system,
        user=prompt.user,
        max_tokens=max_tokens,
        budgets=budgets.config(),
    )
    messages = [Message("system", prompt.system), Message("user", prompt.user)]
    target = task.spec.target.name
    calls = tests = tokens = 0
    quiet = 0
    end: str | None = None
    number = 0

    async def run(call: ToolCall) -> tuple[ToolRecord, str]:
        """The record of one call and the part of its result the leak scan reads."""
        nonlocal tests

        def record(outcome: str, content: str, sha: str | None = None) -> ToolRecord:
            return ToolRecord(call.id, call.function, dict(call.arguments), outcome, content, sha)

        if call.function not in TOOL_NAMES:
            content = f"Unknown tool {call.function!r}; the tools are query, test and submit."
            return record("invalid", content), content
        name = "sql" if call.function == "query" else "script"
        value = _argument(call, name)
        if call.parse_error or value is None or not value.strip():
            content = f"The call to {call.function} needs one text argument `{name}`" + (
                f" ({call.parse_error})." if call.parse_error else "."
            )
            return record("invalid", content), content
        if call.function == "query":
            outcome, content, scanned = await query(task, value)
            return record(outcome, content), scanned
        if call.function == "submit":
            content = "Submitted."
            return record("submitted", content, sha256_text(value)), content
        if tests >= budgets.max_tests:
            content = (
                f"No test runs are left (the limit is {budgets.max_tests}); submit when ready."
            )
            return record("over_budget", content), content
        tests += 1
        entry = await check(task, value)
        content, scanned = test_feedback(entry, target)
        return record(entry["verdict"], content, sha256_text(value)), scanned

    while end is None:
        if time.monotonic() - started > budgets.wall_seconds:
            end = "wall_time"
            break
        number += 1
        reply = await model.complete(
            Request(
                task=task.id,
                arm=prompt.arm,
                sample=sample,
                turn=number,
                messages=tuple(messages),
                temperature=result.temperature,
                max_tokens=max_tokens,
                tools=TOOLS,
            )
        )
        if reply.stop == "exhausted":
            end = "exhausted"
            break
        stop = (
            "empty"
            if reply.stop == "stop" and not (reply.text.strip() or reply.tool_calls)
            else reply.stop
        )
        step = Step(
            turn=number,
            response=reply.text,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            stop_reason=stop,
            error=reply.error,
            notes=list(reply.notes),
            served_model=reply.served_model,
        )
        result.turns.append(step)  # type: ignore[arg-type]
        tokens += (reply.input_tokens or 0) + (reply.output_tokens or 0)
        if reply.stop == "error":
            end = "model_error"
            break
        if not reply.tool_calls:
            quiet += 1
            if reply.stop == "refusal" or quiet >= NO_TOOL_CALL_LIMIT:
                end = "refusal" if reply.stop == "refusal" else "no_tool_call"
                break
            step.nudge = text(CONTINUE)
            messages += [Message("assistant", reply.text), Message("user", step.nudge)]
        else:
            quiet = 0
            messages.append(Message("assistant", reply.text, tool_calls=reply.tool_calls))
            for call in reply.tool_calls:
                if calls >= budgets.max_tool_calls:
                    end = "tool_budget"
                    break
                calls += 1
                record, scanned = await run(call)
                step.tool_calls.append(record)
                try:
                    guard(
                        prompt.arm,
                        scanned,
                        f"{call.function} result to {task.id} sample {sample} call {calls}",
                    )
                except LeakError as exc:
                    result.leak = str(exc)
                    result.script = None
                    result.no_artifact_reason = "leak"
                    result.end_reason = "leak"
                    result.wall_seconds = round(time.monotonic() - started, 3)
                    return result
                if record.outcome == "submitted":
                    result.script = call.arguments["script"]
                    end = "submit"
                    break
                messages.append(
                    Message("tool", record.result, tool_call_id=call.id, function=call.function)
                )
        if end is None and budgets.token_budget is not None and tokens >= budgets.token_budget:
            end = "token_budget"
        if end is None and calls >= budgets.max_tool_calls:
            end = "tool_budget"
    result.end_reason = end
    result.wall_seconds = round(time.monotonic() - started, 3)
    if result.script is None:
        result.no_artifact_reason = "model_error" if end == "model_error" else "no_submit"
    return result
