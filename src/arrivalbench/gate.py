"""The admissibility gate: a task enters the suite only if its gold, controls, hazards and text hold up.

- the gold passes the snapshot, both benign controls and every declared hazard;
- every negative control passes the snapshot and both benign controls and fails exactly its
  declared hazards, silently (FAIL, not ERROR; a loud hazard may also ERROR);
- every declared hazard perturbs that task's delivery and is earned: some authored control that
  passes the in-order stream FAILs under it (or ERRORs, for a loud hazard). A verdict change, not
  a diff change: naive baselines never earn a declaration, nor does a control that already fails
  in order, since a pipeline that is wrong anyway tells nothing about the hazard;
- an order-sensitive task declares out_of_order (and so earns it by the rule above);
- the oracle is unambiguous: no repeated key, the same result on shuffled input, on two seeds;
- all of the above hold at every gate seed (seeds.gate_seeds: the base seed and the next two),
  or at those the task scopes its declarations to (`seeds:` in task.yaml; runs at other seeds
  then refuse it). Seed-independent checks (text, existing pipeline) and the naive baselines,
  which never earn a declaration, run at the first seed only;
- every stated rule's control (the gold with only that rule broken) fails some schedule, so the
  data exercises the rule;
- a modify or repair task's existing pipeline does not already pass the snapshot;
- the description carries no hazard vocabulary.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from arrivalbench.baselines import NAIVE, baseline_script
from arrivalbench.cache import VerdictCache
from arrivalbench.dialects import (
    TranspileError,
    delivery_columns,
    orphan_overrides,
    script_for,
    source_decimals,
    transpile,
)
from arrivalbench.engines import get_engine
from arrivalbench.errors import ArrivalBenchError
from arrivalbench.grade import Grader
from arrivalbench.leak import scan
from arrivalbench.logs import task_log
from arrivalbench.oracle import oracle_defects
from arrivalbench.schedules import BENIGN, default_schedules
from arrivalbench.seeds import GATE_SEED_COUNT, PrivateSeed, gate_seeds
from arrivalbench.spec import LOUD, Task

Result = TypeVar("Result")

ORACLE_SEEDS = 2
"""Number of hidden logs (base seeds) on which the oracle's stability is checked."""

GOLD = "gold.sql"


@dataclass(frozen=True)
class Violation:
    task: str
    artifact: str | None
    schedule: str | None
    message: str
    seed: int | None = None
    """The gate seed it was found at; None for a check that does not depend on the seed."""

    def __str__(self) -> str:
        where = " ".join(x for x in (self.artifact, self.schedule) if x)
        at = f" (seed {self.seed})" if self.seed is not None else ""
        return f"{self.task}: {where + ': ' if where else ''}{self.message}{at}"


@dataclass
class TaskGate:
    task: Task
    schedules: list[str]
    verdicts: dict[str, dict[str, str]] = field(default_factory=dict)
    """artifact -> schedule -> PASS | FAIL | ERROR (gold, controls and naive baselines)"""
    earned_by: dict[str, list[str]] = field(default_factory=dict)
    """declared hazard -> the authored controls that pass the in-order stream and fail under it"""
    violations: list[Violation] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    """The seeds it was gated at; `verdicts` are the first's, `earned_by` holds at every one."""
    oracle_runs: bool = True
    """False when oracle.sql did not run: nothing else was checked, at this seed or any later."""

    @property
    def admitted(self) -> bool:
        return not self.violations


def _describe(entry: dict[str, object]) -> str:
    if entry["verdict"] == "ERROR":
        return f"ERROR {entry['error_class']} at batch {entry['batch']} statement {entry['statement']}: {entry['message']}"
    if entry["verdict"] == "FAIL":
        counts = {k: v for k, v in entry["diff"]["counts"].items() if v}  # type: ignore[index]
        return f"FAIL {counts}"
    return "PASS"


