"""Commands over a stored run: `grade-run` (grade what is ungraded), `regrade` (grade it all
again, to verify or to copy) and `summary` (its per-arm rates, read only)."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from arrivalbench.cli.options import (
    NoCacheOpt,
    RunEngineOpt,
    RunMemoryLimitOpt,
    RunOpt,
    RunReplayTimeoutOpt,
    RunStatementTimeoutOpt,
    SeedFileOpt,
    SuiteDirOpt,
    WorkersOpt,
    cache_dir,
    check_run_engine,
    limit_flags,
    new_run_dir,
)
from arrivalbench.cli.output import err, out
from arrivalbench.errors import UsageError
from arrivalbench.terminal import text

if TYPE_CHECKING:
    from rich.table import Table

    from arrivalbench.seeds import PrivateSeed
    from arrivalbench.store import RunDir


def _executor(value: str) -> str:
    if value not in ("local", "ray"):
        raise UsageError(f"--executor {value!r}: expected 'local' or 'ray'.")
    return value


def open_run(
    run_dir: Path, engine: str | None, seed_file: Path | None
) -> tuple[RunDir, PrivateSeed | None]:
    """The stored run to grade and the secret it needs, after refusing an --engine it was not
    made for."""
    from arrivalbench.store import RunDir
    from arrivalbench.store.provenance import run_secret

    run = RunDir.open(run_dir)
    check_run_engine(run, engine)
    return run, run_secret(run, seed_file)


def summary_table(run: Any) -> Table:
    """The per-arm rates of a run (analysis.summary) as a table."""
    from rich.table import Table

    from arrivalbench.analysis.summary import run_summary

    rows = run_summary(run)
    table = Table(title=text(f"{run.path}: rates over tasks"))
    for col in ("arm", "tasks", "cells", "snapshot-pass", "gap [95% CI]", "error", "all-in"):
        table.add_column(col, justify="right" if col not in ("arm",) else "left")
    pct = lambda x: "—" if x is None else f"{x:.1%}"  # noqa: E731
    for s, gap in rows:
        table.add_row(
            text(s.arm),
            str(s.tasks),
            str(s.cells),
            pct(s.snapshot_pass),
            gap.format(),
            pct(s.error),
            pct(s.all_in),
        )
    return table


def grade_run(
    run_dir: RunOpt,
    workers: WorkersOpt = None,
    executor: Annotated[str, typer.Option(help="local or ray.", callback=_executor)] = "local",
    ray_address: Annotated[
        str | None, typer.Option(help="Ray cluster address (executor ray).")
    ] = None,
    seed_file: SeedFileOpt = None,
    suite_dir: SuiteDirOpt = None,
    with_explain: Annotated[
        bool,
        typer.Option(
            "--explain",
            help="Then diagnose every FAIL (one more replay each) into explanations.parquet.",
        ),
    ] = False,
    no_cache: NoCacheOpt = False,
    engine: RunEngineOpt = None,
    statement_timeout: RunStatementTimeoutOpt = None,
    memory_limit: RunMemoryLimitOpt = None,
    replay_timeout: RunReplayTimeoutOpt = None,
) -> None:
    """Grade every ungraded (cell, schedule) of a run directory, resuming where a sweep stopped,
    on the engine its manifest records."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from arrivalbench.store.provenance import run_kind
    from arrivalbench.sweep import sweep

    if ray_address is not None and executor != "ray":
        raise UsageError(
            f"--ray-address {ray_address!r} is for the Ray executor; add --executor ray, or drop it "
            "to grade on this machine."
        )
    limits = limit_flags(statement_timeout, memory_limit, replay_timeout)
    run, private = open_run(run_dir, engine, seed_file)
    run.tasks()  # a task missing from the suite path is one line, before the progress bar
    run.limits(limits)  # and so is a manifest asking for looser limits than the harness's
    counts: Counter[str] = Counter()
    progress = Progress(
        TextColumn("[bold]grading"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("cells"),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        TextColumn("{task.fields[verdicts]}"),
        console=err,
        transient=False,
    )
    bar = progress.add_task("sweep", total=None, rate="", verdicts="")
    started = time.perf_counter()

    def planned(n: int) -> None:
        progress.update(bar, total=n)
        progress.start()  # only now, so an error before the plan is one line with no bar above it

    def arrived(result: list[Any]) -> None:
        counts.update(r["verdict"] for r, _ in result)
        done = progress.tasks[0].completed + 1
        rate = done / max(time.perf_counter() - started, 1e-9)
        shown = " ".join(f"{k} {counts[k]}" for k in ("PASS", "FAIL", "ERROR"))
        progress.update(bar, advance=1, rate=f"{rate:.1f} cells/s", verdicts=shown)

    try:
        report = sweep(
            run,
            workers=workers,
            executor=executor,
            ray_address=ray_address,
            on_result=arrived,
            on_plan=planned,
            private=private,
            cache_dir=cache_dir(no_cache),
            limits=limits,
        )
    finally:
        if progress.live.is_started:
            progress.stop()
    out.print(
        f"graded {report.units} cells ({report.rows} verdicts) in {report.seconds:.1f} s",
        highlight=False,
    )
    out.print(text(run_kind(run)))
    out.print(summary_table(run))
    if with_explain:
        from arrivalbench.explain.diagnoses import EXPLANATIONS_FILE, explain_run

        added = explain_run(run, private)
        out.print(f"diagnosed {added} new FAIL verdicts into {EXPLANATIONS_FILE}", highlight=False)


def regrade(
    run_dir: RunOpt,
    verify_rows: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Re-execute into a scratch copy and compare with the stored rows; exit 1 if any differs.",
        ),
    ] = False,
    out_dir: Annotated[
        Path | None,
        typer.Option(
            "--out",
            "-o",
            help="Write the re-graded run here (a new folder); the stored run stays.",
            callback=new_run_dir,
        ),
    ] = None,
    workers: WorkersOpt = None,
    seed_file: SeedFileOpt = None,
    suite_dir: SuiteDirOpt = None,
    engine: RunEngineOpt = None,
    statement_timeout: RunStatementTimeoutOpt = None,
    memory_limit: RunMemoryLimitOpt = None,
    replay_timeout: RunReplayTimeoutOpt = None,
) -> None:
    """Grade every stored artifact again: --verify compares with the stored verdicts, --out keeps a copy.

    The stored verdicts are never changed.
    """
    from arrivalbench.sweep import regrade as regrade_run
    from arrivalbench.sweep import verify

    if not verify_rows and out_dir is None:
        raise UsageError(
            f"regrade {run_dir}: pass --verify to re-execute and compare with the stored verdicts, "
            "or --out NEW_RUN to write a re-graded copy; the stored verdicts are never changed."
        )
    limits = limit_flags(statement_timeout, memory_limit, replay_timeout)
    run, private = open_run(run_dir, engine, seed_file)
    run.limits(limits)
    if not verify_rows:
        assert out_dir is not None
        copy = regrade_run(run, out_dir, workers=workers, private=private, limits=limits)
        out.print(
            text(
                f"wrote {out_dir}: {copy.verdicts().num_rows} verdict rows re-graded from "
                f"{run_dir} (unchanged); compare with: arrivalbench summary {out_dir}"
            )
        )
        return
    mismatches = verify(run, workers=workers, private=private, out=out_dir, limits=limits)
    rows = run.verdicts().num_rows
    if mismatches:
        for line in mismatches:
            out.print(text(line))
        out.print(f"{len(mismatches)} of {rows} verdict rows differ", style="bold red")
        raise typer.Exit(1)
    out.print(f"all {rows} verdict rows reproduced byte for byte", highlight=False)


def summary(run_dir: RunOpt, suite_dir: SuiteDirOpt = None) -> None:
    """Print the per-arm rates of a graded run (read only)."""
    from arrivalbench.store import RunDir
    from arrivalbench.store.provenance import run_kind

    run = RunDir.open(run_dir)
    # First: a task missing from the suite path or a damaged journal is one error line, with
    # nothing printed above it.
    table = summary_table(run)
    out.print(text(run_kind(run)))
    out.print(table)
