"""The report as a document and as files: its blocks in reading order under a header, written as
Markdown, one self-contained HTML page, and each table as CSV and LaTeX (booktabs)."""

from __future__ import annotations

import csv
import dataclasses
import html
import io
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from arrivalbench.analysis.signtests import TestResult
from arrivalbench.analysis.stats import DEFAULT_BOOTSTRAP_SEED, signature
from arrivalbench.errors import UsageError
from arrivalbench.report.analysis import (
    Analysis,
    PooledRuns,
    Source,
    TaskFilter,
    filter_tasks,
    labelled,
    load_sources,
    pool_runs,
)
from arrivalbench.report.counts import counts_table, hazard_cells_table, turns_pooled_table
from arrivalbench.report.engines import engine_figure, engine_table, engine_verdict_table
from arrivalbench.report.figures import Figure, guard_figure, hazard_figure, snapshot_gap_figure
from arrivalbench.report.format import Num, Table
from arrivalbench.report.human import human_tables
from arrivalbench.report.matched import all_five_table
from arrivalbench.report.page import render_html
from arrivalbench.report.replication import (
    pooled_runs_table,
    replication_hazard_table,
    replication_table,
)
from arrivalbench.report.scaffolds import scaffold_tables
from arrivalbench.report.scripts import guard_correlation_table, guard_table, idioms_table
from arrivalbench.report.tables import (
    arms_table,
    crash_table,
    diagnosis_tables,
    hazard_table,
    intervention_table,
    main_table,
    paired_table,
    pooled_hazard_table,
    reference_table,
    repair_effect_table,
    repair_table,
    severity_table,
)
from arrivalbench.terminal import visible

METRICS_DOC = Path(__file__).resolve().parents[3] / "docs" / "metrics.md"
UNITS = ("task", "scenario")


@dataclass(frozen=True)
class Report:
    sources: tuple[Source, ...]
    paragraphs: tuple[tuple[str, str], ...]  # (heading, text), the header
    blocks: tuple[Table | Figure, ...]  # in reading order
    analysis: Analysis | None = None
    tests: tuple[TestResult, ...] = ()  # every hypothesis test, in a fixed order (report.json)
    task_filter: TaskFilter | None = None  # report --tasks / --tasks-from-arm
    pooled: PooledRuns | None = None  # report --pool-runs


@dataclass(frozen=True)
class ReportFiles:
    markdown: Path
    html: Path
    tables: Path
    figures: Path
    json: Path | None = None


# -- building --------------------------------------------------------------------------------------


def build_report(
    paths: Sequence[Path],
    *,
    resamples: int = 10_000,
    unit: str = "task",
    seed: int = DEFAULT_BOOTSTRAP_SEED,
    arms: Sequence[str] | None = None,
    runs: frozenset[int] | None = None,
    tasks: Sequence[str] | None = None,
    tasks_from_arm: str | None = None,
    tasks_usable_in: Sequence[str] | None = None,
    pool: Sequence[str] | None = None,
) -> Report:
    """Read the runs and compute every table and figure; nothing is written.

    `arms` / `runs` choose the arms the sign tests and the signature count (report --arms /
    --runs); by default the model arms (unhinted) of run 1 (analysis/roles.py). `tasks` /
    `tasks_from_arm` keep only those tasks' cells (report --tasks / --tasks-from-arm; both:
    the tasks in both); `tasks_usable_in` keeps the tasks where every named arm has a gap-usable
    cell (report --tasks-usable-in). `pool` names arms (as stored) whose runs are pooled into one
    arm each, in a table of their own (report --pool-runs).
    """
    if unit not in UNITS:
        raise UsageError(f"--unit {unit!r}: expected one of {', '.join(UNITS)}.")
    if resamples < 100:
        raise UsageError(
            f"--resamples {resamples}: use at least 100 (10000 for reported intervals)."
        )
    sources, task_filter = filter_tasks(load_sources(paths), tasks, tasks_from_arm, tasks_usable_in)
    a = Analysis(
        sources,
        labelled(sources),
        unit,  # type: ignore[arg-type]  # checked above
        resamples,
        seed,
        chosen_arms=tuple(arms) if arms else None,
        chosen_runs=runs or None,
        pooled=pool_runs(sources, pool) if pool else None,
    )
    sigs = signature(a.outcomes)
    main, hazards = main_table(a, sigs), hazard_table(a, sigs)
    guard = guard_table(a)
    tests = (*main.tests, *guard.tests)
    blocks: list[Table | Figure] = [
        arms_table(a, list(tests)),
        main,
        reference_table(a),
        snapshot_gap_figure(a),
        hazards,
        hazard_figure(a),
        *(
            (engine_table(a, sigs), engine_figure(a, sigs), engine_verdict_table(a))
            if a.several_engines
            else ()
        ),
        intervention_table(a),
        *scaffold_tables(a),
        repair_table(a),
        repair_effect_table(a),
        replication_table(a),
        replication_hazard_table(a),
        paired_table(a),
        guard,
        guard_figure(a),
        crash_table(a),
        *human_tables(a),
        severity_table(a),
        idioms_table(a),
        pooled_hazard_table(a),
        counts_table(a),
        hazard_cells_table(a),
        turns_pooled_table(a),
        guard_correlation_table(a),
        all_five_table(a),
        *pooled_runs_table(a),
        *diagnosis_tables(a),
    ]
    blocks = _numbered(blocks)
    return Report(
        sources=tuple(sources),
        paragraphs=tuple(_header(sources, unit, resamples, seed))
        + ((("Tasks", task_filter.definition()),) if task_filter else ()),
        blocks=tuple(blocks),
        analysis=a,
        tests=tests,
        task_filter=task_filter,
        pooled=a.pooled,
    )


