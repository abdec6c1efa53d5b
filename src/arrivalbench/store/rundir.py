"""RunDir: a run directory on disk, and the one owner of every path inside it.

    RUN_DIR/
      manifest.json          harness and engine versions, suite hash, base seed (public), the
                             seed commitment of a private run, arms, config (store.manifest)
      artifacts/<sha>.sql    every graded script, named by the sha256 of its bytes
      cells.parquet          one row per (arm, task, sample): the artifact or why there is none
      verdicts.parquet       one row per (cell, schedule); rows are byte-stable
      verdicts.journal       rows appended as they arrive (JSON lines), folded into the parquet
      timings.parquet        seconds per (cell, schedule), kept apart so verdict rows stay stable
      transcripts/<arm>/<task>/<sample>.json   a generated or imported cell's transcript
      explanations.parquet   diagnoses of FAILs (grade-run --explain)
      generation.json        the settings of a generation in progress
      sweep.lock             present while a sweep writes

A run directory is input, not truth. Every path read or written is made here, from names that
store.names validated, and resolves inside the run: no component may be a symlink (a link to a
host file would be read into a report, copied by regrade, or written through), so one is refused
with one line. Every write of a whole file goes to a temporary name first and is renamed into
place. The cell list is always read from cells.parquet, never by listing artifacts/.

A private (official) run stores the SHA-256 commitment of its secret, never a seed derived from
it; grading it needs the seed file, and a run without a commitment is a development run.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from arrivalbench import __version__
from arrivalbench.engines import DEFAULT_ENGINE, Limits
from arrivalbench.seeds import PrivateSeed, gate_seeds
from arrivalbench.store.errors import RunStoreError
from arrivalbench.store.lock import exclusive
from arrivalbench.store.manifest import RUN_FORMAT, limits_config, manifest_problem, run_limits
from arrivalbench.store.names import check_cell_names
from arrivalbench.store.tables import (
    CELLS_SCHEMA,
    TIMINGS_SCHEMA,
    VERDICT_KEY,
    VERDICTS_SCHEMA,
    Cell,
    _atomic_write,
    _journal_problem,
    _read_parquet,
    _write_parquet,
    sha256_text,
)

if TYPE_CHECKING:
    from arrivalbench.spec import SuiteDirs, Task

SHA256 = re.compile(r"[0-9a-f]{64}", re.ASCII)
MANIFEST = "manifest.json"
EXPLANATIONS = "explanations.parquet"
PLAN = "generation.json"
TRANSCRIPTS = "transcripts"
SUPERSEDED = "transcripts-superseded"
"""Where a re-run cell's earlier transcript is kept: <arm>/<task>/<sample>.<n>.json."""


def check_run_path(path: Path) -> None:
    """A new run's directory must be a folder or not exist yet."""
    if path.exists() and not path.is_dir():
        raise RunStoreError(f"{path}: exists and is not a folder; give --out a new folder name.")


