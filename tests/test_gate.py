"""The admissibility gate: each rule on a verdict matrix written by hand, then whole tasks.

Each rule (gate/checks.py) is a pure function of the matrix, so it is proven on the smallest
matrix that shows it, in milliseconds. Gating a whole task grades its gold, controls and
baselines on every schedule (marked slow): those tests are kept where the task itself, its data
or the grading is the point, and breaks that cannot mask one another share one copy.
"""

from __future__ import annotations

import dataclasses
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from arrivalbench.gate import GOLD, TaskGate, Violation, gate_suite, gate_task
from arrivalbench.grade import Grader
from arrivalbench.seeds import DEFAULT_SEED
from arrivalbench.spec import LOUD, SUITE_DIR, Task, get_task, load_task

LEDGER = "controls/ledger_after_update.sql"
DEDUP = "controls/dedup_history_only.sql"
WATERMARK = "controls/broken_watermark_drop.sql"


@pytest.fixture(scope="module")
def grader():
    with Grader() as g:
        yield g


def broken_copy(root: Path, break_it: Callable[[Path, dict], None]) -> Task:
    """A copy of daily_revenue under `root`, changed by break_it(folder, task.yaml mapping), loaded."""
    folder = root / "daily_revenue"
    shutil.copytree(
        SUITE_DIR / "daily_revenue", folder, ignore=shutil.ignore_patterns("__pycache__")
    )
    spec_path = folder / "task.yaml"
    raw = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    break_it(folder, raw)
    spec_path.write_text(yaml.safe_dump(raw, sort_keys=False), encoding="utf-8")
    return load_task(folder)


def _control(raw: dict, file: str) -> dict:
    return next(c for c in raw["controls"] if c["file"] == file)


def break_controls_and_text(folder: Path, raw: dict) -> None:
    # 1. The description tells the agent about the hazard.
    raw["description"] += "Some orders are late.\n"
    # 2. A control declared to fail a hazard it passes (the ledger control is right under late rows).
    _control(raw, LEDGER)["fails"] = ["crash_retry", "late_arrival"]
    # 3. A control that raises where it should fail silently: a primary key on history rejects an
    #    order sent twice in one batch instead of double counting it.
    dedup = folder / DEDUP
    text = dedup.read_text(encoding="utf-8")
    assert "    event_id BIGINT,\n" in text, (
        "daily_revenue's dedup control changed: update this test"
    )
    dedup.write_text(
        text.replace("    event_id BIGINT,\n", "    event_id BIGINT PRIMARY KEY,\n", 1),
        encoding="utf-8",
    )


def break_gold_and_drop_controls(folder: Path, raw: dict) -> None:
    # 4. The gold is the watermark control: it drops late rows.
    shutil.copyfile(folder / WATERMARK, folder / "gold.sql")
    # 5. No negative control at all.
    raw["controls"] = []


@pytest.fixture(scope="module")
def controls_and_text(grader, tmp_path_factory) -> TaskGate:
    return gate_task(
        broken_copy(tmp_path_factory.mktemp("controls"), break_controls_and_text), grader
    )


@pytest.fixture(scope="module")
def gold_and_no_controls(grader, tmp_path_factory) -> TaskGate:
    return gate_task(
        broken_copy(tmp_path_factory.mktemp("gold"), break_gold_and_drop_controls), grader
    )


def violations(
    result: TaskGate, artifact: str | None, schedule: str | None = None
) -> list[Violation]:
    return [v for v in result.violations if v.artifact == artifact and v.schedule == schedule]


# --- admitted ---------------------------------------------------------------------------------------


@pytest.mark.slow
def test_an_admitted_task_has_the_verdicts_its_declarations_promise(grader):
    """What admission means, read off one task's verdicts independently of checks.py (make
    test's gate admits every task at three seeds on every engine; that is not repeated here).
    page_views_schema declares a loud hazard, which a control may ERROR on."""
    task = get_task("page_views_schema")
    result = gate_task(task, grader)
    assert result.violations == []
    assert result.admitted
    assert set(result.verdicts) >= {GOLD, *task.controls}
    assert all(v == "PASS" for v in result.verdicts[GOLD].values())
    for control in task.spec.controls:
        row = result.verdicts[control.file]
        assert {s for s, v in row.items() if v != "PASS"} == set(control.fails)
        assert all(row[s] == "FAIL" or s in LOUD for s in control.fails)
    for hazard in task.spec.hazards:
        earners = result.earned_by[hazard]
        assert earners, hazard
        assert all(c.startswith("controls/") for c in earners)  # never a baseline
        assert all(result.verdicts[c]["in_order_stream"] == "PASS" for c in earners)
    for rule in task.spec.rules:
        assert "FAIL" in result.verdicts[rule.control].values(), rule.rule


# --- rejected, each defect named ------------------------------------------------------------------


@pytest.mark.slow
def test_three_breaks_give_exactly_four_violations(controls_and_text):
    """Nothing else in the copy is wrong, so nothing else may be reported (the gold still passes):
    the three breaks (a leak, a declaration the ledger control passes, a dedup control that
    raises), and the declaration the raising control no longer earns. Each rule has its own
    synthetic test above; this one shows real grading gives those matrices."""
    found = [(v.artifact, v.schedule) for v in controls_and_text.violations]
    assert found == [
        (None, None),
        (DEDUP, "duplicate_delivery"),
        (LEDGER, "late_arrival"),
        (None, "duplicate_delivery"),
    ], [str(v) for v in controls_and_text.violations]
    assert all(v == "PASS" for v in controls_and_text.verdicts[GOLD].values())
    assert controls_and_text.verdicts[LEDGER]["late_arrival"] == "PASS"
    assert controls_and_text.verdicts[LEDGER]["crash_retry"] == "FAIL"
    raised = controls_and_text.violations[1]
    assert "PRIMARY KEY" in raised.message or "Constraint" in raised.message
    assert {s for s, v in controls_and_text.verdicts[DEDUP].items() if v != "PASS"} == {
        "duplicate_delivery"
    }
    assert controls_and_text.verdicts[DEDUP]["duplicate_delivery"] == "ERROR"
    assert controls_and_text.earned_by["duplicate_delivery"] == []