def _numbered(blocks: list[Table | Figure]) -> list[Table | Figure]:
    """Tables and figures numbered separately, in reading order."""
    counts = {Table: 0, Figure: 0}
    out = []
    for block in blocks:
        counts[type(block)] += 1
        out.append(dataclasses.replace(block, number=counts[type(block)]))
    return out


def _header(
    sources: Sequence[Source], unit: str, resamples: int, seed: int
) -> list[tuple[str, str]]:
    runs = []
    development = []
    for s in sources:
        m = s.run.manifest
        arms = len(m.get("arms", []))
        ungraded = sum(not o.graded for o in s.outcomes)
        commitment = m.get("seed_commitment")
        if commitment is None:
            development.append(s.name)
            seeds = f"public base seed {m.get('base_seed')} (development run)"
        else:
            seeds = (
                f"base seed {m.get('base_seed')} for the visible log and a private seed "
                f"(commitment {commitment[:12]}…) for the hidden logs"
            )
        runs.append(
            f"{s.name} ({s.run.path}): suite {str(m.get('suite_hash'))[:12]}, harness {m.get('harness_version')}, "
            f"engine {m.get('engine')} {m.get('engine_version')}, {seeds}, "
            f"{len(s.outcomes)} cells in {arms} arm{'s' * (arms != 1)}, made {m.get('created_at')}"
            + (f", {ungraded} cells not yet graded (in no denominator)" if ungraded else "")
        )
    suites = {str(s.run.manifest.get("suite_hash")) for s in sources}
    warning = (
        " The runs were graded against different suites, so their rates describe different task versions."
        if len(suites) > 1
        else ""
    )
    shared = sorted({arm for s in sources for arm, label in s.labels.items() if label != arm})
    labels = (
        f" Arms present in more than one run ({', '.join(shared)}) are labelled '<arm> (<run>)'."
        if shared
        else ""
    )
    notice = []
    if development:
        names = ", ".join(development)
        notice = [
            (
                "Development run",
                f"{names} {'was' if len(development) == 1 else 'were'} graded on a public base "
                "seed: anyone can rebuild the hidden logs and their expected tables, so a pipeline "
                "can be fitted to them, and these rates are not an official result. Official runs "
                "draw their hidden logs from a secret seed file (README, 'Official runs').",
            )
        ]
    return [
        *notice,
        ("Runs", "; ".join(runs) + "." + warning + labels),
        (
            "Intervals",
            (
                f"Percentile bootstrap over {unit}s, {resamples:,} resamples at the 95% level, seed {seed}: a resampled "
                f"{unit} carries all its samples, and paired differences resample the {unit}s usable in both arms once for "
                "both. A rate of exactly 0% or 100% is shown with its one-sided 95% bound instead of an interval, "
                "because resampling an all-zero sample returns [0, 0]: the exact Clopper-Pearson bound "
                "1 - 0.05^(1/n) below 30 tasks, the rule of three (3/n) from 30 on. Shares pooled over cells carry "
                "the exact Clopper-Pearson interval in the numeric CSVs and report.json."
            ),
        ),
        (
            "Definitions",
            (
                "A cell is one (arm, task, sample), and every rate is a mean over tasks of that task's rate, never pooled "
                "over cells (the no-artifact shares excepted); a cell holding an artifact with no verdict yet is in no "
                "denominator. Snapshot-pass: the artifact exists and passes the snapshot, the test the agent saw. Gap, "
                "the primary metric: among cells that pass the snapshot and raise no ERROR on a declared hazard, the share "
                "that FAIL (a silently wrong table) on at least one declared hazard. Temporal-pass of a hazard: among "
                "cells with an artifact whose verdict on it is PASS or FAIL, the share that PASS, over the tasks "
                "declaring it (a benign schedule: over snapshot-passing cells of every task). Error: no artifact, or an ERROR on the snapshot or a declared hazard, "
                "over all cells. All-in failure: no artifact, a snapshot that does not pass, or a FAIL or ERROR on a "
                "declared hazard, over all cells. Signature: ordering-hazard against idempotency-hazard temporal-pass. "
                "Definitions with worked examples: docs/metrics.md."
            ),
        ),
    ]


