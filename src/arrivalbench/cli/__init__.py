"""The command line: one Typer app, one module per command (or small family of commands), each
a thin call into the modules that do the work; the options they share are declared once in
`options.py`. Command modules import only Typer and Rich at start-up and their machinery inside
the command, so `arrivalbench --help` and a mistyped flag are answered at once.
"""

from __future__ import annotations

import sys

import typer

from arrivalbench.cli import (
    audit,
    authoring,
    check,
    explain,
    gate,
    generate,
    generators,
    grade,
    human,
    imports,
    report,
    runs,
    schedule,
    tasks,
)
from arrivalbench.cli.output import err
from arrivalbench.errors import ArrivalBenchError
from arrivalbench.terminal import text

__all__ = ["app", "main", "run"]

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    help="Grade incremental SQL pipelines by replaying them under adversarial delivery schedules.",
)
app.command()(tasks.tasks)
app.command()(generators.generators)
app.command()(grade.grade)
app.command()(explain.explain)
app.command()(check.check)
app.command()(schedule.schedule)
app.command()(gate.gate)
app.command()(audit.audit)
app.command("new-task")(authoring.new_task_command)
app.command("new-seed")(authoring.new_seed)
app.command("make-corpus")(imports.make_corpus_command)
app.command()(generate.generate)
app.command("import-scripts")(imports.import_scripts_command)
app.command("import-inspect")(imports.import_inspect_command)
app.command()(human.human)
app.command("grade-run")(runs.grade_run)
app.command()(runs.regrade)
app.command()(runs.summary)
app.command("report")(report.report_command)


def _terminate(signum: int, frame: object) -> None:
    """SIGTERM unwinds like Ctrl-C, so that sweeps stop their workers and journals stay whole."""
    raise KeyboardInterrupt


def main() -> None:
    """Console entry point: user errors become one line on stderr and exit code 2."""
    import signal

    signal.signal(signal.SIGTERM, _terminate)
    run()


def run(argv: list[str] | None = None) -> None:
    """Run the app on `argv` (default: the process's arguments) and exit with its code: a user
    error is one line on stderr and exit code 2, an interrupt exit code 130."""
    try:
        if argv is None:
            app()
        else:
            app(argv, prog_name="arrivalbench")
    except ArrivalBenchError as exc:
        err.print(text(f"arrivalbench: error: {exc}"), soft_wrap=True)
        sys.exit(2)
    except KeyboardInterrupt:
        err.print("arrivalbench: interrupted", highlight=False)
        sys.exit(130)