@pytest.mark.slow
def test_gold_that_fails_a_hazard_and_no_controls_are_rejected(gold_and_no_controls):
    gold = [v for v in gold_and_no_controls.violations if v.artifact == GOLD]
    assert {v.schedule for v in gold} == {"late_arrival", "out_of_order", "backfill"}
    assert all(v.message.startswith("gold must pass this schedule: FAIL") for v in gold)
    assert gold_and_no_controls.verdicts[GOLD]["snapshot"] == "PASS"
    assert not gold_and_no_controls.task.spec.controls
    (missing,) = [v for v in gold_and_no_controls.violations if "no negative control" in v.message]
    assert (missing.artifact, missing.schedule) == (None, None)
    assert {a for a in gold_and_no_controls.verdicts if not a.startswith("baseline:")} == {GOLD}


# --- each rule on a matrix written by hand -------------------------------------------------------

from arrivalbench.gate import CHECKS, Graded, Matrix, check, earned_by, group_violations  # noqa: E402
from arrivalbench.gate import checks as rules  # noqa: E402

SCHEDULES = (
    "snapshot",
    "single_batch",
    "in_order_stream",
    "late_arrival",
    "out_of_order",
    "duplicate_delivery",
    "crash_retry",
    "backfill",
)
HAZARDS = SCHEDULES[3:]
PK_ERROR = 'Constraint Error: Duplicate key "event_id: 7" violates primary key constraint.'


def entry(verdict: str, message: str = "boom", statement: int = 2) -> dict:
    if verdict == "ERROR":
        return {
            "verdict": "ERROR",
            "error_class": "sql_error",
            "batch": 3,
            "statement": statement,
            "message": message,
        }
    if verdict == "FAIL":
        return {"verdict": "FAIL", "diff": {"counts": {"missing": 2, "extra": 0}}}
    return {"verdict": "PASS"}


def graded(
    name: str, role: str = "control", not_pass: dict | None = None, fails=(), **kw
) -> Graded:
    """An artifact that PASSes every schedule but those in not_pass (schedule -> verdict or entry)."""
    schedules = kw.pop("schedules", SCHEDULES)
    row = {s: entry("PASS") for s in schedules}
    for s, v in (not_pass or {}).items():
        row[s] = entry(v) if isinstance(v, str) else v
    return Graded(name, role, row, fails=frozenset(fails), **kw)


def matrix(*artifacts: Graded, **kw) -> Matrix:
    """daily_revenue's facts: five declared hazards that bite, its three controls as declared."""
    controls = tuple(g for g in artifacts if g.role == "control")
    hazards = kw.pop("hazards", HAZARDS)
    facts = dict(
        task="daily_revenue",
        engine="duckdb",
        schedules=("snapshot", "single_batch", "in_order_stream", *hazards),
        hazards=hazards,
        controls=tuple(g.name for g in controls),
        declared_in={h: tuple(g.name for g in controls if h in g.fails) for h in hazards},
        perturbations={h: {"moved_events": 5} for h in hazards},
        bites=dict.fromkeys(hazards, True),
        graded=(graded(GOLD, "gold"), *artifacts),
    )
    facts.update(kw)
    return Matrix(**facts)


def daily_revenue_controls() -> list[Graded]:
    """daily_revenue's three controls as they are graded: each FAILs exactly what it declares."""
    return [
        graded(DEDUP, not_pass={"duplicate_delivery": "FAIL"}, fails=["duplicate_delivery"]),
        graded(
            WATERMARK,
            not_pass=dict.fromkeys(("late_arrival", "out_of_order", "backfill"), "FAIL"),
            fails=["late_arrival", "out_of_order", "backfill"],
        ),
        graded(LEDGER, not_pass={"crash_retry": "FAIL"}, fails=["crash_retry"]),
    ]


def of(found: list[Violation], artifact: str | None, schedule: str | None = None):
    return [v for v in found if v.artifact == artifact and v.schedule == schedule]


def test_a_matrix_that_holds_gives_no_violation():
    m = matrix(*daily_revenue_controls())
    assert check(m) == []
    assert earned_by(m) == {
        "late_arrival": [WATERMARK],
        "out_of_order": [WATERMARK],
        "duplicate_delivery": [DEDUP],
        "crash_retry": [LEDGER],
        "backfill": [WATERMARK],
    }


def test_every_rule_is_one_check():
    assert len(CHECKS) == 11 and len(set(CHECKS)) == 11
    assert all(rule.__doc__ or rule.__name__ for rule in CHECKS)


def test_description_with_hazard_vocabulary_is_rejected():
    from arrivalbench.leak import scan

    description = "Finance wants revenue.\nSome orders are late.\n"
    m = matrix(*daily_revenue_controls(), leaks=tuple(scan(description)))
    (leak,) = check(m)
    assert "hazard vocabulary 'late'" in leak.message
    assert "Some orders are late." in leak.message
    assert str(leak).startswith("daily_revenue: description line 2 ")


def test_control_declared_to_fail_a_hazard_it_passes_is_rejected():
    dedup, watermark, ledger = daily_revenue_controls()
    ledger = graded(LEDGER, not_pass={"crash_retry": "FAIL"}, fails=["crash_retry", "late_arrival"])
    (over,) = check(matrix(dedup, watermark, ledger))
    assert (over.artifact, over.schedule) == (LEDGER, "late_arrival")
    assert over.message.startswith("declared to fail but passes")


