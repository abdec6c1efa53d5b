"""The report over hand-made graded runs, with the numbers worked out by hand, and its page in a browser.

Runs are written directly (cells, artifacts, verdict rows), never graded, so the fast tests need no
sandbox. Two runs, r1 and r2, over five tasks that declare the same five hazards:

r1  gold         every cell PASSes everything                      gap 0% -> a rule-of-three bound
    m-unhinted   model m, no hint; drives every hand-checked number below
    m-hint       model m, the hazard hint; one refused cell (no artifact)
r2  m-unhinted   model m again: a replication of r1's arm

m-unhinted in r1, two samples per task (s0, s1):
    daily_revenue    s1 FAILs duplicate_delivery                 gap 1/2  error 0    all-in 1/2
    customer_state   all PASS                                    gap 0    error 0    all-in 0
    net_revenue      s0 ERRORs crash_retry (excluded from gap)   gap 0/1  error 1/2  all-in 1/2
    first_purchase   s0 FAILs the snapshot (excluded from gap)   gap 0/1  error 0    all-in 1/2
    account_balances s0 FAILs late_arrival                       gap 1/2  error 0    all-in 1/2
  -> snapshot-pass 90.0%, gap 20.0%, error 10.0%, all-in 40.0%;
     turns: daily_revenue s1 and first_purchase s0 fail turn 1 -> first turn 80.0%, final 90.0%;
     of the 9 final snapshot passes, 2 of 8 passed at once fail a hazard and 1 of 1 repaired.
m-unhinted in r2: customer_state s0 FAILs out_of_order, account_balances s0 and s1 FAIL
  -> gap (0 + 1/2 + 0 + 0 + 1) / 5 = 30.0%; failing tasks r1 {daily_revenue, account_balances},
     r2 {customer_state, account_balances}: 1 of 2 recur; delta +10.0pp.
m-hint: daily_revenue s0 ERRORs duplicate_delivery, s2 is refused; account_balances s0 FAILs late_arrival
  -> gap 10.0%; error (2/3) / 5 = 13.3%; all-in (2/3 + 1/2) / 5 = 23.3%. Paired against
     m-unhinted (r1), task by task: gap -1/2 on daily_revenue -> -10.0pp; error +2/3 and -1/2
     -> +3.3pp; all-in +1/6, -1/2, -1/2 -> -16.7pp.
Scripts: m-unhinted stages with an anti-join against history only; gold and m-hint also
deduplicate the arriving batch, the within-batch guard that idioms.py looks for.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import duckdb
import pytest

from arrivalbench.analysis.stats import DEFAULT_BOOTSTRAP_SEED, estimate, run_outcomes
from arrivalbench.errors import ArrivalBenchError
from arrivalbench.report import ReportInputError, Table, build_report, write_report
from arrivalbench.spec import get_task, suite_hash
from arrivalbench.store import Cell, RunDir, sha256_text, verdict_row

TASKS = ("daily_revenue", "customer_state", "net_revenue", "first_purchase", "account_balances")
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
RESAMPLES = 400
TABLES = (
    "arms",
    "main",
    "reference",
    "hazards",
    "intervention",
    "repair",
    "repair_effect",
    "replication",
    "replication_hazards",
    "paired",
    "guard",
    "crashes",
    "severity",
    "idioms",
    "hazards_pooled",
    *(ADDED := ("counts", "hazard_cells", "repair_pooled", "guard_correlation", "all_five")),
)
"""ADDED: the tables of issue 26's counts and matched sets, after every earlier table, so the
earlier tables keep their numbers and bytes (test_a_single_engine_report_is_byte_identical...)."""
FIGURES = ("snapshot_gap", "hazards", "guard")

# A staging step that deduplicates against history only, and one that also deduplicates the batch.
UNGUARDED = """CREATE TABLE IF NOT EXISTS {src}_history AS SELECT * FROM {src}_batch WHERE false;
INSERT INTO {src}_history SELECT * FROM {src}_batch b
WHERE NOT EXISTS (SELECT 1 FROM {src}_history h WHERE h.event_id = b.event_id);
CREATE OR REPLACE TABLE {target} AS SELECT count(*) AS n FROM {src}_history;
"""
GUARDED = """CREATE TABLE IF NOT EXISTS {src}_history AS SELECT * FROM {src}_batch WHERE false;
INSERT INTO {src}_history SELECT * FROM {src}_batch b
WHERE NOT EXISTS (SELECT 1 FROM {src}_history h WHERE h.event_id = b.event_id)
QUALIFY row_number() OVER (PARTITION BY b.event_id ORDER BY b._arrival_seq) = 1;
CREATE OR REPLACE TABLE {target} AS SELECT count(*) AS n FROM {src}_history;
"""

# (arm, task, sample) -> {schedule: verdict} for every verdict that is not PASS
R1_VERDICTS = {
    ("m-unhinted", "daily_revenue", 1): {"duplicate_delivery": "FAIL"},
    ("m-unhinted", "net_revenue", 0): {"crash_retry": "ERROR"},
    ("m-unhinted", "first_purchase", 0): {"snapshot": "FAIL"},
    ("m-unhinted", "account_balances", 0): {"late_arrival": "FAIL"},
    ("m-hint", "daily_revenue", 0): {"duplicate_delivery": "ERROR"},
    ("m-hint", "account_balances", 0): {"late_arrival": "FAIL"},
}
R1_TURNS = {
    ("m-unhinted", "daily_revenue", 1): ("ERROR", "PASS"),
    ("m-unhinted", "first_purchase", 0): ("FAIL", "FAIL", "FAIL"),
    ("m-hint", "daily_revenue", 0): ("FAIL", "PASS"),
}
R2_VERDICTS = {
    ("m-unhinted", "customer_state", 0): {"out_of_order": "FAIL"},
    ("m-unhinted", "account_balances", 0): {"late_arrival": "FAIL"},
    ("m-unhinted", "account_balances", 1): {"duplicate_delivery": "FAIL"},
}
SEVERITY = {
    ("m-unhinted", "daily_revenue", 1, "duplicate_delivery"): {
        "wrong_rows_share": 0.25,
        "measures": {
            "revenue": {
                "expected_total": 200.0,
                "actual_total": 230.0,
                "total_error": 0.15,
                "max_row_error": 0.5,
            }
        },
    }
}
"""The one FAIL with a severity; every other FAIL is stored as record format 1 wrote it."""
MODEL_INFO = {
    "m-unhinted": {"model": "m", "prompt_arm": "unhinted", "prompt_sha256": "a" * 64},
    "m-hint": {"model": "m", "prompt_arm": "hint", "prompt_sha256": "b" * 64},
}


def script(task_id: str, guarded: bool) -> str:
    spec = get_task(task_id).spec
    return (GUARDED if guarded else UNGUARDED).format(
        src=spec.sources[0].name, target=spec.target.name
    )


def make_run(
    path: Path,
    arms: dict[str, int],
    not_passing: dict[tuple[str, str, int], dict[str, str]],
    turns: dict[tuple[str, str, int], tuple[str, ...]] | None = None,
    refused: tuple[tuple[str, str, int], ...] = (),
    arm_info: dict[str, dict[str, str]] | None = None,
    graded: bool = True,
    engine: str = "duckdb",
) -> RunDir:
    """A run of `arms` ({arm: samples per task}) over TASKS, with verdict rows written as if graded
    (on `engine`, as its manifest says)."""
    cells, artifacts = [], {}
    for arm, samples in arms.items():
        for task_id in TASKS:
            for sample in range(samples):
                key = (arm, task_id, sample)
                text = script(task_id, guarded=arm != "m-unhinted")
                generated = arm in (arm_info or {})
                default_turns = ("PASS",) if generated else ()
                artifacts[sha256_text(text)] = text
                cells.append(
                    Cell(
                        arm=arm,
                        task=task_id,
                        sample=sample,
                        artifact_sha256=sha256_text(text),
                        snapshot_by_turn=(turns or {}).get(key, default_turns),
                    )
                )
    for arm, task_id, sample in refused:
        cells.append(
            Cell(
                arm=arm,
                task=task_id,
                sample=sample,
                no_artifact_reason="refusal",
                snapshot_by_turn=(),
                stop_reason="refusal",
            )
        )
    run = RunDir.create(
        path,
        suite_hash=suite_hash(),
        task_hashes={t: get_task(t).content_hash() for t in TASKS},
        base_seed=7,
        engine=engine,
        engine_version=duckdb.__version__ if engine == "duckdb" else "0",
        config={"schedules": None, "statement_timeout": 10.0, "memory_limit": "1GB"},
        cells=cells,
        artifacts=artifacts,
        arm_info={a: i for a, i in (arm_info or {}).items() if a in arms},
    )
    if not graded:
        return run
    rows, timings = [], []
    for cell in cells:
        if cell.artifact_sha256 is None:
            continue
        for schedule in SCHEDULES:
            verdict = not_passing.get(cell.key, {}).get(schedule, "PASS")
            entry = {"verdict": verdict, "schedule_sha256": sha256_text(schedule)}
            if verdict == "FAIL":
                entry["diff"] = {"examples": {"missing": [{"key": f"{cell.task}-{schedule}"}]}}
                if (*cell.key, schedule) in SEVERITY:
                    entry["diff"]["severity"] = SEVERITY[(*cell.key, schedule)]
            if verdict == "ERROR":
                entry.update(
                    error_class="sql_error", batch=2, statement=2, message="Constraint Error"
                )
            rows.append(verdict_row(cell, schedule, 7, entry))
            timings.append(
                {
                    "arm": cell.arm,
                    "task": cell.task,
                    "sample": cell.sample,
                    "schedule": schedule,
                    "wall_seconds": 0.01,
                    "statement_seconds": 0.005,
                }
            )
    run.append(rows, timings)
    run.compact()
    return run


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("runs")
    make_run(
        root / "r1",
        {"gold": 1, "m-unhinted": 2, "m-hint": 2},
        R1_VERDICTS,
        turns=R1_TURNS,
        refused=(("m-hint", "daily_revenue", 2),),
        arm_info=MODEL_INFO,
    )
    make_run(root / "r2", {"m-unhinted": 2}, R2_VERDICTS, arm_info=MODEL_INFO)
    return root / "r1", root / "r2"


@pytest.fixture(scope="module")
def report(runs: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("report")
    write_report(list(runs), out, resamples=RESAMPLES)
    return out


def read_json(report: Path) -> dict:
    return json.loads((report / "report.json").read_text(encoding="utf-8"))


def read_rows(report: Path, key: str) -> dict[str, dict[str, str]]:
    """A table as printed (report.json): first column -> {header: cell}."""
    table = read_json(report)["tables"][key]
    return {row[0]: dict(zip(table["columns"], row, strict=True)) for row in table["rows"]}


def read_csv(report: Path, key: str) -> dict[str, dict[str, str]]:
    """A table's numeric CSV: first column -> {header: cell}."""
    with open(report / "tables" / f"{key}.csv", encoding="utf-8", newline="") as handle:
        return {row[next(iter(row))]: row for row in csv.DictReader(handle)}


