"""A human study as a run directory: participants are samples, cells are the model arm's cells.

The run holds, besides what `generate` writes (transcripts, artifacts, and once a participant has
finished every task, cells.parquet and the manifest), `human.json`: the study's settings (which
a restart must match), and per participant (in the order they started; the position is the
sample) the replies given so far, the seconds spent and whether each task is done. Each task
runs `agent.loop.repair_loop` with a `HumanModel`, checked on the snapshot by the same
`GraderPool` as a model's cell, and is saved with `save_transcript` as a model's is; the arm is
the prompt arm and its role `human`. Seconds per task are kept here and in the manifest's
`config.human`, never in a transcript, so a transcript is the one a model with the same replies
would leave.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arrivalbench.agent.generate import cell_of, load_transcripts, save_transcript, write_run
from arrivalbench.agent.loop import TURNS, GraderPool, repair_loop
from arrivalbench.agent.prompts import (
    BASELINE_ARM,
    Prompt,
    arm_sha256,
    build_prompt,
    check_arm,
    check_engine,
)
from arrivalbench.engines import DEFAULT_ENGINE, Limits
from arrivalbench.errors import UsageError
from arrivalbench.human.desk import Desk, HumanModel, Progress
from arrivalbench.human.server import Page, Server, new_token
from arrivalbench.seeds import DEFAULT_SEED
from arrivalbench.spec import Task, get_task, load_suite, suite_hash
from arrivalbench.store import RunDir, RunStoreError

STUDY_FILE = "human.json"
STUDY_FORMAT = 1
PARTICIPANT = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}", re.ASCII)

Check = Callable[[Task, str], Awaitable[dict[str, Any]]]


@dataclass(frozen=True)
class Settings:
    tasks: tuple[str, ...]
    arm: str
    turns: int
    seed: int
    engine: str

    def plan(self) -> dict[str, Any]:
        return {
            "format": STUDY_FORMAT,
            "tasks": list(self.tasks),
            "arm": self.arm,
            "turns": self.turns,
            "seed": self.seed,
            "engine": self.engine,
            "suite_hash": suite_hash(),
            "prompt_sha256": arm_sha256(self.arm, self.engine),
        }


class Study:
    """The study file of one run directory: settings and participants, written atomically."""

    def __init__(self, out: Path, settings: Settings) -> None:
        self.out, self.settings = Path(out), settings
        self.run = RunDir(self.out)
        self.path = self.run.inside(STUDY_FILE)
        self.plan = settings.plan()  # the suite's hash is computed once
        self.data = self._open()

    def _open(self) -> dict[str, Any]:
        out = self.out
        if out.exists() and not out.is_dir():
            raise RunStoreError(f"{out}: exists and is not a folder; give --out a folder.")
        plan = self.plan
        if not self.path.exists():
            if out.is_dir() and any(out.iterdir()):
                kind = (
                    "a finished run"
                    if (out / "manifest.json").exists()
                    else "an interrupted 'arrivalbench generate'"
                    if (out / "generation.json").exists()
                    else "a folder of other files"
                )
                raise RunStoreError(
                    f"{out}: {kind}, not a human study (no {STUDY_FILE}); give --out a new folder."
                )
            return {"plan": plan, "participants": []}
        try:
            data = json.loads(self.run.read_bytes(self.path))
            previous = data["plan"]
            data["participants"] = list(data["participants"])
        except (ValueError, KeyError, TypeError) as exc:
            raise RunStoreError(
                f"{self.path}: unreadable study file ({exc}); restore it from a copy."
            ) from None
        changed = sorted(k for k in plan if previous.get(k) != plan[k])
        if changed:
            raise UsageError(
                f"{out}: a study with other {', '.join(changed)} is here; resume it with the same "
                "options (--tasks, --arm, --turns, --seed, --engine) or choose a new --out."
            )
        return data  # type: ignore[no-any-return]

    def save(self) -> None:
        self.run.write_bytes(
            self.path, (json.dumps(self.data, indent=2, sort_keys=True) + "\n").encode()
        )

    def participant(self, name: str | None) -> tuple[int, str, dict[str, Progress]]:
        """(sample, name, progress) of the named participant, a new one, or the one unfinished.

        Without a name, the one participant who has not finished resumes; if none, a new one
        is named p<sample>.
        """
        people = self.data["participants"]
        if name is not None and not PARTICIPANT.fullmatch(name):
            raise UsageError(
                f"--participant {name!r}: use letters, digits, '_', '-' or '.' (at most 64, a "
                "pseudonym: the name is stored in the run)."
            )
        if name is None:
            open_ = [p for p in people if not _finished(p, self.settings.tasks)]
            if len(open_) > 1:
                shown = ", ".join(p["name"] for p in open_)
                raise UsageError(
                    f"{self.out}: several participants have not finished ({shown}); name one "
                    "with --participant."
                )
            if open_:
                name = open_[0]["name"]
        found = next((p for p in people if p["name"] == name), None)
        if found is None:
            if (self.out / "verdicts.parquet").exists() or (self.out / "verdicts.journal").exists():
                raise UsageError(
                    f"{self.out}: this study has been graded; put the next participant in a new "
                    "--out (the report reads several runs)."
                )
            sample = len(people)
            found = {
                "name": name or f"p{sample}",
                "sample": sample,
                "started_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "tasks": {},
            }
            people.append(found)
        progress = {t: Progress.from_json(found["tasks"].get(t, {})) for t in self.settings.tasks}
        return int(found["sample"]), str(found["name"]), progress

    def keep(self, name: str, progress: dict[str, Progress]) -> None:
        person = next(p for p in self.data["participants"] if p["name"] == name)
        person["tasks"] = {t: p.to_json() for t, p in progress.items()}
        self.save()

    def summary(self) -> dict[str, Any]:
        """What the manifest's config.human records: per participant, seconds and turns per task."""
        return {
            "participants": [
                {
                    "name": p["name"],
                    "sample": p["sample"],
                    "started_at": p["started_at"],
                    "seconds": {t: v.get("seconds", 0.0) for t, v in sorted(p["tasks"].items())},
                }
                for p in self.data["participants"]
                if _finished(p, self.settings.tasks)
            ]
        }

    def write_run(self, limits: Any) -> RunDir:
        """cells.parquet and the manifest from every finished participant's transcripts."""
        samples = {p["sample"] for p in self.summary()["participants"]}
        results = [r for r in load_transcripts(self.out) if r.sample in samples]
        config = {"human": {"plan": self.plan, **self.summary()}}
        if not self.run.manifest_path.exists():
            return write_run(
                self.out,
                results,
                model="human",
                seed=self.settings.seed,
                limits=limits,
                turns=self.settings.turns,
                config=config,
                role="human",
                engine=self.settings.engine,
            )
        run = RunDir.open(self.out)
        manifest = run.manifest
        manifest["config"].update(config)
        run.write_cells([cell_of(r) for r in sorted(results, key=lambda r: (r.task, r.sample))])
        run.write_manifest(manifest)
        return run


