"""The verdict cache: each (artifact, schedule) is graded once per machine, whichever command asks.

An entry is addressed by the sha256 of everything that determines its verdict (`verdict_key`):
harness version and the digest of its code (`harness_code`: an edited checkout is another
harness), record format, engine name and version (`engine_identity`, the one place a
new engine adds what makes its results differ), the task's content hash, the schedule's hash
(which covers the log's fingerprint), the artifact's hash, the limits, the seed, the result cap,
and the suite path's content. A hit is therefore the entry a fresh grading would produce, byte
for byte. Entries are written to a temporary file and renamed into place (atomic, so concurrent
writers of one key leave one whole entry), read back through a check of their stored key, and
evicted oldest-used first (mtime, bumped on every hit) once the folder passes its size bound.
Verdicts that depend on the machine's load or memory (`timeout`, `engine_crash`) are never
stored: they are graded again. `regrade` and `verify` never use the cache: they exist to
re-execute. The oracle of a public log is kept here too (Arrow IPC), so parallel workers compute
each (task, log) once; an oracle of a private log never touches the disk.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.ipc

from arrivalbench import __version__
from arrivalbench.engines import Engine, Limits
from arrivalbench.errors import UsageError
from arrivalbench.replay import ResultCap
from arrivalbench.store.manifest import limits_config

CACHE_DIR_ENV = "ARRIVALBENCH_CACHE_DIR"
CACHE_MAX_ENV = "ARRIVALBENCH_CACHE_MAX_MB"
DEFAULT_MAX_BYTES = 512 << 20
"""The folder's bound; past it, the least recently used entries go until it is under 80%."""
UNCACHED_ERRORS = frozenset({"timeout", "engine_crash"})
"""Error classes that depend on the machine (its load, its memory), not only on the inputs."""
CACHE_FORMAT = 1
EVICT_EVERY = 256
"""Writes between two checks of the folder's size (each check lists the folder)."""


def default_cache_dir() -> Path:
    """$ARRIVALBENCH_CACHE_DIR, else $XDG_CACHE_HOME/arrivalbench, else ~/.cache/arrivalbench."""
    explicit = os.environ.get(CACHE_DIR_ENV)
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "arrivalbench"


def _max_bytes() -> int:
    text = os.environ.get(CACHE_MAX_ENV)
    if not text:
        return DEFAULT_MAX_BYTES
    try:
        megabytes = int(text)
    except ValueError:
        megabytes = -1
    if megabytes < 1:
        raise UsageError(
            f"{CACHE_MAX_ENV}={text!r}: expected a whole number of megabytes of at least 1."
        )
    return megabytes << 20


