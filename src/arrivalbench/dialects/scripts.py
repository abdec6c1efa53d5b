"""A task's reference scripts for an engine: the hand-written override beside a script when there
is one (`gold.sqlite.sql` for `gold.sql`), else the script transpiled."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from arrivalbench.dialects.decimals import source_decimals
from arrivalbench.dialects.delivery_stars import delivery_columns
from arrivalbench.dialects.transpile import transpile
from arrivalbench.engines import REGISTRY, engine_info
from arrivalbench.spec import Task


def override_path(folder: Path, file: str, engine: str) -> Path:
    """Where a script's hand-written version for `engine` lives: gold.sql -> gold.sqlite.sql."""
    stem = file[: -len(".sql")] if file.endswith(".sql") else file
    return folder / f"{stem}.{engine}.sql"


def orphan_overrides(task: Task) -> list[str]:
    """The task's engine override files with no script beside them to override (left behind when
    a control was renamed or dropped): never read, and so never checked by any gate."""
    scripts = {"gold.sql", "existing.sql", *task.controls}
    found = []
    for engine in (e.name for e in REGISTRY.values() if not e.authored):
        for path in sorted(task.folder.rglob(f"*.{engine}.sql")):
            relative = path.relative_to(task.folder).as_posix()
            if relative.removesuffix(f".{engine}.sql") + ".sql" not in scripts:
                found.append(relative)
    return found


def script_for(task: Task, file: str, text: str, engine: str) -> str:
    """The task's script `file` (gold.sql, controls/x.sql, existing.sql) for `engine`: the
    override beside it when there is one, else `text` transpiled."""
    if engine_info(engine).authored:
        return text
    override = override_path(task.folder, file, engine)
    if override.is_file():
        return override.read_text(encoding="utf-8")
    return transpile(
        text, engine, str(task.folder / file), delivery_columns(task), source_decimals(task)
    )


def engine_task(task: Task, engine: str) -> Task:
    """The task with its gold, controls and existing pipeline in `engine`'s SQL (the oracle
    stays DuckDB's: it is the one reference computation)."""
    if engine_info(engine).authored:
        return task
    controls = {f: script_for(task, f, text, engine) for f, text in task.controls.items()}
    existing = (
        None
        if task.existing_sql is None
        else script_for(task, "existing.sql", task.existing_sql, engine)
    )
    return dataclasses.replace(
        task,
        gold_sql=script_for(task, "gold.sql", task.gold_sql, engine),
        controls=controls,
        existing_sql=existing,
    )
