"""The manifest of a run directory, validated by one pydantic model, and the run's limits.

A run directory is input, not truth: whoever hands one over may have written its manifest by
hand. So every field is checked here, in one place (types exact, numbers bounded, unknown fields
refused), and what the manifest says about limits is a request the harness may grant only in
one direction: a limit may be tightened below the harness's default, never loosened past it. A
looser limit takes an explicit flag of the command that grades (`--memory-limit` and friends),
and no flag passes the fixed ceilings of engines.CEILINGS. Limits go to and come from a
manifest's config only through `limits_config` and `run_limits`.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from arrivalbench.engines import CEILINGS, MIN_MEMORY_BYTES, Limits, memory_bytes
from arrivalbench.errors import UsageError
from arrivalbench.seeds import MAX_SEED, SEED_RANGE
from arrivalbench.store.errors import RunStoreError
from arrivalbench.store.names import ARM_NAME
from arrivalbench.store.tables import ROLES, _json_kind

RUN_FORMAT = 1
LIMIT_FIELDS = ("statement_timeout", "memory_limit", "replay_timeout", "max_script_bytes")
"""The Limits a manifest records in its config, by their Limits field (and flag) names."""

_STRICT = ConfigDict(strict=True, extra="forbid")
Seconds = Annotated[float, Field(gt=0)]


class Config(BaseModel):
    """`config`: what the run was made with. The limits are requests (see run_limits)."""

    model_config = _STRICT
    schedules: str | None = None
    statement_timeout: Annotated[float, Field(gt=0, le=CEILINGS["statement_timeout"])] = (
        Limits().statement_timeout
    )
    memory_limit: str = Limits().memory_limit
    replay_timeout: Annotated[float, Field(gt=0, le=CEILINGS["replay_timeout"])] = (
        Limits().replay_timeout
    )
    max_script_bytes: Annotated[int, Field(gt=0, le=CEILINGS["max_script_bytes"])] = (
        Limits().max_script_bytes
    )
    corpus: str | None = None
    generation: dict[str, Any] | None = None
    imported_from: str | dict[str, Any] | None = None
    reruns: list[dict[str, Any]] | None = None
    human: dict[str, Any] | None = None  # `arrivalbench human`: the study's plan, seconds per task

    @field_validator("memory_limit")
    @classmethod
    def _memory(cls, value: str) -> str:
        try:
            size = memory_bytes(value)
        except UsageError:
            raise ValueError("not a size") from None
        if not MIN_MEMORY_BYTES <= size <= CEILINGS["memory_limit"]:
            raise ValueError("out of bounds")
        return value


class ArmInfo(BaseModel):
    """One arm's entry in `arm_info`; generated arms add model, prompt and turns."""

    model_config = ConfigDict(strict=True, extra="allow")
    role: str | None = None
    run: Annotated[int, Field(ge=1)] = 1

    @field_validator("role")
    @classmethod
    def _role(cls, value: str | None) -> str | None:
        if value is not None and value not in ROLES:
            raise ValueError("not a role")
        return value


class Manifest(BaseModel):
    """Every field of manifest.json (run format 1)."""

    model_config = _STRICT
    format: Literal[1]
    harness_version: str
    engine: str
    engine_version: str
    suite_hash: str
    task_hashes: dict[str, str]
    base_seed: Annotated[int, Field(ge=0, le=MAX_SEED)]
    seed_commitment: Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")] | None = None
    regraded_from: dict[str, str | None] | None = None
    suite_dirs: list[str] = []
    arms: list[Annotated[str, Field(pattern=f"^{ARM_NAME.pattern}$")]]
    arm_info: dict[str, ArmInfo] = {}
    config: Config
    created_at: str
    gated_seeds: list[int] = []
    seed_gated: bool = False


_EXPECTED = {
    "harness_version": "a string",
    "engine": "a string",
    "engine_version": "a string",
    "suite_hash": "a string",
    "task_hashes": "an object of task id to content hash",
    "task_hashes.*": "a string",
    "base_seed": f"a seed ({SEED_RANGE})",
    "seed_commitment": "the 64 hex digits of a sha256",
    "regraded_from": "an object naming the run it was re-graded from",
    "regraded_from.*": "a string",
    "suite_dirs": "a list of folders",
    "suite_dirs.*": "a folder",
    "arms": "a list of arm names",
    "arms.*": "an arm name",
    "arm_info": "an object of arm to its model and prompt",
    "arm_info.*": "an object",
    "arm_info.*.role": f"one of {', '.join(ROLES)}",
    "arm_info.*.run": "a run index from 1",
    "config": "an object",
    "config.schedules": "null, 'all' or a comma list of schedule names",
    "config.statement_timeout": f"a number of seconds up to {CEILINGS['statement_timeout']:g}",
    "config.memory_limit": "a string such as '1GB', from 64MB to 256GB",
    "config.replay_timeout": f"a number of seconds up to {CEILINGS['replay_timeout']:g}",
    "config.max_script_bytes": f"an integer up to {CEILINGS['max_script_bytes']}",
    "created_at": "a string",
    "gated_seeds": "a list of seeds",
    "gated_seeds.*": "a seed",
    "seed_gated": "a boolean",
}
_COLLECTIONS = {"task_hashes", "regraded_from", "suite_dirs", "arms", "arm_info", "gated_seeds"}
_BOUNDS = {"greater_than", "greater_than_equal", "less_than", "less_than_equal"}


