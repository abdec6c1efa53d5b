"""Run directories: manifest, content-addressed artifacts, the cell list and verdict rows.

    RUN_DIR/
      manifest.json          harness and engine versions, suite hash, base seed (public), the
                             seed commitment of a private run, arms, config
      artifacts/<sha>.sql    every graded script, named by the sha256 of its bytes
      cells.parquet          one row per (arm, task, sample): the artifact or why there is none
      verdicts.parquet       one row per (cell, schedule); rows are byte-stable
      verdicts.journal       rows appended as they arrive (JSON lines), folded into the parquet
      timings.parquet        seconds per (cell, schedule), kept apart so verdict rows stay stable
      sweep.lock             present while a sweep writes

Every write of a whole file goes to a temporary name first and is renamed into place. The cell
list is always read from cells.parquet, never by listing artifacts/.

A private (official) run stores the SHA-256 commitment of its secret, never a seed derived from
it; grading it needs the seed file, and a run without a commitment is a development run.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from arrivalbench import __version__
from arrivalbench.engines import Limits
from arrivalbench.errors import ArrivalBenchError
from arrivalbench.seeds import SEED_RANGE, PrivateSeed, gate_seeds, is_seed

if TYPE_CHECKING:
    from arrivalbench.spec import SuiteDirs, Task

RUN_FORMAT = 1
CELL_KEY = ("arm", "task", "sample")
VERDICT_KEY = (*CELL_KEY, "schedule")

CELLS_SCHEMA = pa.schema(
    [
        ("arm", pa.string()),
        ("task", pa.string()),
        ("sample", pa.int64()),
        ("artifact_sha256", pa.string()),
        ("no_artifact_reason", pa.string()),
        ("snapshot_by_turn", pa.list_(pa.string())),
        ("tokens", pa.int64()),
        ("stop_reason", pa.string()),
        ("prompt_sha256", pa.string()),
        ("served_model", pa.string()),
    ]
)
# Columns added after format 1 was first written; older files read with these as nulls.
OPTIONAL_COLUMNS = {"prompt_sha256", "seed_commitment", "served_model"}
ROLES = ("model", "intervention", "reference", "human")
"""An arm's role in `arm_info`: a model's own behaviour (the unhinted prompt), a prompt
intervention, a model-free reference (gold, controls, baselines, templates), or people."""
VERDICTS_SCHEMA = pa.schema(
    [
        ("arm", pa.string()),
        ("task", pa.string()),
        ("sample", pa.int64()),
        ("schedule", pa.string()),
        ("artifact_sha256", pa.string()),
        ("verdict", pa.string()),
        ("error_class", pa.string()),
        ("batch", pa.int64()),
        ("statement", pa.int64()),
        ("missing", pa.int64()),
        ("extra", pa.int64()),
        ("duplicate_key", pa.int64()),
        ("changed", pa.int64()),
        ("schema", pa.int64()),
        ("right_rows_share", pa.float64()),
        ("seed", pa.int64()),
        ("schedule_sha256", pa.string()),
        ("record", pa.string()),
        ("seed_commitment", pa.string()),
    ]
)
TIMINGS_SCHEMA = pa.schema(
    [
        ("arm", pa.string()),
        ("task", pa.string()),
        ("sample", pa.int64()),
        ("schedule", pa.string()),
        ("wall_seconds", pa.float64()),
        ("statement_seconds", pa.float64()),
    ]
)


class RunStoreError(ArrivalBenchError):
    """A run directory that cannot be used as it is."""


MANIFEST_FIELDS: dict[str, tuple[type | tuple[type, ...], str]] = {
    "harness_version": (str, "a string"),
    "engine": (str, "a string"),
    "engine_version": (str, "a string"),
    "suite_hash": (str, "a string"),
    "task_hashes": (dict, "an object of task id to content hash"),
    "base_seed": (int, f"a seed ({SEED_RANGE})"),
    "seed_commitment": (str, "the 64 hex digits of a sha256"),
    "regraded_from": (dict, "an object naming the run it was re-graded from"),
    "suite_dirs": (list, "a list of folders"),
    "arms": (list, "a list of arm names"),
    "arm_info": (dict, "an object of arm to its model and prompt"),
    "config": (dict, "an object"),
    "created_at": (str, "a string"),
}
OPTIONAL_MANIFEST_FIELDS = {"arm_info", "seed_commitment", "regraded_from", "suite_dirs"}
"""Fields added after format 1 was first written, or only in some runs (private, re-graded)."""
CONFIG_FIELDS: dict[str, tuple[type | tuple[type, ...], str]] = {
    "schedules": ((str, type(None)), "null, 'all' or a comma list of schedule names"),
    "statement_timeout": ((int, float), "a number of seconds"),
    "memory_limit": (str, "a string such as '1GB'"),
    "replay_timeout": ((int, float), "a number of seconds"),
    "max_script_bytes": (int, "an integer"),
}


def _json_kind(value: object) -> str:
    """How a JSON value reads in a message: 'a string ("x")', 'null', 'a list'."""
    kinds = {bool: "a boolean", int: "an integer", float: "a number", str: "a string"}
    if value is None:
        return "null"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return f"{kinds.get(type(value), type(value).__name__)} ({json.dumps(value)[:40]})"


def _is(value: object, kinds: type | tuple[type, ...]) -> bool:
    """isinstance as JSON means it: a boolean is not a number."""
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    return bool in kinds if isinstance(value, bool) else isinstance(value, kinds)


def manifest_problem(data: object) -> str | None:
    """What is wrong with a manifest's content, naming the field; None when it can be used."""
    if not isinstance(data, dict):
        return f"holds {_json_kind(data)}, not a JSON object"
    if "format" not in data:
        return "field 'format' is missing"
    if not _is(data["format"], int) or data["format"] != RUN_FORMAT:
        return f"run format {json.dumps(data['format'])}, this harness reads {RUN_FORMAT}"
    for name, (kinds, expected) in MANIFEST_FIELDS.items():
        if name not in data:
            if name in OPTIONAL_MANIFEST_FIELDS:
                continue
            return f"field '{name}' is missing"
        if not _is(data[name], kinds):
            return f"field '{name}' is {_json_kind(data[name])}, expected {expected}"
    if not is_seed(data["base_seed"]):
        return f"field 'base_seed' is {data['base_seed']}, expected a seed ({SEED_RANGE})"
    commitment = data.get("seed_commitment")
    if commitment is not None and not re.fullmatch("[0-9a-f]{64}", commitment):
        return f"field 'seed_commitment' is {_json_kind(commitment)}, expected 64 hex digits"
    for task, digest in data["task_hashes"].items():
        if not isinstance(digest, str):
            return f"field 'task_hashes.{task}' is {_json_kind(digest)}, expected a string"
    for i, arm in enumerate(data["arms"]):
        if not isinstance(arm, str):
            return f"field 'arms[{i}]' is {_json_kind(arm)}, expected an arm name"
    for i, folder in enumerate(data.get("suite_dirs", [])):
        if not isinstance(folder, str):
            return f"field 'suite_dirs[{i}]' is {_json_kind(folder)}, expected a folder"
    for arm, info in data.get("arm_info", {}).items():
        if not isinstance(info, dict):
            return f"field 'arm_info.{arm}' is {_json_kind(info)}, expected an object"
        if "role" in info and info["role"] not in ROLES:
            return f"field 'arm_info.{arm}.role' is {_json_kind(info['role'])}, expected one of {', '.join(ROLES)}"
        if "run" in info and not (_is(info["run"], int) and info["run"] >= 1):
            return f"field 'arm_info.{arm}.run' is {_json_kind(info['run'])}, expected a run index from 1"
    for name, (kinds, expected) in CONFIG_FIELDS.items():
        value = data["config"].get(name)
        if name in data["config"] and not _is(value, kinds):
            return f"field 'config.{name}' is {_json_kind(value)}, expected {expected}"
    return None