# --- numbers ---------------------------------------------------------------------------------------


def test_main_table_carries_the_hand_checked_rates(report):
    rows = read_rows(report, "main")
    assert set(rows) == {"m-hint", "m-unhinted (r1)", "m-unhinted (r2)"}  # gold: reference table
    m = rows["m-unhinted (r1)"]
    assert (m["role"], m["run"], m["tasks"], m["cells"], m["gap tasks"]) == (
        "model",
        "1",
        "5",
        "10",
        "5",
    )
    assert m["snapshot-pass % [95% CI]"].startswith("90.0% [")
    assert m["gap % [95% CI]"].startswith("20.0% [")
    assert m["error % [95% CI]"].startswith("10.0% [")
    assert m["all-in failure % [95% CI]"].startswith("40.0% [")
    assert rows["m-unhinted (r2)"]["gap % [95% CI]"].startswith("30.0% [")
    assert rows["m-hint"]["gap % [95% CI]"].startswith("10.0% [")
    # sorted by gap, lowest first
    assert list(rows) == ["m-hint", "m-unhinted (r1)", "m-unhinted (r2)"]
    assert list(read_rows(report, "reference")) == ["gold"]


def test_per_hazard_table_counts_each_hazard_over_its_own_cells(report):
    m = read_rows(report, "hazards")["m-unhinted (r1)"]
    # duplicate delivery: daily_revenue 1/2, the other four tasks 1 -> 4.5 / 5
    assert m["duplicate delivery %"] == "90.0%"
    # crash-retry: net_revenue's ERROR leaves its task one usable cell, which passes -> 100%
    assert m["crash retry %"].startswith("100.0% (≥")
    assert m["late arrival %"] == "90.0%"


def test_zero_gap_prints_its_exact_bound_in_every_format(report, runs):
    """Five tasks is few: the bound is the exact Clopper-Pearson one, 1 - 0.05^(1/5) = 45.1%,
    not the rule of three's 60% (at two tasks that printed "≤100%")."""
    gold = [o for o in run_outcomes(RunDir.open(runs[0])) if o.arm == "gold"]
    expected = estimate(gold, "gap", resamples=RESAMPLES)["gold"]
    assert expected.value == 0 and expected.bound == pytest.approx(1 - 0.05 ** (1 / 5))
    shown = expected.format()
    assert shown == "0.0% (≤45.1%)"
    assert read_rows(report, "reference")["gold"]["gap % [95% CI]"] == shown
    assert f"| gold | reference | 1 | 5 | 5 | 5 | 100.0% (≥54.9%) | {shown} |" in (
        report / "report.md"
    ).read_text(encoding="utf-8")
    assert '<span class="nw">0.0%</span> <span class="nw">(≤45.1%)</span>' in (
        report / "report.html"
    ).read_text(encoding="utf-8")
    assert (
        "gold & reference & 1 & 5 & 5 & 5 & 100.0\\% ($\\geq$54.9\\%) & 0.0\\% ($\\leq$45.1\\%)"
        in (report / "tables" / "reference.tex").read_text(encoding="utf-8")
    )
    gap = read_csv(report, "reference")["gold"]
    assert (gap["gap % [95% CI] rate"], gap["gap % [95% CI] lo"]) == ("0.0", "0.0")
    assert float(gap["gap % [95% CI] hi"]) == pytest.approx(1 - 0.05 ** (1 / 5))


def test_intervention_pairs_the_hint_arm_with_its_own_runs_unhinted_arm(report):
    table = read_json(report)["tables"]["intervention"]
    rows = [dict(zip(table["columns"], row, strict=True)) for row in table["rows"]]
    arms = [(r["arm"], r["prompt"]) for r in rows]
    assert arms == [("m-unhinted (r1)", "unhinted"), ("m-hint", "hint")]
    hint = rows[1]
    assert hint["model"] == "m"
    assert hint["gap % [95% CI]"].startswith("10.0% [")
    assert hint["Δ gap pp [95% CI]"].startswith("-10.0pp [")
    assert hint["error % [95% CI]"].startswith("13.3% [")
    assert hint["Δ error pp [95% CI]"].startswith("+3.3pp [")
    assert hint["all-in failure % [95% CI]"].startswith("23.3% [")
    assert hint["Δ all-in pp [95% CI]"].startswith("-16.7pp [")
    assert rows[0]["all-in failure % [95% CI]"].startswith("40.0% [")
    assert rows[0]["Δ gap pp [95% CI]"] == "—"


def test_repair_loop_and_no_artifact_shares(report):
    rows = read_rows(report, "repair")
    m = rows["m-unhinted (r1)"]
    assert (
        m["cells with turns"],
        m["first-turn snapshot-pass %"],
        m["final snapshot-pass %"],
        m["lift pp"],
    ) == ("10", "80.0%", "90.0%", "+10.0pp")
    # m-hint: 11 cells, one refused: 1/11 pooled over cells
    assert rows["m-hint"]["no artifact %"] == "9.1%"
    assert rows["m-hint"]["no artifact by reason %"] == "refusal 9.1%"
    assert rows["gold"]["cells with turns"] == "0"


def test_repaired_cells_against_cells_that_passed_at_once(report):
    # m-unhinted (r1): 9 cells end on a snapshot PASS; daily_revenue s1 needed a repair and FAILs
    # duplicate_delivery; of the 8 that passed at once, net_revenue s0 (crash) and account_balances s0 fail.
    m = read_rows(report, "repair_effect")["m-unhinted (r1)"]
    assert (m["passed at once: failing"], m["repaired: failing"]) == (
        "2/8 = 25.0%",
        "1/1 = 100.0% (≥5.0%)",
    )
    assert m["difference pp [95% CI]"].startswith("+75.0pp [")
    # one (arm, task) stratum holds both kinds: daily_revenue, 0/1 at once against 1/1 repaired
    assert (m["strata with both"], m["within arm and task pp [95% CI]"]) == (
        "1",
        "+100.0pp [+100.0, +100.0]",
    )
    # the all-arms row pools run 1 only (m-unhinted (r1) and m-hint), never the replicate r2
    assert read_rows(report, "repair_effect")["all arms"]["strata with both"] == "2"


def test_replication_compares_the_shared_arm_across_the_two_runs(report):
    (row,) = read_rows(report, "replication").values()
    assert (row["arm"], row["run A"], row["run B"]) == ("m-unhinted", "r1", "r2")
    assert (row["gap % run A"], row["gap % run B"], row["Δ pp (B − A)"]) == (
        "20.0%",
        "30.0%",
        "+10.0pp",
    )
    assert (row["failing tasks A"], row["failing tasks B"], row["recurring (of A's)"]) == (
        "2",
        "2",
        "1 of 2",
    )


def test_paired_matrix_is_row_minus_column(report):
    rows = read_rows(report, "paired")
    assert rows["m-unhinted (r2)"]["m-unhinted (r1)"].startswith("+10.0pp [")
    assert rows["m-unhinted (r1)"]["m-unhinted (r2)"].startswith("-10.0pp [")
    assert rows["gold"]["gold"] == "—"