def _finished(person: dict[str, Any], tasks: tuple[str, ...]) -> bool:
    return all(person["tasks"].get(t, {}).get("done") for t in tasks)


def check_settings(task_ids: list[str], arm: str, turns: int, engine: str) -> list[Task]:
    """The tasks (all without --tasks), refused before a server starts: unknown names, a bad
    arm, engine or turns."""
    check_arm(arm)
    check_engine(engine)
    if turns < 1:
        raise UsageError(f"--turns {turns}: must be at least 1.")
    if not task_ids:  # as for generate: every task of the suite, in the suite's order
        return list(load_suite().values())
    return [get_task(t) for t in dict.fromkeys(task_ids)]


async def work(
    desk: Desk,
    tasks: list[Task],
    prompts: dict[str, Prompt],
    sample: int,
    check: Check,
    out: Path,
    turns: int,
    log: Callable[[str], None] = lambda line: None,
) -> None:
    """Every task not yet done, in order, through the model arm's repair loop."""
    model = HumanModel(desk)

    async def checked(task: Task, script: str) -> dict[str, Any]:
        entry = await check(task, script)
        desk.checked(entry["verdict"])
        return entry

    for task in tasks:
        if desk.progress[task.id].done:
            continue
        desk.begin(task.id)
        result = await repair_loop(task, prompts[task.id], sample, model, checked, turns=turns)
        save_transcript(out, result)
        verdict = result.turns[-1].snapshot if result.turns else "NO_SCRIPT"
        desk.end(task.id, verdict, len(result.turns))
        log(f"{task.id}: {verdict} after {len(result.turns)} test run(s)")