@dataclass(frozen=True)
class Cell:
    arm: str
    task: str
    sample: int
    artifact_sha256: str | None = None
    no_artifact_reason: str | None = None
    snapshot_by_turn: tuple[str, ...] = ()
    tokens: int | None = None
    stop_reason: str | None = None
    prompt_sha256: str | None = None
    served_model: str | None = None  # the model id the provider reported serving, when it did

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.arm, self.task, self.sample)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)


def _write_parquet(path: Path, table: pa.Table) -> None:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    _atomic_write(path, sink.getvalue().to_pybytes())


def _read_parquet(path: Path, schema: pa.Schema) -> pa.Table:
    try:
        table = pq.read_table(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise RunStoreError(
            f"{path}: unreadable Parquet ({exc}); restore it from a copy, or delete it to re-grade."
        ) from None
    for name in OPTIONAL_COLUMNS & set(schema.names) - set(table.column_names):
        table = table.append_column(name, pa.nulls(table.num_rows, schema.field(name).type))
    missing = [f.name for f in schema if f.name not in table.column_names]
    if missing:
        raise RunStoreError(
            f"{path}: missing columns {missing}; it was not written by this version of ArrivalBench."
        )
    return table.select(schema.names).cast(schema)


def verdict_row(
    cell: Cell,
    schedule: str,
    seed: int,
    entry: dict[str, Any],
    seed_commitment: str | None = None,
) -> dict[str, Any]:
    """One verdict row from a grade record's entry for one schedule.

    `seed` is the run's public base seed; `seed_commitment` is set when the schedule's log came
    from the run's secret instead.
    """
    counts = entry.get("diff", {}).get("counts", {})
    return {
        "arm": cell.arm,
        "task": cell.task,
        "sample": cell.sample,
        "schedule": schedule,
        "artifact_sha256": cell.artifact_sha256,
        "verdict": entry["verdict"],
        "error_class": entry.get("error_class"),
        "batch": entry.get("batch"),
        "statement": entry.get("statement"),
        **{
            kind: counts.get(kind)
            for kind in ("missing", "extra", "duplicate_key", "changed", "schema")
        },
        "right_rows_share": entry.get("diff", {}).get("right_rows_share")
        if entry["verdict"] == "FAIL"
        else None,
        "seed": seed,
        "schedule_sha256": entry.get("schedule_sha256"),
        "record": json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False),
        "seed_commitment": seed_commitment,
    }


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
        if (path / "manifest.json").exists():
            raise RunStoreError(
                f"{path}: a run already exists here; choose a new --out or remove it."
            )
        (path / "artifacts").mkdir(parents=True, exist_ok=True)
        run = cls(path)
        for sha, text in artifacts.items():
            if sha256_text(text) != sha:
                raise ValueError(f"artifact key {sha} is not the sha256 of its text")
            target = run.artifact_path(sha)
            if not target.exists():
                _atomic_write(target, text.encode("utf-8"))
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
        _atomic_write(
            path / "manifest.json", (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
        )
        return run

    @classmethod
    def open(cls, path: Path) -> RunDir:
        path = Path(path)
        manifest = path / "manifest.json"
        if not manifest.is_file():
            raise RunStoreError(
                f"{path}: not a run directory (no manifest.json); create one with 'arrivalbench make-corpus'."
            )
        run = cls(path)
        run.manifest  # noqa: B018  (validates)
        return run

    @property
    def manifest(self) -> dict[str, Any]:
        path = self.path / "manifest.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
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

    # -- artifacts and cells ---------------------------------------------------------------
    def artifact_path(self, sha: str) -> Path:
        return self.path / "artifacts" / f"{sha}.sql"

    def artifact(self, sha: str) -> str:
        path = self.artifact_path(sha)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
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
        _write_parquet(self.path / "cells.parquet", table)

    def cells(self) -> list[Cell]:
        table = _read_parquet(self.path / "cells.parquet", CELLS_SCHEMA)
        return [
            Cell(
                arm=r["arm"],
                task=r["task"],
                sample=r["sample"],
                artifact_sha256=r["artifact_sha256"],
                no_artifact_reason=r["no_artifact_reason"],
                snapshot_by_turn=tuple(r["snapshot_by_turn"] or ()),
                tokens=r["tokens"],
                stop_reason=r["stop_reason"],
                prompt_sha256=r["prompt_sha256"],
                served_model=r["served_model"],
            )
            for r in table.to_pylist()
        ]

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
        import shutil

        dest = Path(dest)
        check_run_path(dest)
        if (dest / "manifest.json").exists():
            raise RunStoreError(
                f"{dest}: a run already exists here; choose a new --out or remove it."
            )
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copytree(self.path / "artifacts", dest / "artifacts", dirs_exist_ok=True)
        if (self.path / "transcripts").is_dir():
            shutil.copytree(self.path / "transcripts", dest / "transcripts", dirs_exist_ok=True)
        shutil.copy2(self.path / "cells.parquet", dest / "cells.parquet")
        manifest = {**self.manifest, **(amend or {})}
        _atomic_write(
            dest / "manifest.json", (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
        )
        return RunDir(dest)

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
    @property
    def journal_path(self) -> Path:
        return self.path / "verdicts.journal"

    def append(self, rows: list[dict[str, Any]], timings: list[dict[str, Any]]) -> None:
        """Append verdict rows durably (one JSON line each, fsynced); a torn last line is ignored on read."""
        lines = "".join(
            json.dumps({"verdict": r, "timing": t}, sort_keys=True) + "\n"
            for r, t in zip(rows, timings, strict=True)
        )
        with open(self.journal_path, "a", encoding="utf-8") as handle:
            handle.write(lines)
            handle.flush()
            os.fsync(handle.fileno())

    def _journal(self) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
        """Journal rows in order; a torn last line is skipped, any other bad line is an error."""
        if not self.journal_path.exists():
            return
        with open(self.journal_path, "rb") as handle:
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
        path = self.path / "verdicts.parquet"
        if path.exists():
            for row in _read_parquet(path, VERDICTS_SCHEMA).to_pylist():
                rows[tuple(row[k] for k in VERDICT_KEY)] = row
        for row, _ in self._journal():
            rows.setdefault(tuple(row[k] for k in VERDICT_KEY), row)
        ordered = [rows[k] for k in sorted(rows)]
        return pa.Table.from_pylist(ordered, schema=VERDICTS_SCHEMA)

    def timings(self) -> pa.Table:
        rows: dict[tuple[Any, ...], dict[str, Any]] = {}
        path = self.path / "timings.parquet"
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
        _write_parquet(self.path / "verdicts.parquet", verdicts)
        _write_parquet(self.path / "timings.parquet", timings)
        self.journal_path.unlink(missing_ok=True)

    # -- the sweep lock ------------------------------------------------------------------------
    @contextmanager
    def lock(self) -> Iterator[None]:
        """Exclusive writer lock; a stale lock (its process gone) is taken over."""
        path = self.path / "sweep.lock"
        while True:
            try:
                fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
                break
            except FileExistsError:
                try:
                    holder = int(path.read_text().strip() or "0")
                except (OSError, ValueError):
                    holder = 0
                if holder and _alive(holder):
                    raise RunStoreError(
                        f"{path}: another sweep (pid {holder}) is writing to this run; wait for it or stop it."
                    ) from None
                path.unlink(missing_ok=True)
        try:
            os.write(fd, str(os.getpid()).encode())
            os.close(fd)
            yield
        finally:
            path.unlink(missing_ok=True)


def _json_columns(schema: pa.Schema) -> tuple[tuple[str, tuple[type, ...], bool], ...]:
    """(name, Python types JSON gives it, may be null) per column; the key columns never are null."""
    json_of = {pa.string(): (str,), pa.int64(): (int,), pa.float64(): (int, float)}
    return tuple((f.name, json_of[f.type], f.name not in VERDICT_KEY) for f in schema)


JOURNAL_PARTS = {"verdict": _json_columns(VERDICTS_SCHEMA), "timing": _json_columns(TIMINGS_SCHEMA)}


def _journal_problem(entry: object) -> str | None:
    """What keeps a journal line from being a (verdict row, timing row) pair; None when it is one.

    Types are compared exactly (type(x) in ...), so a boolean is no integer; a journal is read
    whole on every resume, so this stays a few comparisons per field.
    """
    if not isinstance(entry, dict) or set(entry) != {"verdict", "timing"}:
        return "expected an object with 'verdict' and 'timing'"
    for part, columns in JOURNAL_PARTS.items():
        row = entry[part]
        if not isinstance(row, dict):
            return f"{part}: {_json_kind(row)}, not an object"
        for name, kinds, nullable in columns:
            if name not in row:
                if name in OPTIONAL_COLUMNS:  # a row journalled before the column existed
                    continue
                return f"{part}: no '{name}'"
            value = row[name]
            if type(value) not in kinds and not (value is None and nullable):
                return f"{part}: '{name}' is {_json_kind(value)}"
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


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
    engine: str = "duckdb",
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
        config={
            "schedules": None,
            "statement_timeout": limits.statement_timeout,
            "memory_limit": limits.memory_limit,
            "replay_timeout": limits.replay_timeout,
            "max_script_bytes": limits.max_script_bytes,
            **(config or {}),
        },
        cells=cells,
        artifacts=artifacts,
        arm_info=arm_info,
        seed_commitment=seed_commitment,
        suite_dirs=[str(d) for d in user_suite_dirs()],
    )