# -- writing ---------------------------------------------------------------------------------------


def _md(text: str) -> str:
    """Text as Markdown shows it: HTML escaped as on the HTML page (a Markdown viewer renders raw
    HTML, and arm names, paths and task ids are the user's), and `|` escaped inside a table."""
    return html.escape(text, quote=False).replace("|", "\\|")


def render_markdown(report: Report, link: str) -> str:
    lines = ["# ArrivalBench report", ""]
    for heading, text in report.paragraphs:
        text = html.escape(text, quote=False)
        text = text.replace("docs/metrics.md", f"[docs/metrics.md]({link})")
        lines += [f"**{html.escape(heading, quote=False)}.** {text}", ""]
    lines += [
        "Every table is also in `report.json` (printed and as numbers, with the list of tests and "
        "the arms that entered each) and as numeric CSV under `tables/`; the per-task view, with "
        "each cell's verdicts, SQL, diffs and transcript, is in `report.html`.",
        "",
    ]
    for block in report.blocks:
        heading = html.escape(block.heading, quote=False)
        caption = html.escape(block.caption, quote=False)
        lines += [f"## {heading}", ""]
        if isinstance(block, Figure):
            lines += [f"![{heading}](figures/{block.key}.png)", "", caption, ""]
            continue
        lines += [caption, ""]
        lines.append("| " + " | ".join(map(_md, block.columns)) + " |")
        lines.append(
            "| "
            + " | ".join("---" if i < block.labels else "---:" for i in range(len(block.columns)))
            + " |"
        )
        lines += ["| " + " | ".join(map(_md, row)) + " |" for row in block.rows]
        lines.append("")
        if block.note:
            lines += [html.escape(block.note, quote=False), ""]
    return "\n".join(lines)


def _has_bounds(table: Table, i: int) -> bool:
    return any(
        isinstance(row[i], Num) and (row[i].lo is not None or row[i].hi is not None)
        for row in table.rows
    )


def _numeric(table: Table, i: int) -> bool:
    return any(isinstance(row[i], Num) for row in table.rows)


def _has_n(table: Table, i: int) -> bool:
    return any(isinstance(row[i], Num) and row[i].n is not None for row in table.rows)


def _number(x: float | None) -> str:
    if x is None:
        return ""
    return str(x) if isinstance(x, int) else repr(round(float(x), 10))


FORMULA_STARTS = ("=", "+", "-", "@", "\t")
"""A spreadsheet reads a cell starting with one of these as a formula (CSV injection)."""


