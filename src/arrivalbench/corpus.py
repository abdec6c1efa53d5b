"""The reference corpus: a run whose arms come from the suite itself, with no model calls.

Arms: `gold` (each task's gold), `controls` (each negative control, one sample per control),
the naive baselines of baselines.py (`naive_append`, `naive_watermark`, `batch_only`), which a
hurried engineer might write, and its key templates (`pk_constraint`, `pk_dedup`). Every arm has
role `reference` and run 1 in the manifest's `arm_info`.
"""

from __future__ import annotations

from pathlib import Path

from arrivalbench.baselines import BASELINES, baseline_script
from arrivalbench.engines import Limits
from arrivalbench.seeds import DEFAULT_SEED
from arrivalbench.spec import get_task, load_suite
from arrivalbench.store import Cell, RunDir, create_suite_run, sha256_text


def corpus_cells(task_ids: list[str] | None = None) -> tuple[list[Cell], dict[str, str]]:
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
        add("gold", task.id, 0, task.gold_sql)
        for i, control in enumerate(task.spec.controls):
            add("controls", task.id, i, task.controls[control.file])
        for name in BASELINES:
            script = baseline_script(task, name)
            if script is not None:
                add(name, task.id, 0, script)
    return cells, artifacts


def make_corpus(
    out: Path,
    seed: int = DEFAULT_SEED,
    limits: Limits | None = None,
    task_ids: list[str] | None = None,
    seed_commitment: str | None = None,
) -> RunDir:
    """The corpus as an ungraded run; `seed_commitment` makes it private (seeds.PrivateSeed)."""
    limits = limits or Limits()
    cells, artifacts = corpus_cells(task_ids)
    return create_suite_run(
        out,
        cells=cells,
        artifacts=artifacts,
        seed=seed,
        limits=limits,
        config={"corpus": "reference"},
        seed_commitment=seed_commitment,
        arm_info={arm: {"role": "reference", "run": 1} for arm in sorted({c.arm for c in cells})},
    )
