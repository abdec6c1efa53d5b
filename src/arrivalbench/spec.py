"""Task spec models and the suite loader: a task is a folder of data, validated by one versioned schema."""

from __future__ import annotations

import difflib
import hashlib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Literal

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

from arrivalbench.errors import SpecError, UnknownNameError
from arrivalbench.sqltypes import SUPPORTED, is_float, is_supported, normalise

SUITE_DIR = Path(__file__).parent / "suite"
HAZARDS: tuple[str, ...] = (
    "late_arrival",
    "out_of_order",
    "duplicate_delivery",
    "crash_retry",
    "backfill",
    "schema_evolution",
)
Hazard = Literal[
    "late_arrival",
    "out_of_order",
    "duplicate_delivery",
    "crash_retry",
    "backfill",
    "schema_evolution",
]
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


class TaskSpec(_Strict):
    schema_version: Literal[1] = 1
    id: Identifier
    title: str = Field(min_length=1)
    mode: Literal["create", "modify", "repair"]
    difficulty: Literal["easy", "medium", "hard"]
    difficulty_reason: str = ""
    scenario: Identifier
    description: str = Field(min_length=1)
    sources: list[SourceSpec] = Field(min_length=1)
    """One stream per source, each delivered as `<name>_batch`; a single `source:` in YAML is a list of one."""
    target: TargetSpec
    hazards: list[Hazard]
    controls: list[ControlSpec] = Field(default_factory=list)

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
        if ("schema_evolution" in self.hazards) != bool(evolving):
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
            undeclared = set(control.fails) - declared
            if undeclared:
                raise ValueError(
                    f"control {control.file} fails {sorted(undeclared)}, not declared by the task "
                    f"(declared: {sorted(declared)})"
                )
        return controls


@dataclass(frozen=True)
class Task:
    """A loaded task: its spec and the SQL files beside it."""

    spec: TaskSpec
    folder: Path
    oracle_sql: str
    gold_sql: str
    controls: dict[str, str]
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


@cache
def _suite(suite_dir: Path) -> dict[str, Task]:
    tasks = {}
    for folder in sorted(p for p in suite_dir.iterdir() if (p / "task.yaml").is_file()):
        task = _task(folder)
        tasks[task.id] = task
    return tasks


def load_suite(suite_dir: Path = SUITE_DIR) -> dict[str, Task]:
    """All tasks of a suite folder, by id, in name order."""
    return _suite(Path(suite_dir).resolve())


def get_task(task_id: str, suite_dir: Path = SUITE_DIR) -> Task:
    """One task by id; loads only that folder, so a broken neighbour does not block it."""
    suite_dir = Path(suite_dir).resolve()
    folder = suite_dir / task_id
    if not (folder / "task.yaml").is_file() or not task_id.isidentifier():
        known = [p.name for p in suite_dir.iterdir() if (p / "task.yaml").is_file()]
        raise UnknownNameError("task", task_id, known, hint=" List them with: arrivalbench tasks")
    return _task(folder)


@cache
def _task(folder: Path) -> Task:
    return load_task(folder)


def suite_hash(suite_dir: Path = SUITE_DIR) -> str:
    """One hash over every task folder's content hash, in name order (files as they are on disk)."""
    digest = hashlib.sha256()
    for folder in sorted(p for p in Path(suite_dir).iterdir() if (p / "task.yaml").is_file()):
        digest.update(f"{folder.name}:{folder_hash(folder)}\n".encode())
    return digest.hexdigest()