def _where(loc: tuple[int | str, ...]) -> tuple[str, str]:
    """('arms[1]', 'arms.*'): the field as a message names it, and its key in _EXPECTED."""
    shown, key = "", ""
    for i, part in enumerate(loc):
        if isinstance(part, int):
            shown += f"[{part}]"
        else:
            shown += f".{part}" if shown else str(part)
        key += ("." if key else "") + ("*" if i == 1 and loc[0] in _COLLECTIONS else str(part))
    return shown, key


def manifest_problem(data: object) -> str | None:
    """What is wrong with a manifest's content, naming the field; None when it can be used."""
    if not isinstance(data, dict):
        return f"holds {_json_kind(data)}, not a JSON object"
    if "format" not in data:
        return "field 'format' is missing"
    if type(data["format"]) is not int or data["format"] != RUN_FORMAT:
        return f"run format {json.dumps(data['format'])}, this harness reads {RUN_FORMAT}"
    try:
        Manifest.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        shown, key = _where(tuple(error["loc"]))
        if error["type"] == "missing":
            return f"field '{shown}' is missing"
        if error["type"] == "extra_forbidden":
            return f"field '{shown}' is not a field of run format {RUN_FORMAT}"
        value = error["input"]
        expected = _EXPECTED.get(key, "another value")
        if error["type"] in _BOUNDS:
            return f"field '{shown}' is {value}, expected {expected}"
        return f"field '{shown}' is {_json_kind(value)}, expected {expected}"
    return None


def limits_config(limits: Limits) -> dict[str, Any]:
    """The limits as a manifest's config (and the verdict cache's key) records them."""
    return {name: getattr(limits, name) for name in LIMIT_FIELDS}


def limits_flags(limits: Limits) -> str:
    """The grade flags that give these limits, for each one that is not the default."""
    default = Limits()
    flags = ""
    for name in LIMIT_FIELDS:
        value = getattr(limits, name)
        if value != getattr(default, name):
            shown = f"{value:g}" if isinstance(value, float) else str(value)
            flags += f" --{name.replace('_', '-')} {shown}"
    return flags


def _looser(name: str, value: Any, default: Any) -> bool:
    if name == "memory_limit":
        return memory_bytes(value) > memory_bytes(default)
    return bool(value > default)


def run_limits(
    config: dict[str, Any], where: str, overrides: dict[str, Any] | None = None
) -> Limits:
    """The limits a stored run is graded under: the manifest's where they are no looser than the
    harness's defaults, the caller's `overrides` (explicit flags, None: not given) above both.

    A manifest asking for more than a default is refused with one line naming the flag that
    grants it; `config` must have passed manifest_problem.
    """
    default = Limits()
    chosen: dict[str, Any] = {}
    for name in LIMIT_FIELDS:
        given = (overrides or {}).get(name)
        if given is not None:
            chosen[name] = given
            continue
        value = config.get(name, getattr(default, name))
        if _looser(name, value, getattr(default, name)):
            flag = "--" + name.replace("_", "-")
            grant = (
                f"grade it with {flag} {value} to grant that explicitly"
                if name != "max_script_bytes"
                else "make the run again with this harness"
            )
            raise RunStoreError(
                f"{where}: config.{name} {value} is looser than the harness's "
                f"{getattr(default, name)}, and a run directory may only tighten limits; "
                f"{grant}, or restore the manifest."
            )
        chosen[name] = value
    try:
        return Limits(
            statement_timeout=float(chosen["statement_timeout"]),
            memory_limit=str(chosen["memory_limit"]),
            replay_timeout=float(chosen["replay_timeout"]),
            max_script_bytes=int(chosen["max_script_bytes"]),
        )
    except UsageError as exc:
        raise RunStoreError(f"{where}: {exc}") from None
