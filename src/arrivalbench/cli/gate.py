"""`arrivalbench gate`: the admissibility gate over the suite at several seeds."""

from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Annotated

import typer

from arrivalbench.cli.options import (
    DEFAULT_ENGINE,
    DEFAULT_SEED,
    EngineOpt,
    JobsOpt,
    NoCacheOpt,
    SeedFileOpt,
    SeedOpt,
    SuiteDirOpt,
    TasksOpt,
    cache_dir,
    is_default_engine,
    secret,
)
from arrivalbench.cli.output import VERDICT_STYLE, out, print_table
from arrivalbench.seeds import GATE_SEED_COUNT, gate_seeds
from arrivalbench.terminal import text

if TYPE_CHECKING:
    from arrivalbench.gate import TaskGate


def gate(
    task_ids: TasksOpt = None,
    seed: SeedOpt = DEFAULT_SEED,
    matrix: Annotated[
        bool, typer.Option("--matrix", help="Also print each task's verdict matrix.")
    ] = False,
    jobs: JobsOpt = None,
    seed_file: SeedFileOpt = None,
    suite_dir: SuiteDirOpt = None,
    seed_count: Annotated[
        int,
        typer.Option(
            "--seeds",
            min=1,
            help="Gate at this many seeds: --seed and the next ones (a private seed gates one).",
        ),
    ] = GATE_SEED_COUNT,
    no_cache: NoCacheOpt = False,
    engine: EngineOpt = DEFAULT_ENGINE,
) -> None:
    """Admissibility gate over the suite (built-in and --suite-dir) at several seeds; exits 1 when
    any task is rejected at any of them."""
    from rich.table import Table

    from arrivalbench.spec import get_task, load_suite

    chosen = [get_task(t) for t in task_ids] if task_ids else list(load_suite().values())
    private = secret(seed_file)
    from arrivalbench.gate import gate_suite, group_violations
    from arrivalbench.gate.composition import composition
    from arrivalbench.progress import estimate
    from arrivalbench.schedules import REGISTRY

    on = "" if is_default_engine(engine) else f" on {engine} (the oracle stays DuckDB's)"
    if private is not None:
        out.print(f"hidden logs from the private seed {private.short}{on}", highlight=False)
    else:
        seeds = gate_seeds(seed_count, seed)
        out.print(f"gating at seeds {', '.join(map(str, seeds))}{on}", highlight=False)
    started = time.perf_counter()
    gated: list[TaskGate] = []

    def report(result: TaskGate) -> None:
        gated.append(result)
        pace = estimate(len(gated), len(chosen), time.perf_counter() - started)
        mark = (
            ("admitted", "green")
            if result.admitted
            else (f"rejected ({len(result.violations)})", "bold red")
        )
        spec = result.task.spec
        out.print(
            text(
                mark,
                f" {spec.id} ({spec.mode}, {spec.difficulty}): "
                f"{len(spec.hazards)} hazards, {len(spec.controls)} controls",
                (f"  {pace}", "dim"),
            )
        )
        for group in group_violations(result.violations):
            out.print(text(f"      - {group}"), soft_wrap=True)
        if matrix:
            table = Table(show_header=True, box=None, padding=(0, 1))
            table.add_column("artifact")
            for s in result.schedules:
                table.add_column(REGISTRY[s].label)
            for artifact, verdicts in result.verdicts.items():
                cells = [text((verdicts[s], VERDICT_STYLE[verdicts[s]])) for s in result.schedules]
                name = artifact.removeprefix("controls/").removesuffix(".sql")
                table.add_row(text(name), *cells)
            print_table(table)

    results = gate_suite(
        chosen,
        seed=seed,
        jobs=jobs or os.cpu_count() or 1,
        on_task=report,
        private=private,
        seed_count=seed_count,
        cache_dir=cache_dir(no_cache),
        engine=engine,
    )
    admitted = sum(r.admitted for r in results)
    summary = Table(title="gate summary")
    columns = ("tasks", "seeds", "admitted", "rejected", "golds", "controls", "violations")
    for col in (*columns, "seconds"):
        summary.add_column(col)
    summary.add_row(
        str(len(results)),
        str(max((len(r.seeds) for r in results), default=0)),
        str(admitted),
        str(len(results) - admitted),
        str(len(results)),
        str(sum(len(r.task.spec.controls) for r in results)),
        str(sum(len(r.violations) for r in results)),
        f"{time.perf_counter() - started:.1f}",
    )
    out.print(summary)
    out.print(composition(results), highlight=False)
    if admitted < len(results):
        raise typer.Exit(1)
