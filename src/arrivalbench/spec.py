"""Task spec models and the suite loader: a task is a folder of data, validated by one versioned schema.

Tasks are looked up on the suite path: the built-in suite, then the user's own folders of task
folders (`--suite-dir`, repeatable, then the colon-separated ARRIVALBENCH_SUITE_PATH). A task id is
unique across the path; one found in two folders is an error naming both, never a silent shadow.
Looking up one task loads only its folder, so a broken neighbour never blocks it. Only this module
reads the path, and code that runs elsewhere (pool workers, Ray tasks) is given it explicitly.
"""

from __future__ import annotations

import difflib
import hashlib
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Literal, get_args

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from arrivalbench.errors import SpecError, UnknownNameError, UsageError
from arrivalbench.hazards import HAZARDS
from arrivalbench.hazards import LOUD as LOUD
from arrivalbench.hazards import REGISTRY as ROLES
from arrivalbench.seeds import SEED_RANGE, gate_seeds, is_seed
from arrivalbench.sqltypes import SUPPORTED, is_float, is_supported, normalise

SUITE_DIR = Path(__file__).parent / "suite"
Hazard = Literal[
    "late_arrival",
    "out_of_order",
    "duplicate_delivery",
    "crash_retry",
    "backfill",
    "schema_evolution",
]
"""A declarable hazard's name (hazards.HAZARDS, spelt out for the type checker)."""
assert get_args(Hazard) == HAZARDS, "spec.Hazard must list hazards.HAZARDS"
Identifier = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]*$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _check_types(columns: dict[str, str]) -> dict[str, str]:
    for name, type_name in columns.items():
        if not is_supported(type_name):
            raise ValueError(f"column {name!r} has type {type_name!r}; supported: {SUPPORTED}")
    return {name: normalise(t) for name, t in columns.items()}


class GeneratorSpec(_Strict):
    kind: str
    params: dict[str, object] = Field(default_factory=dict)


class SourceSpec(_Strict):
    """One source stream: what the generator produces and how deliveries of it are shaped."""

    name: Identifier
    columns: dict[str, str]
    generator: GeneratorSpec
    entity_key: str | None = Field(
        default=None, description="column whose successive events change one entity's state"
    )
    evolving_column: str | None = Field(
        default=None,
        description="payload column that is NULL early in the log and absent from early deliveries",
    )

    _types = field_validator("columns")(classmethod(lambda cls, v: _check_types(v)))

    @model_validator(mode="after")
    def _required_columns(self) -> SourceSpec:
        for col, typ in (("event_id", "BIGINT"), ("ts_event", "TIMESTAMP")):
            if self.columns.get(col) != typ:
                raise ValueError(
                    f"source must have column {col} {typ}; found {self.columns.get(col)!r}"
                )
        for field in ("entity_key", "evolving_column"):
            col = getattr(self, field)
            if col is not None and col not in self.columns:
                raise ValueError(
                    f"{field} {col!r} is not a source column ({', '.join(self.columns)})"
                )
        return self


class Tolerance(_Strict):
    """Two floats match when |a - b| <= max(abs, rel * max(|a|, |b|))."""

    abs: float = 0.0
    rel: float = 0.0


DEFAULT_FLOAT_TOLERANCE = Tolerance(abs=1e-9, rel=1e-9)


class TargetSpec(_Strict):
    name: Identifier
    columns: dict[str, str]
    key: list[str] = Field(min_length=1)
    tolerance: dict[str, Tolerance] = Field(default_factory=dict)

    _types = field_validator("columns")(classmethod(lambda cls, v: _check_types(v)))

    @field_validator("tolerance", mode="before")
    @classmethod
    def _number_means_abs(cls, v: object) -> object:
        if isinstance(v, dict):
            return {k: {"abs": t} if isinstance(t, int | float) else t for k, t in v.items()}
        return v

    @model_validator(mode="after")
    def _key_and_tolerance(self) -> TargetSpec:
        for col in self.key:
            if col not in self.columns:
                raise ValueError(
                    f"key column {col!r} is not a target column ({', '.join(self.columns)})"
                )
        for col in self.tolerance:
            if col not in self.columns:
                raise ValueError(f"tolerance for unknown column {col!r}")
            if not is_float(self.columns[col]):
                raise ValueError(
                    f"tolerance on {col!r} of type {self.columns[col]}: tolerances belong to float columns only"
                )
        return self

    def tolerance_for(self, column: str) -> Tolerance | None:
        """The tolerance of a float column (declared or the default), None for exact columns."""
        if not is_float(self.columns[column]):
            return None
        return self.tolerance.get(column, DEFAULT_FLOAT_TOLERANCE)


