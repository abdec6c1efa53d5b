"""`arrivalbench schedule`: one schedule of a task as JSON, to inspect or to replay."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from arrivalbench.cli.options import (
    DEFAULT_SEED,
    SeedFileOpt,
    SeedOpt,
    SuiteDirOpt,
    TaskOpt,
    secret,
)
from arrivalbench.cli.output import err
from arrivalbench.errors import PipelineInputError
from arrivalbench.terminal import text


def write_document(path: Path, document: str, what: str) -> None:
    """Write `document` to `path` whole (a temporary file, then a rename) or say why not."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tmp.write_text(document, encoding="utf-8")
        tmp.replace(path)
    except OSError as exc:
        raise PipelineInputError(f"{path}: cannot write the {what} ({exc.strerror}).") from None


def schedule(
    task: TaskOpt,
    schedule_name: Annotated[str, typer.Option("--schedule", "-s", help="Schedule name.")],
    seed: SeedOpt = DEFAULT_SEED,
    out_path: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the JSON here (default: stdout).")
    ] = None,
    seed_file: SeedFileOpt = None,
    suite_dir: SuiteDirOpt = None,
) -> None:
    """Build one schedule of a task and write it as JSON, to inspect or to replay with grade --schedule-file."""
    from arrivalbench.spec import get_task

    the_task = get_task(task)
    from arrivalbench.schedules import build_schedule, schedule_to_json

    built, log = build_schedule(the_task, schedule_name, seed, secret(seed_file))
    document = json.dumps(schedule_to_json(built, log), indent=1) + "\n"
    if out_path is None:
        sys.stdout.write(document)
        return
    write_document(out_path, document, "schedule")
    err.print(
        text(
            f"wrote {out_path}: {len(built.deliveries)} deliveries, {built.delivered_rows()} rows, "
            f"perturbation {dict(built.perturbation)}"
        )
    )
