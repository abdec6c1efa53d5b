"""Explain one failing (task, artifact, schedule): shrink it, find where it diverged, name the mistake.

The three parts run over one warm sandbox worker (runner.Runner). Diagnosis compares the final
table with the counterfactual oracles of semantics.py, on the minimal schedule first (the
cleanest witness) and then on the original; a crashed schedule whose crash-free twin passes is
`crash_partial_apply` whatever the tables say. Nothing here is shown to an agent: it names the
hazard.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from arrivalbench.compare import compare
from arrivalbench.engines import DEFAULT_ENGINE, Limits
from arrivalbench.errors import PipelineInputError
from arrivalbench.explain.divergence import Divergence, Step, first_divergence, observe
from arrivalbench.explain.runner import Runner
from arrivalbench.explain.semantics import (
    LABELS,
    PROBES,
    SENTENCES,
    SHAPES,
    diagnose_details,
    variant_tables,
)
from arrivalbench.explain.shrink import DEFAULT_BUDGET_SECONDS, DEFAULT_MAX_REPLAYS, Shrunk, shrink
from arrivalbench.logs import Log
from arrivalbench.sandbox import Sandbox
from arrivalbench.schedules import Schedule
from arrivalbench.spec import Task


@dataclass(frozen=True)
class Explanation:
    task: str
    schedule: str
    seed: int
    verdict: str
    error_class: str | None
    minimal: Schedule | None
    """The shrunk schedule (batch ids 1..n; `partial` when it delivers part of the log)."""
    log: Log
    shrunk: Shrunk | None
    divergence: Divergence | None
    diagnosis: list[str]
    story: list[Step]
    original_rows: int
    details: dict[str, str] = dataclasses.field(default_factory=dict)
    """Per label, what the matching counterfactual assumed (which watermark, which bound)."""

    @property
    def passed(self) -> bool:
        return self.verdict == "PASS"

    def sentence(self) -> str:
        """The explanation in plain words: one sentence per label."""
        if self.passed:
            return "PASS: nothing to explain."
        if self.verdict == "ERROR":
            return (
                f"The replay ends in ERROR ({self.error_class}); the minimal schedule is the "
                "smallest delivery that still raises it."
            )
        labels = self.diagnosis or ["unclassified"]
        return " ".join(
            SENTENCES[label] + (f" ({self.details[label]}.)" if label in self.details else "")
            for label in labels
        )

    def to_json(self) -> dict[str, Any]:
        """The CLI's --json object (the contract of issue 13)."""
        ids = self.log.event_ids()
        minimal = None
        if self.minimal is not None:
            minimal = {
                "batches": [[int(ids[r]) for r in d.rows] for d in self.minimal.deliveries],
                "rows_delivered": self.minimal.delivered_rows(),
                "crashes": [
                    i + 1 for i, d in enumerate(self.minimal.deliveries) if d.crash is not None
                ],
            }
        data: dict[str, Any] = {
            "task": self.task,
            "schedule": self.schedule,
            "seed": self.seed,
            "verdict": self.verdict,
            "minimal": minimal,
            "first_divergent_batch": self.divergence.batch if self.divergence else None,
            "diagnosis": list(self.diagnosis),
            "explanation": self.sentence(),
            "story": [
                {
                    "batch": s.batch,
                    "delivered": s.delivered,
                    "target_defined": s.defined,
                    "target_rows": s.target_rows,
                    "oracle_rows": s.oracle_rows,
                    **({"error": s.error} if s.error is not None else {}),
                }
                for s in self.story
            ],
        }
        if self.error_class is not None:
            data["error_class"] = self.error_class
        if self.divergence is not None:
            data["divergence"] = {
                "note": self.divergence.note,
                "target_rows": self.divergence.target_rows,
                "oracle_rows": self.divergence.oracle_rows,
            }
        if self.shrunk is not None:
            data["shrink"] = {
                "original_rows": self.original_rows,
                "replays": self.shrunk.replays,
                "seconds": round(self.shrunk.seconds, 3),
                "budget_exhausted": self.shrunk.exhausted,
            }
        return data


