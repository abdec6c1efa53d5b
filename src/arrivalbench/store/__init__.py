"""The store: run directories, their manifest, artifacts, cells, verdict rows and journal.

One module per role: `rundir` (RunDir, the one owner of every path in a run directory),
`manifest` (the pydantic model of manifest.json and the run's limits), `tables` (cells, verdict
rows, Parquet and the journal's line check), `names` (the validator of arm, task and sample
names). The trust rules (docs/run-format.md, "A run directory is input"):

- every manifest field is validated by one model, and a manifest may only tighten limits;
- every path read or written resolves inside the run directory and follows no symlink;
- arm, task and sample names are validated once, for every importer and for the store.
"""

from arrivalbench.store.errors import RunStoreError
from arrivalbench.store.manifest import (
    LIMIT_FIELDS,
    RUN_FORMAT,
    Config,
    Manifest,
    limits_config,
    limits_flags,
    manifest_problem,
    run_limits,
)
from arrivalbench.store.names import check_cell_names, check_name, check_sample
from arrivalbench.store.rundir import (
    PLAN,
    SUPERSEDED,
    TRANSCRIPTS,
    RunDir,
    check_new_run_path,
    check_run_path,
    create_suite_run,
)
from arrivalbench.store.tables import (
    CELL_KEY,
    CELLS_SCHEMA,
    ROLES,
    TIMINGS_SCHEMA,
    VERDICT_KEY,
    VERDICTS_SCHEMA,
    Cell,
    _atomic_write,
    _write_parquet,
    sha256_text,
    verdict_row,
)

__all__ = [
    "CELLS_SCHEMA",
    "CELL_KEY",
    "LIMIT_FIELDS",
    "PLAN",
    "ROLES",
    "RUN_FORMAT",
    "SUPERSEDED",
    "TIMINGS_SCHEMA",
    "TRANSCRIPTS",
    "VERDICTS_SCHEMA",
    "VERDICT_KEY",
    "Cell",
    "Config",
    "Manifest",
    "RunDir",
    "RunStoreError",
    "_atomic_write",
    "_write_parquet",
    "check_cell_names",
    "check_name",
    "check_new_run_path",
    "check_run_path",
    "check_sample",
    "create_suite_run",
    "limits_config",
    "limits_flags",
    "manifest_problem",
    "run_limits",
    "sha256_text",
    "verdict_row",
]
