"""Schedule files: a schedule as plain JSON (event ids, not row positions) and back.

A schedule of a private log writes no seed that rebuilds the hidden log: the file names the
secret's commitment instead, and reading it back needs the seed file. `schedules` re-exports
`schedule_to_json`, `schedule_from_json` and `load_schedule_file`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError

from arrivalbench.errors import ScheduleError, UnknownNameError
from arrivalbench.logs import Log, log_from_seed, log_seed
from arrivalbench.schedules import (
    SCHEDULE_FORMAT,
    Crash,
    Delivery,
    Schedule,
    get_kind,
)
from arrivalbench.seeds import SEED_RANGE, PrivateSeed, is_seed
from arrivalbench.spec import Task


def schedule_to_json(schedule: Schedule, log: Log) -> dict[str, object]:
    """Plain JSON: deliveries name event ids, so the file reads without the harness.

    A schedule of a private log writes `log.seed` as null and adds `seed_commitment`: the file
    never carries what rebuilds the hidden log. A public schedule's JSON is unchanged.
    """
    ids = log.event_ids()
    private = schedule.seed_commitment is not None
    data: dict[str, object] = {
        "format": SCHEDULE_FORMAT,
        "name": schedule.name,
        "task": schedule.task_id,
        "seed": schedule.seed,
        "log": {
            "kind": schedule.log_kind,
            "seed": None if private else schedule.log_seed,
            "fingerprint": schedule.log_fingerprint,
        },
        **({"seed_commitment": schedule.seed_commitment} if private else {}),
        **({"partial": True} if schedule.partial else {}),
        "source": schedule.source,
        "perturbation": dict(schedule.perturbation),
        "deliveries": [
            {
                "batch_id": d.batch_id,
                "event_ids": [int(ids[row]) for row in d.rows],
                "crash": {"slot": d.crash.slot, "of": d.crash.of} if d.crash else None,
                "omit_columns": list(d.omit_columns),
                "add_synthetic": d.add_synthetic,
            }
            for d in schedule.deliveries
        ],
    }
    return data


def _seed_in_range(value: int) -> int:
    if not is_seed(value):
        raise ValueError(f"a seed is {SEED_RANGE}")
    return value


class _FileModel(BaseModel):
    """What a schedule file may hold: exact JSON types, no unknown fields (a typo is not ignored)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class _CrashFile(_FileModel):
    slot: int
    of: int


class _DeliveryFile(_FileModel):
    batch_id: int
    event_ids: list[int]
    crash: _CrashFile | None = None
    omit_columns: list[str] = []
    add_synthetic: bool = False


class _LogFile(_FileModel):
    kind: Literal["visible", "hidden"]
    seed: Annotated[int, AfterValidator(_seed_in_range)] | None
    """None in the file of a private schedule, whose log seed is never written."""
    fingerprint: str


class _ScheduleFile(_FileModel):
    format: int
    name: str
    task: str
    seed: Annotated[int, AfterValidator(_seed_in_range)]
    log: _LogFile
    seed_commitment: Annotated[str, Field(pattern="^[0-9a-f]{64}$")] | None = None
    partial: bool = False
    source: str
    perturbation: dict[str, int] = {}
    deliveries: list[_DeliveryFile]


def _parse_file(data: object, where: str) -> _ScheduleFile:
    """The file's fields, typed; a ScheduleError names the first field that is wrong."""
    if not isinstance(data, dict) or data.get("format") != SCHEDULE_FORMAT:
        raise ScheduleError(f"{where}: not a schedule file of format {SCHEDULE_FORMAT}.")
    try:
        return _ScheduleFile.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        field = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in first["loc"])
        found = "" if first["type"] == "missing" else f" (found {json.dumps(first['input'])[:40]})"
        raise ScheduleError(
            f"{where}: malformed schedule: {field.lstrip('.')}: "
            f"{first['msg'].removeprefix('Value error, ')}{found}; "
            "rebuild the file with 'arrivalbench schedule'."
        ) from None