def test_control_that_errors_where_it_should_fail_is_rejected():
    """A primary key on history rejects an order sent twice in one batch instead of double
    counting it: an ERROR where the control must fail silently. It no longer earns duplicates,
    the only declaration it earned: raising does not earn a silent hazard."""
    _, watermark, ledger = daily_revenue_controls()
    dedup = graded(
        DEDUP,
        not_pass={"duplicate_delivery": entry("ERROR", PK_ERROR)},
        fails=["duplicate_delivery"],
    )
    m = matrix(dedup, watermark, ledger)
    raised, unearned = check(m)
    assert (raised.artifact, raised.schedule) == (DEDUP, "duplicate_delivery")
    assert raised.message.startswith("must fail silently but raised: ERROR sql_error at batch ")
    assert "primary key" in raised.message
    assert earned_by(m)["duplicate_delivery"] == []
    assert (unearned.artifact, unearned.schedule) == (None, "duplicate_delivery")
    assert unearned.message.startswith("not earned: no control that passes the in-order stream")
    assert f"({DEDUP} list it in 'fails')" in unearned.message


def test_gold_that_fails_a_hazard_is_rejected():
    gold = graded(GOLD, "gold", not_pass={"late_arrival": "FAIL", "backfill": "FAIL"})
    m = matrix(*daily_revenue_controls(), graded=(gold, *daily_revenue_controls()))
    found = check(m)
    assert [v.schedule for v in found] == ["late_arrival", "backfill"]
    assert all(v.artifact == GOLD for v in found)
    assert all(v.message == "gold must pass this schedule: FAIL {'missing': 2}" for v in found)


def test_task_without_controls_is_rejected():
    m = matrix(hazards=())
    (missing,) = check(m)
    assert (missing.artifact, missing.schedule) == (None, None)
    assert "no negative control" in missing.message
    assert rules.has_negative_control(matrix(hazards=(), seed_independent=False)) == []


def test_hazard_that_does_not_perturb_is_rejected():
    m = matrix(*daily_revenue_controls(), bites={**dict.fromkeys(HAZARDS, True), "backfill": False})
    (idle,) = check(m)
    assert (idle.artifact, idle.schedule) == (None, "backfill")
    assert idle.message == "declared hazard does not perturb delivery ({'moved_events': 5})"


def test_override_without_its_script_is_rejected():
    (orphan,) = check(matrix(*daily_revenue_controls(), orphans=("controls/gone.sqlite.sql",)))
    assert orphan.artifact == "controls/gone.sqlite.sql"
    assert "overrides a script the task does not have" in orphan.message


def test_oracle_that_does_not_run_stops_every_later_rule():
    m = matrix(
        *daily_revenue_controls(),
        oracle=("oracle.sql: Parser Error (not graded)",),
        oracle_runs=False,
        graded=(),
    )
    (broken,) = check(m)
    assert (broken.artifact, broken.message) == (
        "oracle.sql",
        "oracle.sql: Parser Error (not graded)",
    )


def test_hazard_that_nothing_notices_is_rejected_synthetic():
    dedup, watermark, ledger = daily_revenue_controls()
    dedup = graded(DEDUP, fails=["duplicate_delivery"])  # passes everywhere now
    m = matrix(dedup, watermark, ledger)
    dedup_pass, unearned = check(m)
    assert dedup_pass.message.startswith("declared to fail but passes")
    assert unearned.schedule == "duplicate_delivery"
    assert "not PASS under it" not in unearned.message
    assert "stop declaring it" in unearned.message


def test_declaration_only_batch_only_reacts_to_is_rejected():
    """Regression: the gate admitted a hazard whenever some artifact's verdict *record* differed
    from its in-order one, diff included, so `batch_only`, which already FAILs the in-order
    stream, "noticed" duplicates on daily_funnel (distinct counts, which duplicates cannot change)
    and the declaration was admitted with no control failing it."""
    _, watermark, ledger = daily_revenue_controls()
    batch_only = graded(
        "baseline:batch_only",
        "baseline",
        not_pass=dict.fromkeys(SCHEDULES[2:], "FAIL"),
    )
    in_order = dict(batch_only.verdicts["in_order_stream"])
    in_order["diff"] = {"counts": {"missing": 9}}  # another diff, the same verdict
    batch_only = Graded(
        batch_only.name, "baseline", {**batch_only.verdicts, "in_order_stream": in_order}
    )
    m = matrix(watermark, ledger, batch_only)
    assert earned_by(m)["duplicate_delivery"] == []
    (unearned,) = of(check(m), None, "duplicate_delivery")
    assert "no control lists it in 'fails'" in unearned.message
    assert "not earning: baseline:batch_only (a baseline never earns" in unearned.message


def test_declaration_whose_only_failing_control_fails_in_order_is_rejected():
    """A control that is wrong on the in-order stream FAILs every hazard and says nothing about
    any of them: listing a hazard in its 'fails' does not earn the declaration."""
    _, watermark, ledger = daily_revenue_controls()
    totals = "controls/batch_totals.sql"
    batch_totals = graded(
        totals, not_pass=dict.fromkeys(SCHEDULES[2:], "FAIL"), fails=["duplicate_delivery"]
    )
    m = matrix(watermark, ledger, batch_totals)
    found = check(m)
    assert earned_by(m)["duplicate_delivery"] == []
    (unearned,) = of(found, None, "duplicate_delivery")
    assert unearned.message.startswith("not earned: no control that passes the in-order stream")
    assert f"({totals} list it in 'fails')" in unearned.message
    (benign,) = of(found, totals, "in_order_stream")
    assert benign.message.startswith("control must pass this benign control: FAIL")
    for hazard in ("late_arrival", "out_of_order", "crash_retry", "backfill"):
        assert earned_by(m)[hazard], hazard