def test_crash_table_by_error_class(report):
    rows = read_rows(report, "crashes")
    # net_revenue: one of two cells -> 1/2 on one task of five; its message is the engine's
    # "Constraint Error", so it is split out of sql_error
    assert rows["m-unhinted (r1)"]["constraint_violation %"] == "10.0%"
    assert rows["gold"]["constraint_violation %"] == "—"
    assert not any(column.startswith("sql_error") for column in next(iter(rows.values())))


def test_severity_table_counts_silent_fails_and_summarises_the_measured_ones(report):
    """r1's unhinted arm fails silently twice (daily_revenue/1 on duplicate delivery, with a
    severity; account_balances/0 on late arrival, stored without one); first_purchase fails the
    snapshot, so its FAIL is not silent."""
    rows = read_rows(report, "severity")
    row = rows["m-unhinted (r1)"]
    assert (row["silent FAILs"], row["measured"]) == ("2", "1")
    assert row["wrong rows: median"] == row["wrong rows: p90"] == "25.0%"
    assert row["total error: median"] == "15.0%"
    assert row["mis-stating a total >1%"].startswith("1/1 = 100.0%")
    assert rows["m-unhinted (r2)"]["measured"] == "0"
    assert rows["m-unhinted (r2)"]["total error: median"] == "—"
    assert rows["gold"]["silent FAILs"] == "0"


def test_guard_split_counts_snapshot_passing_cells_by_their_scripts_guard(report):
    rows = read_rows(report, "guard")
    hint, plain = rows["m-hint"], rows["m-unhinted (r1)"]
    # m-hint's scripts deduplicate the batch; its daily_revenue s0 ERRORs on duplicate delivery
    assert (hint["guarded cells"], hint["guarded: silent FAIL"], hint["guarded: ERROR"]) == (
        "10",
        "0/10 = 0.0% (≤25.9%)",
        "1/10 = 10.0%",
    )
    # the guard fired: the ERROR is the engine refusing a duplicate key
    assert (hint["guarded: constraint crashes"], hint["unguarded: constraint crashes"]) == (
        "1",
        "0",
    )
    assert (hint["unguarded cells"], hint["unguarded: silent FAIL"]) == ("0", "—")
    # m-unhinted's dedup against history only; first_purchase s0 fails the snapshot, leaving 9 cells
    assert (
        plain["unguarded cells"],
        plain["unguarded: silent FAIL"],
        plain["unguarded: ERROR"],
    ) == ("9", "1/9 = 11.1%", "0/9 = 0.0% (≤28.3%)")
    # the pooled share carries the exact Clopper-Pearson interval in the numeric CSV
    numbers = read_csv(report, "guard")["m-unhinted (r1)"]
    assert float(numbers["unguarded: silent FAIL lo"]) == pytest.approx(0.0028091, abs=1e-6)
    assert float(numbers["unguarded: silent FAIL hi"]) == pytest.approx(0.4824965, abs=1e-6)
    idioms = read_rows(report, "idioms")
    assert (idioms["m-hint"]["guard %"], idioms["m-hint"]["batch dedup %"]) == ("100.0%", "100.0%")
    assert (
        idioms["m-unhinted (r1)"]["guard %"],
        idioms["m-unhinted (r1)"]["history antijoin %"],
    ) == ("0.0%", "100.0%")


def test_tables_and_figures_are_numbered_in_reading_order(report):
    markdown = (report / "report.md").read_text(encoding="utf-8")
    headings = [line for line in markdown.splitlines() if line.startswith("## ")]
    tables = [h for h in headings if h.startswith("## Table ")]
    figures = [h for h in headings if h.startswith("## Figure ")]
    assert [h.split(".")[0] for h in tables] == [f"## Table {i}" for i in range(1, len(TABLES) + 1)]
    assert [h.split(".")[0] for h in figures] == [
        f"## Figure {i}" for i in range(1, len(FIGURES) + 1)
    ]


def test_latex_tables_hold_the_printed_rows_escaped(report):
    tables = read_json(report)["tables"]
    for key in TABLES:
        tex = (report / "tables" / f"{key}.tex").read_text(encoding="utf-8")
        rows = tables[key]["rows"]
        body = tex[tex.index("\\midrule") : tex.index("\\bottomrule")].splitlines()[1:]
        assert len(body) == len(rows), key
        assert tex.count(" & ") == (len(tables[key]["columns"]) - 1) * (len(rows) + 1), key
    main = (report / "tables" / "main.tex").read_text(encoding="utf-8")
    assert "\\begin{tabular}{l" + "r" * (len(tables["main"]["columns"]) - 1) + "}" in main
    assert "gap \\% [95\\% CI]" in main
    assert "m-unhinted (r1) & model & 1 & 5 & 10 & 5 & 90.0\\% [" in main


def test_every_table_and_figure_is_written(report):
    for key in TABLES:
        assert (report / "tables" / f"{key}.csv").is_file(), key
        assert (report / "tables" / f"{key}.tex").is_file(), key
    for key in FIGURES:
        assert (report / "figures" / f"{key}.png").read_bytes().startswith(b"\x89PNG"), key
    markdown = (report / "report.md").read_text(encoding="utf-8")
    assert markdown.count("![") == len(FIGURES)


def test_header_states_the_runs_versions_and_bootstrap(report, runs):
    markdown = (report / "report.md").read_text(encoding="utf-8")
    runs_line = next(line for line in markdown.splitlines() if line.startswith("**Runs.**"))
    for run in runs:
        manifest = RunDir.open(run).manifest
        assert (
            f"{run.name} ({run}): suite {manifest['suite_hash'][:12]}, harness {manifest['harness_version']}"
            in runs_line
        )
        assert f"engine duckdb {duckdb.__version__}" in runs_line
    assert "labelled '&lt;arm&gt; (&lt;run&gt;)'" in runs_line  # HTML escaped, shown as <arm>
    assert (
        f"over tasks, {RESAMPLES:,} resamples at the 95% level, seed {DEFAULT_BOOTSTRAP_SEED}"
        in markdown
    )
    assert "[docs/metrics.md](" in markdown


def test_scenario_resampling_is_stated_and_keeps_the_point_estimates(runs):
    report = build_report(list(runs), resamples=RESAMPLES, unit="scenario")
    assert "Percentile bootstrap over scenarios" in dict(report.paragraphs)["Intervals"]
    main = next(b for b in report.blocks if isinstance(b, Table) and b.key == "main")
    column = main.columns.index("gap % [95% CI]")
    gap = {row[0]: row[column] for row in main.rows}
    assert gap["m-unhinted (r1)"].startswith("20.0% [")


def test_the_same_runs_give_the_same_bytes(runs, report, tmp_path):
    write_report(list(runs), tmp_path, resamples=RESAMPLES)
    for path in sorted(p for p in report.rglob("*") if p.is_file()):
        again = tmp_path / path.relative_to(report)
        assert again.read_bytes() == path.read_bytes(), path.name


def test_a_run_without_prompt_pairs_or_a_twin_explains_the_empty_sections(runs):
    report = build_report([runs[1]], resamples=RESAMPLES)
    tables = {b.key: b for b in report.blocks if isinstance(b, Table)}
    assert (
        tables["intervention"].rows[0][0] == "no prompt-arm pairs" and tables["intervention"].note
    )
    assert tables["replication"].rows[0][0] == "no arm appears in two runs"
    assert [r[0] for r in tables["main"].rows] == ["m-unhinted"]  # no label suffix with one run


# --- arm roles: which arms enter the tests ---------------------------------------------------------

TEST_NAMES = [
    "signature_group_mean",
    "signature_weakest_link",
    "signature_conservative",
    "signature_group_mean_all_five",
    "guard_split",
]
THREE_ARMS = {
    **MODEL_INFO,
    "m-arch": {"model": "m", "prompt_arm": "arch", "prompt_sha256": "c" * 64},
}


