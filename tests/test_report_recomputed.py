"""The report against a second implementation, as the outside audit compared it.

A seeded random study: every (cell, schedule) verdict drawn at random over ten suite tasks with
different hazard sets, three model arms imported with `import_scripts` (one cell in eight an empty
script), and the first arm imported again as run 2. Every number of the main, hazard, count,
per-hazard cell and replication tables, and the sign tests' counts and p-values, is recomputed
here from the drawn verdicts alone, following docs/metrics.md and nothing in `analysis/`. The
audit's 16 mismatches were a second import entering the sign tests as a second arm: here the
run-2 arm must enter no test, and every number must agree.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path
from statistics import mean

import pytest

from arrivalbench.agent.generate import import_scripts
from arrivalbench.report import write_report
from arrivalbench.spec import get_task, load_suite
from arrivalbench.store import RunDir, verdict_row

ORDERING = ("late_arrival", "out_of_order")
IDEMPOTENCY = ("duplicate_delivery", "crash_retry", "backfill")
FIVE = (*ORDERING, *IDEMPOTENCY)
BENIGN = ("single_batch", "in_order_stream")
ARMS = ("m1-unhinted", "m2-unhinted", "m3-unhinted")
SAMPLES = 3
TIE = 1e-12


def pick_tasks() -> dict[str, tuple[str, ...]]:
    """Ten tasks of the suite, task id -> declared hazards, with at least two hazard sets."""
    tasks = sorted(load_suite())
    chosen = {t: tuple(get_task(t).spec.hazards) for t in tasks[::4][:10]}
    assert len(set(chosen.values())) >= 2, "the study needs tasks with different hazard sets"
    return chosen


TASKS = pick_tasks()


def draw(rng: random.Random) -> dict:
    """One verdict entry: PASS 70%, FAIL 20%, ERROR 10% (a third of them a key refusing a row)."""
    roll = rng.random()
    if roll < 0.7:
        return {"verdict": "PASS"}
    if roll < 0.9:
        return {"verdict": "FAIL", "diff": {"examples": {"missing": [{"key": 1}]}}}
    error_class = "constraint_violation" if rng.random() < 1 / 3 else "sql_error"
    return {"verdict": "ERROR", "error_class": error_class, "batch": 1, "statement": 1}


def import_arm(root: Path, rng: random.Random, arm: str, run: int, study: dict) -> Path:
    """Import one arm's scripts as a run, then write its drawn verdicts into it as grading would."""
    scripts = root / f"{arm}-{run}-scripts"
    scripts.mkdir()
    for task in TASKS:
        for sample in range(SAMPLES):
            empty = rng.random() < 1 / 8
            text = "" if empty else f"-- {arm} run {run} {task} {sample}\nSELECT 1;\n"
            (scripts / f"{task}.{sample}.sql").write_text(text, encoding="utf-8")
    out = root / f"{arm}-r{run}"
    stored = import_scripts(scripts, arm=arm, out=out, role="model", run=run)
    rows, timings = [], []
    for cell in stored.cells():
        key = (arm, run, cell.task, cell.sample)
        if cell.artifact_sha256 is None:
            study[key] = None
            continue
        study[key] = {}
        for schedule in ("snapshot", *BENIGN, *TASKS[cell.task]):
            entry = draw(rng)
            study[key][schedule] = (entry["verdict"], entry.get("error_class"))
            rows.append(verdict_row(cell, schedule, 7, entry))
            timings.append(
                {
                    "arm": arm,
                    "task": cell.task,
                    "sample": cell.sample,
                    "schedule": schedule,
                    "wall_seconds": 0.01,
                    "statement_seconds": 0.005,
                }
            )
    run_dir = RunDir.open(out)
    run_dir.append(rows, timings)
    run_dir.compact()
    return out


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory):
    root = tmp_path_factory.mktemp("study")
    rng = random.Random(26)
    drawn: dict = {}
    runs = [import_arm(root, rng, arm, 1, drawn) for arm in ARMS]
    runs.append(import_arm(root, rng, ARMS[0], 2, drawn))
    write_report(runs, root / "report", resamples=100, pool=[ARMS[0]])
    document = json.loads((root / "report" / "report.json").read_text(encoding="utf-8"))
    labels = {
        (info["run"], label.split(" (")[0]): label for label, info in document["arms"].items()
    }
    return drawn, document, labels


