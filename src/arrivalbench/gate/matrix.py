"""The gate's facts about one task at one seed, computed once: every verdict the rules judge.

Grading is the slow part of the gate (the gold, every control, rule control and naive baseline on
every schedule); the rules (checks.py) are pure functions of the `Matrix` built here, so each rule
is tested on a matrix written by hand. An artifact that cannot be graded (its script does not
transpile, the sandbox refuses it) is kept with its error, so a rule reports it where it belongs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from arrivalbench.baselines import NAIVE, baseline_script
from arrivalbench.dialects import (
    TranspileError,
    delivery_columns,
    orphan_overrides,
    script_for,
    source_decimals,
    transpile,
)
from arrivalbench.engines import engine_info
from arrivalbench.errors import ArrivalBenchError
from arrivalbench.grade import Grader
from arrivalbench.leak import Leak, scan
from arrivalbench.logs import task_log
from arrivalbench.oracle import oracle_defects
from arrivalbench.schedules import default_schedules
from arrivalbench.spec import Task

ORACLE_SEEDS = 2
"""Number of hidden logs (base seeds) on which the oracle's stability is checked."""

GOLD = "gold.sql"

Role = Literal["gold", "control", "rule", "existing", "baseline"]
Entry = Mapping[str, Any]
"""One schedule's verdict record: verdict, and error_class/batch/statement/message or diff."""


@dataclass(frozen=True)
class Graded:
    """One artifact's verdicts on the schedules it was graded on, or why it could not be graded."""

    name: str
    role: Role
    verdicts: Mapping[str, Entry] = field(default_factory=dict)
    error: str | None = None
    fails: frozenset[str] = frozenset()
    """The hazards a negative control declares on the gated engine."""
    rule: str | None = None
    """The stated rule a rule control breaks."""

    @property
    def row(self) -> dict[str, str]:
        """schedule -> PASS | FAIL | ERROR"""
        return {s: v["verdict"] for s, v in self.verdicts.items()}


@dataclass(frozen=True)
class Matrix:
    """Everything the gate's rules look at, for one task at one seed.

    Seed-independent facts (the text, overrides, the existing pipeline, the baselines) are empty
    when `seed_independent` is False; when the oracle does not run, nothing is graded.
    """

    task: str
    engine: str
    schedules: tuple[str, ...]
    hazards: tuple[str, ...]
    """The declared hazards."""
    controls: tuple[str, ...] = ()
    """The authored negative controls' files."""
    declared_in: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """hazard -> the negative controls that list it in 'fails' on this engine."""
    order_sensitive: bool = False
    mode: str = "create"
    seed_independent: bool = True
    leaks: tuple[Leak, ...] = ()
    orphans: tuple[str, ...] = ()
    perturbations: Mapping[str, Mapping[str, int]] = field(default_factory=dict)
    """declared hazard -> what its schedule changed (schedules.Schedule.perturbation)."""
    bites: Mapping[str, bool] = field(default_factory=dict)
    """declared hazard -> whether its schedule changed delivery (schedules.Schedule.bites)."""
    oracle: tuple[str, ...] = ()
    """The oracle's defects on the hidden logs, and why it did not run, in the order found."""
    oracle_runs: bool = True
    graded: tuple[Graded, ...] = ()
    """Gold, negative controls, rule controls, the existing pipeline, baselines, in that order."""

    def of(self, *roles: Role) -> list[Graded]:
        return [g for g in self.graded if g.role in roles]

    def records(self) -> dict[str, Mapping[str, Entry]]:
        """artifact -> verdict entries of what may earn or notice a hazard: the gold, the negative
        controls and the baselines that were graded."""
        return {
            g.name: g.verdicts for g in self.of("gold", "control", "baseline") if g.error is None
        }


def describe(entry: Entry) -> str:
    """A verdict in one line (an ERROR with where it happened, a FAIL with its diff counts)."""
    if entry["verdict"] == "ERROR":
        return f"ERROR {entry['error_class']} at batch {entry['batch']} statement {entry['statement']}: {entry['message']}"
    if entry["verdict"] == "FAIL":
        counts = {k: v for k, v in entry["diff"]["counts"].items() if v}
        return f"FAIL {counts}"
    return "PASS"