@pytest.fixture(scope="module")
def three_arm_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two runs of the same model with unhinted, hint and arch arms, no role or run recorded."""
    root = tmp_path_factory.mktemp("three")
    arms = {"m-unhinted": 2, "m-hint": 2, "m-arch": 2}
    make_run(root / "r1", arms, R1_VERDICTS, turns=R1_TURNS, arm_info=THREE_ARMS)
    make_run(root / "r2", arms, R2_VERDICTS, arm_info=THREE_ARMS)
    return root / "r1", root / "r2"


def test_only_the_run_one_unhinted_arm_enters_the_sign_tests(three_arm_runs, tmp_path):
    """The sign tests once ran over every arm given (reference, intervention and replicate arms:
    3 arms x 2 runs counted as 6); now only the model arm of run 1 enters, and report.json says so."""
    write_report(list(three_arm_runs), tmp_path, resamples=RESAMPLES)
    document = read_json(tmp_path)
    assert [t["name"] for t in document["tests"]] == TEST_NAMES
    for test in document["tests"]:
        assert set(test) >= {"name", "arms", "runs", "statistic", "p_value"}
        assert set(test["arms"]) <= {"m-unhinted (r1)"} and test["runs"] == [1]
    for test in document["tests"][:4]:
        assert test["arms"] == ["m-unhinted (r1)"]
    roles = {arm: (r["role"], r["run"]) for arm, r in document["arms"].items()}
    assert roles == {
        "m-unhinted (r1)": ("model", 1),
        "m-unhinted (r2)": ("model", 2),
        "m-hint (r1)": ("intervention", 1),
        "m-hint (r2)": ("intervention", 2),
        "m-arch (r1)": ("intervention", 1),
        "m-arch (r2)": ("intervention", 2),
    }
    # the report states which arms entered, in the main table's note and the arms table
    assert (
        "Arms entering the sign tests (model arms (unhinted), run 1): m-unhinted (r1)."
        in (document["tables"]["main"]["note"])
    )
    arms = read_rows(tmp_path, "arms")
    assert arms["m-unhinted (r1)"]["tests entered"].startswith("signature_group_mean")
    assert {arms[a]["tests entered"] for a in arms if a != "m-unhinted (r1)"} == {"none"}
    # replication compares the model arm only
    assert [r["arm"] for r in read_rows(tmp_path, "replication").values()] == ["m-unhinted"]


def test_repair_effect_all_arms_row_does_not_pool_replicate_runs(three_arm_runs, tmp_path):
    """The all-arms row once pooled run 2's cells with run 1's (the same arms counted twice);
    now its cells are exactly those of the run-1 arms."""
    write_report(list(three_arm_runs), tmp_path, resamples=RESAMPLES)
    rows = read_rows(tmp_path, "repair_effect")

    def cells(row: dict[str, str]) -> int:
        return sum(
            int(row[c].split(" = ")[0].split("/")[1])
            for c in ("passed at once: failing", "repaired: failing")
            if row[c] != "—"
        )

    run_one = [arm for arm in rows if arm.endswith("(r1)")]
    run_two = [arm for arm in rows if arm.endswith("(r2)")]
    assert len(run_one) == 3 and len(run_two) == 3
    assert cells(rows["all arms"]) == sum(cells(rows[arm]) for arm in run_one)


def test_a_recorded_run_index_wins_over_the_order_given(tmp_path):
    """A replicate given first is still run 2 when its arm_info says so."""
    first = {
        a: {**i, "role": "model" if a == "m-unhinted" else "intervention", "run": 1}
        for a, i in MODEL_INFO.items()
    }
    second = {a: {**i, "run": 2} for a, i in first.items()}
    make_run(tmp_path / "a", {"m-unhinted": 2}, R2_VERDICTS, arm_info=second)
    make_run(tmp_path / "b", {"m-unhinted": 2}, R1_VERDICTS, arm_info=first)
    write_report([tmp_path / "a", tmp_path / "b"], tmp_path / "out", resamples=RESAMPLES)
    document = read_json(tmp_path / "out")
    assert document["arms"]["m-unhinted (a)"]["run"] == 2
    assert document["arms"]["m-unhinted (b)"] == {
        "role": "model",
        "run": 1,
        "recorded": True,
        "model": "m",
        "prompt_arm": "unhinted",
    }
    assert document["tests"][0]["arms"] == ["m-unhinted (b)"]


def test_cli_arms_and_runs_choose_the_arms_the_tests_count(cli, three_arm_runs, tmp_path):
    done = cli(
        "report",
        *three_arm_runs,
        "--out",
        tmp_path / "runs2",
        "--runs",
        "2",
        "--resamples",
        str(RESAMPLES),
    )
    assert done.returncode == 0, done.stderr
    assert "report.json" in done.stdout
    assert read_json(tmp_path / "runs2")["tests"][0]["arms"] == ["m-unhinted (r2)"]
    done = cli(
        "report",
        *three_arm_runs,
        "--out",
        tmp_path / "hint",
        "--arms",
        "m-hint,m-arch",
        "--runs",
        "1,2",
        "--resamples",
        str(RESAMPLES),
    )
    assert done.returncode == 0, done.stderr
    test = read_json(tmp_path / "hint")["tests"][0]
    assert sorted(test["arms"]) == ["m-arch (r1)", "m-arch (r2)", "m-hint (r1)", "m-hint (r2)"]
    assert test["runs"] == [1, 2]
    for args, phrase in (
        (("--runs", "one"), "--runs 'one'"),
        (("--runs", "0"), "run indices start at 1"),
        (("--arms", "m-nope"), "no arm named m-nope"),
    ):
        done = cli("report", *three_arm_runs, "--out", tmp_path / "bad", *args)
        assert done.returncode == 2, done.stdout
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1 and phrase in lines[0], done.stderr


def test_reference_arms_enter_no_test_and_have_their_own_table(tmp_path):
    """A run of reference arms only (as make-corpus writes: gold, controls, baselines, no
    arm_info): report.json states that no arm entered any test."""
    make_run(tmp_path / "corpus", {"gold": 1, "controls": 1, "naive_append": 1}, {})
    write_report([tmp_path / "corpus"], tmp_path / "out", resamples=RESAMPLES)
    document = read_json(tmp_path / "out")
    assert [t["name"] for t in document["tests"]] == TEST_NAMES
    assert all(t["arms"] == [] for t in document["tests"])
    assert {r["role"] for r in document["arms"].values()} == {"reference"}
    assert "No arm entered the sign tests" in document["tables"]["main"]["note"]
    assert list(read_rows(tmp_path / "out", "main")) == ["no model or intervention arms"]
    assert sorted(read_rows(tmp_path / "out", "reference")) == ["controls", "gold", "naive_append"]


# --- runs on several engines -----------------------------------------------------------------------

ENGINE_TABLES = ("engines", "engine_verdicts")
# Re-pinned when text cells starting like a formula got a leading quote (issue 21): the only
# change is repair_effect.csv's "+88.9pp [+62.9, +100.0]" cells, now "'+88.9pp [...]".
# Re-pinned when the severity and pooled hazard tables joined the report (issue 26): their own
# tables, and the table numbers after the severity table one higher.
SINGLE_ENGINE_DIGEST = "1681e9fbc49852abfd2305865a2725bf056b6b4158ada6e7e7dafd995e11aa6f"


def report_digest(folder: Path, leave_out: tuple[str, ...] = ()) -> str:
    """sha256 of what a report says as numbers and text (report.json without where its runs are,
    and every table's CSV and LaTeX), so a change to any printed value changes it; `leave_out`
    drops tables (and report.json entries) by key."""
    digest = hashlib.sha256()
    document = read_json(folder)
    document.pop("runs")
    for key in leave_out:
        document["tables"].pop(key, None)
        document.pop(key, None)
    digest.update(json.dumps(document, sort_keys=True, ensure_ascii=False).encode())
    for path in sorted((folder / "tables").iterdir()):
        if path.stem in leave_out:
            continue
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def test_a_single_engine_report_is_byte_identical_to_the_one_before_engine_tables(report):
    """The engine tables are added only for runs on several engines: the fixture's report (both
    runs on duckdb) hashes as the report written before they existed (pinned from that code); the
    tables added since (ADDED) come after every earlier one, which keeps its bytes."""
    document = read_json(report)
    assert set(document["tables"]) == set(TABLES)
    assert not (report / "figures" / "engines.png").exists()
    assert report_digest(report, leave_out=ADDED) == SINGLE_ENGINE_DIGEST


@pytest.fixture(scope="module")
def engine_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The fixture's two runs with r2 graded on sqlite: the same arm, another engine."""
    root = tmp_path_factory.mktemp("engine-runs")
    make_run(
        root / "r1",
        {"gold": 1, "m-unhinted": 2, "m-hint": 2},
        R1_VERDICTS,
        turns=R1_TURNS,
        refused=(("m-hint", "daily_revenue", 2),),
        arm_info=MODEL_INFO,
    )
    make_run(root / "r2", {"m-unhinted": 2}, R2_VERDICTS, arm_info=MODEL_INFO, engine="sqlite")
    out = root / "report"
    write_report([root / "r1", root / "r2"], out, resamples=RESAMPLES)
    return root / "r1", root / "r2", out


def test_the_same_arm_on_another_engine_is_not_a_replicate(engine_runs):
    """The same arm graded on a second engine once counted as its run 2 and entered the
    replication tables; it is run 1 on its own engine, replicates nothing, and the sign tests count
    the first run's engine only."""
    *_, out = engine_runs
    document = read_json(out)
    assert document["arms"]["m-unhinted (r1)"]["run"] == 1
    assert document["arms"]["m-unhinted (r2)"]["run"] == 1
    assert list(read_rows(out, "replication")) == ["no arm appears in two runs"]
    assert list(read_rows(out, "replication_hazards")) == ["no arm appears in two runs"]
    for test in document["tests"]:
        assert "m-unhinted (r2)" not in test["arms"], test
    assert document["tests"][0]["arms"] == ["m-unhinted (r1)"]
    assert "on duckdb (the first run's engine)" in document["tables"]["arms"]["caption"]


