"""`arrivalbench explain`: a FAIL shrunk to its smallest failing delivery, with its first
diverging batch and the mistake it shows."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from arrivalbench.cli.options import (
    DEFAULT_ENGINE,
    DEFAULT_LIMITS,
    DEFAULT_SEED,
    EngineOpt,
    PipelineOpt,
    SeedFileOpt,
    SeedOpt,
    SuiteDirOpt,
    TaskOpt,
    at_least,
    json_option,
    positive_seconds,
    read_pipeline,
    secret,
    suite_dir_of,
)
from arrivalbench.cli.output import out
from arrivalbench.cli.schedule import write_document


def explain(
    task: TaskOpt,
    pipeline: PipelineOpt,
    schedule_name: Annotated[
        str,
        typer.Option(
            "--schedule",
            "-s",
            help="The failing schedule: a name, or a file written by 'arrivalbench schedule' "
            "(or by explain --out).",
        ),
    ],
    seed: SeedOpt = DEFAULT_SEED,
    as_json: Annotated[bool, json_option("Print one JSON object.")] = False,
    out_path: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Write the minimal schedule here, to replay with grade --schedule-file.",
        ),
    ] = None,
    budget_seconds: Annotated[
        float,
        typer.Option(help="Seconds the shrinking may take.", callback=positive_seconds),
    ] = 60.0,
    max_replays: Annotated[
        int,
        typer.Option(help="Replays the shrinking may make.", callback=at_least(1)),
    ] = 5000,
    seed_file: SeedFileOpt = None,
    suite_dir: SuiteDirOpt = None,
    engine: EngineOpt = DEFAULT_ENGINE,
) -> None:
    """Explain a FAIL: the smallest failing delivery, the first batch that diverged, the mistake."""
    from arrivalbench.spec import get_task

    the_task = get_task(task)
    limits = DEFAULT_LIMITS
    script = read_pipeline(pipeline, limits.max_script_bytes)
    private = secret(seed_file)
    from arrivalbench.explain import explain as explain_schedule
    from arrivalbench.explain.render import render
    from arrivalbench.grade import replay_command
    from arrivalbench.schedules import build_schedule, load_schedule_file, schedule_to_json

    if Path(schedule_name).suffix == ".json" or Path(schedule_name).is_file():
        built, log = load_schedule_file(schedule_name, the_task, private)
        seed = built.seed
    else:
        built, log = build_schedule(the_task, schedule_name, seed, private)
    explanation = explain_schedule(
        the_task,
        script,
        built,
        log,
        limits,
        budget_seconds=budget_seconds,
        max_replays=max_replays,
        seed=seed,
        engine=engine,
    )
    if out_path is not None and explanation.minimal is not None:
        document = json.dumps(schedule_to_json(explanation.minimal, log), indent=1) + "\n"
        write_document(out_path, document, "minimal schedule")
    if as_json:
        sys.stdout.write(json.dumps(explanation.to_json(), indent=1, ensure_ascii=False) + "\n")
        return
    hint = None
    if out_path is not None and explanation.minimal is not None:
        hint = replay_command(
            the_task.id,
            built.name,
            seed,
            str(pipeline),
            schedule_file=str(out_path),
            seed_file=private.path if built.seed_commitment is not None and private else None,
            suite_dir=suite_dir_of(the_task),
            engine=engine,
        )
    render(explanation, out, hint)
