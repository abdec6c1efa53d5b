"""The reference corpus: a run whose arms come from the suite itself, with no model calls.

Arms: `gold` (each task's gold), `controls` (each negative control, one sample per control),
the naive baselines of baselines.py (`naive_append`, `naive_watermark`, `batch_only`), which a
hurried engineer might write, and its key templates (`pk_constraint`, `pk_dedup`). Every arm has
role `reference` and run 1 in the manifest's `arm_info`.
"""

from __future__ import annotations

from pathlib import Path

from arrivalbench.baselines import BASELINES, baseline_script
from arrivalbench.dialects import (
    TranspileError,
    delivery_columns,
    script_for,
    source_decimals,
    transpile,
)
from arrivalbench.engines import DEFAULT_ENGINE, Limits
from arrivalbench.seeds import DEFAULT_SEED
from arrivalbench.spec import get_task, load_suite
from arrivalbench.store import Cell, RunDir, create_suite_run, sha256_text


def corpus_cells(
    task_ids: list[str] | None = None, engine: str = DEFAULT_ENGINE
) -> tuple[list[Cell], dict[str, str]]:
    """Every reference artifact in `engine`'s SQL (transpiled, or the task's override file); a
    baseline that does not transpile is left out (it is a reference arm, never a task's own)."""
    cells: list[Cell] = []
    artifacts: dict[str, str] = {}

    def add(arm: str, task: str, sample: int, script: str) -> None:
        sha = sha256_text(script)
        artifacts[sha] = script
        cells.append(
            Cell(arm=arm, task=task, sample=sample, artifact_sha256=sha, stop_reason="reference")
        )

    tasks = (
        [get_task(t) for t in dict.fromkeys(task_ids)] if task_ids else list(load_suite().values())
    )
    for task in tasks:
        add("gold", task.id, 0, script_for(task, "gold.sql", task.gold_sql, engine))
        for i, control in enumerate(task.spec.controls):
            text = task.controls[control.file]
            add("controls", task.id, i, script_for(task, control.file, text, engine))
        for name in BASELINES:
            script = baseline_script(task, name, engine)
            if script is None:
                continue
            try:
                add(
                    name,
                    task.id,
                    0,
                    transpile(
                        script,
                        engine,
                        f"baseline {name}",
                        delivery_columns(task),
                        source_decimals(task),
                    ),
                )
            except TranspileError:
                continue
    return cells, artifacts


def make_corpus(
    out: Path,
    seed: int = DEFAULT_SEED,
    limits: Limits | None = None,
    task_ids: list[str] | None = None,
    seed_commitment: str | None = None,
    engine: str = DEFAULT_ENGINE,
) -> RunDir:
    """The corpus as an ungraded run on `engine`; `seed_commitment` makes it private
    (seeds.PrivateSeed)."""
    limits = limits or Limits()
    cells, artifacts = corpus_cells(task_ids, engine)
    return create_suite_run(
        out,
        cells=cells,
        artifacts=artifacts,
        seed=seed,
        limits=limits,
        config={"corpus": "reference"},
        seed_commitment=seed_commitment,
        arm_info={arm: {"role": "reference", "run": 1} for arm in sorted({c.arm for c in cells})},
        engine=engine,
    )
