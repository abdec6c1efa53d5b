"""`arrivalbench audit`: each task's second oracle (oracle.py) against oracle.sql."""

from __future__ import annotations

import json
import math
import os
import sys
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

from arrivalbench.cli.options import (
    DEFAULT_SEED,
    JobsOpt,
    SuiteDirOpt,
    TasksOpt,
    at_least,
    json_option,
    seed_option,
)
from arrivalbench.cli.output import out
from arrivalbench.terminal import text

if TYPE_CHECKING:
    from arrivalbench.audit import TaskAudit


def kappa(value: float | None) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.3f}"


def audit(
    task_ids: TasksOpt = None,
    extra_seeds: Annotated[
        int | None,
        typer.Option(
            "--seeds",
            help="Seeds audited besides --seed, derived from ('audit', i) (default: 5).",
            callback=at_least(0),
        ),
    ] = None,
    seed: Annotated[
        int,
        seed_option("Base seed (0 to 2**63 - 1): its visible and hidden logs are audited first."),
    ] = DEFAULT_SEED,
    as_json: Annotated[bool, json_option("Machine-readable result.")] = False,
    jobs: JobsOpt = None,
    suite_dir: SuiteDirOpt = None,
) -> None:
    """Check each task's second oracle (oracle.py) against oracle.sql on the visible and hidden logs
    of several seeds; exits 1 when any task disagrees or has no oracle.py."""
    from rich.table import Table

    from arrivalbench.spec import get_task, load_suite

    named = [get_task(t) for t in task_ids] if task_ids else []
    from arrivalbench.audit import (
        EXTRA_SEEDS,
        audit_document,
        audit_seeds,
        audit_suite,
        audit_summary,
        gated_seeds,
        load_python_oracle,
    )

    extra_seeds = EXTRA_SEEDS if extra_seeds is None else extra_seeds
    if task_ids:
        chosen = named
        for task in chosen:  # a task named on purpose must have a usable oracle.py: exit 2
            load_python_oracle(task)
    else:
        chosen = list(load_suite().values())
    seeds, gated = audit_seeds(extra_seeds, seed), gated_seeds(seed)
    started = time.perf_counter()
    results = audit_suite(chosen, seeds, gated, jobs=jobs or os.cpu_count() or 1)
    seconds = time.perf_counter() - started
    if as_json:
        document = audit_document(results, seeds, gated, seconds)
        sys.stdout.write(json.dumps(document, indent=1, default=str) + "\n")
    else:
        table = Table(
            title=f"audit: oracle.py against oracle.sql, seeds {', '.join(map(str, seeds))}"
        )
        for col in ("task", "logs", "agree", "kappa", "first disagreement"):
            table.add_column(col, overflow="fold")

        def mark(result: TaskAudit) -> Any:
            agreed = sum(log.equal for log in result.logs)
            style = "green" if result.agrees else "bold red"
            return text((f"{agreed}/{len(result.logs)}", style))

        for r in results:
            first = text(r.first_disagreement or "")
            table.add_row(text(r.task_id), str(len(r.logs)), mark(r), kappa(r.kappa), first)
        out.print(table)
        counts = audit_summary(results, seconds)
        summary_table = Table(title="audit summary")
        for col in ("tasks", "agree", "disagree", "no usable oracle.py", "logs", "seconds"):
            summary_table.add_column(col)
        summary_table.add_row(
            *(str(counts[k]) for k in ("tasks", "agree", "disagree", "oracle_py_unusable", "logs")),
            f"{seconds:.1f}",
        )
        out.print(summary_table)
    if sum(r.agrees for r in results) < len(results):
        raise typer.Exit(1)