class ControlSpec(_Strict):
    file: str = Field(pattern=r"^controls/[A-Za-z0-9_\-]+\.sql$")
    fails: list[Hazard]
    fails_on: dict[Literal["sqlite", "postgres"], list[Hazard]] = Field(default_factory=dict)
    """Where the control legitimately behaves otherwise on another engine (a tie broken by
    that engine's own order, say): what it fails there. Absent: `fails`, as on DuckDB."""

    def fails_for(self, engine: str) -> list[Hazard]:
        return self.fails_on.get(engine, self.fails)  # type: ignore[call-overload]


class RuleSpec(_Strict):
    """A rule the description states, and a *rule control*: the gold with only that rule broken.

    The gate requires the control to FAIL some schedule, which shows the task's data exercises
    the rule. A rule control is not a negative control: it may fail the snapshot.
    """

    rule: str = Field(min_length=1)
    """The rule, quoted from the description (whitespace aside)."""
    control: str = Field(pattern=r"^controls/[A-Za-z0-9_\-]+\.sql$")


def _words(text: str) -> str:
    return " ".join(text.split())


class TaskSpec(_Strict):
    schema_version: Literal[1] = 1
    id: Identifier
    title: str = Field(min_length=1)
    mode: Literal["create", "modify", "repair"]
    difficulty: Literal["easy", "medium", "hard"]
    difficulty_reason: str = ""
    scenario: Identifier
    order_sensitive: bool = Field(
        strict=True,
        description="whether the target depends on the event-time order of events beyond which "
        "events exist (latest state, first seen, running balances, sessions, windows over time)",
    )
    description: str = Field(min_length=1)
    sources: list[SourceSpec] = Field(min_length=1)
    """One stream per source, each delivered as `<name>_batch`; a single `source:` in YAML is a list of one."""
    target: TargetSpec
    hazards: list[Hazard]
    controls: list[ControlSpec] = Field(default_factory=list)
    rules: list[RuleSpec] = Field(default_factory=list)
    """Stated rules of the description, each with a rule control (see RuleSpec)."""
    seeds: list[int] | None = Field(default=None, min_length=1)
    """Seed-scoped declarations: the gate seeds at which this task's hazard declarations hold
    (None: every gate seed). Runs at any other seed refuse the task."""

    @model_validator(mode="before")
    @classmethod
    def _one_source_is_a_list(cls, data: object) -> object:
        if isinstance(data, dict) and "source" in data:
            if "sources" in data:
                raise ValueError(
                    "give either 'source' (one stream) or 'sources' (a list), not both"
                )
            data = {**data, "sources": [data["source"]]}
            del data["source"]
        return data

    @property
    def source(self) -> SourceSpec:
        """The primary (first) source."""
        return self.sources[0]

    @model_validator(mode="after")
    def _consistent(self) -> TaskSpec:
        if len(set(self.hazards)) != len(self.hazards):
            raise ValueError(f"hazards listed twice: {self.hazards}")
        names = [s.name for s in self.sources]
        if len(set(names)) != len(names):
            raise ValueError(f"source names must be distinct; found {names}")
        evolving = [s.name for s in self.sources if s.evolving_column]
        if len(evolving) > 1:
            raise ValueError(f"at most one source may have an evolving_column; found {evolving}")
        needs_column = any(ROLES[h].needs_evolving_column for h in self.hazards)
        if needs_column != bool(evolving):
            raise ValueError(
                "schema_evolution is declared exactly when a source sets evolving_column"
            )
        return self

    @field_validator("controls")
    @classmethod
    def _controls_fail_declared_hazards(
        cls, controls: list[ControlSpec], info: ValidationInfo
    ) -> list[ControlSpec]:
        declared = set(info.data.get("hazards") or ())
        for control in controls:
            undeclared = set(control.fails).union(*control.fails_on.values()) - declared
            if undeclared:
                raise ValueError(
                    f"control {control.file} fails {sorted(undeclared)}, not declared by the task "
                    f"(declared: {sorted(declared)})"
                )
        return controls

    @field_validator("seeds")
    @classmethod
    def _seeds_are_seeds(cls, seeds: list[int] | None) -> list[int] | None:
        if seeds is not None:
            if any(not is_seed(s) for s in seeds):
                raise ValueError(f"seeds must each be {SEED_RANGE}; found {seeds}")
            if len(set(seeds)) != len(seeds):
                raise ValueError(f"seeds listed twice: {seeds}")
        return seeds

    @field_validator("rules")
    @classmethod
    def _rules_quote_the_text(cls, rules: list[RuleSpec], info: ValidationInfo) -> list[RuleSpec]:
        description = _words(info.data.get("description") or "")
        negative = {c.file for c in info.data.get("controls") or ()}
        seen: set[str] = set()
        for i, rule in enumerate(rules):
            if _words(rule.rule) not in description:
                raise ValueError(
                    f"rule {i} ({rule.rule!r}) is not a quote of the description; quote the "
                    "words of the description that state the rule"
                )
            if rule.control in negative:
                raise ValueError(
                    f"rule {i}'s control {rule.control} is also under 'controls'; a rule control "
                    "breaks a stated rule and may fail the snapshot, so give it its own file"
                )
            if rule.control in seen:
                raise ValueError(
                    f"rule {i}'s control {rule.control} is another rule's control too; a rule "
                    "control breaks exactly one rule"
                )
            seen.add(rule.control)
        return rules


