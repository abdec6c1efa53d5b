"""`arrivalbench human`: a person works through the model arm's repair loop in a local web page,
stored as a run for grade-run (docs/human.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from arrivalbench.cli.options import (
    DEFAULT_SEED,
    GenerateEngineOpt,
    SeedOpt,
    SuiteDirOpt,
    TasksOpt,
    at_least,
    suite_flags,
)
from arrivalbench.cli.output import err, out
from arrivalbench.terminal import text

MAX_INSTRUCTIONS_BYTES = 200_000
LOOPBACK = "127.0.0.1"


def _instructions(path: Path | None) -> str | None:
    from arrivalbench.errors import UsageError

    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(
            f"--instructions {path}: cannot read it ({exc.strerror}); give a Markdown file."
        ) from None
    if len(data) > MAX_INSTRUCTIONS_BYTES:
        raise UsageError(
            f"--instructions {path}: {len(data)} bytes, more than {MAX_INSTRUCTIONS_BYTES}; "
            "shorten it."
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"--instructions {path}: not UTF-8 text; save it as UTF-8.") from None


def human(
    out_dir: Annotated[
        Path,
        typer.Option(
            "--out",
            "-o",
            help="The study's run directory (new, or a study to resume or add a participant to).",
        ),
    ],
    task_ids: TasksOpt = None,
    arm: Annotated[
        str, typer.Option("--arm", "-a", help="Prompt arm the person is shown (as a model).")
    ] = "unhinted",
    turns: Annotated[
        int,
        typer.Option(
            "--turns", help="Test runs per task (the loop's turns).", callback=at_least(1)
        ),
    ] = 3,
    port: Annotated[
        int, typer.Option("--port", help="Port to serve the page on (0: any free port).")
    ] = 8080,
    host: Annotated[
        str | None,
        typer.Option(
            "--host",
            help="Listen on this address instead of loopback (other machines can then reach "
            "the page; the printed URL's token is what keeps it private).",
        ),
    ] = None,
    participant: Annotated[
        str | None,
        typer.Option(
            "--participant",
            help="Pseudonym of the participant (a sample, numbered in the order participants "
            "start); a known one resumes.",
        ),
    ] = None,
    instructions: Annotated[
        Path | None,
        typer.Option("--instructions", help="A Markdown file shown above the tasks."),
    ] = None,
    seed: SeedOpt = DEFAULT_SEED,
    suite_dir: SuiteDirOpt = None,
    engine: GenerateEngineOpt = None,
) -> None:
    """Serve a local page where a person writes each task's pipeline through the same repair
    loop a model gets (same prompt, snapshot feedback, turns and leak scan); stored as a run."""
    from arrivalbench.engines import DEFAULT_ENGINE
    from arrivalbench.human.study import Session

    if not 0 <= port <= 65535:
        from arrivalbench.errors import UsageError

        raise UsageError(f"--port {port}: give a port from 1 to 65535 (0: any free port).")
    session = Session(
        out_dir,
        task_ids=list(task_ids or []),
        arm=arm,
        turns=turns,
        seed=seed,
        engine=engine or DEFAULT_ENGINE,
        participant=participant,
        instructions=_instructions(instructions),
        host=host or LOOPBACK,
        port=port,
        log=lambda line: err.print(text(line)),
    )
    if host is not None:
        err.print(
            text(
                f"warning: --host {host}: the page listens there, not on loopback only; anyone "
                "who can reach that address and has the URL below (its token) can use it: share "
                "it only with the participant."
            ),
            soft_wrap=True,
        )
    err.print(
        text(f"participant {session.participant} (sample {session.sample}); open this page:"),
        soft_wrap=True,
    )
    out.print(text(session.url), soft_wrap=True)
    out.file.flush()
    try:
        run = session.run()
    except KeyboardInterrupt:
        err.print(
            text(f"saved what was submitted in {out_dir}; the same command resumes it."),
            soft_wrap=True,
        )
        raise
    if run is None:
        return
    out.print(
        text(
            f"wrote {out_dir}: participant {session.participant} finished; grade it with: "
            f"arrivalbench grade-run {out_dir}{suite_flags(suite_dir)}"
        ),
        soft_wrap=True,
    )
