"""`arrivalbench tasks`: the suite's tasks (built-in and --suite-dir) and what each declares."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import typer

from arrivalbench.cli.options import SuiteDirOpt, json_option
from arrivalbench.cli.output import out, print_table
from arrivalbench.terminal import text


def tasks(
    as_json: Annotated[bool, json_option("Machine-readable list.")] = False,
    show_hash: Annotated[
        bool, typer.Option("--hash", help="Print the suite's content hash.")
    ] = False,
    suite_dir: SuiteDirOpt = None,
) -> None:
    """List the tasks (built-in and --suite-dir) with mode, difficulty, scenario and declared hazards."""
    from rich.table import Table

    from arrivalbench.spec import SUITE_DIR, load_suite, suite_hash, user_suite_dirs

    if show_hash:
        out.print(suite_hash(), highlight=False)
        return
    suite = load_suite()
    if as_json:
        rows = [
            {
                "id": t.id,
                "mode": t.spec.mode,
                "difficulty": t.spec.difficulty,
                "scenario": t.spec.scenario,
                "order_sensitive": t.spec.order_sensitive,
                "hazards": list(t.spec.hazards),
                "controls": [{"file": c.file, "fails": list(c.fails)} for c in t.spec.controls],
                "suite_dir": str(t.folder.parent),
            }
            for t in suite.values()
        ]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    mine = bool(user_suite_dirs())
    table = Table(title=f"{len(suite)} tasks")
    for col in ("id", "mode", "difficulty", "scenario", "hazards", "controls"):
        table.add_column(col)
    if mine:
        table.add_column("suite dir", overflow="fold")
    for t in suite.values():
        where = "built-in" if t.folder.parent == SUITE_DIR.resolve() else str(t.folder.parent)
        table.add_row(
            *map(
                text,
                (
                    t.id,
                    t.spec.mode,
                    t.spec.difficulty,
                    t.spec.scenario,
                    ", ".join(t.spec.hazards),
                    str(len(t.spec.controls)),
                    *([where] if mine else []),
                ),
            )
        )
    print_table(table)