@dataclass(frozen=True)
class Task:
    """A loaded task: its spec and the SQL files beside it."""

    spec: TaskSpec
    folder: Path
    oracle_sql: str
    gold_sql: str
    controls: dict[str, str]
    """Every control's text by file: the negative controls and the rule controls."""
    existing_sql: str | None

    @property
    def id(self) -> str:
        return self.spec.id

    @property
    def identity(self) -> str:
        """sha256 of the spec and oracle as loaded: a cache key that changes whenever the task does."""
        return hashlib.sha256(
            (self.spec.model_dump_json() + "\0" + self.oracle_sql).encode()
        ).hexdigest()

    def content_hash(self) -> str:
        """sha256 over every file of the task folder, so a result can be tied to exact task content."""
        return folder_hash(self.folder)

    def check_seed(self, seed: int, private: bool = False) -> None:
        """Refuse a run at a seed the task's seed-scoped declarations were not gated at.

        A task without `seeds:` holds at every gate seed and runs at any seed; one with `seeds:`
        was admitted only there (and never for a private seed's hidden logs).
        """
        scope = self.spec.seeds
        if scope is None or (seed in scope and not private):
            return
        where = "a private seed (--seed-file)" if private else f"seed {seed}"
        raise UsageError(
            f"task '{self.id}' is gated only at seeds {scope} (`seeds:` in {self.folder}/task.yaml): "
            f"its hazard declarations are not known to hold at {where}; run with --seed "
            f"{scope[0]}, or leave the task out (--tasks)."
        )


def folder_hash(folder: Path) -> str:
    """sha256 over the relative paths and bytes of every file under a folder, in path order."""
    digest = hashlib.sha256()
    for path in sorted(
        p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts
    ):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _model_at(loc: tuple[object, ...]) -> type[BaseModel] | None:
    """The spec model that owns a validation error's location, for "did you mean" on unknown fields."""
    names = [p for p in loc if isinstance(p, str)]
    models: dict[tuple[str, ...], type[BaseModel]] = {
        (): TaskSpec,
        ("sources",): SourceSpec,
        ("sources", "generator"): GeneratorSpec,
        ("target",): TargetSpec,
        ("controls",): ControlSpec,
        ("rules",): RuleSpec,
    }
    return models.get(tuple(names[:-1]))


def _format_validation(path: Path, error: ValidationError, single_source: bool) -> str:
    first = error.errors()[0]
    loc = tuple(first["loc"])
    if single_source and loc[:2] == ("sources", 0):
        loc = ("source", *loc[2:])
    where = ".".join(str(p) for p in loc) or "(top level)"
    found = first.get("input")
    found_text = repr(found) if not isinstance(found, dict) else "a mapping"
    if len(found_text) > 80:
        found_text = found_text[:77] + "..."
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    msg = first["msg"].removeprefix("Value error, ")
    if first["type"] == "extra_forbidden":
        model = _model_at(tuple(first["loc"]))
        known = sorted(model.model_fields) if model else []
        if model is TaskSpec:
            known = sorted({*known, "source"} - {"sources"})
        close = difflib.get_close_matches(str(loc[-1]), known, n=1)
        msg = (
            f"unknown field; did you mean '{close[0]}'?"
            if close
            else f"unknown field; known: {', '.join(known)}"
        )
        msg = msg.replace("did you mean", "Did you mean")
    elif first["type"] == "missing":
        return (
            f"{path}: field '{where}' is required but missing{more}. Fix the task spec and rerun."
        )
    return f"{path}: field '{where}': {msg}; found {found_text}{more}. Fix the task spec and rerun."


