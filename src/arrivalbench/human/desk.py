"""The desk: where the repair loop and a person meet, and the Model that sits at it.

`HumanModel` is a `Model` (agent/models.py) whose `complete` publishes the loop's request on the
desk and waits for the person's next action on the page: "run" sends the editor's script as this
turn's reply (the loop tests it on the snapshot, as it tests a model's), "submit" ends the cell
(a script that differs from the last one tested is sent as a final turn first). The reply is the
editor's text as one fenced SQL block, so the loop's parser takes exactly what was typed. The
desk is shared by the loop's thread and the web server's threads; every change goes through its
condition. Replies already given are kept per task (`Progress`), so a restarted session replays
them through the loop (no waiting) and the person continues where they stopped.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from arrivalbench.agent.models import Reply, Request

RUN, SUBMIT = "run", "submit"
ACTIONS = (RUN, SUBMIT)
_BACKTICKS = re.compile(r"^[ \t]*(`{3,})", re.MULTILINE)


def fence(script: str) -> str:
    """The editor's script as the one SQL block of a reply; the fence outgrows any in the script."""
    longest = max((len(m.group(1)) for m in _BACKTICKS.finditer(script)), default=2)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}sql\n{script.rstrip()}\n{ticks}\n"


@dataclass
class Progress:
    """One participant's work on one task: replies given (turn by turn), seconds spent, done."""

    replies: list[str] = field(default_factory=list)
    final: bool = False  # the person pressed Submit: no reply after the last one
    seconds: float = 0.0
    done: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "replies": self.replies,
            "final": self.final,
            "seconds": round(self.seconds, 3),
            "done": self.done,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Progress:
        return cls(
            replies=[str(r) for r in data.get("replies", [])],
            final=bool(data.get("final", False)),
            seconds=float(data.get("seconds", 0.0)),
            done=bool(data.get("done", False)),
        )


class StaleAction(Exception):
    """An action for a turn or task the desk is not waiting for (a second tab, a double click)."""


class Desk:
    """What the page shows and what the loop waits for, behind one condition variable.

    `save` is called (under the lock) whenever progress changes, so an interrupt loses at most
    the time since the last action.
    """

    def __init__(self, tasks: list[str], turns: int, progress: dict[str, Progress], save: Any):
        self.tasks, self.turns, self.progress, self._save = tasks, turns, progress, save
        self.cond = threading.Condition()
        self.version = 0
        self.status = "starting"  # starting, waiting, checking, finished
        self.task: str | None = None
        self.turn = 0
        self.history: list[dict[str, Any]] = []  # this cell's turns: script, verdict, feedback
        self.finished: list[dict[str, Any]] = []  # {task, verdict, turns} of cells done here
        self._future: asyncio.Future[tuple[str, str]] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._shown_at: float | None = None

    # -- the loop's side --------------------------------------------------------------------
    def _changed(self) -> None:
        self.version += 1
        self.cond.notify_all()

    def begin(self, task: str) -> None:
        with self.cond:
            self.task, self.turn, self.history = task, 0, []
            self._shown_at = time.monotonic()
            self._changed()

    async def answer(self, request: Request) -> Reply:
        """The person's reply to `request`: a saved one (resuming), or the next action."""
        progress = self.progress[request.task]
        with self.cond:
            if request.turn > 1 and self.history:
                self.history[-1]["feedback"] = request.messages[-1].content
            if request.turn <= len(progress.replies):
                return self._reply(progress.replies[request.turn - 1])
            if progress.final:
                return Reply(text="", stop="exhausted")
            self._loop = asyncio.get_running_loop()
            self._future = self._loop.create_future()
            self.status, self.turn = "waiting", request.turn
            self._changed()
        kind, script = await self._future
        with self.cond:
            self._future = None
            last = progress.replies[-1] if progress.replies else None
            if kind == SUBMIT and (not script.strip() or fence(script) == last):
                progress.final = True
                self._save()
                self.status = "checking"
                self._changed()
                return Reply(text="", stop="exhausted")
            progress.replies.append(fence(script))
            progress.final = kind == SUBMIT
            self._save()
            self.status = "checking"
            self._changed()
            return self._reply(progress.replies[-1])

    def _reply(self, text: str) -> Reply:
        self.history.append({"turn": len(self.history) + 1, "reply": text, "verdict": None})
        return Reply(text=text)

    def checked(self, verdict: str) -> None:
        """The snapshot verdict of the turn just tested (the loop's check calls it)."""
        with self.cond:
            if self.history:
                self.history[-1]["verdict"] = verdict

    def end(self, task: str, verdict: str, turns: int) -> None:
        """The cell is finished (its transcript saved): count its time and mark it done."""
        with self.cond:
            progress = self.progress[task]
            self._count_time(progress)
            progress.done = True
            self._save()
            self.finished.append({"task": task, "verdict": verdict, "turns": turns})
            self.status = "checking"
            self._changed()

    def close(self) -> None:
        """All tasks done, or an interrupt: keep the time spent on the current task."""
        with self.cond:
            if self.task is not None and not self.progress[self.task].done:
                self._count_time(self.progress[self.task])
                self._save()
            self.status = "finished"
            self._changed()

    def _count_time(self, progress: Progress) -> None:
        if self._shown_at is not None:
            progress.seconds += time.monotonic() - self._shown_at
            self._shown_at = None

    # -- the server's side ------------------------------------------------------------------
    def act(self, kind: str, script: str, task: str, turn: int, timeout: float) -> int:
        """Hand the person's action to the waiting loop; return once it was dealt with.

        Returns the desk's version afterwards. Raises StaleAction when the desk is not waiting
        for this task and turn (the page then reloads its state).
        """
        with self.cond:
            if (
                kind not in ACTIONS
                or self.status != "waiting"
                or task != self.task
                or turn != self.turn
                or self._future is None
                or self._loop is None
            ):
                raise StaleAction(f"not waiting for {kind} on {task} turn {turn}")
            future, self.status = self._future, "checking"
            self._loop.call_soon_threadsafe(_resolve, future, (kind, script))
            self._changed()
            self.cond.wait_for(lambda: self.status != "checking", timeout=timeout)
            return self.version


def _resolve(future: asyncio.Future[tuple[str, str]], value: tuple[str, str]) -> None:
    if not future.done():
        future.set_result(value)


class HumanModel:
    """A Model whose answers come from a person at the desk."""

    def __init__(self, desk: Desk, name: str = "human") -> None:
        self.desk, self.name = desk, name

    async def complete(self, request: Request) -> Reply:
        return await self.desk.answer(request)
