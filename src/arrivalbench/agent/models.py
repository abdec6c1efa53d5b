"""Models the repair loop can talk to: recorded replies (`replay:PATH`) or any Inspect AI model.

A model answers a Request (the conversation so far plus sampling settings) with a Reply. Replies
never raise: an API failure that survives the provider's retries comes back as a Reply with
stop="error", so one cell's failure is recorded in that cell and never stops a sweep.

Stop reasons, per turn: "stop" (the model finished), "length" (the output cap was hit),
"refusal" (the provider's content filter or a refusal), "error" (no reply after retries) and
"exhausted" (a replay file has no reply for this turn; the loop ends there).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from arrivalbench.errors import UsageError

MAX_TOKENS = 8_000  # output cap per turn, as in the paper


@dataclass(frozen=True)
class ToolCall:
    """A tool call a model asked for: its id, the tool's name and the arguments as sent.

    `parse_error` holds why the provider's arguments could not be read (the call then fails as
    a tool result the model sees)."""

    id: str
    function: str
    arguments: dict[str, Any]
    parse_error: str | None = None


@dataclass(frozen=True)
class ToolSpec:
    """A tool offered to the model: name, description, and each (string) parameter's meaning."""

    name: str
    description: str
    parameters: dict[str, str]


@dataclass(frozen=True)
class Message:
    role: str  # "system", "user", "assistant" or "tool"
    content: str
    tool_calls: tuple[ToolCall, ...] = ()
    """An assistant message's tool calls (the agent scaffold's; the loop sends none)."""
    tool_call_id: str | None = None
    """A tool message's call id, and its tool's name in `function`."""
    function: str | None = None


@dataclass(frozen=True)
class Request:
    task: str
    arm: str
    sample: int
    turn: int  # 1-based
    messages: tuple[Message, ...]
    temperature: float
    max_tokens: int = MAX_TOKENS
    tools: tuple[ToolSpec, ...] = ()
    """Tools the model may call (the agent scaffold's); the loop offers none."""


@dataclass(frozen=True)
class Reply:
    text: str
    stop: str = "stop"
    input_tokens: int | None = None
    output_tokens: int | None = None
    error: str | None = None
    notes: tuple[str, ...] = field(default=())
    served_model: str | None = None  # the model id the provider says answered, when it says
    tool_calls: tuple[ToolCall, ...] = ()


class Model(Protocol):
    name: str

    async def complete(self, request: Request) -> Reply: ...


def temperature(sample: int) -> float:
    """Sample 0 is the model's most likely answer; the others are drawn at temperature 1."""
    return 0.0 if sample == 0 else 1.0


ARM_PLACEHOLDER = "{arm}"
"""In a replay path, stands for the arm: `replay:recorded/model-{arm}.json` reads one file per arm."""