def test_loud_hazard_is_earned_by_an_error_and_only_there():
    """A control may ERROR under schema evolution (the loud hazard) and earn it; under a silent
    hazard the same ERROR is a violation (test_control_that_errors_where_it_should_fail_...)."""
    hazards = (*HAZARDS, "schema_evolution")
    schedules = (*SCHEDULES, "schema_evolution")
    named = "controls/names_new_column.sql"
    controls = [
        graded(g.name, not_pass=dict(g.row), fails=g.fails, schedules=schedules)
        for g in daily_revenue_controls()
    ]
    controls = [
        Graded(c.name, "control", {s: entry(v) for s, v in c.row.items()}, fails=c.fails)
        for c in controls
    ]
    loud = graded(
        named,
        not_pass={"schema_evolution": "ERROR"},
        fails=["schema_evolution"],
        schedules=schedules,
    )
    gold = graded(GOLD, "gold", schedules=schedules)
    m = matrix(*controls, loud, hazards=hazards, graded=(gold, *controls, loud))
    assert earned_by(m)["schema_evolution"] == [named]
    assert check(m) == []
    assert not rules.earns(loud.verdicts, "crash_retry")
    assert not rules.earns({**loud.verdicts, "crash_retry": entry("ERROR")}, "crash_retry")


def test_order_sensitive_task_without_out_of_order_is_rejected():
    hazards = tuple(h for h in HAZARDS if h != "out_of_order")
    dedup, _, ledger = daily_revenue_controls()
    watermark = graded(
        WATERMARK,
        not_pass={"late_arrival": "FAIL", "backfill": "FAIL"},
        fails=["late_arrival", "backfill"],
    )
    m = matrix(dedup, watermark, ledger, hazards=hazards, order_sensitive=True)
    (missing,) = check(m)
    assert (missing.artifact, missing.schedule) == (None, "out_of_order")
    assert "order_sensitive but does not declare out_of_order" in missing.message
    # The same task marked order-insensitive is admitted without it.
    assert check(matrix(dedup, watermark, ledger, hazards=hazards)) == []


def test_rule_whose_control_passes_every_schedule_is_rejected():
    """A rule control that passes every schedule shows the data never reaches the rule; one that
    raises on every schedule shows nothing either (it is broken, not caught); one that FAILs
    somewhere, or ERRORs beside a PASS, is caught."""
    rule = "`revenue` is the sum of the order amounts of that store on that day"
    same = graded("controls/same_as_gold.sql", "rule", rule=rule)
    raises = graded(
        "controls/raises.sql",
        "rule",
        not_pass=dict.fromkeys(SCHEDULES, entry("ERROR", "Catalog Error: no_such_table")),
        rule="`orders` is the number",
    )
    caught = graded("controls/caught.sql", "rule", not_pass={"snapshot": "FAIL"}, rule="a")
    beside = graded("controls/beside.sql", "rule", not_pass={"backfill": "ERROR"}, rule="b")
    found = rules.rules_are_exercised(matrix(same, raises, caught, beside))
    unexercised, raised = found
    assert (unexercised.artifact, unexercised.schedule) == (same.name, None)
    assert "rule control passes every schedule, so the data never exercises the rule" in str(
        unexercised
    )
    assert repr(rule) in unexercised.message and "edge-case parameter" in unexercised.message
    assert (raised.artifact, raised.schedule) == (raises.name, None)
    assert raised.message.startswith("rule control raises on every schedule")
    assert "ERROR sql_error" in raised.message and "no_such_table" in raised.message


def test_existing_pipeline_that_already_passes_is_rejected():
    existing = graded("existing.sql", "existing", schedules=("snapshot",))
    m = matrix(*daily_revenue_controls(), existing, mode="repair")
    (nothing_to_do,) = check(m)
    assert (nothing_to_do.artifact, nothing_to_do.schedule) == ("existing.sql", None)
    assert "already passes the snapshot: nothing to repair" in nothing_to_do.message
    failing = graded("existing.sql", "existing", {"snapshot": "FAIL"}, schedules=("snapshot",))
    assert check(matrix(*daily_revenue_controls(), failing, mode="repair")) == []


def test_an_artifact_that_cannot_be_graded_is_one_violation_where_it_belongs():
    broken = Graded(DEDUP, "control", error="controls/x.sql: cannot transpile", fails=frozenset())
    baseline = Graded("baseline:naive_append", "baseline", error="refused by the sandbox")
    found = rules.gold_and_controls_hold(matrix(broken)) + rules.baselines_grade(matrix(baseline))
    assert [(v.artifact, v.schedule, v.message) for v in found] == [
        (DEDUP, None, "controls/x.sql: cannot transpile"),
        ("baseline:naive_append", None, "refused by the sandbox"),
    ]


def test_regression_fails_hint_on_a_schedule_fails_cannot_list():
    """The hint "declare it in 'fails' if intended" was attached to a control's snapshot and
    benign-control errors, where 'fails' cannot apply (it lists hazards), and to an ERROR under a
    silent hazard, which declaring would only turn into "must fail silently but raised"."""
    control = graded(
        DEDUP,
        not_pass={
            "snapshot": "FAIL",
            "in_order_stream": "ERROR",
            "crash_retry": "ERROR",
            "late_arrival": "FAIL",
        },
        fails=["duplicate_delivery"],
    )
    found = {v.schedule: v.message for v in rules.gold_and_controls_hold(matrix(control))}
    hint = "(declare it in 'fails' if intended)"
    assert hint not in found["snapshot"]
    assert hint not in found["in_order_stream"]
    assert hint not in found["crash_retry"]
    assert found["late_arrival"].endswith(hint)