def explain(
    task: Task,
    script: str,
    schedule: Schedule,
    log: Log,
    limits: Limits | None = None,
    budget_seconds: float = DEFAULT_BUDGET_SECONDS,
    max_replays: int = DEFAULT_MAX_REPLAYS,
    shrinking: bool = True,
    seed: int | None = None,
    engine: str = DEFAULT_ENGINE,
) -> Explanation:
    """Shrink, locate and diagnose one schedule's verdict for one artifact.

    `seed` is the base seed the schedule was built from, as the user gave it (default: the
    schedule's own seed, as a schedule file records it). `engine` is the one the pipeline runs on.
    """
    with Runner(task, script, schedule, log, limits or Limits(), engine_name=engine) as runner:
        return _explain(runner, schedule, budget_seconds, max_replays, shrinking, seed)


def _explain(
    runner: Runner,
    schedule: Schedule,
    budget: float,
    max_replays: int,
    shrinking: bool,
    seed: int | None,
) -> Explanation:
    task, log = runner.task, runner.log
    original = schedule.deliveries
    started = time.monotonic()
    outcome = runner.run(original)
    if outcome.result.empty_script:
        assert outcome.result.error is not None
        raise PipelineInputError(
            f"pipeline: {outcome.result.error.message}; give a file with at least one SQL statement."
        )
    base = dict(
        task=task.id,
        schedule=schedule.name,
        seed=schedule.seed if seed is None else seed,
        verdict=outcome.verdict[0],
        error_class=outcome.verdict[1] if len(outcome.verdict) > 1 else None,
        log=log,
        original_rows=schedule.delivered_rows(),
    )
    if outcome.verdict == ("PASS",):
        return Explanation(
            minimal=None, shrunk=None, divergence=None, diagnosis=[], story=[], **base
        )
    steps, error = observe(runner, original)
    divergence = first_divergence(steps, error)
    if shrinking:
        left = max(0.0, budget - (time.monotonic() - started))
        shrunk = shrink(runner, original, outcome.verdict, left, max_replays)
    else:
        shrunk = Shrunk(original, 0, 0.0, False)
    minimal = runner.candidate(shrunk.deliveries)
    story, _ = observe(runner, minimal.deliveries)
    details = _diagnose(runner, schedule, outcome, minimal)
    return Explanation(
        minimal=minimal,
        shrunk=shrunk,
        divergence=divergence,
        diagnosis=list(details),
        story=story,
        details={label: words for label, words in details.items() if words},
        **base,
    )


def diagnose_schedule(
    task: Task,
    script: str,
    schedule: Schedule,
    log: Log,
    limits: Limits | None = None,
    sandbox: Sandbox | None = None,
    engine: str = DEFAULT_ENGINE,
) -> list[str]:
    """The diagnosis of one schedule's FAIL without shrinking: a replay or two, for `grade` and
    `grade-run --explain` (which shares one worker across cells through `sandbox`)."""
    return list(diagnosis_details(task, script, schedule, log, limits, sandbox, engine))


def diagnosis_details(
    task: Task,
    script: str,
    schedule: Schedule,
    log: Log,
    limits: Limits | None = None,
    sandbox: Sandbox | None = None,
    engine: str = DEFAULT_ENGINE,
) -> dict[str, str | None]:
    """diagnose_schedule's labels, each with its detail (which watermark, which bound) or None."""
    runner = Runner(task, script, schedule, log, limits or Limits(), engine, sandbox=sandbox)
    with runner:
        outcome = runner.run(schedule.deliveries)
        if outcome.verdict == ("PASS",):
            return {}
        return _diagnose(runner, schedule, outcome, schedule)


