"""How long `dbt parse` of a project should take, and a line every few seconds while it runs.

dbt reports nothing while it parses, and a large project takes minutes. The estimate is the
last parse of the same project folder on this machine, scaled by how many files it now has;
each parse's time is remembered in the cache folder (cache.default_cache_dir). A project never
parsed here gets no estimate, only the time elapsed.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from arrivalbench.progress import clock

TIMES_FILE = "dbt-parse-seconds.json"
KEPT = 64
"""Projects remembered; past that, the ones parsed longest ago are forgotten."""
PARSED_SUFFIXES = frozenset({".sql", ".yml", ".yaml", ".csv", ".py", ".md"})
SKIPPED = frozenset({"target", "logs", ".git", "dbt_packages", ".venv"})
TICK_SECONDS = 10.0


def project_files(project: Path) -> int:
    """The files dbt reads when it parses `project` (models, macros, seeds, properties, docs)."""
    count = 0
    for _, folders, files in os.walk(project):
        folders[:] = [f for f in folders if f not in SKIPPED]
        count += sum(Path(name).suffix in PARSED_SUFFIXES for name in files)
    return count


@dataclass(frozen=True)
class ParseEstimate:
    project: str
    files: int
    seconds: float | None
    """The last parse's time scaled to today's file count; None when never parsed here."""

    def describe(self) -> str:
        """`(42 files, about 0:08 as last time)`, or `(42 files, first parse here)`."""
        if self.seconds is None:
            return f"({self.files} files, first parse here)"
        return f"({self.files} files, about {clock(self.seconds)} as last time)"

    def remaining(self, elapsed: float) -> str:
        """`[elapsed 0:20, about 0:05 left]` (or past the estimate, or elapsed alone)."""
        shown = f"[elapsed {clock(elapsed)}"
        if self.seconds is not None:
            left = self.seconds - elapsed
            shown += f", about {clock(left)} left" if left >= 1 else ", past the estimate"
        return shown + "]"


def _times_path(folder: Path) -> Path:
    return folder / TIMES_FILE


def _read(folder: Path) -> dict[str, dict[str, float]]:
    try:
        data = json.loads(_times_path(folder).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def estimate(project: Path, folder: Path) -> ParseEstimate:
    """The estimate for parsing `project`, from the times remembered in `folder`."""
    key = str(project.resolve())
    files = project_files(project)
    last = _read(folder).get(key)
    seconds = None
    try:
        if last and float(last["seconds"]) > 0 and int(last["files"]) > 0:
            seconds = float(last["seconds"]) * max(files, 1) / int(last["files"])
    except (KeyError, TypeError, ValueError):
        seconds = None
    return ParseEstimate(key, files, seconds)


def remember(found: ParseEstimate, seconds: float, folder: Path) -> None:
    """Keep this parse's time for the next estimate; a folder that cannot be written is skipped
    (an estimate is a convenience, never a reason to fail a check)."""
    times = _read(folder)
    times.pop(found.project, None)
    times[found.project] = {"files": found.files, "seconds": round(seconds, 3)}
    kept = dict(list(times.items())[-KEPT:])
    with contextlib.suppress(OSError):
        folder.mkdir(parents=True, exist_ok=True)
        partial = _times_path(folder).with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps(kept, indent=1), encoding="utf-8")
        partial.replace(_times_path(folder))


@contextlib.contextmanager
def ticking(
    found: ParseEstimate, say: Callable[[str], None], folder: Path, every: float = TICK_SECONDS
) -> Iterator[None]:
    """While the body runs, `say` how long it has run (and how long is left) every `every`
    seconds; after it, how long it took, remembered in `folder` for the next estimate."""
    started = time.monotonic()
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(every):
            say(f"still parsing the dbt project {found.remaining(time.monotonic() - started)}")

    ticker = threading.Thread(target=tick, name="dbt-parse-ticker", daemon=True)
    ticker.start()
    try:
        yield
    finally:
        stop.set()
        ticker.join()
    took = time.monotonic() - started
    say(f"parsed the dbt project in {took:.1f} s")
    remember(found, took, folder)