def test_regression_one_cause_reported_once_with_a_count():
    """A renamed source column broke every artifact on every schedule at every seed: 111
    violations over 552 lines for one cause. The report groups them by the engine error (the
    statement it hit aside) and says how many and where; a cause seen once reads as before."""
    error = 'Binder Error: Referenced column "price" not found in FROM clause!\nLINE 2: ...'
    gold = graded(GOLD, "gold", not_pass=dict.fromkeys(SCHEDULES, entry("ERROR", error, 2)))
    control = graded(
        WATERMARK, not_pass=dict.fromkeys(SCHEDULES, entry("ERROR", error, 5)), fails=["backfill"]
    )
    found = rules.gold_and_controls_hold(matrix(control, graded=(gold, control)))
    found += [dataclasses.replace(v, seed=20260102) for v in found]
    assert len(found) == 32
    (group,) = group_violations(found)
    text = str(group)
    assert text.startswith("daily_revenue: 32 violations, gold.sql on snapshot, single_batch, ")
    assert f"; {WATERMARK} on snapshot, " in text
    assert "at seed 20260102" in text
    assert text.endswith(f": ERROR sql_error: {error}")
    assert text.count("Binder Error") == 1
    lone = Violation("daily_revenue", GOLD, "backfill", "gold must pass this schedule: FAIL {}", 3)
    assert [str(g) for g in group_violations([lone])] == [str(lone)]


def test_violations_of_different_tasks_or_causes_are_not_grouped():
    a = Violation("a", GOLD, "snapshot", "m", cause="c")
    b = Violation("b", GOLD, "snapshot", "m", cause="c")
    c = Violation("a", DEDUP, "snapshot", "m2", cause="c2")
    assert [len(g.violations) for g in group_violations([a, b, c])] == [1, 1, 1]
    assert Violation("a", GOLD, "snapshot", "m", cause="x") == a  # a cause never changes equality


# --- rejected: a hazard nothing notices, an ambiguous oracle, nothing to repair --------------------
# Each break gets its own copy (of the task named), loaded from a folder under tmp_path.

from arrivalbench.baselines import baseline_script  # noqa: E402
from arrivalbench.gate import ORACLE_SEEDS  # noqa: E402
from arrivalbench.logs import task_log  # noqa: E402
from arrivalbench.oracle import oracle_defects  # noqa: E402

ORACLES = Path(__file__).parent / "fixtures" / "oracles"


def with_oracle(copy_task, task_id: str, oracle_file: str) -> Task:
    """A copy of a built-in task whose oracle.sql is replaced by a fixture from fixtures/oracles."""
    folder = copy_task(task_id)
    shutil.copyfile(ORACLES / oracle_file, folder / "oracle.sql")
    return load_task(folder)


def _declare(hazard: str) -> Callable[[dict], None]:
    return lambda raw: raw["hazards"].append(hazard)


@pytest.mark.slow
def test_hazard_that_nothing_notices_is_rejected(grader, copy_task, edit_spec):
    # store_max_order (max/min per store) declaring duplicates again, with the oracle split in two
    # statements so that no baselines exist: nothing ends differently under duplicates.
    folder = copy_task("store_max_order")
    shutil.copyfile(ORACLES / "store_max_order_two_statements.sql", folder / "oracle.sql")
    edit_spec(folder, _declare("duplicate_delivery"))
    result = gate_task(load_task(folder), grader)
    assert not any(name.startswith("baseline:") for name in result.verdicts)
    assert result.verdicts[GOLD]["snapshot"] == "PASS"  # the split oracle gives the same target
    rule_controls = {r.control for r in result.task.spec.rules}  # wrong on purpose, everywhere
    for name, row in result.verdicts.items():
        if name not in rule_controls:
            assert row["duplicate_delivery"] == row["in_order_stream"] == "PASS", name
    assert result.earned_by["duplicate_delivery"] == []
    for hazard in result.task.spec.hazards:
        if hazard != "duplicate_delivery":
            assert result.earned_by[hazard], hazard
    (over,) = result.violations
    assert (over.artifact, over.schedule) == (None, "duplicate_delivery")
    assert "no control lists it in 'fails'" in over.message
    assert "not PASS under it" not in over.message
    assert "stop declaring it" in over.message


@pytest.mark.slow
def test_batch_only_on_daily_funnel_reacts_to_duplicates_in_its_diff_only(
    grader, copy_task, edit_spec
):
    """The data behind test_declaration_only_batch_only_reacts_to_is_rejected: on daily_funnel
    (distinct counts) batch_only FAILs both in order and under duplicates, with another diff."""
    folder = copy_task("daily_funnel")
    edit_spec(folder, _declare("duplicate_delivery"))
    task = load_task(folder)
    batch_only, _ = grader.grade(
        task, baseline_script(task, "batch_only"), ["in_order_stream", "duplicate_delivery"]
    )
    in_order, duplicated = (
        batch_only["verdicts"][s] for s in ("in_order_stream", "duplicate_delivery")
    )
    assert in_order["verdict"] == duplicated["verdict"] == "FAIL"
    assert in_order["diff"] != duplicated["diff"]  # what the old rule took for "noticed"


@pytest.mark.slow
def test_oracle_that_repeats_a_key_is_rejected(grader, copy_task):
    task = with_oracle(copy_task, "daily_revenue", "daily_revenue_repeats_a_key.sql")
    result = gate_task(task, grader)
    assert not result.admitted
    repeated = [v for v in result.violations if "repeats a key" in v.message]
    assert [v.artifact for v in repeated] == ["oracle.sql"] * ORACLE_SEEDS
    assert [f"(seed {grader.seed + i})" in v.message for i, v in enumerate(repeated)] == [
        True
    ] * ORACLE_SEEDS
    assert not [v for v in result.violations if "depends on row order" in v.message]