def task_matrix(task: Task, grader: Grader, seed_independent: bool = True) -> Matrix:
    """Grade everything the gate judges on one task at the grader's seed; never raises for a
    defect of the task (an artifact that cannot be graded is kept with its error).

    `seed_independent=False` leaves out what gives the same answer at every seed (the text, the
    overrides, the existing pipeline) and the naive baselines (they never earn a declaration).
    """
    spec, engine = task.spec, grader.engine_name
    schedules = default_schedules(task)
    perturbations: dict[str, Mapping[str, int]] = {}
    bites: dict[str, bool] = {}
    for hazard in spec.hazards:
        schedule, _ = grader.schedule(task, hazard)
        perturbations[hazard], bites[hazard] = dict(schedule.perturbation), schedule.bites()
    facts: dict[str, Any] = dict(
        task=task.id,
        engine=engine,
        schedules=tuple(schedules),
        hazards=tuple(spec.hazards),
        controls=tuple(c.file for c in spec.controls),
        declared_in={
            h: tuple(c.file for c in spec.controls if h in c.fails_for(engine))
            for h in spec.hazards
        },
        order_sensitive=spec.order_sensitive,
        mode=spec.mode,
        seed_independent=seed_independent,
        perturbations=perturbations,
        bites=bites,
    )
    if seed_independent:
        facts.update(leaks=tuple(scan(spec.description)), orphans=tuple(orphan_overrides(task)))

    oracle, runs = _oracle(task, grader)
    if not runs:
        return Matrix(**facts, oracle=oracle, oracle_runs=False)

    def graded(name: str, role: Role, script: str, on: list[str], **kw: Any) -> Graded:
        try:
            record, _ = grader.grade(task, script, on, where=kw.pop("where", None) or name)
        except ArrivalBenchError as exc:
            return Graded(name, role, error=str(exc), **kw)
        return Graded(name, role, record["verdicts"], **kw)

    def authored(name: str, text: str, role: Role, on: list[str], **kw: Any) -> Graded:
        try:
            script = script_for(task, name, text, engine)
        except ArrivalBenchError as exc:
            return Graded(name, role, error=str(exc), **kw)
        return graded(name, role, script, on, where=str(task.folder / name), **kw)

    found = [authored(GOLD, task.gold_sql, "gold", schedules)]
    found += [
        authored(
            c.file,
            task.controls[c.file],
            "control",
            schedules,
            fails=frozenset(c.fails_for(engine)),
        )
        for c in spec.controls
    ]
    if engine_info(engine).authored:
        # Whether the data exercises a rule is a property of the log and the oracle (DuckDB's on
        # every engine), not of the engine; rule controls are DuckDB SQL, judged once, there.
        found += [
            authored(r.control, task.controls[r.control], "rule", schedules, rule=r.rule)
            for r in spec.rules
        ]
    if seed_independent:
        if task.existing_sql is not None and spec.mode in ("modify", "repair"):
            found.append(authored("existing.sql", task.existing_sql, "existing", ["snapshot"]))
        for baseline in NAIVE:
            script = baseline_script(task, baseline, engine)
            if script is None:
                continue
            try:
                script = transpile(
                    script,
                    engine,
                    f"baseline {baseline}",
                    delivery_columns(task),
                    source_decimals(task),
                )
            except TranspileError:  # a reference arm only: it never earns nor blocks a declaration
                continue
            found.append(
                graded(
                    f"baseline:{baseline}",
                    "baseline",
                    script,
                    schedules,
                    where=f"baseline {baseline}",
                )
            )
    return Matrix(**facts, oracle=oracle, graded=tuple(found))


def _oracle(task: Task, grader: Grader) -> tuple[tuple[str, ...], bool]:
    """The oracle's defects on ORACLE_SEEDS hidden logs, and whether it ran on all of them."""
    found: list[str] = []
    private = grader.private
    for seed_offset in range(ORACLE_SEEDS):
        seed = (private.seed if private else grader.seed) + seed_offset
        label = f"private seed {private.short} + {seed_offset}" if private else None
        try:
            hidden = task_log(task, "hidden", seed)
            found += oracle_defects(task, hidden, grader.oracle_engine, seed, label=label)
        except ArrivalBenchError as exc:
            # Every verdict compares with the oracle: nothing else can be checked until it runs.
            first_line = str(exc).splitlines()[0]
            found.append(f"{first_line} (the gold, controls and baselines were not graded)")
            return tuple(found), False
    return tuple(found), True