def gate_task_at_seeds(task: Task, grader: Grader, seeds: list[int]) -> TaskGate:
    """Gate one task at each of `seeds` it is scoped to (all of them unless task.yaml's `seeds:`
    says otherwise); admitted only if admitted at each. The grader's seed is moved per seed.

    Seed-independent checks and the naive baselines run at the first seed only.
    """
    scope = task.spec.seeds
    at = [s for s in seeds if scope is None or s in scope]
    result = TaskGate(task=task, schedules=default_schedules(task))
    if scope is not None and (grader.private is not None or not at):
        where = "a private seed" if grader.private is not None else f"the gate seeds {seeds}"
        result.violations.append(
            Violation(
                task.id,
                "task.yaml",
                None,
                f"its declarations are scoped to seeds {scope} (`seeds:`), none of which is "
                f"gated here ({where}); gate it at those seeds or make its controls hold at every "
                "gate seed and drop `seeds:`",
            )
        )
        return result
    for index, seed in enumerate(at):
        grader.seed = seed
        one = gate_task(task, grader, seed_independent=index == 0)
        tag = seed if len(at) > 1 and grader.private is None else None
        result.violations += [
            Violation(v.task, v.artifact, v.schedule, v.message, tag) for v in one.violations
        ]
        result.seeds.append(seed)
        if not one.oracle_runs:  # a defect of the task itself: another seed would repeat it
            result.oracle_runs = False
            break
        if index == 0:
            result.verdicts, result.earned_by = one.verdicts, one.earned_by
        else:
            result.earned_by = {
                hazard: [c for c in controls if c in one.earned_by.get(hazard, [])]
                for hazard, controls in result.earned_by.items()
            }
    return result


def gate_task(task: Task, grader: Grader, seed_independent: bool = True) -> TaskGate:
    """Run every check on one task at the grader's seed; violations are collected, never raised.

    `seed_independent=False` skips what gives the same answer at every seed (the text, the
    existing pipeline) and the naive baselines (they never earn a declaration).
    """
    schedules = default_schedules(task)
    result = TaskGate(task=task, schedules=schedules, seeds=[grader.seed])

    def violate(message: str, artifact: str | None = None, schedule: str | None = None) -> None:
        result.violations.append(Violation(task.id, artifact, schedule, message))

    if seed_independent:
        for leak in scan(task.spec.description):
            violate(
                f"description line {leak.line} uses hazard vocabulary '{leak.term}': "
                f"{leak.context!r}"
            )
        for orphan in orphan_overrides(task):
            violate(
                f"{orphan} overrides a script the task does not have; delete it, or rename it "
                "after the script it is the engine's version of",
                artifact=orphan,
            )
        if not task.spec.controls:
            violate(
                "has no negative control; add at least one under controls/ and declare what it "
                "fails"
            )
    for hazard in task.spec.hazards:
        schedule, _ = grader.schedule(task, hazard)
        if not schedule.bites():
            violate(
                f"declared hazard does not perturb delivery ({dict(schedule.perturbation)})",
                schedule=hazard,
            )

    private = grader.private
    for seed_offset in range(ORACLE_SEEDS):
        seed = (private.seed if private else grader.seed) + seed_offset
        label = f"private seed {private.short} + {seed_offset}" if private else None
        try:
            hidden = task_log(task, "hidden", seed)
            for defect in oracle_defects(task, hidden, grader.oracle_engine, seed, label=label):
                violate(defect, artifact="oracle.sql")
        except ArrivalBenchError as exc:
            # Every verdict compares with the oracle: nothing else can be checked until it runs.
            first_line = str(exc).splitlines()[0]
            violate(
                f"{first_line} (the gold, controls and baselines were not graded)", "oracle.sql"
            )
            result.oracle_runs = False
            return result

    engine = grader.engine_name
    artifacts = [(GOLD, task.gold_sql, set())] + [
        (c.file, task.controls[c.file], set(c.fails_for(engine))) for c in task.spec.controls
    ]
    records: dict[str, dict[str, dict[str, object]]] = {}
    for name, script, fails in artifacts:
        try:
            script = script_for(task, name, script, engine)
            record, _ = grader.grade(task, script, schedules, where=str(task.folder / name))
        except ArrivalBenchError as exc:
            violate(str(exc), artifact=name)
            continue
        verdicts = record["verdicts"]
        records[name] = verdicts
        result.verdicts[name] = {s: v["verdict"] for s, v in verdicts.items()}
        for schedule_name, entry in verdicts.items():
            verdict = entry["verdict"]
            if schedule_name in fails:
                if verdict == "ERROR" and schedule_name not in LOUD:
                    violate(
                        f"must fail silently but raised: {_describe(entry)}", name, schedule_name
                    )
                elif verdict == "PASS":
                    violate(
                        "declared to fail but passes; drop it from 'fails' or fix the control",
                        name,
                        schedule_name,
                    )
            elif verdict != "PASS":
                role = "gold" if name == GOLD else "control"
                kind = "benign control" if schedule_name in BENIGN else "schedule"
                hint = "" if name == GOLD else " (declare it in 'fails' if intended)"
                violate(
                    f"{role} must pass this {kind}: {_describe(entry)}{hint}", name, schedule_name
                )

    if grader.engine_name == "duckdb":
        # Whether the data exercises a rule is a property of the log and the oracle (DuckDB's on
        # every engine), not of the engine; rule controls are DuckDB SQL, judged once, there.
        _check_rules(task, grader, schedules, result, violate)

    if not seed_independent:
        _check_earned(task, records, violate, result)
        return result

    if task.existing_sql is not None and task.spec.mode in ("modify", "repair"):
        try:
            existing = script_for(task, "existing.sql", task.existing_sql, engine)
            record, _ = grader.grade(
                task, existing, ["snapshot"], where=str(task.folder / "existing.sql")
            )
            if record["verdicts"]["snapshot"]["verdict"] == "PASS":
                violate(
                    f"the existing pipeline already passes the snapshot: nothing to {task.spec.mode}",
                    "existing.sql",
                )
        except ArrivalBenchError as exc:
            violate(str(exc), artifact="existing.sql")

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
        try:
            record, _ = grader.grade(task, script, schedules, where=f"baseline {baseline}")
        except ArrivalBenchError as exc:
            violate(str(exc), artifact=f"baseline:{baseline}")
            continue
        records[f"baseline:{baseline}"] = record["verdicts"]
        result.verdicts[f"baseline:{baseline}"] = {
            s: v["verdict"] for s, v in record["verdicts"].items()
        }
    _check_earned(task, records, violate, result, engine)
    return result


