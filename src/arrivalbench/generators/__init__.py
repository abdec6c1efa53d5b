"""Logical log generators: one module per archetype, one registry, one entry point `make_log`.

A generator turns (params, seed) into column arrays; `make_log` gives every event a unique id that
is unrelated to its time, keeps the columns the task declares, casts them to the declared types and
sorts the log canonically (event time, ties by event id). Arrival is never part of a log.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
from pydantic import BaseModel, ValidationError

from arrivalbench.errors import UnknownNameError
from arrivalbench.seeds import rng
from arrivalbench.sqltypes import arrow_type

if TYPE_CHECKING:
    from arrivalbench.spec import SourceSpec

EVOLVING_NULL_SHARE = 0.4
"""Share of the log (earliest events) in which an evolving column is still NULL."""


@dataclass(frozen=True)
class Generator:
    kind: str
    params: type[BaseModel]
    columns: Callable[[BaseModel], dict[str, str]]
    """Columns the generator can produce for these params, with DuckDB types."""
    build: Callable[[BaseModel, np.random.Generator], dict[str, pa.Array]]
    """Column arrays for n events, excluding event_id (assigned by make_log)."""
    finish: Callable[[BaseModel, dict[str, pa.Array]], dict[str, pa.Array]] | None = None
    """Optional pass over the columns in canonical order (event_id included), for order-derived fields."""


_REGISTRY: dict[str, Generator] = {}


def register(generator: Generator) -> Generator:
    _REGISTRY[generator.kind] = generator
    return generator


def get_generator(kind: str) -> Generator:
    if kind not in _REGISTRY:
        raise UnknownNameError("generator kind", kind, _REGISTRY)
    return _REGISTRY[kind]


def generator_kinds() -> list[str]:
    return sorted(_REGISTRY)


_BOUNDS = ("ge", "gt", "le", "lt", "min_length", "max_length", "pattern")


def _type_name(annotation: object) -> str:
    if isinstance(annotation, type) and not getattr(annotation, "__args__", None):
        return annotation.__name__
    return str(annotation).replace("typing.", "")


def describe_generator(kind: str) -> dict[str, Any]:
    """What a generator declares, for `arrivalbench generators`: the columns it produces at its
    default params (event_id included, with DuckDB types) and each param's type, default and
    bounds, read from its params model."""
    generator = get_generator(kind)
    parameters = []
    for name, field in generator.params.model_fields.items():
        bounds = {
            bound: getattr(meta, bound)
            for meta in field.metadata
            for bound in _BOUNDS
            if getattr(meta, bound, None) is not None
        }
        required = field.is_required()
        parameters.append(
            {
                "name": name,
                "type": _type_name(field.annotation),
                "default": None if required else field.get_default(call_default_factory=True),
                "required": required,
                "bounds": bounds,
            }
        )
    columns = {"event_id": "BIGINT"} | generator.columns(generator.params())
    return {"kind": kind, "columns": columns, "parameters": parameters}


def _params(source: SourceSpec) -> BaseModel:
    generator = get_generator(source.generator.kind)
    try:
        return generator.params.model_validate(source.generator.params)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(
            f"param '{where}': {first['msg']} (found {first.get('input')!r})"
        ) from None


def validate_generator(source: SourceSpec) -> None:
    """Raise ValueError when the generator is unknown, its params are wrong, or it lacks a declared column."""
    generator = get_generator(source.generator.kind)
    produced = generator.columns(_params(source)) | {"event_id": "BIGINT"}
    missing = [c for c in source.columns if c not in produced]
    if missing:
        raise ValueError(
            f"generator '{generator.kind}' does not produce {missing}; it produces {sorted(produced)}"
        )


ID_BLOCK = 100_000_000
"""Event ids of the i-th source of a task start at 100_000 + i * ID_BLOCK, so they never collide."""


def make_log(source: SourceSpec, seed: int, index: int = 0) -> pa.Table:
    """The logical log of one source: unique event ids, declared columns and types, canonical order."""
    generator = get_generator(source.generator.kind)
    params = _params(source)
    random = rng("log", source.name, seed)
    columns = generator.build(params, random)
    n = len(columns["ts_event"])
    event_ids = 100_000 + index * ID_BLOCK + random.permutation(n).astype(np.int64) + 1
    ts = columns["ts_event"].cast(pa.int64()).to_numpy()
    order = np.lexsort((event_ids, ts))
    indices = pa.array(order)
    ordered = {"event_id": pa.array(event_ids[order], pa.int64())}
    ordered.update({name: col.take(indices) for name, col in columns.items()})
    if generator.finish is not None:
        ordered = generator.finish(params, ordered)
    arrays = {name: ordered[name].cast(arrow_type(t)) for name, t in source.columns.items()}
    if source.evolving_column:
        cut = int(n * EVOLVING_NULL_SHARE)
        col = arrays[source.evolving_column]
        mask = pa.array(np.arange(n) < cut)
        arrays[source.evolving_column] = pa.compute.if_else(mask, pa.scalar(None, col.type), col)
    return pa.table(arrays)


def timestamps(random: np.random.Generator, n: int, start: str, days: int) -> np.ndarray:
    """n event times in microseconds, whole seconds, uniform over `days` days from `start`."""
    origin = np.datetime64(start, "us").astype(np.int64)
    seconds = random.integers(0, days * 86_400, size=n)
    return origin + seconds.astype(np.int64) * 1_000_000


def round_down(micros: np.ndarray, start: str, grain_seconds: int) -> np.ndarray:
    """Event times rounded down to a multiple of `grain_seconds` counted from `start` (1: unchanged)."""
    if grain_seconds == 1:
        return micros
    origin = np.datetime64(start, "us").astype(np.int64)
    grain = grain_seconds * 1_000_000
    return origin + (micros - origin) // grain * grain


def cents_to_decimal(cents: np.ndarray) -> pa.Array:
    """Integer cents as DECIMAL(18,2), exactly: the unscaled 128-bit values are the cents themselves."""
    low = np.asarray(cents, dtype=np.int64)
    words = np.empty((len(low), 2), dtype="<i8")
    words[:, 0] = low
    words[:, 1] = np.where(low < 0, -1, 0)  # sign extension into the high word
    return pa.Array.from_buffers(
        pa.decimal128(18, 2), len(low), [None, pa.py_buffer(words.tobytes())]
    )


def ts_array(micros: np.ndarray) -> pa.Array:
    return pa.array(micros.astype(np.int64), pa.int64()).cast(pa.timestamp("us"))


def _load_archetypes() -> None:
    """Import every module of this package: each registers its generator when imported."""
    import importlib
    import pkgutil

    for module in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{module.name}")


_load_archetypes()