@functools.cache
def harness_code(package: Path = Path(__file__).parent) -> str:
    """The sha256 of the harness's Python sources (the package without its task suite, which
    each key's task hash covers): an edited or patched install never reads verdicts that the
    code before the edit gave under the same version number."""
    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if relative.startswith("suite/"):
            continue
        digest.update(relative.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def engine_identity(engine: Engine) -> dict[str, str]:
    """What of the engine a verdict depends on: its name and version. An engine whose results
    depend on more (a server's version and settings) adds it here, once, for every key."""
    return {"name": engine.name, "version": engine.version}


def _digest(fields: dict[str, Any]) -> str:
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def verdict_key(
    *,
    engine: Engine,
    task_hash: str,
    schedule_sha256: str,
    artifact_sha256: str,
    limits: Limits,
    seed: int,
    cap: ResultCap,
    suite_hash: str,
    record_format: int,
) -> dict[str, Any]:
    """Every input of one verdict entry, as plain JSON (stored beside the entry and checked on read)."""
    return {
        "cache_format": CACHE_FORMAT,
        "harness_version": __version__,
        "harness_code": harness_code(),
        "record_format": record_format,
        "engine": engine_identity(engine),
        "task": task_hash,
        "schedule": schedule_sha256,
        "artifact": artifact_sha256,
        "limits": limits_config(limits),
        "seed": seed,
        "cap": asdict(cap),
        "suite": suite_hash,
    }


def oracle_key(*, engine: Engine, task_hash: str, log_kind: str, log_seed: int) -> dict[str, Any]:
    return {
        "cache_format": CACHE_FORMAT,
        "harness_version": __version__,
        "harness_code": harness_code(),
        "engine": engine_identity(engine),
        "task": task_hash,
        "log": {"kind": log_kind, "seed": log_seed},
    }


@dataclass
class VerdictCache:
    """A folder of verdict entries and oracles, shared by every process of the user."""

    root: Path = field(default_factory=default_cache_dir)
    max_bytes: int = field(default_factory=_max_bytes)
    hits: int = 0
    misses: int = 0
    _writes: int = field(default=0, repr=False)

    def _path(self, kind: str, digest: str, suffix: str) -> Path:
        return self.root / kind / digest[:2] / f"{digest}{suffix}"

    def get(self, key: dict[str, Any]) -> dict[str, Any] | None:
        """The stored verdict entry for `key`, or None (absent, unreadable or for another key)."""
        path = self._path("verdicts", _digest(key), ".json")
        try:
            stored = json.loads(path.read_bytes())
        except (OSError, ValueError):
            self.misses += 1
            return None
        if not isinstance(stored, dict) or stored.get("key") != key:
            self.misses += 1
            return None
        entry = stored.get("entry")
        if not isinstance(entry, dict) or "verdict" not in entry:
            self.misses += 1
            return None
        _touch(path)
        self.hits += 1
        return entry

    def put(self, key: dict[str, Any], entry: dict[str, Any]) -> None:
        """Store a verdict entry, unless it depends on the machine rather than on its inputs."""
        if entry.get("error_class") in UNCACHED_ERRORS:
            return
        data = json.dumps({"key": key, "entry": entry}, sort_keys=True, ensure_ascii=False)
        self._write(self._path("verdicts", _digest(key), ".json"), data.encode())

    def get_oracle(self, key: dict[str, Any]) -> pa.Table | None:
        path = self._path("oracles", _digest(key), ".arrow")
        try:
            with pa.OSFile(str(path), "rb") as source:
                table = pa.ipc.open_file(source).read_all()
        except (OSError, pa.ArrowInvalid):
            return None
        _touch(path)
        return table

    def put_oracle(self, key: dict[str, Any], table: pa.Table) -> None:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        self._write(self._path("oracles", _digest(key), ".arrow"), sink.getvalue().to_pybytes())

    def _write(self, path: Path, data: bytes) -> None:
        """Write to a temporary file beside `path` and rename it into place: a reader sees the
        old entry, the new one or none, never part of one. A cache that cannot be written (a
        full disk, a read-only home) costs speed, never a grade."""
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
            try:
                with os.fdopen(fd, "wb") as handle:
                    handle.write(data)
                os.replace(temp, path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
                raise
        except OSError:
            return
        self._writes += 1
        if self._writes % EVICT_EVERY == 0:
            self.evict()

    def size(self) -> int:
        return sum(size for _, size, _ in self._files())

    def _files(self) -> list[tuple[float, int, Path]]:
        files = []
        for kind in ("verdicts", "oracles"):
            base = self.root / kind
            if not base.is_dir():
                continue
            for path in base.glob("*/*"):
                with contextlib.suppress(OSError):
                    stat = path.stat()
                    files.append((stat.st_mtime, stat.st_size, path))
        return files

    def evict(self) -> int:
        """Remove the least recently used files until the folder is under 80% of its bound
        (nothing when under the bound); the number removed. Safe beside other processes: a file
        already gone is skipped, and a reader that loses a race sees a miss."""
        files = self._files()
        total = sum(size for _, size, _ in files)
        if total <= self.max_bytes:
            return 0
        removed = 0
        for _, size, path in sorted(files, key=lambda f: f[0]):
            if total <= self.max_bytes * 0.8:
                break
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
                removed += 1
            total -= size
        return removed


def _touch(path: Path) -> None:
    with contextlib.suppress(OSError):
        os.utime(path)
