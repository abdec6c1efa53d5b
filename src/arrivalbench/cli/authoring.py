"""Commands that make something new to edit or keep: `new-task` (a task folder) and `new-seed`
(the secret of official runs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from arrivalbench.cli.output import out
from arrivalbench.terminal import text


def new_task_command(
    name: Annotated[str, typer.Argument(help="Task id: lower-case letters, digits, underscores.")],
    mode: Annotated[str, typer.Option(help="create, modify or repair.")] = "create",
    generator: Annotated[str, typer.Option(help="Log generator kind.")] = "sales",
    suite_dir: Annotated[
        Path | None,
        typer.Option(
            "--suite-dir",
            help="Folder to write the task into, created if missing "
            "(default: the first entry of ARRIVALBENCH_SUITE_PATH).",
        ),
    ] = None,
    builtin: Annotated[
        bool,
        typer.Option(
            "--builtin", help="Maintainers: write into the built-in suite of a source checkout."
        ),
    ] = False,
) -> None:
    """Scaffold a working task folder to edit, in a folder you name (see docs/task-authoring.md)."""
    import shlex

    from arrivalbench.scaffold import change_together, new_task, new_task_dir

    target = new_task_dir(suite_dir, builtin=builtin)
    folder = new_task(name, mode=mode, generator=generator, suite_dir=target)
    out.print(text(f"created {folder}"), soft_wrap=True)
    where = "" if builtin else f" --suite-dir {shlex.quote(str(target))}"
    out.print(text(f"check it with: arrivalbench gate{where} --tasks {name}"), soft_wrap=True)
    out.print(
        text(f"check its second oracle (oracle.py) with: arrivalbench audit{where} --tasks {name}"),
        soft_wrap=True,
    )
    out.print("files that change together:", highlight=False)
    for files, why in change_together(mode):
        out.print(text(f"  {files}: {why}"), soft_wrap=True)


def new_seed(
    out_path: Annotated[
        Path, typer.Option("--out", "-o", help="The seed file to create (never overwritten).")
    ],
) -> None:
    """Write a fresh random secret (mode 0600) for official runs; keep it private, pass it with --seed-file."""
    from arrivalbench.seeds import SEED_FILE_ENV, write_seed_file

    private = write_seed_file(out_path)
    out.print(
        text(
            f"wrote {out_path} (seed commitment {private.commitment}); keep it secret and pass it "
            f"with --seed-file {out_path} or {SEED_FILE_ENV}={out_path}"
        ),
        soft_wrap=True,
    )