def test_arms_named_on_another_engine_enter_the_tests(engine_runs):
    """Only the default (every model arm) keeps to the first run's engine: an arm named with
    --arms counts wherever it was graded."""
    r1, r2, _ = engine_runs
    built = build_report([r1, r2], resamples=RESAMPLES, arms=["m-unhinted (r2)"])
    assert built.tests[0].arms == ("m-unhinted (r2)",)


def test_engine_table_holds_each_arms_signature_and_hazard_pass_per_engine(engine_runs):
    from arrivalbench.analysis.stats import signature

    r1, r2, out = engine_runs
    table = read_json(out)["tables"]["engines"]
    rows = {
        (row[0], row[1]): dict(zip(table["columns"], row, strict=True)) for row in table["rows"]
    }
    values = {
        (row[0], row[1]): dict(zip(table["columns"], row, strict=True)) for row in table["values"]
    }
    assert set(rows) == {
        ("gold", "duckdb"),
        ("m-hint", "duckdb"),
        ("m-unhinted", "duckdb"),
        ("m-unhinted", "sqlite"),
    }
    for run, engine in ((r1, "duckdb"), (r2, "sqlite")):
        found = run_outcomes(RunDir.open(run))
        sig = signature(found)["m-unhinted"]
        row, value = rows[("m-unhinted", engine)], values[("m-unhinted", engine)]
        assert row["run"] == run.name
        for hazard in ("late_arrival", "out_of_order", "duplicate_delivery"):
            est = estimate(found, f"pass:{hazard}", resamples=RESAMPLES)["m-unhinted"]
            column = f"{hazard.replace('_', ' ')} pass %"
            assert value[column]["rate"] == pytest.approx(est.value)
            assert value[column]["n"] == est.tasks == 5
            assert row[column].endswith(" n=5")
        assert value["group-mean margin pp"]["rate"] == pytest.approx(sig.group_mean)
        assert value["ordering mean %"]["rate"] == pytest.approx(sig.ordering_mean)
    # by hand: r2 fails out_of_order once (customer_state s0): 1 - (1/2) / 5 = 90.0%
    assert rows[("m-unhinted", "sqlite")]["out of order pass %"].startswith("90.0% [")
    with open(out / "tables" / "engines.csv", encoding="utf-8", newline="") as handle:
        header = next(csv.reader(handle))
    assert "late arrival pass % n" in header and "late arrival pass % lo" in header


def test_engine_verdict_table_pairs_the_same_cells_on_two_engines(engine_runs):
    """m-unhinted, r1 (duckdb) against r2 (sqlite): 10 cells x 8 schedules = 80 paired verdicts.
    Not PASS in r1 only: daily_revenue s1 duplicate, net_revenue s0 crash-retry, first_purchase s0
    snapshot (3); in r2 only: customer_state s0 out-of-order, account_balances s1 duplicate (2);
    account_balances s0 late arrival FAILs on both. McNemar: 5 discordant, 2 against 3, p = 1."""
    *_, out = engine_runs
    rows = read_rows(out, "engine_verdicts")
    assert set(rows) == {"m-unhinted"}  # gold and m-hint are on one engine only
    row = rows["m-unhinted"]
    assert row["engines (A → B)"] == "duckdb → sqlite"
    assert row["paired verdicts"] == "80"
    assert row["same verdict"] == "75"
    assert row["PASS on A only"] == "2"
    assert row["PASS on B only"] == "3"
    assert row["other changes"] == "—"
    assert row["cells changed"] == "5"
    assert row["McNemar exact p"] == "1"
    assert [t["name"] for t in read_json(out)["tests"]] == TEST_NAMES  # not a listed test


def test_engine_blocks_are_numbered_after_the_hazard_figure(engine_runs):
    *_, out = engine_runs
    markdown = (out / "report.md").read_text(encoding="utf-8")
    headings = [line for line in markdown.splitlines() if line.startswith("## ")]
    assert (
        "## Table 5. The signature and the per-hazard pass of each arm on each engine" in headings
    )
    assert "## Figure 3. Temporal-pass per hazard and the signature, per arm and engine" in headings
    assert len([h for h in headings if h.startswith("## Table ")]) == len(TABLES) + 2
    png = (out / "figures" / "engines.png").read_bytes()
    assert int.from_bytes(png[16:20], "big") <= 1400  # the IHDR width: the page's budget


def test_numeric_csv_holds_fractions_and_counts(report):
    row = read_csv(report, "main")["m-unhinted (r1)"]
    assert (row["arm"], row["role"], row["tasks rate"], row["cells rate"]) == (
        "m-unhinted (r1)",
        "model",
        "5",
        "10",
    )
    assert float(row["gap % [95% CI] rate"]) == pytest.approx(0.2)
    low, high = float(row["gap % [95% CI] lo"]), float(row["gap % [95% CI] hi"])
    assert 0.0 <= low <= 0.2 <= high <= 1.0
    assert float(row["group-mean margin pp rate"]) < 0  # a signed fraction, not "−1.7pp"
    values = read_json(report)["tables"]["main"]["values"]
    gap = values[[r[0] for r in values].index("m-unhinted (r1)")][7]
    assert gap["text"].startswith("20.0% [") and gap["rate"] == pytest.approx(0.2)


def test_replication_per_hazard(report):
    rows = [
        r
        for r in read_json(report)["tables"]["replication_hazards"]["rows"]
        if r[0] == "m-unhinted"
    ]
    by_hazard = {r[3]: r for r in rows}
    # late arrival: account_balances s0 fails in both runs -> 90% each, 1 of 1 recurs
    assert by_hazard["late arrival"][4:] == ["90.0%", "90.0%", "0.0pp", "1", "1", "1 of 1"]
    # out of order: customer_state s0 fails in r2 only
    assert by_hazard["out of order"][4:] == ["100.0%", "90.0%", "-10.0pp", "0", "1", "0 of 0"]


def test_idiom_signatures_count_distinct_recipes(report):
    rows = read_rows(report, "idioms")
    # five tasks, one script each, all written to one recipe
    assert (rows["m-hint"]["distinct scripts"], rows["m-hint"]["idiom signatures"]) == ("5", "1")


def test_served_model_is_read_from_transcripts(tmp_path):
    run = make_run(tmp_path / "r", {"m-unhinted": 1}, {}, arm_info=MODEL_INFO)
    path = run.path / "transcripts" / "m-unhinted" / "daily_revenue" / "0.json"
    path.parent.mkdir(parents=True)
    first = {"model": "m", "served_model": "m-2026-01-01", "system": "s" * 5000, "user": "u"}
    path.write_text(json.dumps(first), encoding="utf-8")
    write_report([run.path], tmp_path / "out", resamples=RESAMPLES)
    assert read_rows(tmp_path / "out", "arms")["m-unhinted"]["served model"] == "m-2026-01-01"
    cells = {(c["task"], c["sample"]): c for c in read_json(tmp_path / "out")["cells"]}
    assert cells[("daily_revenue", 0)]["served_model"] == "m-2026-01-01"
    assert cells[("customer_state", 0)]["served_model"] is None
    # a transcript that records the served model per turn only
    path = run.path / "transcripts" / "m-unhinted" / "net_revenue" / "0.json"
    path.parent.mkdir(parents=True)
    turns = [{"served_model": "m-2026-02"}, {"served_model": "m-2026-01-01"}, {}]
    path.write_text(json.dumps({"model": "m", "turns": turns}), encoding="utf-8")
    write_report([run.path], tmp_path / "again", resamples=RESAMPLES)
    assert read_rows(tmp_path / "again", "arms")["m-unhinted"]["served model"] == (
        "m-2026-01-01, m-2026-02"
    )
    page = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "Transcript" in page and "m-2026-01-01" in page
    # the prompt texts every sample shares are named, not repeated, so the page stays small
    assert "(5,000 characters, see the run" in page and "s" * 5000 not in page


# --- bad input -------------------------------------------------------------------------------------


def test_a_folder_that_is_not_a_run_is_a_user_error(tmp_path):
    with pytest.raises(ArrivalBenchError, match="not a run directory"):
        build_report([tmp_path], resamples=RESAMPLES)


def test_an_ungraded_run_is_a_user_error_naming_the_fix(tmp_path):
    make_run(tmp_path / "fresh", {"gold": 1}, {}, graded=False)
    with pytest.raises(ReportInputError, match="grade-run"):
        build_report([tmp_path / "fresh"], resamples=RESAMPLES)


def test_cli_prints_where_the_report_is(cli, runs, tmp_path):
    done = cli("report", *runs, "--out", tmp_path / "out", "--resamples", str(RESAMPLES))
    assert done.returncode == 0, done.stderr
    assert str(tmp_path / "out" / "report.html") in done.stdout
    assert (tmp_path / "out" / "report.md").is_file()


