"""`arrivalbench generators`: every log generator with the columns it produces and its params,
read from the generators' own declarations (generators/), for a task author to pick from."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

from arrivalbench.cli.options import json_option
from arrivalbench.cli.output import print_table
from arrivalbench.terminal import text


def _parameter(p: dict[str, Any]) -> str:
    bounds = ", ".join(f"{k} {v}" for k, v in p["bounds"].items())
    value = "required" if p["required"] else f"= {p['default']!r}"
    return f"{p['name']}: {p['type']} {value}" + (f" ({bounds})" if bounds else "")


def generators(
    as_json: Annotated[bool, json_option("Machine-readable list.")] = False,
) -> None:
    """List the log generators (task.yaml's source.generator.kind) with their columns and params."""
    from rich.table import Table

    from arrivalbench.generators import describe_generator, generator_kinds

    described = [describe_generator(kind) for kind in generator_kinds()]
    if as_json:
        sys.stdout.write(json.dumps(described, indent=2, default=str) + "\n")
        return
    table = Table(title=f"{len(described)} generators", show_lines=True)
    for col in ("generator", "columns", "params"):
        table.add_column(col)
    for d in described:
        columns = "\n".join(f"{name} {kind}" for name, kind in d["columns"].items())
        params = "\n".join(map(_parameter, d["parameters"]))
        table.add_row(text(d["kind"]), text(columns), text(params))
    print_table(table)