def schedule_from_json(
    data: object, task: Task, where: str = "schedule file", private: PrivateSeed | None = None
) -> tuple[Schedule, Log]:
    """Rebuild a schedule (and its log) from schedule_to_json's output; refuse a file for another log.

    A file naming a seed commitment needs the private seed with that commitment: its log is
    rebuilt from the secret, never from the file.
    """
    parsed = _parse_file(data, where)
    if parsed.task != task.id:
        raise ScheduleError(f"{where}: built for task '{parsed.task}', not '{task.id}'.")
    try:
        kind = get_kind(parsed.name)
    except UnknownNameError as exc:
        raise ScheduleError(f"{where}: {exc}") from None
    if parsed.log.kind != kind.log_kind:
        raise ScheduleError(
            f"{where}: schedule '{kind.name}' delivers the {kind.log_kind} log, but the file names the "
            f"{parsed.log.kind} log."
        )
    commitment = parsed.seed_commitment
    if commitment is None:
        if parsed.log.seed is None:
            raise ScheduleError(
                f"{where}: malformed schedule: log.seed is null without a seed_commitment; "
                "rebuild the file with 'arrivalbench schedule'."
            )
        seed_of_log = parsed.log.seed
        whose = f"seed {seed_of_log}"
    else:
        if parsed.log.seed is not None:
            raise ScheduleError(
                f"{where}: malformed schedule: log.seed must be null in the file of a private "
                "schedule (it names a seed_commitment); rebuild the file with 'arrivalbench schedule'."
            )
        _check_secret(where, commitment, private)
        assert private is not None
        seed_of_log = log_seed(task.id, parsed.log.kind, private.seed)
        whose = f"the private seed {private.short}"
    log = log_from_seed(task, parsed.log.kind, seed_of_log)
    if log.fingerprint() != parsed.log.fingerprint:
        raise ScheduleError(
            f"{where}: its log fingerprint differs from the log this harness generates for "
            f"{whose} (another harness or task version); rebuild it with 'arrivalbench schedule'."
        )
    if parsed.source != log.source.name:
        raise ScheduleError(
            f"{where}: source '{parsed.source}', but this task's primary source is "
            f"'{log.source.name}'; rebuild the file with 'arrivalbench schedule'."
        )
    position = {int(e): i for i, e in enumerate(log.event_ids())}
    columns = {f"{src.name}.{c}" for src in log.sources for c in src.columns}
    previous = 0
    for i, d in enumerate(parsed.deliveries):
        at = f"{where}: deliveries[{i}] (batch {d.batch_id})"
        if d.batch_id <= previous:
            problem = f"is not above batch {previous}" if previous else "is not positive"
            raise ScheduleError(
                f"{at}: batch id {problem}; batch ids are positive and increase from one delivery to "
                "the next, without repeats (a redelivery after a crash is the same delivery)."
            )
        previous = d.batch_id
        if any(c not in columns for c in d.omit_columns):
            raise ScheduleError(
                f"{at}: omit_columns must list 'source.column' entries of this task "
                f"({', '.join(sorted(columns))}); found {d.omit_columns!r}."
            )
        if d.crash and not 0 <= d.crash.slot < d.crash.of:
            raise ScheduleError(f"{at}: crash needs 0 <= slot < of; found {d.crash.model_dump()}.")
        unknown = next((e for e in d.event_ids if e not in position), None)
        if unknown is not None:
            raise ScheduleError(
                f"{at}: malformed schedule: event {unknown} is not in the {log.kind} log of "
                f"{whose}; rebuild the file with 'arrivalbench schedule'."
            )
    deliveries = tuple(
        Delivery(
            batch_id=d.batch_id,
            rows=tuple(position[e] for e in d.event_ids),
            crash=Crash(d.crash.slot, d.crash.of) if d.crash else None,
            omit_columns=tuple(d.omit_columns),
            add_synthetic=d.add_synthetic,
        )
        for d in parsed.deliveries
    )
    undelivered = log.n - len({row for d in deliveries for row in d.rows})
    if not deliveries:
        raise ScheduleError(f"{where}: delivers nothing; a schedule needs at least one delivery.")
    if undelivered and not parsed.partial:
        raise ScheduleError(
            f"{where}: {undelivered} events of the log are never delivered; every schedule must deliver "
            "every event at least once, or the final table cannot equal the oracle's (a shrunk "
            'counterexample says "partial": true, and is graded against the events it delivers).'
        )
    schedule = Schedule(
        name=parsed.name,
        task_id=task.id,
        seed=parsed.seed,
        log_kind=parsed.log.kind,
        log_seed=seed_of_log,
        log_fingerprint=parsed.log.fingerprint,
        source=parsed.source,
        deliveries=deliveries,
        perturbation=dict(parsed.perturbation),
        seed_commitment=commitment,
        partial=parsed.partial,
    )
    return schedule, log


def _check_secret(where: str, commitment: str, private: PrivateSeed | None) -> None:
    """A private schedule file replays only with the seed file of the secret it commits to."""
    if private is None:
        raise ScheduleError(
            f"{where}: built from a private seed (commitment {commitment[:12]}…); pass its seed "
            "file with --seed-file FILE (or set ARRIVALBENCH_SEED_FILE)."
        )
    if private.commitment != commitment:
        raise ScheduleError(
            f"{where}: built from the private seed with commitment {commitment[:12]}…, but "
            f"{private.path} holds another secret ({private.short}); pass the seed file it was "
            "built with."
        )


def load_schedule_file(
    path: str, task: Task, private: PrivateSeed | None = None
) -> tuple[Schedule, Log]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScheduleError(
            f"{path}: cannot read schedule file ({getattr(exc, 'strerror', None) or exc})."
        ) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScheduleError(f"{path}: not JSON (line {exc.lineno}: {exc.msg}).") from None
    return schedule_from_json(data, task, where=path, private=private)
