"""Diagnoses of a stored run's FAILs: `grade-run --explain` writes explanations.parquet; the report reads it.

Computed only on request, never in the budgeted grading path: one more replay per FAIL (two for a
crashed schedule) plus the counterfactual oracle queries, no shrinking. A row is keyed like a
verdict row and carries the artifact's and the schedule's sha256, so a re-graded or changed
cell is diagnosed again rather than read stale.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from arrivalbench import __version__
from arrivalbench.explain.explanation import diagnose_schedule
from arrivalbench.sandbox import Sandbox
from arrivalbench.schedules import build_schedule
from arrivalbench.seeds import PrivateSeed
from arrivalbench.store import VERDICT_KEY, RunDir, RunStoreError, _write_parquet
from arrivalbench.store.rundir import EXPLANATIONS
from arrivalbench.sweep import SweepConfig

EXPLANATIONS_FILE = EXPLANATIONS
EXPLANATIONS_SCHEMA = pa.schema(
    [
        ("arm", pa.string()),
        ("task", pa.string()),
        ("sample", pa.int64()),
        ("schedule", pa.string()),
        ("artifact_sha256", pa.string()),
        ("schedule_sha256", pa.string()),
        ("diagnosis", pa.list_(pa.string())),
        ("harness_version", pa.string()),
    ]
)


def read_explanations(run: RunDir) -> pa.Table | None:
    """The run's explanations, or None when `grade-run --explain` never ran on it."""
    path = run.explanations_path
    if not path.exists():
        return None
    try:
        table = pq.read_table(path)
        return table.select(EXPLANATIONS_SCHEMA.names).cast(EXPLANATIONS_SCHEMA)
    except (OSError, pa.ArrowInvalid, KeyError) as exc:
        raise RunStoreError(
            f"{path}: unreadable explanations ({exc}); delete it and run grade-run --explain again."
        ) from None


def explain_run(
    run: RunDir,
    private: PrivateSeed | None = None,
    on_done: Callable[[dict[str, Any]], None] | None = None,
) -> int:
    """Diagnose every FAIL of the run not diagnosed yet; returns how many were added."""

    def identity(r: dict[str, Any]) -> tuple[Any, ...]:
        return (*(r[k] for k in VERDICT_KEY), r["artifact_sha256"], r["schedule_sha256"])

    existing = read_explanations(run)
    rows = existing.to_pylist() if existing is not None else []
    known = {identity(r) for r in rows}
    fails = [r for r in run.verdicts().to_pylist() if r["verdict"] == "FAIL"]
    todo = [r for r in fails if identity(r) not in known]
    if not todo:
        return 0
    config = SweepConfig.from_manifest(run.manifest, private, limits=run.limits())
    tasks = run.tasks()
    added = 0
    try:
        with Sandbox() as sandbox:
            for verdict in todo:
                task = tasks[verdict["task"]]
                schedule, log = build_schedule(task, verdict["schedule"], config.seed, private)
                script = run.artifact(verdict["artifact_sha256"])
                labels = diagnose_schedule(
                    task, script, schedule, log, config.limits, sandbox, config.engine
                )
                keys = (*VERDICT_KEY, "artifact_sha256", "schedule_sha256")
                row = {k: verdict[k] for k in keys}
                row |= {"diagnosis": labels or ["unclassified"], "harness_version": __version__}
                rows.append(row)
                added += 1
                if on_done:
                    on_done(row)
    finally:  # an interrupted pass keeps what it diagnosed
        if added:
            rows.sort(key=lambda r: tuple(r[k] for k in VERDICT_KEY))
            table = pa.Table.from_pylist(rows, EXPLANATIONS_SCHEMA)
            _write_parquet(run.explanations_path, table)
    return added
