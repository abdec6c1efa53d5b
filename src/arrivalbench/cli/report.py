"""`arrivalbench report`: the report of graded runs, written as files (read only)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from arrivalbench.cli.options import SuiteDirOpt
from arrivalbench.cli.output import out
from arrivalbench.terminal import text


def report_command(
    run_dirs: Annotated[
        list[Path],
        typer.Argument(help="Graded run directories (several: compared and replicated)."),
    ],
    out_dir: Annotated[
        Path,
        typer.Option("--out", "-o", help="Folder for report.md, report.html, tables/, figures/."),
    ],
    resamples: Annotated[int, typer.Option(help="Bootstrap resamples per interval.")] = 10_000,
    unit: Annotated[
        str, typer.Option(help="Bootstrap resampling unit: task or scenario.")
    ] = "task",
    arms: Annotated[
        str | None,
        typer.Option(
            "--arms",
            help="Arms the sign tests and the signature count, comma-separated (default: every model arm).",
        ),
    ] = None,
    runs: Annotated[
        str | None,
        typer.Option("--runs", help="Run indices the tests count, comma-separated (default: 1)."),
    ] = None,
    tasks: Annotated[
        str | None,
        typer.Option(
            "--tasks",
            help="Only these tasks' cells, comma-separated (every table, figure and test).",
        ),
    ] = None,
    tasks_from_arm: Annotated[
        str | None,
        typer.Option(
            "--tasks-from-arm",
            metavar="ARM",
            help="Only the tasks ARM has cells for (e.g. a human arm's), every arm recomputed over them.",
        ),
    ] = None,
    tasks_usable_in: Annotated[
        str | None,
        typer.Option(
            "--tasks-usable-in",
            metavar="ARMS",
            help="Only the tasks where every one of these arms (comma-separated) has a gap-usable cell.",
        ),
    ] = None,
    pool_runs: Annotated[
        str | None,
        typer.Option(
            "--pool-runs",
            metavar="ARMS",
            help="Arms (as stored, comma-separated) whose runs are pooled into one arm each, in a table of their own.",
        ),
    ] = None,
    suite_dir: SuiteDirOpt = None,
) -> None:
    """Write the report of graded runs: tables and figures as Markdown, one HTML page, report.json, CSV and LaTeX (read only)."""
    from arrivalbench.analysis.roles import parse_arms, parse_runs
    from arrivalbench.report import write_report

    files = write_report(
        run_dirs,
        out_dir,
        resamples=resamples,
        unit=unit,
        arms=parse_arms(arms),
        runs=parse_runs(runs),
        tasks=[t.strip() for t in tasks.split(",") if t.strip()] if tasks else None,
        tasks_from_arm=tasks_from_arm,
        tasks_usable_in=[a.strip() for a in tasks_usable_in.split(",") if a.strip()]
        if tasks_usable_in
        else None,
        pool=[a.strip() for a in pool_runs.split(",") if a.strip()] if pool_runs else None,
    )
    out.print(text(f"wrote {files.html} (self-contained) and {files.markdown}"), soft_wrap=True)
    out.print(
        text(
            f"every table and test in {files.json}; tables as CSV (numbers) and LaTeX in "
            f"{files.tables}, figures as PNG in {files.figures}"
        ),
        soft_wrap=True,
    )