def check_new_run_path(path: Path, option: str = "--out") -> None:
    """A run made in one go (corpus, imports) goes to a new or empty folder, never among other files."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise RunStoreError(f"{path}: exists and is not a folder; give {option} a new folder name.")
    if path.is_dir() and any(path.iterdir()):
        what = "a run already exists here" if (path / "manifest.json").exists() else "not empty"
        raise RunStoreError(
            f"{path}: {what}; give {option} a new folder name (nothing in it was changed)."
        )


class RunDir:
    """A run directory on disk. Create with RunDir.create, open with RunDir.open."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    # -- every path inside the run -------------------------------------------------------------
    def inside(self, *parts: str) -> Path:
        """The path of `parts` under the run; refused unless each part is one plain name and no
        component from the run directory down is a symlink (the run directory itself may be one:
        that is the user's own path)."""
        current = self.path
        for part in parts:
            if part in ("", ".", "..") or "/" in part or "\\" in part or "\0" in part:
                raise RunStoreError(
                    f"{self.path}: {part!r} would leave the run directory; a run directory "
                    "names its files by validated arm, task and sample names only."
                )
            current = current / part
            try:
                mode = os.lstat(current).st_mode
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise RunStoreError(f"{current}: unreadable ({exc.strerror}).") from None
            if stat.S_ISLNK(mode):
                raise RunStoreError(
                    f"{current}: a symlink inside the run directory {self.path}; a run directory "
                    "holds its own files only: replace the link by a copy of the file, or remove it."
                )
        return current

    @property
    def manifest_path(self) -> Path:
        return self.inside(MANIFEST)

    @property
    def cells_path(self) -> Path:
        return self.inside("cells.parquet")

    @property
    def verdicts_path(self) -> Path:
        return self.inside("verdicts.parquet")

    @property
    def timings_path(self) -> Path:
        return self.inside("timings.parquet")

    @property
    def journal_path(self) -> Path:
        return self.inside("verdicts.journal")

    @property
    def lock_path(self) -> Path:
        return self.inside("sweep.lock")

    @property
    def explanations_path(self) -> Path:
        return self.inside(EXPLANATIONS)

    @property
    def plan_path(self) -> Path:
        return self.inside(PLAN)

    def artifact_path(self, sha: str) -> Path:
        if not isinstance(sha, str) or not SHA256.fullmatch(sha):
            raise RunStoreError(
                f"{self.path}: artifact name {sha!r} is not a sha256 (64 lower-case hex digits); "
                "cells.parquet was altered: restore it from a copy."
            )
        return self.inside("artifacts", f"{sha}.sql")

    def transcript_path(self, arm: str, task: str, sample: int) -> Path:
        check_cell_names(arm, task, sample, where=str(self.path))
        return self.inside(TRANSCRIPTS, arm, task, f"{sample}.json")

    def superseded_dir(self, arm: str, task: str) -> Path:
        check_cell_names(arm, task, 0, where=str(self.path))
        return self.inside(SUPERSEDED, arm, task)

    def read_bytes(self, path: Path) -> bytes:
        """A file this run's paths named, opened without following a symlink at its last step
        (the components above were checked when the path was made)."""
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as handle:
            return handle.read()

    def write_bytes(self, path: Path, data: bytes) -> None:
        """A whole file under the run, atomically, its folders made as needed."""
        path.parent.mkdir(parents=True, exist_ok=True)
        _atomic_write(path, data)

    def transcript(self, arm: str, task: str, sample: int) -> dict[str, Any] | None:
        """A cell's transcript as JSON, or None when it has none (or an unreadable one)."""
        path = self.transcript_path(arm, task, sample)
        if not path.is_file():
            return None
        try:
            data = json.loads(self.read_bytes(path).decode("utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None

    def write_transcript(self, arm: str, task: str, sample: int, data: dict[str, Any]) -> None:
        text = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
        self.write_bytes(self.transcript_path(arm, task, sample), text.encode())

    def write_artifact(self, text: str) -> str:
        """Store a script under its sha256 (once); returns the sha."""
        sha = sha256_text(text)
        target = self.artifact_path(sha)
        if not target.exists():
            self.write_bytes(target, text.encode("utf-8"))
        return sha

    def write_manifest(self, manifest: dict[str, Any]) -> None:
        problem = manifest_problem(manifest)
        if problem:  # a harness bug, not the user's: the manifest is ours
            raise ValueError(f"refusing to write a manifest whose {problem}")
        self.write_bytes(
            self.manifest_path, (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
        )

    # -- creation and opening ------------------------------------------------------------
    @classmethod
    def create(
        cls,
        path: Path,
        *,
        suite_hash: str,
        task_hashes: dict[str, str],
        base_seed: int,
        engine: str,
        engine_version: str,
        config: dict[str, Any],
        cells: list[Cell],
        artifacts: dict[str, str],
        arm_info: dict[str, dict[str, Any]] | None = None,
        seed_commitment: str | None = None,
        suite_dirs: list[str] | None = None,
    ) -> RunDir:
        """Write a new run: artifacts first, then cells, then the manifest (which marks it complete).

        `arm_info` describes every arm: its `role` (ROLES) and `run` index, and for generated
        arms {"model", "prompt_arm", "prompt_sha256", "turns"}; the report pairs each prompt arm
        with the unhinted arm of the same model through it.
        `seed_commitment` makes a private run: its hidden logs descend from the committed secret.
        `suite_dirs` are the user's task folders the run was made with: a hint for an error
        message when a task is missing later, never where tasks are looked up.
        """
        path = Path(path)
        check_run_path(path)
        run = cls(path)
        if run.manifest_path.exists():
            raise RunStoreError(
                f"{path}: a run already exists here; choose a new --out or remove it."
            )
        cells = list(cells)
        for cell in cells:  # names checked before anything is written under them
            check_cell_names(cell.arm, cell.task, cell.sample, where=str(path))
        run.inside("artifacts").mkdir(parents=True, exist_ok=True)
        for sha, text in artifacts.items():
            if sha256_text(text) != sha:
                raise ValueError(f"artifact key {sha} is not the sha256 of its text")
            run.write_artifact(text)
        run.write_cells(cells)
        manifest = {
            "format": RUN_FORMAT,
            "harness_version": __version__,
            "engine": engine,
            "engine_version": engine_version,
            "suite_hash": suite_hash,
            "suite_dirs": list(suite_dirs or []),
            "task_hashes": dict(sorted(task_hashes.items())),
            "base_seed": base_seed,
            "gated_seeds": gate_seeds(),
            "seed_gated": seed_commitment is None and base_seed in gate_seeds(),
            "arms": sorted({c.arm for c in cells}),
            "arm_info": dict(sorted((arm_info or {}).items())),
            "config": config,
            "created_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        }
        if seed_commitment is not None:
            manifest["seed_commitment"] = seed_commitment
        run.write_manifest(manifest)
        return run

    @classmethod
    def open(cls, path: Path) -> RunDir:
        run = cls(Path(path))
        if not run.manifest_path.is_file():
            raise RunStoreError(
                f"{path}: not a run directory (no manifest.json); create one with 'arrivalbench make-corpus'."
            )
        run.manifest  # noqa: B018  (validates)
        return run

    @property
    def manifest(self) -> dict[str, Any]:
        path = self.manifest_path
        try:
            data = json.loads(self.read_bytes(path).decode("utf-8"))
        except json.JSONDecodeError as exc:
            raise RunStoreError(
                f"{path}: not JSON (line {exc.lineno}: {exc.msg}); restore it from a copy or make "
                "the run again."
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise RunStoreError(
                f"{path}: unreadable manifest ({exc}); restore it from a copy or make the run again."
            ) from None
        problem = manifest_problem(data)
        if problem:
            raise RunStoreError(
                f"{path}: {problem}; restore it from a copy or make the run again "
                "(it was edited, damaged or written by another version of ArrivalBench)."
            )
        return data

    def limits(self, overrides: dict[str, Any] | None = None) -> Limits:
        """The limits this run is graded under (store.manifest.run_limits: the manifest may only
        tighten the defaults; `overrides`, explicit flags, may loosen them up to the ceilings)."""
        return run_limits(self.manifest["config"], str(self.manifest_path), overrides)

    # -- artifacts and cells ---------------------------------------------------------------
    def artifact(self, sha: str) -> str:
        path = self.artifact_path(sha)
        try:
            text = self.read_bytes(path).decode("utf-8")
        except (OSError, UnicodeDecodeError):
            raise RunStoreError(
                f"{path}: artifact listed in cells.parquet is missing; restore it or remove the cell."
            ) from None
        if sha256_text(text) != sha:
            raise RunStoreError(
                f"{path}: content does not match its sha256 name; the file was altered."
            )
        return text

    def write_cells(self, cells: Iterable[Cell]) -> None:
        rows = sorted(cells, key=lambda c: c.key)
        for c in rows:
            check_cell_names(c.arm, c.task, c.sample, where=str(self.path))
        table = pa.Table.from_pylist(
            [
                {
                    "arm": c.arm,
                    "task": c.task,
                    "sample": c.sample,
                    "artifact_sha256": c.artifact_sha256,
                    "no_artifact_reason": c.no_artifact_reason,
                    "snapshot_by_turn": list(c.snapshot_by_turn),
                    "tokens": c.tokens,
                    "stop_reason": c.stop_reason,
                    "prompt_sha256": c.prompt_sha256,
                    "served_model": c.served_model,
                }
                for c in rows
            ],
            schema=CELLS_SCHEMA,
        )
        _write_parquet(self.cells_path, table)

    def cells(self) -> list[Cell]:
        table = _read_parquet(self.cells_path, CELLS_SCHEMA)
        cells = [Cell.from_row(r) for r in table.to_pylist()]
        for cell in cells:
            check_cell_names(cell.arm, cell.task, cell.sample, where=str(self.cells_path))
        return cells

    @property
    def seed_commitment(self) -> str | None:
        """The commitment of a private run's secret; None for a development run (public seed)."""
        return self.manifest.get("seed_commitment")

    def check_secret(self, private: PrivateSeed | None) -> None:
        """Refuse to grade a private run without its secret, or with another one."""
        commitment = self.seed_commitment
        if commitment is None:
            if private is not None:
                raise RunStoreError(
                    f"{self.path}: a development run (public base seed "
                    f"{self.manifest.get('base_seed')}) takes no seed file; grade it without one."
                )
            return
        if private is None:
            raise RunStoreError(
                f"{self.path}: a private run (seed commitment {commitment[:12]}…); pass the seed "
                "file it was made with: --seed-file FILE, or set ARRIVALBENCH_SEED_FILE=FILE."
            )
        if private.commitment != commitment:
            raise RunStoreError(
                f"{self.path}: made with the secret of commitment {commitment[:12]}…, but "
                f"{private.path} holds another ({private.short}); pass the seed file this run "
                "was made with."
            )

    def copy_ungraded(self, dest: Path, amend: dict[str, Any] | None = None) -> RunDir:
        """A new run at `dest` with this run's manifest, cells, artifacts and transcripts, no verdicts.

        `amend` updates manifest keys. The manifest is written last, as RunDir.create does, so a
        copy cut short is no run.
        """
        dest = Path(dest)
        check_run_path(dest)
        copy = RunDir(dest)
        if copy.manifest_path.exists():
            raise RunStoreError(
                f"{dest}: a run already exists here; choose a new --out or remove it."
            )
        manifest = {**self.manifest, **(amend or {})}
        cells = self.cells()
        dest.mkdir(parents=True, exist_ok=True)
        copy.inside("artifacts").mkdir(exist_ok=True)
        for sha in sorted({c.artifact_sha256 for c in cells if c.artifact_sha256 is not None}):
            copy.write_artifact(self.artifact(sha))  # read by name, hash checked
        for path in self._files(TRANSCRIPTS):
            relative = path.relative_to(self.path).parts
            copy.write_bytes(copy.inside(*relative), self.read_bytes(path))
        copy.write_bytes(copy.cells_path, self.read_bytes(self.cells_path))
        copy.write_manifest(manifest)
        return copy

    def _files(self, folder: str) -> list[Path]:
        """Every regular file under a folder of the run, sorted; a symlink anywhere is refused."""
        root = self.inside(folder)
        if not root.is_dir():
            return []
        found = []
        for top, dirs, files in os.walk(root):
            for name in sorted([*dirs, *files]):
                parts = (Path(top) / name).relative_to(self.path).parts
                path = self.inside(*parts)
                if name in files:
                    if not path.is_file():
                        raise RunStoreError(f"{path}: not a regular file; remove it.")
                    found.append(path)
        return sorted(found)

    def arm_info(self) -> dict[str, dict[str, Any]]:
        """Model and prompt of each generated arm; empty for reference arms and older runs."""
        return self.manifest.get("arm_info", {})

    # -- its tasks -----------------------------------------------------------------------------
    def task(self, task_id: str, suite_dirs: SuiteDirs = None) -> Task:
        """One task of this run from the suite path (spec.get_task); a task not found there is one
        line naming the --suite-dir folders the run was made with."""
        from arrivalbench.errors import UnknownNameError
        from arrivalbench.spec import get_task

        try:
            return get_task(task_id, suite_dirs)
        except UnknownNameError:
            raise RunStoreError(self._missing_task(task_id)) from None

    def tasks(self, suite_dirs: SuiteDirs = None) -> dict[str, Task]:
        """Every task the run uses (its cells and recorded task hashes), by id."""
        ids = {c.task for c in self.cells()} | set(self.manifest.get("task_hashes", {}))
        return {task_id: self.task(task_id, suite_dirs) for task_id in sorted(ids)}

    def _missing_task(self, task_id: str) -> str:
        import shlex

        recorded = [str(d) for d in self.manifest.get("suite_dirs") or []]
        holders = [d for d in recorded if (Path(d) / task_id / "task.yaml").is_file()]
        missing = f"{self.path}: task '{task_id}' is not on the suite path"
        if holders:
            return (
                f"{missing}; the run was made with it from {holders[0]}: pass "
                f"--suite-dir {shlex.quote(holders[0])} (or set ARRIVALBENCH_SUITE_PATH)."
            )
        if recorded:
            flags = " ".join(f"--suite-dir {shlex.quote(d)}" for d in recorded)
            return (
                f"{missing}; the run was made with {flags}, which no longer holds it here: "
                f"pass --suite-dir with the folder that holds '{task_id}' now."
            )
        return (
            f"{missing}; the run was made with the built-in suite of harness "
            f"{self.manifest.get('harness_version')}: grade it with that version, or pass "
            f"--suite-dir with the folder that holds '{task_id}'."
        )

    # -- verdicts ------------------------------------------------------------------------------
    def append(self, rows: list[dict[str, Any]], timings: list[dict[str, Any]]) -> None:
        """Append verdict rows durably (one JSON line each, fsynced); a torn last line is ignored on read."""
        lines = "".join(
            json.dumps({"verdict": r, "timing": t}, sort_keys=True) + "\n"
            for r, t in zip(rows, timings, strict=True)
        )
        flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
        with os.fdopen(os.open(self.journal_path, flags, 0o644), "a", encoding="utf-8") as handle:
            handle.write(lines)
            handle.flush()
            os.fsync(handle.fileno())

    def _journal(self) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        """Journal rows in order; a torn last line is skipped, any other bad line is an error."""
        if not self.journal_path.exists():
            return
        fd = os.open(self.journal_path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as handle:
            for number, line in enumerate(handle, start=1):
                if not line.endswith(b"\n"):
                    return  # a write cut short by a kill: the unit is graded again
                try:
                    entry = json.loads(line.decode("utf-8"))
                except UnicodeDecodeError:
                    problem: str | None = "not UTF-8 text"
                except json.JSONDecodeError as exc:
                    problem = f"not JSON: {exc.msg} at character {exc.pos + 1}"
                else:
                    problem = _journal_problem(entry)
                if problem:
                    raise RunStoreError(
                        f"{self.journal_path}: line {number} is not a verdict row ({problem}); "
                        f"move the journal aside (e.g. to {self.journal_path.name}.damaged) and "
                        f"rerun 'arrivalbench grade-run {self.path}', which grades its rows again."
                    )
                yield entry["verdict"], entry["timing"]

    def verdicts(self) -> pa.Table:
        """All verdict rows (parquet plus journal), one per (cell, schedule), sorted by key."""
        rows: dict[tuple[Any, ...], dict[str, Any]] = {}
        path = self.verdicts_path
        if path.exists():
            for row in _read_parquet(path, VERDICTS_SCHEMA).to_pylist():
                rows[tuple(row[k] for k in VERDICT_KEY)] = row
        for row, _ in self._journal():
            rows.setdefault(tuple(row[k] for k in VERDICT_KEY), row)
        ordered = [rows[k] for k in sorted(rows)]
        return pa.Table.from_pylist(ordered, schema=VERDICTS_SCHEMA)

    def timings(self) -> pa.Table:
        rows: dict[tuple[Any, ...], dict[str, Any]] = {}
        path = self.timings_path
        if path.exists():
            for row in _read_parquet(path, TIMINGS_SCHEMA).to_pylist():
                rows[tuple(row[k] for k in VERDICT_KEY)] = row
        for _, row in self._journal():
            rows.setdefault(tuple(row[k] for k in VERDICT_KEY), row)
        return pa.Table.from_pylist([rows[k] for k in sorted(rows)], schema=TIMINGS_SCHEMA)

    def done(self) -> set[tuple[str, str, int, str]]:
        table = self.verdicts()
        return {
            tuple(r[k] for k in VERDICT_KEY) for r in table.select(list(VERDICT_KEY)).to_pylist()
        }  # type: ignore[misc]

    def compact(self) -> None:
        """Fold the journal into verdicts.parquet and timings.parquet, then drop the journal."""
        verdicts, timings = self.verdicts(), self.timings()
        _write_parquet(self.verdicts_path, verdicts)
        _write_parquet(self.timings_path, timings)
        self.journal_path.unlink(missing_ok=True)

    # -- the sweep lock ------------------------------------------------------------------------
    @contextmanager
    def lock(self) -> Iterator[None]:
        """Exclusive writer lock; a stale lock (its process gone) is taken over."""
        with exclusive(self.lock_path):
            yield


def create_suite_run(
    path: Path,
    *,
    cells: list[Cell],
    artifacts: dict[str, str],
    seed: int,
    limits: Limits,
    config: dict[str, Any] | None = None,
    arm_info: dict[str, dict[str, Any]] | None = None,
    seed_commitment: str | None = None,
    engine: str = DEFAULT_ENGINE,
) -> RunDir:
    """A new run over the suite path: its hash, the used tasks' hashes and the user's suite folders,
    the engine (name and version) and the limits.

    `seed` is the public base seed (the visible log); `seed_commitment` makes the run private.
    """
    from arrivalbench.engines import get_engine
    from arrivalbench.spec import get_task, suite_hash, user_suite_dirs

    engine = get_engine(engine)
    tasks = [get_task(task) for task in sorted({c.task for c in cells})]
    for task in tasks:  # refused before anything is written
        task.check_seed(seed, private=seed_commitment is not None)
    return RunDir.create(
        path,
        suite_hash=suite_hash(),
        task_hashes={task.id: task.content_hash() for task in tasks},
        base_seed=seed,
        engine=engine.name,
        engine_version=engine.version,
        config={"schedules": None, **limits_config(limits), **(config or {})},
        cells=cells,
        artifacts=artifacts,
        arm_info=arm_info,
        seed_commitment=seed_commitment,
        suite_dirs=[str(d) for d in user_suite_dirs()],
    )