# --- the second implementation: docs/metrics.md, cell by cell -------------------------------


def cells_of(drawn: dict, arm: str, run: int) -> dict[str, list]:
    """task -> its cells' verdicts ({schedule: (verdict, error_class)}, or None: no script)."""
    found: dict[str, list] = {}
    for (a, r, task, _sample), verdicts in sorted(drawn.items(), key=lambda kv: kv[0][2:]):
        if (a, r) == (arm, run):
            found.setdefault(task, []).append(verdicts)
    return found


def verdict(cell: dict, schedule: str) -> str:
    return cell[schedule][0]


def gap_value(cell, hazards, benign=False):
    """1 or 0 for a gap-usable cell, None for one outside the gap's denominator."""
    if cell is None or verdict(cell, "snapshot") != "PASS":
        return None
    if any(verdict(cell, h) == "ERROR" for h in hazards):
        return None
    if benign and any(verdict(cell, b) != "PASS" for b in BENIGN):
        return None
    return int(any(verdict(cell, h) == "FAIL" for h in hazards))


def per_cell(metric: str, cell, task: str):
    hazards = TASKS[task]
    if metric == "snapshot_pass":
        return int(cell is not None and verdict(cell, "snapshot") == "PASS")
    if metric == "gap":
        return gap_value(cell, hazards)
    if metric == "gap_benign":
        return gap_value(cell, hazards, benign=True)
    if metric == "gap_all_five":
        return gap_value(cell, hazards) if set(FIVE) <= set(hazards) else None
    if metric == "error":
        return int(cell is None or any(verdict(cell, s) == "ERROR" for s in ("snapshot", *hazards)))
    if metric == "all_in":
        return int(
            cell is None
            or verdict(cell, "snapshot") != "PASS"
            or any(verdict(cell, h) != "PASS" for h in hazards)
        )
    schedule = metric.removeprefix("pass:")
    # a hazard over the cells with a script that declare it; a benign schedule over the cells
    # passing the snapshot; on either, an ERROR leaves the denominator
    if cell is None or (schedule not in BENIGN and schedule not in hazards):
        return None
    if schedule in BENIGN and verdict(cell, "snapshot") != "PASS":
        return None
    if verdict(cell, schedule) == "ERROR":
        return None
    return int(verdict(cell, schedule) == "PASS")


def usable(metric: str, cells: dict[str, list]) -> dict[str, list[int]]:
    """task -> the values of its usable cells, for tasks with at least one."""
    values = {t: [per_cell(metric, c, t) for c in cs] for t, cs in cells.items()}
    return {t: [v for v in vs if v is not None] for t, vs in values.items() if any(
        v is not None for v in vs
    )}  # fmt: skip


def arm_rate(metric: str, cells: dict[str, list]) -> float | None:
    """The mean over tasks of each task's mean over its usable cells."""
    tasks = usable(metric, cells)
    return mean(mean(vs) for vs in tasks.values()) if tasks else None


def margins(cells: dict[str, list], only_all_five: bool = False) -> dict[str, float]:
    if only_all_five:
        cells = {t: cs for t, cs in cells.items() if set(FIVE) <= set(TASKS[t])}
    ordering = [arm_rate(f"pass:{h}", cells) for h in ORDERING]
    idempotency = [arm_rate(f"pass:{h}", cells) for h in IDEMPOTENCY]
    return {
        "group_mean": mean(ordering) - mean(idempotency),
        "weakest_link": min(ordering) - min(idempotency),
        "conservative": min(ordering) - max(idempotency),
    }


def sign_test(k: int, n: int, p: float) -> float:
    return sum(math.comb(n, i) * p**i * (1 - p) ** (n - i) for i in range(k, n + 1))


# --- the comparisons ---------------------------------------------------------------------------


def values(document: dict, table: str) -> dict[str, dict]:
    t = document["tables"][table]
    return {row[0]: dict(zip(t["columns"], row, strict=True)) for row in t["values"]}