@pytest.mark.slow
def test_built_in_oracle_has_no_defects(grader):
    task = get_task("daily_revenue")
    log = task_log(task, "hidden", grader.seed)
    assert oracle_defects(task, log, grader.engine, grader.seed) == []


@pytest.mark.slow
@pytest.mark.parametrize(
    "oracle_file", ["daily_revenue_any_value.sql", "daily_revenue_row_number_unordered.sql"]
)
def test_oracle_whose_result_depends_on_row_order_is_rejected(grader, copy_task, oracle_file):
    task = with_oracle(copy_task, "daily_revenue", oracle_file)
    log = task_log(task, "hidden", grader.seed)
    (defect,) = oracle_defects(task, log, grader.engine, grader.seed)
    assert "depends on row order" in defect
    assert f"seed {grader.seed}" in defect
    assert "'changed'" in defect  # the keys are the same; values picked from the group differ


@pytest.mark.slow
def test_repair_whose_existing_pipeline_already_passes_is_rejected(grader, copy_task):
    built_in = get_task("daily_revenue_repair")
    record, _ = grader.grade(built_in, built_in.existing_sql, ["snapshot"])
    assert record["verdicts"]["snapshot"]["verdict"] == "FAIL"  # the real one has work to do
    folder = copy_task("daily_revenue_repair")
    shutil.copyfile(folder / "gold.sql", folder / "existing.sql")
    result = gate_task(load_task(folder), grader)
    (nothing_to_do,) = result.violations
    assert (nothing_to_do.artifact, nothing_to_do.schedule) == ("existing.sql", None)
    assert "already passes the snapshot: nothing to repair" in nothing_to_do.message


# --- known bugs: gate_task promises to collect violations, never to raise -------------------------


@pytest.mark.slow
def test_oracle_with_an_undeclared_column_is_rejected_not_raised(grader, copy_task):
    task = with_oracle(copy_task, "daily_revenue", "daily_revenue_extra_column.sql")
    result = gate_task(task, grader)
    assert not result.admitted
    assert any(
        v.artifact == "oracle.sql" and "do not match the target" in v.message
        for v in result.violations
    )


@pytest.mark.slow
def test_repair_with_an_empty_existing_pipeline_is_rejected_not_raised(grader, copy_task):
    folder = copy_task("daily_revenue_repair")
    (folder / "existing.sql").write_text("-- to be written\n", encoding="utf-8")
    result = gate_task(load_task(folder), grader)
    assert [v.artifact for v in result.violations] == ["existing.sql"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("oracle_file", "phrase"),
    [
        ("daily_revenue_syntax_error.sql", 'Parser Error: syntax error at or near "SELEC"'),
        ("daily_revenue_fails_at_run_time.sql", "Conversion Error"),
    ],
)
def test_oracle_that_does_not_run_is_one_violation_not_a_crash(
    grader, copy_task, oracle_file, phrase
):
    """Regression: an oracle.sql with a syntax error crashed the gate (DuckDB's ParserException
    from the baselines), and one that raised at run time gave a violation for every artifact."""
    task = with_oracle(copy_task, "daily_revenue", oracle_file)
    result = gate_task(task, grader)
    (broken,) = result.violations
    assert (broken.task, broken.artifact, broken.schedule) == ("daily_revenue", "oracle.sql", None)
    assert str(broken).startswith(f"daily_revenue: oracle.sql: {task.folder / 'oracle.sql'}: ")
    assert phrase in broken.message and "\n" not in broken.message
    assert "the gold, controls and baselines were not graded" in broken.message
    assert result.verdicts == {}


@pytest.mark.slow
def test_gate_suite_gates_the_other_tasks_after_a_broken_oracle(copy_task):
    """Regression: one task's unparsable oracle stopped the whole gate, in a worker or not."""
    broken = with_oracle(copy_task, "daily_revenue", "daily_revenue_syntax_error.sql")
    seen: list[str] = []
    results = gate_suite(
        [broken, get_task("customer_state")],
        seed=DEFAULT_SEED,
        jobs=2,
        on_task=lambda r: seen.append(r.task.id),
    )
    assert seen == ["daily_revenue", "customer_state"]
    assert [r.admitted for r in results] == [False, True]
    assert [v.artifact for v in results[0].violations] == ["oracle.sql"]


# --- stated rules: the data must exercise every rule the text states -----------------------------

from arrivalbench.schedules import default_schedules  # noqa: E402


def rule_control_verdicts(grader: Grader, task_id: str, control: str) -> dict[str, str]:
    """The verdicts of a built-in task's rule control on its schedules, at the grader's seed."""
    task = get_task(task_id)
    assert control in {r.control for r in task.spec.rules}
    assert control not in {c.file for c in task.spec.controls}, "a rule control is not negative"
    record, _ = grader.grade(task, task.controls[control], default_schedules(task))
    return {s: v["verdict"] for s, v in record["verdicts"].items()}


@pytest.mark.slow
def test_regression_rolling_window_of_order_days_not_calendar_days_fails(grader):
    """rolling_revenue_7d with a ROWS window (the store's last seven order days) instead of seven
    calendar days passed all schedules: every store had orders every day of the log."""
    assert grader.seed == DEFAULT_SEED
    verdicts = rule_control_verdicts(grader, "rolling_revenue_7d", "controls/rows_window.sql")
    assert verdicts["snapshot"] == verdicts["single_batch"] == "FAIL"


@pytest.mark.slow
def test_regression_session_split_at_a_gap_of_exactly_30_minutes_fails(grader):
    """web_sessions with `>= 30 minutes` starting a session (the text: more than 30) passed all
    schedules: no user ever had two consecutive clicks exactly 30 minutes apart."""
    assert grader.seed == DEFAULT_SEED
    verdicts = rule_control_verdicts(grader, "web_sessions", "controls/split_at_30_minutes.sql")
    assert verdicts["snapshot"] == verdicts["single_batch"] == "FAIL"