@pytest.mark.parametrize(
    ("problem", "phrase"),
    [
        ("not a run", "not a run directory"),
        ("ungraded", "grade-run"),
        ("bad unit", "--unit 'cell'"),
        ("out is a file", "choose a writable --out"),
        ("pool one run", "--pool-runs gold: the arm is in one run only"),
        ("usable in unknown arm", "Did you mean 'm-hint'?"),
    ],
)
def test_cli_bad_input_is_one_line_and_exit_2(cli, problem, phrase, runs, tmp_path):
    out = tmp_path / "out"
    args = [runs[0]]
    if problem == "ungraded":
        make_run(tmp_path / "fresh", {"gold": 1}, {}, graded=False)
        args = [tmp_path / "fresh"]
    elif problem == "not a run":
        args = [tmp_path]
    elif problem == "bad unit":
        args = [runs[0], "--unit", "cell"]
    elif problem == "pool one run":
        args = [*runs, "--pool-runs", "gold"]
    elif problem == "usable in unknown arm":
        args = [runs[0], "--tasks-usable-in", "m-hnt"]
    else:
        out.write_text("not a folder", encoding="utf-8")
    done = cli("report", *args, "--out", out, "--resamples", str(RESAMPLES))
    assert done.returncode == 2, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("arrivalbench: error: "), done.stderr
    assert phrase in lines[0]


# --- the page in a browser -------------------------------------------------------------------------


class PageParser(HTMLParser):
    """What the rendered page holds: its tables, figures and the state the page's script left on them."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[str] = []
        self.figures: list[str] = []
        self.images: list[dict[str, str | None]] = []
        self.body: dict[str, str | None] = {}
        self.external: list[str] = []
        self.fits: dict[str, str | None] = {}  # table -> "yes" when it fits the 1400 px page
        self.ids: set[str] = set()
        self.links: list[str] = []  # in-page links (#...)
        self.task_sections: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attr = dict(attrs)
        if attr.get("id"):
            self.ids.add(attr["id"] or "")
        if tag == "a" and (attr.get("href") or "").startswith("#"):
            self.links.append((attr.get("href") or "")[1:])
        if tag == "details" and "task" in (attr.get("class") or "").split():
            self.task_sections.append(attr.get("id") or "")
        if tag == "table" and attr.get("data-table"):
            self.tables.append(attr.get("data-table") or "")
            self.fits[attr.get("data-table") or ""] = attr.get("data-fits")
        elif tag == "figure":
            self.figures.append(attr.get("data-figure") or "")
        elif tag == "img":
            self.images.append(attr)
        elif tag == "body":
            self.body = attr
        for name in ("src", "href"):
            value = attr.get(name) or ""
            if tag != "a" and value and not value.startswith("data:"):
                self.external.append(value)


def rendered_dom(page: Path, profile: Path) -> str:
    """The page's DOM after headless Chromium has loaded it and run its script."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("ARRIVALBENCH_REQUIRE_CHROMIUM"):
            pytest.fail(
                "chromium is required here (ARRIVALBENCH_REQUIRE_CHROMIUM is set); install it with: make chromium"
            )
        pytest.skip(
            "chromium is not installed (make chromium installs it; ARRIVALBENCH_REQUIRE_CHROMIUM=1 requires it)"
        )
    done = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--window-size=1400,1000",
            "--virtual-time-budget=10000",
            "--dump-dom",
            page.as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0 and "<html" in done.stdout, done.stderr[-2000:]
    return done.stdout


def assert_page_complete(
    page: Path,
    profile: Path,
    tables: tuple[str, ...] = TABLES,
    figures: tuple[str, ...] = FIGURES,
) -> PageParser:
    parser = PageParser()
    parser.feed(rendered_dom(page, profile))
    assert parser.body.get("data-figures-checked") == str(len(figures)), (
        "the page's script did not run"
    )
    assert sorted(parser.tables) == sorted(tables)
    assert sorted(parser.figures) == sorted(figures)
    for image in parser.images:
        assert image.get("data-decoded") == "yes", image.get("alt")
        assert int(image.get("data-natural-width") or 0) > 0, image.get("alt")
    assert parser.external == []
    # the page is 1400 px wide and every table wraps to fit it
    assert parser.body.get("data-viewport") == "1400"
    assert parser.fits == dict.fromkeys(tables, "yes")
    # every in-page link (a number to the cells behind it, a cell to its row) lands on an element
    assert parser.links and set(parser.links) <= parser.ids
    return parser


def test_html_page_renders_every_table_and_decodes_every_figure(report, tmp_path):
    assert_page_complete(report / "report.html", tmp_path / "profile")


def test_html_page_has_a_section_per_task_and_numbers_link_to_their_cells(report, tmp_path):
    parser = assert_page_complete(report / "report.html", tmp_path / "profile")
    assert sorted(parser.task_sections) == sorted(f"task-{t}" for t in TASKS)
    assert any(link.startswith("cells-") for link in parser.links)
    assert any(link.startswith("cell-") for link in parser.links)
    page = (report / "report.html").read_text(encoding="utf-8")
    # a crashed cell shows the engine's message, a guarded cell its SQL
    start = page.index('id="task-net_revenue"')
    net = page[start : page.index('<section id="cellsets"', start)]  # the last task
    assert "crash retry: ERROR" in net and "Constraint Error" in net
    # a FAIL shows the diff's examples: daily_revenue s1 of m-unhinted on duplicate delivery
    assert "duplicate delivery: FAIL" in page and "daily_revenue-duplicate_delivery" in page
    assert "QUALIFY row_number()" in net and "NOT EXISTS" in net


