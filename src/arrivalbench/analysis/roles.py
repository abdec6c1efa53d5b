"""Arm roles and run indices: which arms a test may count.

Every arm of a run plays one role:

- `model`: a model's own answer to the plain task (the unhinted prompt);
- `intervention`: the same model under a changed prompt (a hint, an architecture, ...);
- `reference`: pipelines that come from the suite or a template, not from a model (gold, the
  negative controls, the naive baselines, the primary-key templates);
- `human`: scripts written by people.

and belongs to one run index (1 for the first run of an arm, 2 for its replicate, ...). Runs record
both in `arm_info` (`role`, `run`); for runs that predate that, they are inferred here. The same
arm graded on another engine is not a replicate: run indices are counted per engine. The sign
tests, the signature and the replication table count only model arms of run 1 unless the report is
told otherwise (`report --arms` / `--runs`), so reference arms, interventions and replicate runs
never pad a test with draws that are not independent model answers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

from arrivalbench import store
from arrivalbench.errors import UsageError

Role = Literal["model", "intervention", "reference", "human"]
ROLES = cast("tuple[Role, ...]", store.ROLES)
"""The roles a run's manifest may record (one list: store.ROLES validates manifests with it)."""
UNHINTED = "unhinted"

# Arms that come from the suite or a template, never from a model: gold, the controls, the naive
# baselines of baselines.py and the primary-key templates of make-corpus.
REFERENCE_ARMS = frozenset(
    {
        "gold",
        "controls",
        "naive_append",
        "naive_watermark",
        "batch_only",
        "pk_constraint",
        "pk_dedup",
    }
)


@dataclass(frozen=True)
class ArmRole:
    """An arm's role and run index, and whether each was recorded or inferred."""

    role: Role
    run: int
    recorded: bool  # both read from arm_info (False: at least one inferred)
    prompt_arm: str | None = None
    model: str | None = None


def infer_role(arm: str, info: Mapping[str, Any] | None) -> Role:
    """The role an arm plays: arm_info's `role` if recorded, else inferred from its name and prompt.

    Reference names (gold, controls, baselines, templates) are reference; an arm whose arm_info
    names a prompt other than the unhinted one is an intervention; every other arm is a model arm.
    """
    info = info or {}
    recorded = info.get("role")
    if recorded is not None:
        if recorded not in ROLES:
            raise UsageError(
                f"arm '{arm}': arm_info role {recorded!r} is not one of {', '.join(ROLES)}; "
                "fix the run's manifest.json."
            )
        return recorded  # type: ignore[no-any-return]
    from arrivalbench.baselines import BASELINES

    if arm in REFERENCE_ARMS or arm in BASELINES:
        return "reference"
    prompt = info.get("prompt_arm")
    if prompt is not None and prompt != UNHINTED:
        return "intervention"
    return "model"


def arm_roles(
    runs: list[tuple[str, Mapping[str, Mapping[str, Any]], list[str]]],
    engines: Mapping[str, str] | None = None,
) -> dict[tuple[str, str], ArmRole]:
    """(run name, arm) -> ArmRole for every arm of the given runs, in the order given.

    `runs` holds (run name, arm_info, arms) per run, `engines` the engine of each run name (one
    engine when absent). A run index recorded in arm_info wins; otherwise the first run holding an
    arm (with the same model, on the same engine) is run 1, the next run 2, and so on, so a
    replicate given second is never counted as a first run, and the same arm graded on a second
    engine is not counted as a replicate.
    """
    seen: dict[tuple[str, Any, str | None], int] = {}
    out: dict[tuple[str, str], ArmRole] = {}
    for name, arm_info, arms in runs:
        for arm in sorted(arms):
            info = arm_info.get(arm) or {}
            role = infer_role(arm, info)
            key = (arm, info.get("model"), (engines or {}).get(name))
            seen[key] = seen.get(key, 0) + 1
            recorded_run = info.get("run")
            if recorded_run is not None and (
                not isinstance(recorded_run, int)
                or isinstance(recorded_run, bool)
                or recorded_run < 1
            ):
                raise UsageError(
                    f"run {name}, arm '{arm}': arm_info run {recorded_run!r} is not a positive "
                    "integer; fix the run's manifest.json."
                )
            out[(name, arm)] = ArmRole(
                role=role,
                run=recorded_run if recorded_run is not None else seen[key],
                recorded=info.get("role") is not None and recorded_run is not None,
                prompt_arm=info.get("prompt_arm"),
                model=info.get("model"),
            )
    return out


def parse_runs(text: str | None) -> frozenset[int] | None:
    """`--runs 1,2` as a set of run indices (None: the default, run 1)."""
    if text is None or not text.strip():
        return None
    try:
        found = frozenset(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise UsageError(
            f"--runs {text!r}: expected run indices separated by commas, e.g. --runs 1,2."
        ) from None
    if not found or min(found) < 1:
        raise UsageError(f"--runs {text!r}: run indices start at 1, e.g. --runs 1.")
    return found


def parse_arms(text: str | None) -> tuple[str, ...] | None:
    """`--arms a,b` as arm names or labels (None: the default, every model arm)."""
    if text is None or not text.strip():
        return None
    return tuple(part.strip() for part in text.split(",") if part.strip())
