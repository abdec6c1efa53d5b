"""The report over the reference corpus graded on DuckDB, SQLite and PostgreSQL, through the CLI:
make-corpus --engine and grade-run per engine, then one report over the three runs. The per-engine
table and the paired verdict table are checked against the stored verdict rows, recomputed here
from the rows and the tasks' declarations, not against numbers written down.

PostgreSQL is started as tests/test_engine_postgres.py starts it (conftest.py's postgres_engine,
skipped without the server binaries); grade-run starts the run's own private server.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

from arrivalbench.spec import get_task
from arrivalbench.store import RunDir

ENGINES = ("duckdb", "sqlite", "postgres")
TASKS = ("daily_revenue", "customer_state")
ORDERING = ("late_arrival", "out_of_order")
IDEMPOTENCY = ("duplicate_delivery", "crash_retry", "backfill")

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def graded(cli, tmp_path_factory: pytest.TempPathFactory, postgres_engine) -> tuple[Path, Path]:
    """The corpus of TASKS made and graded on each engine (runs named for it), and the report."""
    root = tmp_path_factory.mktemp("engines")
    for engine in ENGINES:
        made = cli(
            "make-corpus", "--out", root / engine, "--engine", engine, "--tasks", ",".join(TASKS)
        )
        assert made.returncode == 0, made.stderr
        done = cli("grade-run", root / engine, "--workers", "2")
        assert done.returncode == 0, done.stderr
    written = cli(
        "report", *(root / e for e in ENGINES), "--out", root / "report", "--resamples", "1000"
    )
    assert written.returncode == 0, written.stderr
    return root, root / "report"


def table(report: Path, key: str) -> tuple[list[list[str]], list[list[object]], list[str]]:
    document = json.loads((report / "report.json").read_text(encoding="utf-8"))
    found = document["tables"][key]
    return found["rows"], found["values"], found["columns"]


def hazard_rates(run: RunDir) -> dict[str, dict[str, tuple[float, int]]]:
    """arm -> hazard -> (temporal-pass, tasks), from the verdict rows: per task the share of PASS
    among the PASS and FAIL verdicts of cells whose task declares the hazard, then the mean over
    the tasks with one."""
    by_task: dict[tuple[str, str, str], list[bool]] = defaultdict(list)
    for row in run.verdicts().to_pylist():
        if row["schedule"] in get_task(row["task"]).spec.hazards and row["verdict"] != "ERROR":
            by_task[(row["arm"], row["schedule"], row["task"])].append(row["verdict"] == "PASS")
    per_arm: dict[tuple[str, str], list[float]] = defaultdict(list)
    for (arm, hazard, _), passes in sorted(by_task.items()):
        per_arm[(arm, hazard)].append(sum(passes) / len(passes))
    out: dict[str, dict[str, tuple[float, int]]] = defaultdict(dict)
    for (arm, hazard), rates in per_arm.items():
        out[arm][hazard] = (sum(rates) / len(rates), len(rates))
    return out


def test_engine_table_matches_the_verdict_rows_of_each_engine(graded):
    root, report = graded
    rows, values, columns = table(report, "engines")
    printed = {(r[0], r[1]): dict(zip(columns, r, strict=True)) for r in rows}
    numbers = {(r[0], r[1]): dict(zip(columns, r, strict=True)) for r in values}
    checked = 0
    for engine in ENGINES:
        run = RunDir.open(root / engine)
        assert run.manifest["engine"] == engine
        expected = hazard_rates(run)
        assert {arm for arm, e in printed if e == engine} == set(run.manifest["arms"])
        for arm, rates in expected.items():
            row, number = printed[(arm, engine)], numbers[(arm, engine)]
            assert row["run"] == engine
            for hazard, (rate, tasks) in rates.items():
                column = f"{hazard.replace('_', ' ')} pass %"
                assert number[column]["rate"] == pytest.approx(rate), (arm, engine, hazard)
                assert number[column]["n"] == tasks
                assert row[column].endswith(f" n={tasks}")
                checked += 1
            if all(h in rates for h in (*ORDERING, *IDEMPOTENCY)):
                ordering = sum(rates[h][0] for h in ORDERING) / len(ORDERING)
                idempotency = sum(rates[h][0] for h in IDEMPOTENCY) / len(IDEMPOTENCY)
                margin = number["group-mean margin pp"]
                assert margin["rate"] == pytest.approx(ordering - idempotency), (arm, engine)
    assert checked >= len(ENGINES) * 6 * 5  # every arm but pk_constraint has all five hazards
    # the gate holds every gold to PASS: on every engine, the rows and the table say 100%
    for engine in ENGINES:
        assert all(
            rate == 1.0 for rate, _ in hazard_rates(RunDir.open(root / engine))["gold"].values()
        )
        assert printed[("gold", engine)]["late arrival pass %"].startswith("100.0% (≥")


def test_engine_verdict_table_pairs_the_same_cells_across_engines(graded):
    root, report = graded
    rows, _, columns = table(report, "engine_verdicts")
    found = {(r[0], r[1]): dict(zip(columns, r, strict=True)) for r in rows}
    verdicts = {
        engine: {
            (r["arm"], r["task"], r["sample"], r["schedule"]): r["verdict"]
            for r in RunDir.open(root / engine).verdicts().to_pylist()
        }
        for engine in ENGINES
    }
    for engine in ENGINES[1:]:
        for arm in RunDir.open(root / engine).manifest["arms"]:
            keys = [k for k in verdicts["duckdb"] if k[0] == arm and k in verdicts[engine]]
            same = sum(verdicts["duckdb"][k] == verdicts[engine][k] for k in keys)
            a_only = sum(verdicts["duckdb"][k] == "PASS" != verdicts[engine][k] for k in keys)
            row = found[(arm, f"duckdb → {engine}")]
            assert row["paired verdicts"] == str(len(keys)), (arm, engine)
            assert row["same verdict"] == str(same), (arm, engine)
            assert row["PASS on A only"] == str(a_only), (arm, engine)


def test_naive_baselines_run_on_every_engine_and_key_errors_are_constraint_violations(graded):
    """The naive baselines ERRORed on SQLite and PostgreSQL (UNION ALL BY NAME); a declared key's
    refusal is a constraint_violation on each engine, however the engine words it."""
    root, report = graded
    document = json.loads((report / "report.json").read_text(encoding="utf-8"))
    for engine in ENGINES:
        rows = RunDir.open(root / engine).verdicts().to_pylist()
        naive = [r for r in rows if r["arm"] in ("naive_append", "naive_watermark")]
        assert naive and all(r["verdict"] != "ERROR" for r in naive), engine
        classes = {
            cls
            for cell in document["cells"]
            if cell["arm"] == f"pk_constraint ({engine})"
            for cls in cell["error_classes"].values()
        }
        assert classes == {"constraint_violation"}, (engine, classes)


def test_engine_figure_is_written_within_the_page_width(graded):
    _, report = graded
    png = (report / "figures" / "engines.png").read_bytes()
    assert png.startswith(b"\x89PNG")
    assert int.from_bytes(png[16:20], "big") <= 1400
    markdown = (report / "report.md").read_text(encoding="utf-8")
    assert "The signature and the per-hazard pass of each arm on each engine" in markdown


def test_engine_tables_fit_the_page_in_a_browser(graded, tmp_path):
    """Both engine tables wrap to the 1400 px page and the engine figure decodes. (The paired gap
    matrix, one column per arm, does not fit 21 arms; it scrolls, as it does in any run that
    large.)"""
    from test_report import PageParser, rendered_dom

    _, report = graded
    parser = PageParser()
    parser.feed(rendered_dom(report / "report.html", tmp_path / "profile"))
    assert parser.body.get("data-viewport") == "1400"
    assert parser.fits["engines"] == "yes"
    assert parser.fits["engine_verdicts"] == "yes"
    assert "engines" in parser.figures
    assert all(image.get("data-decoded") == "yes" for image in parser.images)