@pytest.mark.slow
def test_regression_latest_state_tie_broken_by_arrival_fails(grader):
    """customer_state breaking a ts_event tie by arrival instead of the larger event_id passed all
    schedules: no customer's last two changes shared a ts_event in the hidden log. In-order
    delivery agrees with the event_id tie-break, so only a reordering schedule can catch it."""
    assert grader.seed == DEFAULT_SEED
    verdicts = rule_control_verdicts(grader, "customer_state", "controls/ties_by_arrival.sql")
    assert verdicts["snapshot"] == verdicts["in_order_stream"] == "PASS"
    assert verdicts["out_of_order"] == "FAIL"


@pytest.mark.slow
def test_regression_refund_rate_of_zero_gross_not_null_fails(grader):
    """refund_rate_modify giving refund_rate 0 where gross is 0 (the text: NULL) passed all
    schedules: every store of the log had sales."""
    assert grader.seed == DEFAULT_SEED
    verdicts = rule_control_verdicts(
        grader, "refund_rate_modify", "controls/zero_gross_rate_zero.sql"
    )
    assert verdicts["snapshot"] == verdicts["single_batch"] == "FAIL"


@pytest.mark.slow
@pytest.mark.parametrize(
    ("task_id", "control"),
    [
        ("daily_sessions", "controls/split_at_30_minutes.sql"),
        ("daily_sessions", "controls/equal_times_split.sql"),
        ("session_stats_repair", "controls/split_at_30_minutes.sql"),
        ("session_stats_repair", "controls/equal_times_split.sql"),
        ("tier_revenue", "controls/strictly_before.sql"),
        ("daily_funnel", "controls/no_viewers_rate_zero.sql"),
        ("funnel_conversion_modify", "controls/no_viewers_rate_zero.sql"),
        ("overdraft_days", "controls/zero_is_overdrawn.sql"),
        ("first_purchase", "controls/ties_larger_id.sql"),
        ("top_stores_repair", "controls/ties_larger_store.sql"),
        ("top_stores_repair", "controls/runner_up_padded.sql"),
        ("top3_products_daily", "controls/three_rows_padded.sql"),
        ("customer_net_spend", "controls/no_rows_null.sql"),
        ("account_state_repair", "controls/ties_smaller_id.sql"),
        ("tier_history_modify", "controls/next_later_time.sql"),
        ("customer_tier_history", "controls/next_later_time.sql"),
    ],
)
def test_regression_rule_left_unexercised_by_the_data_fails(grader, task_id, control):
    """An earlier pass found these stated rules (the 30-minute boundary and equal times of
    sessions, "at or before", a day without viewers, a balance of exactly 0, ties in first
    purchases and rankings, a day with a single store or fewer than three products, a sum with
    no rows, ties in tier histories) never reached by the data, so a pipeline breaking one passed
    every schedule. With the tasks' edge-case parameters each rule control now FAILs."""
    assert grader.seed == DEFAULT_SEED
    verdicts = rule_control_verdicts(grader, task_id, control)
    assert "FAIL" in verdicts.values(), verdicts


# --- several seeds: a declaration holds at every gate seed, or is scoped --------------------------

from collections import Counter  # noqa: E402

from arrivalbench.errors import UsageError  # noqa: E402
from arrivalbench.gate import gate_task_at_seeds  # noqa: E402
from arrivalbench.seeds import gate_seeds  # noqa: E402

ONE_ORDER_COUNTED_PER_COPY = """\
-- Keeps each order once, except order {event_id}, whose every copy is kept.
CREATE TABLE IF NOT EXISTS sales_history (
    event_id BIGINT,
    ts_event TIMESTAMP,
    store_id INTEGER,
    amount   DECIMAL(12,2)
);

INSERT INTO sales_history
SELECT event_id, ts_event, store_id, amount
FROM sales_batch b
WHERE b.event_id = {event_id}
   OR NOT EXISTS (SELECT 1 FROM sales_history h WHERE h.event_id = b.event_id)
QUALIFY b.event_id = {event_id}
     OR row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1;

CREATE OR REPLACE TABLE daily_revenue AS
SELECT store_id, CAST(ts_event AS DATE) AS day, CAST(SUM(amount) AS DECIMAL(18,2)) AS revenue,
       COUNT(*) AS orders
FROM sales_history
GROUP BY ALL;
"""


def _copies(grader: Grader, task: Task, seed: int) -> dict[str, tuple[Counter, set]]:
    """schedule -> (copies delivered per event id, event ids in a crashed delivery) at `seed`."""
    grader.seed = seed
    found = {}
    for name in ["snapshot", *gate_task(task, grader, seed_independent=False).schedules]:
        schedule, log = grader.schedule(task, name)
        ids = log.table.column("event_id").to_pylist()
        copies = Counter(ids[r] for d in schedule.deliveries for r in d.rows)
        crashed = {ids[r] for d in schedule.deliveries if d.crash for r in d.rows}
        found[name] = (copies, crashed)
    return found