def _check_earned(
    task: Task,
    records: dict[str, dict[str, dict[str, object]]],
    violate: Callable[..., None],
    result: TaskGate,
    engine: str = "duckdb",
) -> None:
    """Every declared hazard is earned by an authored control; an order-sensitive task declares out_of_order."""
    spec = task.spec
    if spec.order_sensitive and "out_of_order" not in spec.hazards:
        violate(
            "the task is order_sensitive but does not declare out_of_order: declare it with a "
            "control that is right in arrival order and wrong when events arrive out of order "
            "(arrival order taken as event order, a watermark), or set order_sensitive: false",
            schedule="out_of_order",
        )
    declared_in = {
        h: [c.file for c in spec.controls if h in c.fails_for(engine)] for h in spec.hazards
    }
    for hazard in spec.hazards:
        earned = [f for f in declared_in[hazard] if f in records and _earns(records[f], hazard)]
        result.earned_by[hazard] = earned
        if earned:
            continue
        outcome = "FAILs or ERRORs" if hazard in LOUD else "FAILs"
        if spec.order_sensitive and hazard == "out_of_order":
            remedy = "the task is order_sensitive, so it must keep out_of_order: add a control"
        else:
            remedy = "add a control (a mistake an engineer could ship)"
        noticed = [
            name
            for name, verdicts in records.items()
            if name != GOLD and verdicts.get(hazard, {}).get("verdict") in ("FAIL", "ERROR")
        ]
        seen = (
            f"; not PASS under it, but not earning: {', '.join(noticed)} (a baseline never "
            "earns a declaration, nor a control that already fails the in-order stream)"
            if noticed
            else ""
        )
        if not declared_in[hazard]:
            violate(
                f"declared, but no control lists it in 'fails'{seen}; {remedy} that passes the "
                f"in-order stream and {outcome} under it, or stop declaring it",
                schedule=hazard,
            )
        else:
            violate(
                f"not earned: no control that passes the in-order stream {outcome} under it "
                f"({', '.join(declared_in[hazard])} list it in 'fails'){seen}; {remedy} that "
                "does, or stop declaring it",
                schedule=hazard,
            )


def _earns(verdicts: dict[str, dict[str, object]], hazard: str) -> bool:
    """Whether a control's verdicts earn a hazard: PASS on the in-order stream, FAIL under the
    hazard (ERROR counts too for a loud hazard, which a pipeline may notice by raising)."""
    in_order = verdicts.get("in_order_stream", {}).get("verdict")
    under = verdicts.get(hazard, {}).get("verdict")
    return in_order == "PASS" and (under == "FAIL" or (hazard in LOUD and under == "ERROR"))


