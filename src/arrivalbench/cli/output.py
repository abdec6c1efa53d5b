"""How the commands print: one stdout and one stderr console, verdict colours, whole tables.

A table printed to a file or a pipe (not a terminal) is never cut to a console width: ids and
artifact names are what a script or a test reads, so the table is printed as wide as its
widest row instead of truncating or wrapping a cell.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Console

from arrivalbench.terminal import text

if TYPE_CHECKING:
    from rich.table import Table

out = Console()
err = Console(stderr=True)
VERDICT_STYLE = {"PASS": "green", "FAIL": "bold red", "ERROR": "bold yellow"}


def print_table(table: Table, console: Console = out) -> None:
    """Print `table`; off a terminal, at its natural width when that is wider than the console's."""
    if console.is_terminal:
        console.print(table)
        return
    from rich.measure import Measurement

    natural = Measurement.get(console, console.options.update(width=10**6), table).maximum
    if natural <= console.width:
        console.print(table)
        return
    # Console.print never goes past the console's width, so a wider table gets its own console.
    Console(file=console.file, width=natural, stderr=console.stderr).print(table)


def verdict_table(
    title: str, record: dict[str, Any], describe: Callable[[dict[str, Any]], str]
) -> Table:
    """A verdict record as a table: one row per schedule, its verdict and `describe(entry)`."""
    from rich.table import Table

    table = Table(title=text(title))
    table.add_column("schedule")
    table.add_column("verdict")
    table.add_column("detail", overflow="fold")
    for name, entry in record["verdicts"].items():
        verdict = entry["verdict"]
        table.add_row(text(name), text((verdict, VERDICT_STYLE[verdict])), text(describe(entry)))
    return table
