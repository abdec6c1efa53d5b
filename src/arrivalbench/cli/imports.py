"""Commands that store scripts as a new run, ungraded: `make-corpus` (the reference corpus),
`import-scripts` (a folder of hand-written scripts) and `import-inspect` (Inspect logs)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from arrivalbench.cli.options import (
    DEFAULT_ENGINE,
    DEFAULT_SEED,
    EngineOpt,
    NewRunOpt,
    SeedFileOpt,
    SeedOpt,
    SuiteDirOpt,
    TasksOpt,
    WorkersOpt,
    at_least,
    secret,
    suite_flags,
)
from arrivalbench.cli.output import out
from arrivalbench.terminal import text


def make_corpus_command(
    out_dir: NewRunOpt,
    seed: SeedOpt = DEFAULT_SEED,
    task_ids: TasksOpt = None,
    seed_file: SeedFileOpt = None,
    suite_dir: SuiteDirOpt = None,
    engine: EngineOpt = DEFAULT_ENGINE,
) -> None:
    """Build the reference corpus (gold, controls, naive baselines) as a run directory, ungraded
    (on --engine: grade-run grades every cell on the run's engine)."""
    from arrivalbench.corpus import make_corpus
    from arrivalbench.store.provenance import run_kind

    if task_ids:
        from arrivalbench.spec import get_task

        for task_id in task_ids:
            get_task(task_id)
    private = secret(seed_file)
    run = make_corpus(
        out_dir,
        seed=seed,
        task_ids=list(task_ids) if task_ids else None,
        seed_commitment=private and private.commitment,
        engine=engine,
    )
    cells = run.cells()
    out.print(
        text(f"wrote {out_dir}: {len(cells)} cells in arms {', '.join(run.manifest['arms'])}")
    )
    out.print(text(run_kind(run)))


def import_scripts_command(
    folder: Annotated[
        Path, typer.Argument(help="Folder of <task>.sql or <task>.<sample>.sql files.")
    ],
    arm: Annotated[
        str, typer.Option("--arm", "-a", help="Arm name for these scripts, e.g. human.")
    ],
    out_dir: NewRunOpt,
    role: Annotated[
        str,
        typer.Option("--role", help="The arm's role: human, reference, model or intervention."),
    ] = "human",
    run_index: Annotated[
        int,
        typer.Option(
            "--run",
            help="Replicate index recorded for the arm: 2 for a second import of an arm "
            "already imported (the sign tests count it as a run, not as another arm).",
            callback=at_least(1),
        ),
    ] = 1,
    seed: SeedOpt = DEFAULT_SEED,
    seed_file: SeedFileOpt = None,
    suite_dir: SuiteDirOpt = None,
    engine: EngineOpt = DEFAULT_ENGINE,
) -> None:
    """Store a folder of hand-written scripts as one arm of a new run, ready for grade-run (on
    --engine: the scripts are that engine's SQL, and grade-run grades them on it; --run: the
    replicate index the report reads, 1 unless this is a re-import of the arm)."""
    from arrivalbench.agent.generate import import_scripts
    from arrivalbench.store.provenance import run_kind

    private = secret(seed_file)
    run = import_scripts(
        folder,
        arm=arm,
        out=out_dir,
        seed=seed,
        seed_commitment=private and private.commitment,
        role=role,
        run=run_index,
        engine=engine,
    )
    out.print(
        text(
            f"wrote {out_dir}: {len(run.cells())} cells in arm {arm}"
            + (f" (run {run_index})" if run_index != 1 else "")
            + "; "
            f"grade it with: arrivalbench grade-run {out_dir}{suite_flags(suite_dir)}"
        ),
        soft_wrap=True,
    )
    out.print(text(run_kind(run)))


def import_inspect_command(
    log_dirs: Annotated[
        list[Path],
        typer.Argument(
            help="Log folders or log files of 'inspect eval arrivalbench/arrivalbench' (several "
            "make one run, e.g. an arm and its intervention).",
        ),
    ],
    out_dir: NewRunOpt,
    verify_rows: Annotated[
        bool,
        typer.Option(
            "--verify",
            help="Re-grade every cell and compare with the scorer's kept verdicts; exit 1 if any differs.",
        ),
    ] = False,
    workers: WorkersOpt = None,
    seed_file: SeedFileOpt = None,
    suite_dir: SuiteDirOpt = None,
) -> None:
    """Store finished Inspect logs of the arrivalbench task as a run, keeping the scorer's verdicts."""
    from arrivalbench.agent.inspect_import import import_logs
    from arrivalbench.store.provenance import run_kind

    private = secret(seed_file)
    run, claims = import_logs(log_dirs, out_dir, seed_commitment=private and private.commitment)
    cells = run.cells()
    missing = sum(c.artifact_sha256 is None for c in cells)
    kept = run.verdicts().num_rows
    out.print(
        text(
            f"wrote {out_dir}: {len(cells)} cells in arms {', '.join(run.manifest['arms'])} "
            f"({missing} without a script), {kept} verdicts kept from the scorer; grade what is "
            f"missing with: arrivalbench grade-run {out_dir}{suite_flags(suite_dir)}"
        ),
        soft_wrap=True,
    )
    out.print(text(f"scorer verdicts: {claims.summary()}"), soft_wrap=True)
    out.print(text(run_kind(run)))
    if verify_rows:
        from arrivalbench.sweep import verify

        mismatches = [
            line
            for line in verify(run, workers=workers, private=private)
            if not line.endswith("reproduced but not stored (run not fully graded?)")
        ]
        for line in mismatches:
            out.print(text(line))
        if mismatches:
            out.print(f"{len(mismatches)} of {kept} kept verdicts differ", style="bold red")
            raise typer.Exit(1)
        out.print(f"all {kept} kept verdicts reproduced byte for byte", highlight=False)