def test_page_screenshot_at_1400_px(report, tmp_path):
    """The page drawn by Chromium at 1400 px: a real PNG of that width (the layout the DOM checks
    measure); write it where a reviewer can look at it."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        pytest.skip("chromium is not installed (make chromium installs it)")
    shot = tmp_path / "page.png"
    done = subprocess.run(
        [
            browser,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            f"--user-data-dir={tmp_path / 'profile'}",
            "--window-size=1400,2000",
            "--virtual-time-budget=10000",
            f"--screenshot={shot}",
            (report / "report.html").as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    data = shot.read_bytes()
    assert data.startswith(b"\x89PNG")
    assert int.from_bytes(data[16:20], "big") == 1400  # the IHDR width


def test_engine_tables_fit_the_page_and_link_to_their_cells(engine_runs, tmp_path):
    *_, out = engine_runs
    assert_page_complete(
        out / "report.html",
        tmp_path / "profile",
        tables=(*TABLES, *ENGINE_TABLES),
        figures=(*FIGURES, "engines"),
    )


def test_the_browser_check_catches_a_broken_figure(report, tmp_path):
    page = (report / "report.html").read_text(encoding="utf-8")
    start = page.index("data:image/png;base64,") + len("data:image/png;base64,")
    broken = tmp_path / "broken.html"
    broken.write_text(page[:start] + "AAAA" + page[page.index('"', start) :], encoding="utf-8")
    parser = PageParser()
    parser.feed(rendered_dom(broken, tmp_path / "profile"))
    assert [i.get("data-decoded") for i in parser.images].count("no") == 1


# --- the reference corpus, graded for real ---------------------------------------------------------


@pytest.mark.slow
def test_report_of_a_graded_reference_corpus(tmp_path):
    from arrivalbench.analysis.roles import REFERENCE_ARMS
    from arrivalbench.corpus import make_corpus
    from arrivalbench.sweep import sweep

    run = make_corpus(tmp_path / "corpus", task_ids=["daily_revenue", "customer_state"])
    sweep(run, workers=2)
    files = write_report([run.path], tmp_path / "report", resamples=1000)
    assert_page_complete(files.html, tmp_path / "profile")
    folder = files.markdown.parent
    reference = read_rows(folder, "reference")
    assert {"gold", "controls"} <= set(reference) <= {"gold", "controls", *REFERENCE_ARMS}
    # the gate holds every gold to PASS and every control to FAIL silently: 0% and 100% gaps, with
    # exact bounds over two tasks (the rule of three printed "≤100%" here)
    assert reference["gold"]["gap % [95% CI]"] == "0.0% (≤77.6%)"
    assert reference["controls"]["gap % [95% CI]"] == "100.0% (≥22.4%)"
    # no model arm: report.json states that no arm entered any test
    document = read_json(folder)
    assert [t["name"] for t in document["tests"]] == TEST_NAMES
    assert all(t["arms"] == [] for t in document["tests"])
    assert list(read_rows(folder, "main")) == ["no model or intervention arms"]
    assert list(read_rows(folder, "intervention")) == ["no prompt-arm pairs"]
    assert list(read_rows(folder, "replication")) == ["no arm appears in two runs"]
    assert read_rows(folder, "repair")["gold"]["cells with turns"] == "0"
    markdown = files.markdown.read_text(encoding="utf-8")
    assert markdown.count("![") == len(FIGURES)
    assert markdown.count("\n## Table ") == len(TABLES)


# --- untrusted text in the files: arm names, task ids and paths are the user's ----------------------


def _hostile_table() -> Table:
    from arrivalbench.report.tables import Num

    names = ['=HYPERLINK("http://e","x")', "+1+cmd", "-2+cmd", "@SUM(A1)", "\tx", "\rx", "plain"]
    rows = tuple((name, Num("-10.0pp", -0.1)) for name in names)
    return Table(key="t", title="T", caption="", columns=("arm", "delta pp"), rows=rows)


def test_regression_a_csv_cell_starting_a_formula_ran_in_a_spreadsheet():
    """An arm named =HYPERLINK(...) was written as is: a spreadsheet opening the CSV runs it."""
    from arrivalbench.report.render import render_csv

    rows = list(csv.reader(io.StringIO(render_csv(_hostile_table()), newline="")))
    assert rows[0] == ["arm", "delta pp rate"]
    assert [r[0] for r in rows[1:]] == [
        "'=HYPERLINK(\"http://e\",\"x\")", "'+1+cmd", "'-2+cmd", "'@SUM(A1)", "'\tx", "\\x0dx", "plain"
    ]  # fmt: skip
    assert {r[1] for r in rows[1:]} == {"-0.1"}  # a number keeps its sign


def test_regression_html_in_an_arm_name_was_live_in_report_md():
    """report.html escaped HTML; report.md did not, and a Markdown viewer renders raw HTML."""
    from arrivalbench.report.render import Report, render_markdown

    table = Table(
        key="t",
        title="<b>T</b>",
        caption="arms <img src=x onerror=alert(1)>",
        columns=("arm",),
        rows=(("<script>alert(1)</script> | a & b",),),
        note="<i>n</i>",
    )
    report = Report(sources=(), paragraphs=(("Runs", "<script>r</script>"),), blocks=(table,))
    markdown = render_markdown(report, "docs/metrics.md")
    assert "<" not in markdown.replace("<!--", "")
    assert "| &lt;script&gt;alert(1)&lt;/script&gt; \\| a &amp; b |" in markdown
    assert "**Runs.** &lt;script&gt;r&lt;/script&gt;" in markdown
    assert (
        "arms &lt;img src=x onerror=alert(1)&gt;" in markdown and "&lt;i&gt;n&lt;/i&gt;" in markdown
    )


def test_a_fail_diff_renders_as_expected_against_actual_not_raw_json():
    """Issue 26: a cell's diff on the page was raw JSON; a FAIL's examples are now a table of
    expected against actual values, with the counts and the severity in one line."""
    from arrivalbench.report.page import _record_html

    record = {
        "verdict": "FAIL",
        "diff": {
            "counts": {"missing": 1, "changed": 1, "extra": 0},
            "examples": {
                "changed": [
                    {
                        "key": {"store_id": 1, "day": "2026-03-03"},
                        "columns": {"revenue": {"expected": "758.74", "actual": "860.04"}},
                    }
                ],
                "missing": [{"store_id": 2, "day": "2026-03-04", "revenue": "5.00"}],
            },
            "expected_rows": 2,
            "actual_rows": 1,
            "right_rows_share": 0.0,
            "severity": {
                "wrong_rows_share": 1.0,
                "measures": {
                    "revenue": {
                        "expected_total": 763.74,
                        "actual_total": 860.04,
                        "total_error": 0.126,
                        "max_row_error": 1.0,
                    }
                },
            },
        },
    }
    page = _record_html(record)
    assert "<pre>" not in page and '<table class="diff">' in page
    assert (
        "<td>758.74</td><td>860.04</td>" in page
        and "store_id=1, day=2026-03-03" in page
        and "<td>store_id=2, day=2026-03-04, revenue=5.00</td><td>—</td>" in page
    )
    assert "missing 1, changed 1; 1 rows against 2 expected; wrong rows 100.0%" in page
    assert "revenue: total 860.04 against 763.74 (12.6% off)" in page
    error = {"verdict": "ERROR", "error_class": "sql_error", "message": "<boom>"}
    assert _record_html(error).startswith("<pre>") and "&lt;boom&gt;" in _record_html(error)


def test_a_link_to_a_cell_opens_its_details():
    from arrivalbench.report.page import _SCRIPT

    assert 'querySelector("details.cell")' in _SCRIPT and "details.open = true" in _SCRIPT


def test_a_rates_link_lists_the_cells_that_make_it_fail_first(report):
    """Issue 26: a number's link led to its whole denominator; the failing cells come first."""
    page = (report / "report.html").read_text(encoding="utf-8")
    sets = page[page.index('<section id="cellsets"') :]
    hint = next(
        p for p in sets.split('<p class="cellset"')[1:] if "11 cells:" in p and "m-hint" in p
    )
    failing, others = hint.split("others:")
    # m-hint's 11 cells (5 tasks x 2 samples and a refusal): account_balances/0 FAILs late
    # arrival, daily_revenue/0 ERRORs on duplicate delivery, daily_revenue/2 has no artifact
    assert "3 failing:" in failing and "; 8 " in failing
    for cell in ("account_balances / 0", "daily_revenue / 0", "daily_revenue / 2"):
        assert f"m-hint / {cell}<" in failing and f"m-hint / {cell}<" not in others


def test_report_tasks_keeps_only_those_tasks_cells_and_records_the_filter(runs, tmp_path):
    """report --tasks: every table over the named tasks only, the filter in report.json; a task
    the runs lack is one line with a suggestion."""
    from arrivalbench.errors import UsageError

    write_report(list(runs), tmp_path / "one", resamples=RESAMPLES, tasks=["daily_revenue"])
    document = read_json(tmp_path / "one")
    assert document["task_filter"]["kept"] == ["daily_revenue"]
    assert {c["task"] for c in document["cells"]} == {"daily_revenue"}
    main = read_rows(tmp_path / "one", "main")
    assert main["m-unhinted (r1)"]["tasks"] == "1"
    # r1's unhinted daily_revenue: samples 0 and 1, sample 1 FAILs duplicate delivery: gap 1/2
    assert main["m-unhinted (r1)"]["gap % [95% CI]"].startswith("50.0%")
    with pytest.raises(
        UsageError, match=r"--tasks daily_revenu: no task 'daily_revenu'.*'daily_revenue'"
    ):
        write_report(list(runs), tmp_path / "bad", resamples=RESAMPLES, tasks=["daily_revenu"])
    with pytest.raises(UsageError, match=r"--tasks-from-arm m-hnt: no arm .*'m-hint'"):
        write_report(list(runs), tmp_path / "bad", resamples=RESAMPLES, tasks_from_arm="m-hnt")
    write_report(list(runs), tmp_path / "arm", resamples=RESAMPLES, tasks_from_arm="m-hint")
    kept = read_json(tmp_path / "arm")["task_filter"]
    assert kept["tasks_from_arm"] == "m-hint" and len(kept["kept"]) == 5


def test_pooled_hazard_table_counts_x_of_n_under_both_rules(report):
    """r1's unhinted arm, 2 samples of 5 tasks: account_balances/0 FAILs late arrival,
    daily_revenue/1 duplicate delivery, net_revenue/0 ERRORs crash-retry and first_purchase/0
    fails the snapshot (strict leaves both out)."""
    row = read_rows(report, "hazards_pooled")["m-unhinted (r1)"]
    tasks = {t: get_task(t).spec.hazards for t in TASKS}
    late = sum(2 for t in TASKS if "late_arrival" in tasks[t])
    assert row["late arrival: per-hazard"] == f"{late - 1}/{late}"
    crash = sum(2 for t in TASKS if "crash_retry" in tasks[t])
    # the ERROR on crash-retry leaves net_revenue/0 out of that hazard only
    assert row["crash retry: per-hazard"] == f"{crash - 1}/{crash - 1}"
    strict_late = late - sum(
        1 for t in ("net_revenue", "first_purchase") if "late_arrival" in tasks[t]
    )
    assert row["late arrival: strict"] == f"{strict_late - 1}/{strict_late}"


def test_counts_table_states_cells_verdicts_and_the_extreme_hazards(report):
    """r1's unhinted arm: 10 cells x 8 schedules = 80 verdicts, one ERROR (net_revenue/0 on
    crash-retry, a 'Constraint Error'); late arrival and duplicate delivery at 4.5/5 = 90.0%, the
    other three at 100%. m-hint has one refused cell among its 11."""
    rows = read_rows(report, "counts")
    m = rows["m-unhinted (r1)"]
    assert (m["cells"], m["cells with a script"], m["cells without a script"]) == ("10", "10", "0")
    assert (m["verdicts"], m["ERROR verdicts"]) == ("80", "1")
    assert m["gradeable verdicts"] == "79/80 = 98.8%"
    assert m["constraint violations"] == "1/80 = 1.2%"
    assert (m["weakest hazard"], m["weakest hazard %"]) == (
        "late arrival, duplicate delivery",
        "90.0%",
    )
    assert (m["strongest hazard"], m["strongest hazard %"]) == (
        "out of order, crash retry, backfill",
        "100.0%",
    )
    h = rows["m-hint"]
    assert (h["cells"], h["cells without a script"], h["without a script by reason"]) == (
        "11",
        "1",
        "refusal 1",
    )