def _check_rules(
    task: Task,
    grader: Grader,
    schedules: list[str],
    result: TaskGate,
    violate: Callable[..., None],
) -> None:
    """Each stated rule's control must be caught somewhere: if it passes every schedule, the task's
    data never exercises the rule, and a pipeline that breaks it would be graded correct.

    A FAIL anywhere counts (the snapshot is enough); an ERROR counts only beside a PASS, since a
    control that raises everywhere is broken rather than caught.
    """
    for rule in task.spec.rules:
        name = rule.control
        try:
            script = script_for(task, name, task.controls[name], grader.engine_name)
            record, _ = grader.grade(task, script, schedules, where=str(task.folder / name))
        except ArrivalBenchError as exc:
            violate(str(exc), artifact=name)
            continue
        verdicts = {s: v["verdict"] for s, v in record["verdicts"].items()}
        result.verdicts[name] = verdicts
        seen = set(verdicts.values())
        if seen == {"PASS"}:
            violate(
                f"rule control passes every schedule, so the data never exercises the rule "
                f"{rule.rule!r}; turn on the generator's edge-case parameter for it "
                "(docs/task-authoring.md, 'Stated rules and edge cases') or fix the control",
                artifact=name,
            )
        elif seen == {"ERROR"}:
            first = record["verdicts"][schedules[0]]
            violate(
                f"rule control raises on every schedule, so it shows nothing about the rule "
                f"{rule.rule!r}: {_describe(first)}",
                artifact=name,
            )


_GRADER: Grader | None = None


def _gate_in_worker(
    task: Task,
    seeds: list[int],
    private: PrivateSeed | None,
    cache_dir: Path | None,
    engine: str = "duckdb",
) -> TaskGate:
    global _GRADER
    if _GRADER is None or _GRADER.engine_name != engine:
        _GRADER = Grader(
            seed=seeds[0], private=private, cache=_cache(cache_dir), engine_name=engine
        )
    return gate_task_at_seeds(task, _GRADER, seeds)


def gate_suite(
    tasks: Iterable[Task],
    seed: int,
    jobs: int = 1,
    on_task: Callable[[TaskGate], None] | None = None,
    private: PrivateSeed | None = None,
    seed_count: int = GATE_SEED_COUNT,
    cache_dir: Path | None = None,
    engine: str = "duckdb",
) -> list[TaskGate]:
    """Gate every task at `seed_count` seeds from `seed` (seeds.gate_seeds), `jobs` tasks at a
    time; results come back in the order given.

    `engine` runs the gold, controls and baselines (transpiled from DuckDB SQL, or the task's
    override file for that engine); the oracle is DuckDB's on every engine. With `private`, the
    hidden logs (benign controls, hazards, the oracle checks) descend from that secret, as in an
    official run, and the snapshot from `seed`: one seed is gated. With `cache_dir`, verdicts
    come from and go to the verdict cache (cache.py), so a later sweep of the same artifacts
    reuses them.
    """
    tasks = list(tasks)
    get_engine(engine)  # a server engine starts here, so every pool worker shares it
    seeds = gate_seeds(1 if private is not None else seed_count, seed)
    if jobs <= 1 or len(tasks) <= 1:
        results = []
        with Grader(
            seed=seed, private=private, cache=_cache(cache_dir), engine_name=engine
        ) as grader:
            for task in tasks:
                results.append(gate_task_at_seeds(task, grader, seeds))
                if on_task:
                    on_task(results[-1])
        return results
    calls = [(task, seeds, private, cache_dir, engine) for task in tasks]
    return per_task_pool(_gate_in_worker, calls, jobs, on_task)


def _cache(cache_dir: Path | None) -> VerdictCache | None:
    return VerdictCache(cache_dir) if cache_dir is not None else None


def per_task_pool(
    function: Callable[..., Result],
    calls: list[tuple[Any, ...]],
    jobs: int,
    on_result: Callable[[Result], None] | None = None,
) -> list[Result]:
    """`function(*call)` for every call on a forkserver pool of `jobs` workers (each exits with
    its parent), results in the order given; the suite checks (gate, audit) run a task per call."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    from arrivalbench.sandbox import die_with_parent

    context = multiprocessing.get_context("forkserver")
    workers = max(1, min(jobs, len(calls)))
    with ProcessPoolExecutor(workers, mp_context=context, initializer=die_with_parent) as pool:
        futures = [pool.submit(function, *call) for call in calls]
        results = []
        for future in futures:
            results.append(future.result())
            if on_result:
                on_result(results[-1])
    return results
