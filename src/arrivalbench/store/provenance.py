"""Where a stored run's hidden logs come from: a public base seed, or the secret of a seed file.

A private run names the commitment of its secret and is graded only with that secret; a
development run descends from its public base seed alone, so anyone can rebuild its hidden
logs and it is no official result. Every command reading a run asks this module which it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from arrivalbench.errors import ArrivalBenchError
from arrivalbench.store.errors import RunStoreError

if TYPE_CHECKING:
    from arrivalbench.seeds import PrivateSeed
    from arrivalbench.store.rundir import RunDir


def run_secret(run: RunDir, seed_file: Path | None) -> PrivateSeed | None:
    """The secret a stored run needs: its own for a private run, none for a development run.

    $ARRIVALBENCH_SEED_FILE is read only for a private run; an explicit --seed-file given to a
    development run is refused, since it is most likely meant for another run.
    """
    from arrivalbench.seeds import read_seed_file, resolve_seed_file

    commitment = run.seed_commitment
    try:
        if commitment is None:
            private = read_seed_file(seed_file) if seed_file is not None else None
        else:
            fix = f"pass the seed file this run was made with (commitment {commitment[:12]}…)"
            private = resolve_seed_file(seed_file, fix)
    except ArrivalBenchError as exc:
        raise RunStoreError(f"{run.path}: {exc}") from None
    run.check_secret(private)
    return private


def run_kind(run: RunDir) -> str:
    """One line saying whether a run is official (private seed) or a development run."""
    commitment = run.seed_commitment
    if commitment is None:
        return (
            f"development run: public base seed {run.manifest.get('base_seed')}, so anyone can "
            "rebuild its hidden logs; not an official result (see README, 'Official runs')"
        )
    return f"private run: hidden logs from the secret of seed commitment {commitment[:12]}…"