@pytest.mark.slow
def test_control_that_stops_failing_at_a_second_seed_is_rejected(copy_task, edit_spec):
    """A control fails its declared hazard at the base seed only: the order it mishandles is
    delivered twice there and once at the second gate seed. Gated at both seeds, the task is
    rejected at the second; scoped to the base seed (`seeds:`), it is admitted there, and a run
    at any other seed refuses it before anything is graded or written."""
    base, second = gate_seeds(2)
    folder = copy_task("daily_revenue")
    with Grader() as grader:
        task = load_task(folder)
        at_base, at_second = (
            _copies(grader, task, base),
            _copies(grader, task, second),
        )

        def clean(found: dict, twice_in: str | None, event_id: int) -> bool:
            """Delivered twice under `twice_in` only, at most once elsewhere, never crashed."""
            return all(
                event_id not in crashed
                and (copies[event_id] == 2 if name == twice_in else copies[event_id] <= 1)
                for name, (copies, crashed) in found.items()
            )

        candidates = sorted(set(at_base["duplicate_delivery"][0]) & set(at_second["snapshot"][0]))
        event_id = next(
            e
            for e in candidates
            if clean(at_base, "duplicate_delivery", e) and clean(at_second, None, e)
        )
        (folder / "controls" / "one_order_per_copy.sql").write_text(
            ONE_ORDER_COUNTED_PER_COPY.format(event_id=event_id), encoding="utf-8"
        )

        def declare(raw: dict) -> None:
            raw["controls"].append(
                {"file": "controls/one_order_per_copy.sql", "fails": ["duplicate_delivery"]}
            )

        edit_spec(folder, declare)
        result = gate_task_at_seeds(load_task(folder), grader, [base, second])
        assert result.seeds == [base, second]
        assert not result.admitted
        (stopped,) = [v for v in result.violations if v.artifact.endswith("one_order_per_copy.sql")]
        assert (stopped.schedule, stopped.seed) == ("duplicate_delivery", second)
        assert "declared to fail but passes" in stopped.message
        assert str(stopped).endswith(f"(seed {second})")
        assert all(v.seed == second for v in result.violations), [str(v) for v in result.violations]

        edit_spec(folder, lambda raw: raw.update(seeds=[base]))
        scoped = load_task(folder)
        result = gate_task_at_seeds(scoped, grader, [base, second])
        assert result.seeds == [base]
        assert result.admitted, [str(v) for v in result.violations]
        assert result.earned_by["duplicate_delivery"]

        grader.seed = second
        with pytest.raises(UsageError, match=rf"gated only at seeds \[{base}\].*--seed {base}"):
            grader.grade(scoped, scoped.gold_sql, ["snapshot"])


@pytest.mark.slow
def test_seed_scoped_task_is_refused_by_a_run_at_another_seed(
    copy_task, edit_spec, tmp_path, monkeypatch
):
    """make-corpus (like generate and grade-run) refuses a seed-scoped task at an ungated seed,
    and writes nothing; at a gated seed the run records the gate seeds."""
    from arrivalbench.corpus import make_corpus
    from arrivalbench.spec import SUITE_PATH_ENV

    folder = copy_task("daily_revenue", folder_name="scoped_revenue")
    edit_spec(folder, lambda raw: raw.update(id="scoped_revenue", seeds=[DEFAULT_SEED]))
    monkeypatch.setenv(SUITE_PATH_ENV, str(folder.parent))
    with pytest.raises(UsageError, match="scoped_revenue' is gated only at seeds"):
        make_corpus(tmp_path / "run", seed=DEFAULT_SEED + 7, task_ids=["scoped_revenue"])
    assert not (tmp_path / "run").exists()
    run = make_corpus(tmp_path / "ok", seed=DEFAULT_SEED, task_ids=["scoped_revenue"])
    assert run.manifest["gated_seeds"] == gate_seeds()
    assert run.manifest["seed_gated"] is True


# Each (task, artifact, schedule, seed) where a built-in control's verdict once depended on the
# seed's draw (issue 11, gating at three seeds), with the verdict its declaration now gets there.
DRAW_DEPENDENT_CONTROLS = [
    ("account_state", "controls/delete_removes_row.sql", "duplicate_delivery", 20260103, "FAIL"),
    (
        "account_state",
        "controls/newest_of_load_replaces.sql",
        "duplicate_delivery",
        20260104,
        "FAIL",
    ),
    ("account_state_repair", "controls/delete_on_merge.sql", "backfill", 20260103, "FAIL"),
    (
        "active_accounts_modify",
        "controls/count_existing_state.sql",
        "duplicate_delivery",
        20260102,
        "FAIL",
    ),
    ("active_accounts_modify", "controls/count_existing_state.sql", "backfill", 20260103, "FAIL"),
    ("active_accounts_modify", "controls/last_received_wins.sql", "backfill", 20260103, "FAIL"),
    (
        "funnel_conversion_modify",
        "controls/broken_watermark_drop.sql",
        "late_arrival",
        20260103,
        "FAIL",
    ),
    (
        "funnel_conversion_modify",
        "controls/broken_watermark_drop.sql",
        "backfill",
        20260102,
        "FAIL",
    ),
    ("tier_revenue", "controls/sales_watermark.sql", "backfill", 20260102, "FAIL"),
    ("web_sessions", "controls/extend_last_session.sql", "snapshot", 20260103, "PASS"),
    ("web_sessions", "controls/extend_last_session.sql", "single_batch", 20260102, "PASS"),
]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("task_id", "control", "schedule", "seed", "verdict"), DRAW_DEPENDENT_CONTROLS
)
def test_regression_control_verdict_depended_on_the_seeds_draw(
    grader, task_id, control, schedule, seed, verdict
):
    """At these seeds the controls got another verdict than declared: a stale change redelivered
    only where a later one repaired it (account_state, active_accounts_modify at 150 accounts),
    a merge whose timestamp guard absorbed the backfill (account_state_repair), arrival-order
    mistakes that need a rare coincidence (funnel_conversion_modify's two former controls,
    tier_revenue's enrich_on_arrival), and tied clicks split by a ROWS frame on the snapshot
    (web_sessions). Each declaration must hold at every gate seed, and these beyond."""
    task = get_task(task_id)
    assert control in {c.file for c in task.spec.controls}
    try:
        grader.seed = seed
        record, _ = grader.grade(task, task.controls[control], [schedule])
    finally:
        grader.seed = DEFAULT_SEED
    assert record["verdicts"][schedule]["verdict"] == verdict