def explain_command(
    task_id: str,
    schedule: str,
    seed: int,
    pipeline: str,
    *,
    seed_file: str | None = None,
    suite_dir: str | None = None,
    engine: str = DEFAULT_ENGINE,
) -> str:
    """The command that explains one failing verdict (`schedule` is a name or a schedule file)."""
    import shlex

    where = f" --suite-dir {shlex.quote(suite_dir)}" if suite_dir is not None else ""
    command = (
        f"arrivalbench explain{where} --task {task_id} --pipeline {shlex.quote(pipeline)} "
        f"--schedule {shlex.quote(schedule)}"
    )
    if not schedule.endswith(".json"):
        command += f" --seed {seed}"
    if seed_file is not None:
        command += f" --seed-file {shlex.quote(seed_file)}"
    if engine != DEFAULT_ENGINE:
        command += f" --engine {engine}"
    return command


def _diagnose(
    runner: Runner, schedule: Schedule, outcome: Any, minimal: Schedule
) -> dict[str, str | None]:
    """Labels matched on the minimal schedule or on the original, plus the crash-free twin; in
    the order of LABELS. A label's detail names the variants that matched on both schedules
    (the minimal one may not tell a per-source watermark from a global one), else the minimal's,
    the coarser variants left out where a finer one remains; when several still hold, it names
    them all and says the deliveries do not tell them apart, unless a probe (PROBES) does.
    A shape (issue 28) that matched on the minimal schedule only, where two or three events can
    make several semantics give one table, is dropped when the original schedule computed it and
    its table differed: the larger schedule refutes it."""
    found: list[dict[str, list[str | None]]] = []
    tried: set[str] = set()
    coarser: set[str | None] = set()
    if outcome.verdict == ("FAIL",):
        for sched in (minimal, schedule):
            result = runner.run(sched.deliveries)
            if result.result.target is None or result.expected is None:
                continue
            tried = set()
            found.append(
                diagnose_details(
                    runner.task,
                    runner.log,
                    sched,
                    result.result.target,
                    result.expected,
                    runner.engine,
                    tried,
                    coarser,
                )
            )
    if len(found) == 2:  # a shape the larger schedule could test and did not match is refuted
        refuted = {label for label in SHAPES if label in tried and label not in found[1]}
        found = [{k: v for k, v in matched.items() if k not in refuted} for matched in found]
    details: dict[str, str | None] = {}
    for label in {label for matched in found for label in matched}:
        sets = [matched[label] for matched in found if label in matched]
        both = [d for d in sets[0] if all(d in other for other in sets[1:])] or sets[0]
        finer = [d for d in both if d not in coarser]
        distinct = [d for d in dict.fromkeys(finer or both) if d]
        if len(distinct) > 1 and label in PROBES:
            distinct = _told_apart(runner, label, distinct, minimal)
        details[label] = (
            " or ".join(distinct) + " (these deliveries do not tell them apart)"
            if len(distinct) > 1
            else (distinct[0] if distinct else None)
        )
    for sched in (minimal, schedule):
        if any(d.crash for d in sched.deliveries):
            calm = tuple(dataclasses.replace(d, crash=None) for d in sched.deliveries)
            if runner.run(calm).verdict == ("PASS",):
                details.setdefault("crash_partial_apply", None)
                break
    return {label: details[label] for label in LABELS if label in details}


PROBE_REPLAYS = 4
"""At most this many probe schedules are replayed per label."""


def _told_apart(runner: Runner, label: str, details: list[str], base: Schedule) -> list[str]:
    """The details that remain after replaying the label's probes that separate them: those with
    a variant whose table on the probe equals the pipeline's. A probe no variant explains (the
    pipeline has another quirk there) changes nothing."""
    left, replays = list(details), 0
    target = runner.task.spec.target

    def same(a: pa.Table, b: pa.Table) -> bool:
        return compare(a, b, target).equal

    for deliveries in PROBES[label](runner.log, base):
        probe = runner.candidate(deliveries)
        tables = variant_tables(runner.task, runner.log, probe, label, set(left), runner.engine)
        if not any(
            tables[a] and tables[b] and not any(same(x, y) for x in tables[a] for y in tables[b])
            for a in left
            for b in left
            if a < b
        ):
            continue
        replays += 1
        actual = runner.run(deliveries).result.target
        if actual is not None:
            kept = [d for d in left if any(same(t, actual) for t in tables[d])]
            left = kept or left
        if len(left) == 1 or replays >= PROBE_REPLAYS:
            break
    return left
