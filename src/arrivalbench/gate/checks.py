"""The gate's rules, one pure function each: (Matrix) -> the violations of that rule.

`CHECKS` runs them in the order the gate reports them. None grades anything: they read the
verdicts `matrix.task_matrix` computed, so each is tested on a matrix written by hand.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from arrivalbench.gate.matrix import GOLD, Entry, Matrix, describe
from arrivalbench.gate.violations import Violation
from arrivalbench.hazards import LOUD
from arrivalbench.hazards import REGISTRY as ROLES

Check = Callable[[Matrix], list[Violation]]


def description_has_no_hazard_vocabulary(m: Matrix) -> list[Violation]:
    """The description names no hazard (leak.py's scan)."""
    return [
        Violation(
            m.task,
            None,
            None,
            f"description line {leak.line} uses hazard vocabulary '{leak.term}': {leak.context!r}",
        )
        for leak in m.leaks
    ]


def overrides_have_scripts(m: Matrix) -> list[Violation]:
    """Every engine override file is the version of a script the task has."""
    return [
        Violation(
            m.task,
            orphan,
            None,
            f"{orphan} overrides a script the task does not have; delete it, or rename it after "
            "the script it is the engine's version of",
        )
        for orphan in m.orphans
    ]


def has_negative_control(m: Matrix) -> list[Violation]:
    if not m.seed_independent or m.controls:
        return []
    message = "has no negative control; add at least one under controls/ and declare what it fails"
    return [Violation(m.task, None, None, message)]


def declared_hazards_perturb(m: Matrix) -> list[Violation]:
    """Every declared hazard changes this task's delivery."""
    return [
        Violation(
            m.task,
            None,
            hazard,
            f"declared hazard does not perturb delivery ({dict(m.perturbations[hazard])})",
        )
        for hazard in m.hazards
        if not m.bites[hazard]
    ]


def oracle_is_unambiguous(m: Matrix) -> list[Violation]:
    """The oracle runs, repeats no key and gives the same result on shuffled input, on two seeds."""
    return [Violation(m.task, "oracle.sql", None, defect) for defect in m.oracle]


def gold_and_controls_hold(m: Matrix) -> list[Violation]:
    """The gold passes every schedule; each negative control passes all but its declared hazards
    and fails those silently (a loud hazard may also ERROR)."""
    found = []
    for graded in m.of("gold", "control"):
        if graded.error is not None:
            found.append(Violation(m.task, graded.name, None, graded.error))
            continue
        for schedule, entry in graded.verdicts.items():
            message = _verdict_message(graded.name, graded.fails, schedule, entry)
            if message is not None:
                cause = _cause(entry)
                found.append(Violation(m.task, graded.name, schedule, message, cause=cause))
    return found


def _verdict_message(name: str, fails: frozenset[str], schedule: str, entry: Entry) -> str | None:
    verdict = entry["verdict"]
    if schedule in fails:
        if verdict == "ERROR" and schedule not in LOUD:
            return f"must fail silently but raised: {describe(entry)}"
        if verdict == "PASS":
            return "declared to fail but passes; drop it from 'fails' or fix the control"
        return None
    if verdict == "PASS":
        return None
    role = "gold" if name == GOLD else "control"
    kind = "benign control" if ROLES[schedule].group == "benign" else "schedule"
    # 'fails' lists hazards, and a declared silent hazard must FAIL: only there can it help.
    declarable = ROLES[schedule].is_hazard and (verdict == "FAIL" or schedule in LOUD)
    hint = " (declare it in 'fails' if intended)" if role == "control" and declarable else ""
    return f"{role} must pass this {kind}: {describe(entry)}{hint}"


def _cause(entry: Entry) -> str | None:
    """An engine error is one cause wherever it is hit (whichever statement, batch, schedule)."""
    if entry["verdict"] != "ERROR":
        return None
    return f"ERROR {entry['error_class']}: {entry['message']}"


def rules_are_exercised(m: Matrix) -> list[Violation]:
    """Each stated rule's control fails some schedule (an ERROR counts only beside a PASS, since a
    control that raises everywhere is broken rather than caught), so the data exercises the rule."""
    found = []
    for graded in m.of("rule"):
        if graded.error is not None:
            found.append(Violation(m.task, graded.name, None, graded.error))
            continue
        seen = set(graded.row.values())
        if seen == {"PASS"}:
            message = (
                f"rule control passes every schedule, so the data never exercises the rule "
                f"{graded.rule!r}; turn on the generator's edge-case parameter for it "
                "(docs/task-authoring.md, 'Stated rules and edge cases') or fix the control"
            )
        elif seen == {"ERROR"}:
            first = graded.verdicts[m.schedules[0]]
            message = (
                f"rule control raises on every schedule, so it shows nothing about the rule "
                f"{graded.rule!r}: {describe(first)}"
            )
        else:
            continue
        found.append(Violation(m.task, graded.name, None, message))
    return found


def existing_pipeline_has_work(m: Matrix) -> list[Violation]:
    """A modify or repair task's existing pipeline does not already pass the snapshot."""
    found = []
    for graded in m.of("existing"):
        if graded.error is not None:
            found.append(Violation(m.task, graded.name, None, graded.error))
        elif graded.verdicts["snapshot"]["verdict"] == "PASS":
            message = f"the existing pipeline already passes the snapshot: nothing to {m.mode}"
            found.append(Violation(m.task, graded.name, None, message))
    return found


def baselines_grade(m: Matrix) -> list[Violation]:
    """Every naive baseline the task derives can be graded."""
    return [
        Violation(m.task, g.name, None, g.error) for g in m.of("baseline") if g.error is not None
    ]


def order_sensitive_declares_out_of_order(m: Matrix) -> list[Violation]:
    if not m.oracle_runs or not m.order_sensitive or "out_of_order" in m.hazards:
        return []
    message = (
        "the task is order_sensitive but does not declare out_of_order: declare it with a "
        "control that is right in arrival order and wrong when events arrive out of order "
        "(arrival order taken as event order, a watermark), or set order_sensitive: false"
    )
    return [Violation(m.task, None, "out_of_order", message)]


def earns(verdicts: Mapping[str, Entry], hazard: str) -> bool:
    """Whether a control's verdicts earn a hazard: PASS on the in-order stream, FAIL under the
    hazard (ERROR counts too for a loud hazard, which a pipeline may notice by raising)."""
    in_order = verdicts.get("in_order_stream", {}).get("verdict")
    under = verdicts.get(hazard, {}).get("verdict")
    return in_order == "PASS" and (under == "FAIL" or (hazard in LOUD and under == "ERROR"))


def earned_by(m: Matrix) -> dict[str, list[str]]:
    """declared hazard -> the negative controls listing it that pass the in-order stream and
    fail under it. A verdict change, not a diff change: baselines never earn a declaration."""
    records = m.records()
    return {
        hazard: [f for f in m.declared_in[hazard] if f in records and earns(records[f], hazard)]
        for hazard in m.hazards
    }


def hazards_are_earned(m: Matrix) -> list[Violation]:
    """Every declared hazard is earned by an authored control (earned_by)."""
    if not m.oracle_runs:
        return []
    records, earned, found = m.records(), earned_by(m), []
    for hazard in m.hazards:
        if earned[hazard]:
            continue
        outcome = "FAILs or ERRORs" if hazard in LOUD else "FAILs"
        if m.order_sensitive and hazard == "out_of_order":
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
        listing = m.declared_in[hazard]
        if not listing:
            message = (
                f"declared, but no control lists it in 'fails'{seen}; {remedy} that passes the "
                f"in-order stream and {outcome} under it, or stop declaring it"
            )
        else:
            message = (
                f"not earned: no control that passes the in-order stream {outcome} under it "
                f"({', '.join(listing)} list it in 'fails'){seen}; {remedy} that does, or stop "
                "declaring it"
            )
        found.append(Violation(m.task, None, hazard, message))
    return found


CHECKS: tuple[Check, ...] = (
    description_has_no_hazard_vocabulary,
    overrides_have_scripts,
    has_negative_control,
    declared_hazards_perturb,
    oracle_is_unambiguous,
    gold_and_controls_hold,
    rules_are_exercised,
    existing_pipeline_has_work,
    baselines_grade,
    order_sensitive_declares_out_of_order,
    hazards_are_earned,
)
"""Every rule, in the order its violations are reported."""


def check(m: Matrix) -> list[Violation]:
    """The violations of every rule, in report order."""
    return [v for rule in CHECKS for v in rule(m)]