def number(cell) -> float | None:
    return cell["rate"] if isinstance(cell, dict) else None


MAIN = {
    "snapshot-pass % [95% CI]": "snapshot_pass",
    "gap % [95% CI]": "gap",
    "gap, benign-passing cells % [95% CI]": "gap_benign",
    "gap, tasks declaring all five % [95% CI]": "gap_all_five",
    "error % [95% CI]": "error",
    "all-in failure % [95% CI]": "all_in",
}
ARM_RUNS = [(arm, 1) for arm in ARMS] + [(ARMS[0], 2)]


@pytest.mark.parametrize("arm, run", ARM_RUNS)
def test_main_table_agrees_with_a_recomputation_from_the_verdicts(study, arm, run):
    drawn, document, labels = study
    row = values(document, "main")[labels[(run, arm)]]
    cells = cells_of(drawn, arm, run)
    assert number(row["cells"]) == sum(len(cs) for cs in cells.values())
    assert number(row["tasks"]) == len(cells)
    assert number(row["gap tasks"]) == len(usable("gap", cells))
    for column, metric in MAIN.items():
        assert number(row[column]) == pytest.approx(arm_rate(metric, cells), abs=TIE), column
    m = margins(cells)
    assert number(row["group-mean margin pp"]) == pytest.approx(m["group_mean"], abs=TIE)
    assert number(row["weakest-link margin pp"]) == pytest.approx(m["weakest_link"], abs=TIE)
    assert number(row["conservative margin pp"]) == pytest.approx(m["conservative"], abs=TIE)
    five = margins(cells, only_all_five=True)["group_mean"]
    assert number(row["group-mean margin, all-five tasks pp"]) == pytest.approx(five, abs=TIE)


@pytest.mark.parametrize("arm, run", ARM_RUNS)
def test_hazard_rates_and_their_cell_counts_agree_with_a_recomputation(study, arm, run):
    drawn, document, labels = study
    label = labels[(run, arm)]
    rates, counted = values(document, "hazards")[label], values(document, "hazard_cells")[label]
    cells = cells_of(drawn, arm, run)
    for schedule in (*FIVE, *BENIGN):
        name = schedule.replace("_", " ") + (" (benign)" if schedule in BENIGN else "")
        expected = arm_rate(f"pass:{schedule}", cells)
        assert number(rates[f"{name} %"]) == pytest.approx(expected, abs=TIE), schedule
        tasks = usable(f"pass:{schedule}", cells)
        shown = counted[f"{name}: cells (tasks)"]
        assert (shown["rate"], shown["n"]) == (sum(map(len, tasks.values())), len(tasks))
    ordering = mean(arm_rate(f"pass:{h}", cells) for h in ORDERING)
    idempotency = mean(arm_rate(f"pass:{h}", cells) for h in IDEMPOTENCY)
    assert number(rates["ordering mean %"]) == pytest.approx(ordering, abs=TIE)
    assert number(rates["idempotency mean %"]) == pytest.approx(idempotency, abs=TIE)


@pytest.mark.parametrize("arm, run", ARM_RUNS)
def test_counts_agree_with_a_recomputation(study, arm, run):
    drawn, document, labels = study
    row = values(document, "counts")[labels[(run, arm)]]
    cells = [c for cs in cells_of(drawn, arm, run).values() for c in cs]
    scripts = [c for c in cells if c is not None]
    verdicts = [v for c in scripts for v in c.values()]
    assert number(row["cells"]) == len(cells)
    assert number(row["cells with a script"]) == len(scripts)
    assert number(row["cells without a script"]) == len(cells) - len(scripts)
    assert number(row["verdicts"]) == len(verdicts)
    gradeable = sum(v in ("PASS", "FAIL") for v, _ in verdicts)
    assert number(row["gradeable verdicts"]) == pytest.approx(gradeable / len(verdicts))
    assert number(row["ERROR verdicts"]) == sum(v == "ERROR" for v, _ in verdicts)
    violations = sum(c == "constraint_violation" for _, c in verdicts)
    assert number(row["constraint violations"]) == pytest.approx(violations / len(verdicts))