def _csv_text(cell: str) -> str:
    """A text cell as a spreadsheet shows it, never runs it: control characters shown as escapes
    (`terminal.visible`; Python's csv module leaves a carriage return unquoted, which splits the
    row), then a cell starting like a formula gets a leading single quote. Numbers are written
    by `_number` and keep their sign."""
    cell = visible(cell)
    return "'" + cell if cell.startswith(FORMULA_STARTS) else cell


def render_csv(table: Table) -> str:
    """The table as numbers: a column of rates, differences or counts becomes `<column> rate` (a
    fraction, or the count), with `<column> lo` and `<column> hi` where it carries an interval or
    a one-sided bound and `<column> n` where it says how many tasks a rate is over; text columns
    stay text (one that would start a formula is quoted, see `_csv_text`), and '—' (undefined)
    is empty."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header: list[str] = []
    for i, column in enumerate(table.columns):
        if _has_bounds(table, i):
            header += [f"{column} rate", f"{column} lo", f"{column} hi"]
        elif _numeric(table, i):
            header.append(f"{column} rate")
        else:
            header.append(column)
        if _has_n(table, i):
            header.append(f"{column} n")
    header = [_csv_text(h) for h in header]
    writer.writerow(header)
    for row in table.rows:
        out: list[str] = []
        for i, cell in enumerate(row):
            num = cell if isinstance(cell, Num) else None
            if _has_bounds(table, i):
                out += (
                    [_number(num.rate), _number(num.lo), _number(num.hi)] if num else ["", "", ""]
                )
            elif _numeric(table, i):
                out.append(_number(num.rate) if num else "")
            else:
                out.append(_csv_text(str(cell)))
            if _has_n(table, i):
                out.append(_number(num.n) if num else "")
        writer.writerow(out)
    return buffer.getvalue()


def _value(cell: str) -> dict[str, object] | str:
    if isinstance(cell, Num):
        value: dict[str, object] = {
            "text": str(cell),
            "rate": cell.rate,
            "lo": cell.lo,
            "hi": cell.hi,
        }
        if cell.n is not None:
            value["n"] = cell.n
        return value
    return str(cell)


def report_json(report: Report) -> str:
    """Every table (printed text and numbers) and the fixed list of tests, as one JSON document."""
    a = report.analysis
    tables = {
        block.key: {
            "number": block.number,
            "title": block.title,
            "caption": block.caption,
            "note": block.note,
            "columns": list(block.columns),
            "rows": [[str(c) for c in row] for row in block.rows],
            "values": [[_value(c) for c in row] for row in block.rows],
        }
        for block in report.blocks
        if isinstance(block, Table)
    }
    tests = [
        {
            "name": t.name,
            "arms": list(t.arms),
            "runs": list(t.runs),
            "statistic": t.statistic,
            "n": t.n,
            "null": t.null,
            "p_value": t.p_value,
        }
        for t in report.tests
    ]
    arms = (
        {
            label: {
                "role": r.role,
                "run": r.run,
                "recorded": r.recorded,
                "model": r.model,
                "prompt_arm": r.prompt_arm,
            }
            for label, r in sorted(a.roles.items())
        }
        if a
        else {}
    )
    served = a.served_models if a else {}
    cells = (
        [
            {
                "arm": o.arm,
                "task": o.task,
                "sample": o.sample,
                "verdicts": dict(sorted(o.verdicts.items())),
                "error_classes": dict(sorted(o.error_classes.items())),
                "no_artifact_reason": o.no_artifact_reason,
                "artifact_sha256": o.artifact_sha256,
                "served_model": served.get((o.arm, o.task, o.sample)),
            }
            for o in sorted(a.outcomes, key=lambda o: (o.arm, o.task, o.sample))
        ]
        if a
        else []
    )
    document = {
        "report_format": 1,
        "runs": [{"name": s.name, "path": str(s.run.path)} for s in report.sources],
        "arms": arms,
        "tests": tests,
        "tables": tables,
        "cells": cells,
    }
    if report.task_filter is not None:  # absent without a filter: earlier reports' bytes hold
        f = report.task_filter
        document["task_filter"] = {
            "tasks": list(f.given) if f.given is not None else None,
            "tasks_from_arm": f.from_arm,
            "kept": list(f.kept),
            "definition": f.definition(),
        }
        if f.usable_in is not None:  # absent without it: earlier filters' bytes hold
            document["task_filter"]["tasks_usable_in"] = list(f.usable_in)
    if report.pooled is not None:  # absent without --pool-runs
        document["pool_runs"] = {
            "arms": {label: list(runs) for label, runs in report.pooled.runs.items()},
            "definition": report.pooled.definition(),
        }
    return json.dumps(document, indent=1, sort_keys=False, ensure_ascii=False) + "\n"


_LATEX = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
    "≤": r"$\leq$",
    "≥": r"$\geq$",
    "—": "---",
    "−": "$-$",
    "Δ": r"$\Delta$",
}


def _tex(text: str) -> str:
    return "".join(_LATEX.get(ch, ch) for ch in text)


def render_latex(table: Table) -> str:
    lines = [
        "% Written by arrivalbench report; needs \\usepackage{booktabs}.",
        "\\begin{table}",
        "\\centering",
        f"\\caption{{{_tex(table.title)}. {_tex(table.caption)}}}",
        f"\\label{{tab:arrivalbench-{table.key}}}",
        f"\\begin{{tabular}}{{l{'r' * (len(table.columns) - 1)}}}",
        "\\toprule",
        " & ".join(map(_tex, table.columns)) + " \\\\",
        "\\midrule",
        *(" & ".join(map(_tex, row)) + " \\\\" for row in table.rows),
        "\\bottomrule",
        "\\end{tabular}",
    ]
    if table.note:
        lines.append(f"\\par\\smallskip\\footnotesize {_tex(table.note)}")
    lines.append("\\end{table}")
    return "\n".join(lines) + "\n"


def _metrics_link(out: Path) -> str:
    """Where docs/metrics.md is, seen from the report: relative inside the repository, else its file URI."""
    if not METRICS_DOC.is_file():
        return "docs/metrics.md"
    root, here = METRICS_DOC.parents[1], out.resolve()
    if here == root or root in here.parents:
        return Path(os.path.relpath(METRICS_DOC, here)).as_posix()
    return METRICS_DOC.as_uri()


def write_report(
    paths: Sequence[Path],
    out: Path,
    *,
    resamples: int = 10_000,
    unit: str = "task",
    seed: int = DEFAULT_BOOTSTRAP_SEED,
    arms: Sequence[str] | None = None,
    runs: frozenset[int] | None = None,
    tasks: Sequence[str] | None = None,
    tasks_from_arm: str | None = None,
    tasks_usable_in: Sequence[str] | None = None,
    pool: Sequence[str] | None = None,
) -> ReportFiles:
    """Build the report of the runs and write every file under `out`; returns where they are."""
    report = build_report(
        paths,
        resamples=resamples,
        unit=unit,
        seed=seed,
        arms=arms,
        runs=runs,
        tasks=tasks,
        tasks_from_arm=tasks_from_arm,
        tasks_usable_in=tasks_usable_in,
        pool=pool,
    )
    out = Path(out)
    files = ReportFiles(
        markdown=out / "report.md",
        html=out / "report.html",
        tables=out / "tables",
        figures=out / "figures",
        json=out / "report.json",
    )
    try:
        files.tables.mkdir(parents=True, exist_ok=True)
        files.figures.mkdir(parents=True, exist_ok=True)
        link = _metrics_link(out)
        for block in report.blocks:
            if isinstance(block, Figure):
                (files.figures / f"{block.key}.png").write_bytes(block.png)
            else:
                (files.tables / f"{block.key}.csv").write_text(render_csv(block), encoding="utf-8")
                (files.tables / f"{block.key}.tex").write_text(
                    render_latex(block), encoding="utf-8"
                )
        files.markdown.write_text(render_markdown(report, link), encoding="utf-8")
        files.json.write_text(report_json(report), encoding="utf-8")  # type: ignore[union-attr]
        files.html.write_text(render_html(report, link), encoding="utf-8")
    except OSError as exc:
        raise UsageError(
            f"{out}: cannot write the report ({exc.strerror}); choose a writable --out."
        ) from None
    return files