class Session:
    """One participant's sitting: the study file, the desk, the page's server and the loop.

    Made in full (tasks, prompts, the port) before `run`, so every bad input is refused before
    anything is served. `check` replaces the snapshot check (tests); by default it is the model
    arm's: a `GraderPool` on the study's seed, limits and engine.
    """

    def __init__(
        self,
        out: Path,
        *,
        task_ids: list[str],
        arm: str = BASELINE_ARM,
        turns: int = TURNS,
        seed: int = DEFAULT_SEED,
        engine: str = DEFAULT_ENGINE,
        participant: str | None = None,
        instructions: str | None = None,
        host: str = "127.0.0.1",
        port: int = 8080,
        limits: Limits | None = None,
        check: Check | None = None,
        log: Callable[[str], None] = lambda line: None,
    ) -> None:
        self.tasks = check_settings(task_ids, arm, turns, engine)
        for task in self.tasks:
            task.check_seed(seed, private=False)
        self.prompts = {t.id: build_prompt(t, arm, engine) for t in self.tasks}
        self.settings = Settings(tuple(t.id for t in self.tasks), arm, turns, seed, engine)
        self.out, self.limits, self.log = Path(out), limits or Limits(), log
        self.study = Study(self.out, self.settings)
        self.sample, self.participant, progress = self.study.participant(participant)
        if all(p.done for p in progress.values()):
            raise UsageError(
                f"--participant {self.participant}: has finished every task of {self.out}; "
                "name a new participant (or leave --participant out)."
            )
        self.desk = Desk(
            list(self.settings.tasks),
            turns,
            progress,
            save=lambda: self.study.keep(self.participant, progress),
        )
        self._check = check
        page = Page(
            desk=self.desk,
            prompts=self.prompts,
            participant=self.participant,
            sample=self.sample,
            instructions=instructions,
            token=new_token(),
            timeout=self.limits.replay_timeout + 60,
        )
        self.server = Server(page, host, port)
        self.url = self.server.url
        self._loop: asyncio.AbstractEventLoop | None = None
        self._main: asyncio.Task[None] | None = None

    def stop(self) -> None:
        """End the sitting from another thread as Ctrl-C does: the current task is left unfinished
        with what was submitted saved, and `run` returns None."""
        if self._loop is not None and self._main is not None:
            with contextlib.suppress(RuntimeError):  # the sitting had ended: its loop is closed
                self._loop.call_soon_threadsafe(self._main.cancel)

    def run(self) -> RunDir | None:
        """Serve the page and run the tasks until the participant is done (or an interrupt).

        Returns the run once this participant has finished every task (cells and manifest
        written), else None (what was submitted is saved; the same command resumes).
        """
        self.study.keep(self.participant, self.desk.progress)
        graders = None
        check = self._check
        if check is None:
            graders = GraderPool(self.settings.seed, self.limits, self.settings.engine)
            pool = graders

            async def check(task: Task, script: str) -> dict[str, Any]:
                return await asyncio.to_thread(pool.snapshot, task, script)

        async def main() -> None:
            self._loop, self._main = asyncio.get_running_loop(), asyncio.current_task()
            await work(
                self.desk,
                self.tasks,
                self.prompts,
                self.sample,
                check,
                self.out,
                self.settings.turns,
                self.log,
            )

        self.server.start()
        try:
            asyncio.run(main())
        except asyncio.CancelledError:
            return None  # stop(): what was submitted is saved
        finally:
            self.desk.close()
            self.server.stop()
            if graders is not None:
                graders.close()
        if all(p.done for p in self.desk.progress.values()):
            return self.study.write_run(self.limits)
        return None