class ReplayModel:
    """Recorded replies: a JSON object mapping a task id to the replies of turns 1, 2, 3.

    Every sample of a task gets the same replies. A reply is a string (the raw response) or an
    object {"text": ..., "stop": "stop"|"length"|"refusal"|"error"} to replay a cut-off or refused
    turn; for the agent scaffold the object may carry "tool_calls", a list of {"function": NAME,
    "arguments": {...}}, and one reply is one model call. A list shorter than the loop's turns ends the loop after its last reply. A path holding
    `{arm}` names one such file per prompt arm (each arm's replies were recorded under its own
    prompt), so several recorded arms are generated as one run.
    """

    def __init__(self, path: Path, arms: list[str] | None = None) -> None:
        self.path = Path(path)
        self.name = f"replay:{self.path}"
        self.by_arm: dict[str, dict[str, list[Reply]]] | None = None
        if ARM_PLACEHOLDER in str(path):
            if not arms:
                raise UsageError(
                    f"{self.path}: a replay path with {ARM_PLACEHOLDER} needs the arms (--arm)."
                )
            self.by_arm = {
                arm: self._load(Path(str(path).replace(ARM_PLACEHOLDER, arm))) for arm in arms
            }
            self.replies = {}
        else:
            self.replies = self._load(self.path)

    def _load(self, path: Path) -> dict[str, list[Reply]]:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise UsageError(
                f"{path}: cannot read the replay file ({exc.strerror}); give an existing JSON file."
            ) from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise UsageError(
                f"{path}: not valid JSON ({exc}); expected {{task id: [reply of turn 1, ...]}}."
            ) from None
        if not isinstance(data, dict):
            raise UsageError(
                f"{path}: expected a JSON object {{task id: [reply of turn 1, ...]}}, found {type(data).__name__}."
            )
        replies: dict[str, list[Reply]] = {}
        for task, raw in data.items():
            if not isinstance(raw, list):
                raise UsageError(
                    f"{path}: task {task!r} maps to {type(raw).__name__}; expected a list of replies."
                )
            replies[task] = [self._reply(path, task, i, r) for i, r in enumerate(raw, start=1)]
        return replies

    def _files(self) -> dict[Path, dict[str, list[Reply]]]:
        if self.by_arm is None:
            return {self.path: self.replies}
        return {
            Path(str(self.path).replace(ARM_PLACEHOLDER, arm)): replies
            for arm, replies in self.by_arm.items()
        }

    def _reply(self, path: Path, task: str, turn: int, raw: Any) -> Reply:
        if isinstance(raw, str):
            return Reply(text=raw)
        if (
            isinstance(raw, dict)
            and isinstance(raw.get("text", ""), str)
            and raw.get("stop", "stop") in ("stop", "length", "refusal", "error")
            and set(raw) <= {"text", "stop", "tool_calls"}
        ):
            calls = self._tool_calls(path, task, turn, raw.get("tool_calls", []))
            return Reply(
                text=raw.get("text", ""),
                stop=raw.get("stop", "stop"),
                error="replayed error" if raw.get("stop") == "error" else None,
                tool_calls=calls,
            )
        raise UsageError(
            f"{path}: task {task!r} turn {turn}: a reply is a string or "
            f'{{"text": ..., "stop": "stop|length|refusal|error", "tool_calls": [...]}}; '
            f"found {json.dumps(raw)[:80]}."
        )

    def _tool_calls(self, path: Path, task: str, turn: int, raw: Any) -> tuple[ToolCall, ...]:
        """The tool-call form of a recorded reply (the agent scaffold's): a list of
        {"function": NAME, "arguments": {...}} with an optional "id"."""
        calls = []
        for i, call in enumerate(raw if isinstance(raw, list) else [None], start=1):
            if not (
                isinstance(call, dict)
                and isinstance(call.get("function"), str)
                and isinstance(call.get("arguments", {}), dict)
                and set(call) <= {"id", "function", "arguments"}
            ):
                raise UsageError(
                    f"{path}: task {task!r} turn {turn}: tool_calls is a list of "
                    f'{{"function": NAME, "arguments": {{...}}}}; found {json.dumps(raw)[:80]}.'
                )
            calls.append(
                ToolCall(
                    id=str(call.get("id", f"call_{turn}_{i}")),
                    function=call["function"],
                    arguments=call.get("arguments", {}),
                )
            )
        return tuple(calls)

    def default_tasks(self) -> list[str]:
        """Without --tasks, a replay runs the tasks it has replies for (in every arm's file)."""
        tasks = [set(replies) for replies in self._files().values()]
        return sorted(set.intersection(*tasks))

    def check_tasks(self, tasks: list[str]) -> None:
        for path, replies in self._files().items():
            missing = [t for t in tasks if t not in replies]
            if missing:
                shown = ", ".join(missing[:5]) + (
                    f" and {len(missing) - 5} more" if len(missing) > 5 else ""
                )
                raise UsageError(
                    f"{path}: no replies for task(s) {shown}; add them or drop them from --tasks."
                )

    async def complete(self, request: Request) -> Reply:
        source = self.replies if self.by_arm is None else self.by_arm.get(request.arm, {})
        replies = source.get(request.task, [])
        if request.turn > len(replies):
            return Reply(text="", stop="exhausted")
        return replies[request.turn - 1]


def get_model(
    spec: str, *, max_retries: int = 5, timeout: int = 600, arms: list[str] | None = None
) -> Model:
    """`replay:PATH` (with `{arm}` in PATH: a file per arm of `arms`), or any Inspect AI model
    name (`openai/gpt-4o`, `openai-api/local/NAME`, `mockllm/model`)."""
    if spec.startswith("replay:"):
        return ReplayModel(Path(spec.removeprefix("replay:")), arms)
    if "/" not in spec:
        raise UsageError(
            f"--model {spec!r}: give replay:PATH or an Inspect model as provider/model, e.g. openai/gpt-4o."
        )
    from arrivalbench.agent.inspect_model import (
        InspectModel,  # Inspect stays off the core import path
    )

    return InspectModel(spec, max_retries=max_retries, timeout=timeout)