def test_hazard_cells_table_counts_the_cells_and_tasks_behind_each_rate(report):
    """r1's unhinted arm: crash-retry loses net_revenue/0 (ERROR), the benign schedules the cell
    failing the snapshot (first_purchase/0); every task keeps a cell."""
    row = read_rows(report, "hazard_cells")["m-unhinted (r1)"]
    assert row["late arrival: cells (tasks)"] == "10 (5)"
    assert row["crash retry: cells (tasks)"] == "9 (5)"
    assert row["single batch (benign): cells (tasks)"] == "9 (5)"
    csv_row = read_csv(report, "hazard_cells")["m-unhinted (r1)"]
    assert csv_row["crash retry: cells (tasks) rate"] == "9"
    assert csv_row["crash retry: cells (tasks) n"] == "5"


def test_first_turn_snapshot_pass_pooled_over_cells(report):
    """r1's unhinted arm: ten cells with turns, daily_revenue/1 (ERROR, PASS) and first_purchase/0
    (FAIL x3) fail turn 1, one of them is repaired: 8/10 first, 9/10 final; m-hint's refused cell
    has no turns, daily_revenue/0 (FAIL, PASS) is repaired: 9/10 and 10/10."""
    rows = read_rows(report, "repair_pooled")
    m = rows["m-unhinted (r1)"]
    assert m["cells with turns"] == "10"
    assert m["first-turn snapshot-pass, pooled"] == "8/10 = 80.0%"
    assert m["final snapshot-pass, pooled"] == "9/10 = 90.0%"
    assert m["lift pp"] == "+10.0pp"
    assert rows["m-hint"]["first-turn snapshot-pass, pooled"] == "9/10 = 90.0%"
    assert rows["m-hint"]["final snapshot-pass, pooled"].startswith("10/10 = 100.0% (≥")
    assert rows["gold"]["cells with turns"] == "0"


def test_guard_share_correlates_with_the_gap_over_arms(runs, tmp_path):
    """--arms gold, m-unhinted and m-hint over runs 1 and 2: four arms. Guard shares (gold, m-hint,
    m-unhinted r1, r2) = (1, 1, 0, 0); gaps (0, .1, .2, .3): deviations (.5, .5, -.5, -.5) and
    (-.15, -.05, .05, .15), cov -.2, sxx 1, syy .05 -> r = -.2 / sqrt(.05) = -0.894; the ranks
    (3.5, 3.5, 1.5, 1.5) against (1, 2, 3, 4) give the same. Without duplicate delivery r1 loses
    daily_revenue/1's FAIL (.1), r2 account_balances/1's (.2), m-hint's ERROR on it no longer
    excludes daily_revenue/0 (.1): gaps (0, .1, .1, .2), r = -.1 / sqrt(.02) = -0.707, and the
    ranks (1, 2.5, 2.5, 4) give -3 / sqrt(18) = -0.707."""
    write_report(
        list(runs),
        tmp_path,
        resamples=RESAMPLES,
        arms=["gold", "m-unhinted", "m-hint"],
        runs=frozenset({1, 2}),
    )
    rows = read_rows(tmp_path, "guard_correlation")
    gap = rows["gap"]
    assert gap["arms"] == "4"
    assert (gap["Pearson r"], gap["Spearman rho"]) == ("-0.894", "-0.894")
    other = rows["gap without duplicate delivery"]
    assert (other["Pearson r"], other["Spearman rho"]) == ("-0.707", "-0.707")
    value = read_json(tmp_path)["tables"]["guard_correlation"]["values"][0][2]["rate"]
    assert value == pytest.approx(-0.2 / 0.05**0.5)


def test_guard_correlation_is_undefined_over_one_arm(report):
    """By default the tests count r1's unhinted model arm only: one arm, no correlation."""
    gap = read_rows(report, "guard_correlation")["gap"]
    assert (gap["arms"], gap["Pearson r"], gap["Spearman rho"]) == ("1", "—", "—")


def test_all_five_table_holds_the_weakest_link_beside_the_group_mean(report):
    """Every fixture task declares all five: r1's unhinted arm has late arrival and duplicate
    delivery at 90%, the rest at 100%: ordering mean 95.0%, idempotency 96.7%, group-mean -1.7pp;
    weakest 90.0% on both sides, weakest link 0.0pp."""
    m = read_rows(report, "all_five")["m-unhinted (r1)"]
    assert m["all-five tasks"] == "5"
    assert (m["ordering mean %"], m["idempotency mean %"]) == ("95.0%", "96.7%")
    assert m["group-mean margin pp"] == "-1.7pp"
    assert (m["weakest ordering %"], m["weakest idempotency %"]) == ("90.0%", "90.0%")
    assert m["weakest-link margin pp"] == "0.0pp"
    note = read_json(report)["tables"]["all_five"]["note"]
    assert "weakest-link margin positive in 0 of 0 untied arms" in note


def test_report_tasks_usable_in_every_named_arm(tmp_path):
    """x fails net_revenue's snapshot and ERRORs first_purchase's crash-retry (its only cells
    there), y fails account_balances' snapshot: the tasks usable in both are daily_revenue and
    customer_state; in x alone, three. y's gap over those two tasks, both passing, is 0%."""
    from arrivalbench.errors import UsageError

    make_run(
        tmp_path / "run",
        {"x": 1, "y": 1},
        {
            ("x", "net_revenue", 0): {"snapshot": "FAIL"},
            ("x", "first_purchase", 0): {"crash_retry": "ERROR"},
            ("y", "account_balances", 0): {"snapshot": "FAIL"},
        },
    )
    write_report(
        [tmp_path / "run"], tmp_path / "both", resamples=RESAMPLES, tasks_usable_in=["x", "y"]
    )
    found = read_json(tmp_path / "both")["task_filter"]
    assert found["kept"] == ["customer_state", "daily_revenue"]
    assert found["tasks_usable_in"] == ["x", "y"]
    assert "usable in every one of the arms x, y" in found["definition"]
    main = read_rows(tmp_path / "both", "main")
    assert main["y"]["tasks"] == "2"
    write_report([tmp_path / "run"], tmp_path / "x", resamples=RESAMPLES, tasks_usable_in=["x"])
    assert read_json(tmp_path / "x")["task_filter"]["kept"] == [
        "account_balances",
        "customer_state",
        "daily_revenue",
    ]
    with pytest.raises(UsageError, match=r"--tasks-usable-in z: no arm 'z'"):
        write_report(
            [tmp_path / "run"], tmp_path / "bad", resamples=RESAMPLES, tasks_usable_in=["z"]
        )


def test_pool_runs_pools_one_arms_runs_into_one_arm(runs, tmp_path):
    """m-unhinted over r1 and r2: four samples per task. Gap daily_revenue 1/4, customer_state
    1/4, net_revenue 0/3 (r1/0 ERRORs), first_purchase 0/3 (r1/0 fails the snapshot),
    account_balances 3/4 -> 1.25 / 5 = 25.0%; snapshot-pass (4 + 3/4) / 5 = 95.0%; error 1/4 / 5
    = 5.0%; all-in (4 x 1/4 + 3/4) / 5 = 35.0%. Late arrival (4 + 2/4) / 5 = .9, out of order
    (4 + 3/4) / 5 = .95, duplicate delivery (3 + 2 x 3/4) / 5 = .9, the rest 1: group-mean
    .925 - .9667 = -4.2pp, weakest link .9 - .9 = 0.0pp."""
    from arrivalbench.errors import UsageError

    write_report(list(runs), tmp_path / "pooled", resamples=RESAMPLES, pool=["m-unhinted"])
    row = read_rows(tmp_path / "pooled", "pooled_runs")["m-unhinted (pooled)"]
    assert (row["runs"], row["tasks"], row["cells"]) == ("r1, r2", "5", "20")
    assert row["gap % [95% CI]"].startswith("25.0% [")
    assert row["snapshot-pass % [95% CI]"].startswith("95.0% [")
    assert row["error % [95% CI]"].startswith("5.0% [")
    assert row["all-in failure % [95% CI]"].startswith("35.0% [")
    assert (row["group-mean margin pp"], row["weakest-link margin pp"]) == ("-4.2pp", "0.0pp")
    document = read_json(tmp_path / "pooled")
    assert document["pool_runs"]["arms"] == {"m-unhinted (pooled)": ["r1", "r2"]}
    assert "pools runs r1, r2" in document["pool_runs"]["definition"]
    # the runs' own rows are untouched, and the pooled arm enters no test
    assert read_rows(tmp_path / "pooled", "main")["m-unhinted (r2)"]["gap % [95% CI]"].startswith(
        "30.0% ["
    )
    assert all("m-unhinted (pooled)" not in t["arms"] for t in document["tests"])
    with pytest.raises(UsageError, match=r"--pool-runs gold: the arm is in one run only \(r1\)"):
        write_report(list(runs), tmp_path / "bad", resamples=RESAMPLES, pool=["gold"])
    with pytest.raises(UsageError, match=r"--pool-runs m-unhintd: no arm .*'m-unhinted'"):
        write_report(list(runs), tmp_path / "bad", resamples=RESAMPLES, pool=["m-unhintd"])


def test_no_pooled_runs_table_without_pool_runs(report):
    document = read_json(report)
    assert "pooled_runs" not in document["tables"] and "pool_runs" not in document
