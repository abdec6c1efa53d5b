"""The repair loop: up to N turns in which a model writes a script and sees the snapshot test's result.

Each turn runs the parsed script on the snapshot only and answers with either the engine's error
verbatim or a typed summary of the wrong table with example rows; nothing names a hazard or a
schedule. The loop stops at the first script that passes, when the turns run out, or when the
model cannot answer. The artifact is the latest script the model wrote (a final turn with no
script leaves the previous turn's script in place); a cell with no script at all records why.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from arrivalbench.agent.models import MAX_TOKENS, Message, Model, Reply, Request, temperature
from arrivalbench.agent.parse import parse_response
from arrivalbench.agent.prompts import (
    LeakError,
    Prompt,
    diff_feedback,
    error_feedback,
    guard,
    no_code_feedback,
)
from arrivalbench.cache import VerdictCache
from arrivalbench.engines import DEFAULT_ENGINE, Limits
from arrivalbench.grade import Grader
from arrivalbench.spec import Task
from arrivalbench.store import sha256_text

TURNS = 3
NO_SCRIPT = "NO_SCRIPT"

Check = Callable[[Task, str], Awaitable[dict[str, Any]]]


@dataclass
class Turn:
    turn: int
    response: str
    parse_rule: str
    script_sha256: str | None
    snapshot: str  # PASS, FAIL, ERROR, or NO_SCRIPT
    feedback: str | None
    input_tokens: int | None
    output_tokens: int | None
    stop_reason: str  # stop, length, refusal, empty, error
    error: str | None = None
    notes: list[str] = field(
        default_factory=list
    )  # what the model adapter changed, e.g. a dropped temperature
    served_model: str | None = (
        None  # the model id the provider reported (absent in old transcripts)
    )


@dataclass
class CellResult:
    task: str
    arm: str
    sample: int
    model: str
    temperature: float
    prompt_sha256: str | None
    system: str
    user: str
    turns: list[Turn] = field(default_factory=list)
    script: str | None = None
    no_artifact_reason: str | None = None
    leak: str | None = None
    max_tokens: int | None = None  # the output cap per turn the cell ran with

    @property
    def served_model(self) -> str | None:
        """The model ids the provider reported serving this cell's turns (sorted, comma-joined)."""
        served = sorted({t.served_model for t in self.turns if t.served_model})
        return ", ".join(served) or None

    @property
    def artifact_sha256(self) -> str | None:
        return sha256_text(self.script) if self.script is not None else None

    @property
    def snapshot_by_turn(self) -> tuple[str, ...]:
        return tuple(t.snapshot for t in self.turns)

    @property
    def tokens(self) -> int | None:
        known = [n for t in self.turns for n in (t.input_tokens, t.output_tokens) if n is not None]
        return sum(known) if known else None

    @property
    def stop_reason(self) -> str | None:
        if self.leak:
            return "leak"
        return self.turns[-1].stop_reason if self.turns else None

    def transcript(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(
            artifact_sha256=self.artifact_sha256,
            snapshot_by_turn=list(self.snapshot_by_turn),
            tokens=self.tokens,
            stop_reason=self.stop_reason,
            served_model=self.served_model,
        )
        return data

    @classmethod
    def from_transcript(cls, data: dict[str, Any]) -> CellResult:
        fields = {
            k: data[k]
            for k in (
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
            )
        }
        return cls(
            **fields, max_tokens=data.get("max_tokens"), turns=[Turn(**t) for t in data["turns"]]
        )


def _stop(reply: Reply) -> str:
    if reply.stop == "stop" and not reply.text.strip():
        return "empty"
    return reply.stop


def _no_artifact_reason(last: Turn) -> str:
    return {
        "refusal": "refusal",
        "length": "truncated",
        "empty": "empty",
        "error": "model_error",
    }.get(last.stop_reason, "no_code")


async def repair_loop(
    task: Task,
    prompt: Prompt,
    sample: int,
    model: Model,
    check: Check,
    turns: int = TURNS,
    max_tokens: int = MAX_TOKENS,
) -> CellResult:
    """Run one cell: at most `turns` model calls, each script checked on the snapshot."""
    result = CellResult(
        task=task.id,
        arm=prompt.arm,
        sample=sample,
        model=model.name,
        temperature=temperature(sample),
        prompt_sha256=prompt.sha256,
        system=prompt.system,
        user=prompt.user,
        max_tokens=max_tokens,
    )
    messages = [Message("system", prompt.system), Message("user", prompt.user)]
    for number in range(1, turns + 1):
        reply = await model.complete(
            Request(
                task=task.id,
                arm=prompt.arm,
                sample=sample,
                turn=number,
                messages=tuple(messages),
                temperature=result.temperature,
                max_tokens=max_tokens,
            )
        )
        if reply.stop == "exhausted":
            break
        parsed = parse_response(reply.text)
        turn = Turn(
            turn=number,
            response=reply.text,
            parse_rule=parsed.rule,
            script_sha256=sha256_text(parsed.script) if parsed.script is not None else None,
            snapshot=NO_SCRIPT,
            feedback=None,
            input_tokens=reply.input_tokens,
            output_tokens=reply.output_tokens,
            stop_reason=_stop(reply),
            error=reply.error,
            notes=list(reply.notes),
            served_model=reply.served_model,
        )
        result.turns.append(turn)
        if parsed.script is not None:
            result.script = parsed.script
            entry = await check(task, parsed.script)
            turn.snapshot = entry["verdict"]
            if entry["verdict"] == "PASS":
                break
            feedback = (
                error_feedback(entry)
                if entry["verdict"] == "ERROR"
                else diff_feedback(entry, task.spec.target.name)
            )
            # The engine's message is the agent's own error, passed on verbatim: it is exempt from
            # the scan (a constraint message may say "duplicate"); everything we wrote is scanned.
            scanned = (
                error_feedback({**entry, "message": ""})
                if entry["verdict"] == "ERROR"
                else feedback
            )
        elif reply.stop == "error":
            break  # the provider's retries are spent; asking again would only repeat them
        else:
            feedback = scanned = no_code_feedback()
        if number == turns:
            break
        try:
            guard(prompt.arm, scanned, f"feedback to {task.id} sample {sample} turn {number}")
        except LeakError as exc:
            result.leak = str(exc)
            result.script = None
            result.no_artifact_reason = "leak"
            return result
        turn.feedback = feedback
        messages += [Message("assistant", reply.text), Message("user", feedback)]
    if result.script is None and result.no_artifact_reason is None:
        result.no_artifact_reason = (
            _no_artifact_reason(result.turns[-1]) if result.turns else "no_reply"
        )
    return result


class GraderPool:
    """Graders shared by the cells in flight, each used by one thread at a time.

    A Grader holds a sandbox worker process; a thread takes a free one or starts a new one, so
    the pool grows to the number of threads grading at once. Blocking: call it off the event loop.
    Every grader runs scripts on `engine`, the engine the cells' prompts name. With `cache_dir`
    the snapshot checks read and fill that verdict cache (cache.py): a script the model sent
    before (or the same script in another cell) is not run again, and `grade-run` later finds
    its snapshot verdict there. A cached entry is byte-identical to a fresh one, so the feedback
    and the transcript are the same either way.
    """

    def __init__(
        self, seed: int, limits: Limits, engine: str = DEFAULT_ENGINE, cache_dir: Path | None = None
    ) -> None:
        self.seed, self.limits, self.engine = seed, limits, engine
        self.cache_dir = cache_dir
        self._free: queue.SimpleQueue[Grader] = queue.SimpleQueue()
        self._all: list[Grader] = []
        self._lock = threading.Lock()

    @contextmanager
    def _grader(self) -> Iterator[Grader]:
        try:
            grader = self._free.get_nowait()
        except queue.Empty:
            cache = VerdictCache(self.cache_dir) if self.cache_dir is not None else None
            grader = Grader(
                seed=self.seed, limits=self.limits, engine_name=self.engine, cache=cache
            )
            with self._lock:
                self._all.append(grader)
        try:
            yield grader
        finally:
            self._free.put(grader)

    def grade(self, task: Task, script: str, schedules: list[str]) -> dict[str, Any]:
        """The grade record of a script; a script with no statement is an ERROR on every schedule."""
        with self._grader() as grader:
            record, _ = grader.grade(
                task, script, schedules, where=f"{task.id} response", empty_is_error=True
            )
        return record

    def snapshot(self, task: Task, script: str) -> dict[str, Any]:
        """The repair loop's check: the snapshot verdict entry of one script."""
        return self.grade(task, script, ["snapshot"])["verdicts"]["snapshot"]

    def close(self) -> None:
        """Stop every worker; the pool can be used again afterwards."""
        with self._lock:
            graders, self._all = self._all, []
            self._free = queue.SimpleQueue()
        for grader in graders:
            grader.close()