def test_replication_of_the_second_import_agrees_with_a_recomputation(study):
    drawn, document, _ = study
    (row,) = values(document, "replication").values()
    a, b = cells_of(drawn, ARMS[0], 1), cells_of(drawn, ARMS[0], 2)
    failing_a = {t for t, vs in usable("gap", a).items() if 1 in vs}
    failing_b = {t for t, vs in usable("gap", b).items() if 1 in vs}
    assert number(row["gap % run A"]) == pytest.approx(arm_rate("gap", a), abs=TIE)
    assert number(row["gap % run B"]) == pytest.approx(arm_rate("gap", b), abs=TIE)
    # the report subtracts the printed (0.1%) figures, so that the row reconciles on the page
    delta = round(arm_rate("gap", b), 3) - round(arm_rate("gap", a), 3)
    assert number(row["Δ pp (B − A)"]) == pytest.approx(delta, abs=TIE)
    assert (row["failing tasks A"], row["failing tasks B"]) == (
        str(len(failing_a)),
        str(len(failing_b)),
    )
    assert row["recurring (of A's)"] == f"{len(failing_a & failing_b)} of {len(failing_a)}"


def test_the_arm_pooled_over_both_imports_agrees_with_a_recomputation(study):
    """--pool-runs: a task's rate is the mean over its samples of both runs."""
    drawn, document, _ = study
    row = values(document, "pooled_runs")[f"{ARMS[0]} (pooled)"]
    a, b = cells_of(drawn, ARMS[0], 1), cells_of(drawn, ARMS[0], 2)
    pooled = {task: a[task] + b[task] for task in a}
    assert number(row["cells"]) == sum(map(len, pooled.values()))
    for column in ("snapshot-pass % [95% CI]", "gap % [95% CI]", "error % [95% CI]"):
        expected = arm_rate(MAIN[column], pooled)
        assert number(row[column]) == pytest.approx(expected, abs=TIE), column
    m = margins(pooled)
    assert number(row["group-mean margin pp"]) == pytest.approx(m["group_mean"], abs=TIE)
    assert number(row["weakest-link margin pp"]) == pytest.approx(m["weakest_link"], abs=TIE)


@pytest.mark.parametrize(
    "name, form, null",
    [
        ("signature_group_mean", "group_mean", 1 / 2),
        ("signature_weakest_link", "weakest_link", 3 / 5),
        ("signature_conservative", "conservative", 1 / 10),
    ],
)
def test_sign_tests_count_run_one_arms_only_and_agree_with_a_recomputation(study, name, form, null):
    """The audit's 16 mismatches: a second import entered the tests as another arm."""
    drawn, document, labels = study
    (test,) = [t for t in document["tests"] if t["name"] == name]
    assert sorted(test["arms"]) == sorted(labels[(1, arm)] for arm in ARMS)
    assert test["runs"] == [1]
    margin = [margins(cells_of(drawn, arm, 1))[form] for arm in ARMS]
    untied = [m for m in margin if abs(m) > TIE]
    k = sum(m > 0 for m in untied)
    assert (test["statistic"], test["n"], test["null"]) == (k, len(untied), pytest.approx(null))
    assert test["p_value"] == pytest.approx(sign_test(k, len(untied), null), abs=TIE)


def test_the_study_exercises_every_rule(study):
    """The draw is not degenerate: refusals, ERRORs masking FAILs, both error classes and a
    task without all five hazards all occur, so the comparisons above test each rule."""
    drawn, _, _ = study
    cells = list(drawn.values())
    assert any(c is None for c in cells)
    scripted = [c for c in cells if c is not None]
    classes = {e for c in scripted for _, e in c.values()}
    assert {"constraint_violation", "sql_error"} <= classes
    assert any(not set(FIVE) <= set(h) for h in TASKS.values())
    assert any(set(FIVE) <= set(h) for h in TASKS.values())
    masked = [
        c
        for (_, _, task, _), c in drawn.items()
        if c and verdict(c, "snapshot") == "PASS"
        and {"FAIL", "ERROR"} <= {verdict(c, h) for h in TASKS[task]}
    ]  # fmt: skip
    assert masked