def _read_text(path: Path, what: str) -> str:
    if not path.is_file():
        raise SpecError(
            f"{path}: missing {what}. Every task folder needs it (see docs/architecture.md)."
        )
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise SpecError(f"{path}: {what} is not UTF-8 ({exc.reason} at byte {exc.start}).") from exc


def load_task(folder: Path) -> Task:
    """Load and validate one task folder; every defect raises SpecError naming the file and field."""
    from arrivalbench.generators import validate_generator

    folder = Path(folder)
    spec_path = folder / "task.yaml"
    raw_text = _read_text(spec_path, "task.yaml")
    try:
        raw = yaml.safe_load(raw_text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" line {mark.line + 1}" if mark else ""
        raise SpecError(
            f"{spec_path}:{where} is not valid YAML ({getattr(exc, 'problem', exc)})."
        ) from exc
    if not isinstance(raw, dict):
        raise SpecError(
            f"{spec_path}: expected a mapping of task fields, found {type(raw).__name__}."
        )
    try:
        spec = TaskSpec.model_validate(raw)
    except ValidationError as exc:
        raise SpecError(_format_validation(spec_path, exc, single_source="source" in raw)) from None
    if spec.id != folder.name:
        raise SpecError(
            f"{spec_path}: field 'id' is {spec.id!r} but the folder is {folder.name!r}; make them equal."
        )
    for i, source in enumerate(spec.sources):
        try:
            validate_generator(source)
        except (ValueError, UnknownNameError) as exc:
            field = "source" if len(spec.sources) == 1 else f"sources.{i}"
            raise SpecError(f"{spec_path}: field '{field}.generator': {exc}") from None
    controls = {c.file: _read_text(folder / c.file, f"control {c.file}") for c in spec.controls}
    controls |= {
        r.control: _read_text(folder / r.control, f"rule control {r.control}") for r in spec.rules
    }
    existing_path = folder / "existing.sql"
    if spec.mode in ("modify", "repair"):
        existing = _read_text(existing_path, "existing.sql (required for modify and repair tasks)")
    else:
        existing = existing_path.read_text(encoding="utf-8") if existing_path.is_file() else None
    return Task(
        spec=spec,
        folder=folder,
        oracle_sql=_read_text(folder / "oracle.sql", "oracle.sql"),
        gold_sql=_read_text(folder / "gold.sql", "gold.sql"),
        controls=controls,
        existing_sql=existing,
    )


# -- the suite path --------------------------------------------------------------------------------

SUITE_PATH_ENV = "ARRIVALBENCH_SUITE_PATH"
"""Colon-separated folders of task folders, added to the built-in suite after any --suite-dir."""

SuiteDirs = Sequence[str | Path] | None

_configured: tuple[Path, ...] | None = None


def env_suite_dirs() -> list[str]:
    """The entries of ARRIVALBENCH_SUITE_PATH as given (empty entries skipped), unchecked."""
    return [e for e in os.environ.get(SUITE_PATH_ENV, "").split(os.pathsep) if e.strip()]


@cache
def _checked(raw: str, origin: str) -> Path:
    """One user suite folder, resolved; a missing or empty one is one line that says what to pass."""
    path = Path(raw).expanduser()
    where = f"suite dir {raw} (from {origin})"
    if not path.exists():
        raise UsageError(
            f"{where}: no such folder; pass a folder that holds task folders (each with a task.yaml)."
        )
    if not path.is_dir():
        raise UsageError(f"{where}: not a folder; pass a folder that holds task folders.")
    if (path / "task.yaml").is_file():
        raise UsageError(
            f"{where} is itself a task folder; pass the folder that holds it: --suite-dir {path.parent}"
        )
    if not any((p / "task.yaml").is_file() for p in path.iterdir()):
        raise UsageError(
            f"{where} holds no task folder (a folder with a task.yaml); "
            f"create one with: arrivalbench new-task NAME --suite-dir {raw}"
        )
    return path.resolve()


def _validated(entries: Iterable[tuple[str, str]]) -> tuple[Path, ...]:
    builtin = SUITE_DIR.resolve()
    dirs: list[Path] = []
    for raw, origin in entries:
        path = _checked(str(raw), origin)
        if path != builtin and path not in dirs:
            dirs.append(path)
    return tuple(dirs)


def use_suite_dirs(flags: Iterable[str | Path] = ()) -> tuple[Path, ...]:
    """Make `flags`, then ARRIVALBENCH_SUITE_PATH, this process's user suite folders (the CLI's --suite-dir)."""
    global _configured
    _configured = _validated(
        [(str(f), "--suite-dir") for f in flags] + [(e, SUITE_PATH_ENV) for e in env_suite_dirs()]
    )
    return _configured


def user_suite_dirs(suite_dirs: SuiteDirs = None) -> tuple[Path, ...]:
    """The user's suite folders, resolved and checked: `suite_dirs` exactly when given, else the
    folders set by use_suite_dirs, else ARRIVALBENCH_SUITE_PATH. The built-in suite is never among them."""
    if isinstance(suite_dirs, str | Path):
        suite_dirs = [suite_dirs]  # one folder, not a sequence of characters
    if suite_dirs is not None:
        return _validated((str(d), "suite_dirs") for d in suite_dirs)
    if _configured is not None:
        return _configured
    return _validated((e, SUITE_PATH_ENV) for e in env_suite_dirs())


def suite_path(suite_dirs: SuiteDirs = None) -> tuple[Path, ...]:
    """Every folder tasks are looked up in: the built-in suite first, then the user's."""
    return (SUITE_DIR.resolve(), *user_suite_dirs(suite_dirs))


def _label(folder: Path) -> str:
    return f"{folder} (built-in)" if folder == SUITE_DIR.resolve() else str(folder)


def _homes(path: Sequence[Path]) -> dict[str, list[Path]]:
    """task id -> every task folder of that id on the path (more than one is a defect)."""
    found: dict[str, list[Path]] = {}
    for suite_dir in path:
        for folder in sorted(p for p in suite_dir.iterdir() if (p / "task.yaml").is_file()):
            found.setdefault(folder.name, []).append(folder)
    return found


def _one_home(task_id: str, folders: list[Path]) -> Path:
    if len(folders) > 1:
        where = " and ".join(_label(f.parent) for f in folders)
        raise SpecError(
            f"task '{task_id}' is defined in two suite folders: {where}; a task id must be unique "
            "across the built-in suite and every --suite-dir, so rename or remove one."
        )
    return folders[0]


def task_folders(suite_dirs: SuiteDirs = None) -> dict[str, Path]:
    """Every task folder on the suite path by id, in id order, without loading any of them."""
    homes = _homes(suite_path(suite_dirs))
    return {task_id: _one_home(task_id, homes[task_id]) for task_id in sorted(homes)}


def load_suite(suite_dirs: SuiteDirs = None) -> dict[str, Task]:
    """All tasks of the suite path (built-in plus user folders), by id, in id order."""
    return {task_id: _task(folder) for task_id, folder in task_folders(suite_dirs).items()}


def get_task(task_id: str, suite_dirs: SuiteDirs = None) -> Task:
    """One task by id; loads only that folder, so a broken neighbour does not block it."""
    path = suite_path(suite_dirs)
    folders = (
        [d / task_id for d in path if (d / task_id / "task.yaml").is_file()]
        if task_id.isidentifier()
        else []
    )
    if not folders:
        raise UnknownNameError(
            "task",
            task_id,
            _homes(path),
            hint=" List them with: arrivalbench tasks (a folder of your own tasks: --suite-dir DIR)",
        )
    return _task(_one_home(task_id, folders))


@cache
def _task(folder: Path) -> Task:
    return load_task(folder)


def suite_hash(suite_dirs: SuiteDirs = None) -> str:
    """One hash over the gate seeds and every task's content hash, in id order (files as they
    are on disk).

    Only ids and contents count, not which folder holds a task: with no user folders it is the
    built-in suite's hash, and each user task changes it as a built-in task would.
    """
    digest = hashlib.sha256()
    digest.update(f"gate_seeds:{gate_seeds()}\n".encode())
    for task_id, folder in task_folders(suite_dirs).items():
        digest.update(f"{task_id}:{folder_hash(folder)}\n".encode())
    return digest.hexdigest()
