"""`arrivalbench generate`: a model writes each task's pipeline (the snapshot repair loop), stored
as a run for grade-run."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from arrivalbench.cli.options import (
    DEFAULT_ENGINE,
    DEFAULT_SEED,
    GenerateEngineOpt,
    NoCacheOpt,
    SeedFileOpt,
    SeedOpt,
    SuiteDirOpt,
    TasksOpt,
    at_least,
    cache_dir,
    secret,
    suite_flags,
)
from arrivalbench.cli.output import err, out
from arrivalbench.terminal import text


def _log(line: str) -> None:
    err.print(text(line))


def generate(
    model: Annotated[
        str,
        typer.Option(
            "--model",
            "-m",
            help="replay:PATH (a PATH holding {arm} reads one file per arm), or an Inspect model "
            "such as openai/gpt-4o or openai-api/local/NAME.",
        ),
    ],
    out_dir: Annotated[
        Path,
        typer.Option("--out", "-o", help="Run directory to write (an interrupted one is resumed)."),
    ],
    arm: Annotated[
        list[str],
        typer.Option(
            "--arm",
            "-a",
            help="Prompt arm: unhinted, hint, arch, hint_strong or arch_guarded (repeatable).",
        ),
    ] = ["unhinted"],  # noqa: B006
    k: Annotated[
        int,
        typer.Option(
            "-k",
            help="Samples per task (sample 0 at temperature 0, the rest at 1); the paper uses 5.",
            callback=at_least(1),
        ),
    ] = 5,
    task_ids: TasksOpt = None,
    turns: Annotated[
        int, typer.Option("--turns", help="Repair-loop turns per cell.", callback=at_least(1))
    ] = 3,
    concurrency: Annotated[
        int,
        typer.Option("--concurrency", "-c", help="Cells in flight at once.", callback=at_least(1)),
    ] = 4,
    max_retries: Annotated[
        int,
        typer.Option(
            "--max-retries", help="Provider retries per model call.", callback=at_least(0)
        ),
    ] = 5,
    timeout: Annotated[
        int,
        typer.Option(
            "--timeout", help="Seconds per model call, retries included.", callback=at_least(1)
        ),
    ] = 600,
    max_tokens: Annotated[
        int,
        typer.Option(
            "--max-tokens", help="Output cap per model call (turn).", callback=at_least(1)
        ),
    ] = 8_000,
    run_index: Annotated[
        int,
        typer.Option(
            "--run",
            help="Replicate index recorded for these arms: 2 for an independent re-run.",
            callback=at_least(1),
        ),
    ] = 1,
    rerun_reason: Annotated[
        str | None,
        typer.Option(
            "--rerun-no-artifact",
            metavar="REASON",
            help="In the finished run at --out, ask again for the cells without a script for "
            "this reason (e.g. truncated, with a higher --max-tokens); grade-run grades them.",
        ),
    ] = None,
    scaffold: Annotated[
        str,
        typer.Option(
            "--scaffold",
            help="loop: the paper's repair loop; agent: a tool-using agent (query, test, submit).",
        ),
    ] = "loop",
    max_tool_calls: Annotated[
        int,
        typer.Option(
            "--max-tool-calls", help="Agent scaffold: tool calls per cell.", callback=at_least(1)
        ),
    ] = 20,
    max_tests: Annotated[
        int,
        typer.Option(
            "--max-tests", help="Agent scaffold: test runs per cell.", callback=at_least(0)
        ),
    ] = 3,
    token_budget: Annotated[
        int | None,
        typer.Option(
            "--token-budget",
            help="Agent scaffold: input plus output tokens per cell (default: no budget).",
            callback=at_least(1),
        ),
    ] = None,
    cell_timeout: Annotated[
        float,
        typer.Option("--cell-timeout", help="Agent scaffold: wall seconds per cell."),
    ] = 1800.0,
    seed: SeedOpt = DEFAULT_SEED,
    seed_file: SeedFileOpt = None,
    suite_dir: SuiteDirOpt = None,
    engine: GenerateEngineOpt = None,
    no_cache: NoCacheOpt = False,
) -> None:
    """Let a model write each task's pipeline (snapshot repair loop) and store the scripts as a run."""
    from arrivalbench.agent.generate import generate as run_generate
    from arrivalbench.agent.generate import rerun_no_artifact
    from arrivalbench.agent.models import get_model
    from arrivalbench.agent.tool_agent import Budgets, check_scaffold
    from arrivalbench.store.provenance import run_kind

    check_scaffold(scaffold)
    budgets = Budgets(max_tool_calls, max_tests, token_budget, cell_timeout)
    ids = list(task_ids) if task_ids else None
    the_model = get_model(model, max_retries=max_retries, timeout=timeout, arms=arm)
    if rerun_reason is not None:
        again, n = rerun_no_artifact(
            the_model,
            out=out_dir,
            reason=rerun_reason,
            max_tokens=max_tokens,
            concurrency=concurrency,
            task_ids=ids,
            log=_log,
            engine=engine,
            cache_dir=cache_dir(no_cache),
        )
        missing = sum(c.artifact_sha256 is None for c in again.cells())
        out.print(
            text(
                f"re-ran {n} cells of {out_dir} ({missing} cells now without a script); "
                f"grade the new scripts with: arrivalbench grade-run {out_dir}"
                + suite_flags(suite_dir)
            ),
            soft_wrap=True,
        )
        return
    private = secret(seed_file)
    run = run_generate(
        the_model,
        arms=arm,
        k=k,
        out=out_dir,
        task_ids=ids,
        turns=turns,
        seed=seed,
        concurrency=concurrency,
        max_tokens=max_tokens,
        log=_log,
        seed_commitment=private and private.commitment,
        run=run_index,
        engine=engine or DEFAULT_ENGINE,
        cache_dir=cache_dir(no_cache),
        scaffold=scaffold,
        budgets=budgets,
    )
    cells = run.cells()
    missing = sum(c.artifact_sha256 is None for c in cells)
    out.print(
        text(
            f"wrote {out_dir}: {len(cells)} cells ({missing} without a script); "
            f"grade it with: arrivalbench grade-run {out_dir}{suite_flags(suite_dir)}"
        ),
        soft_wrap=True,
    )
    out.print(text(run_kind(run)))
