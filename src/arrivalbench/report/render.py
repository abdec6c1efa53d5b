"""The report as a document and as files: its blocks in reading order under a header, written as
Markdown, one self-contained HTML page, and each table as CSV and LaTeX (booktabs)."""

from __future__ import annotations

import base64
import csv
import dataclasses
import html
import io
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from arrivalbench.errors import UsageError
from arrivalbench.report.analysis import Analysis, Source, labelled, load_sources
from arrivalbench.report.figures import Figure, guard_figure, hazard_figure, snapshot_gap_figure
from arrivalbench.report.tables import (
    Table,
    crash_table,
    diagnosis_tables,
    guard_table,
    hazard_table,
    idioms_table,
    intervention_table,
    main_table,
    paired_table,
    repair_effect_table,
    repair_table,
    replication_table,
)
from arrivalbench.stats import DEFAULT_BOOTSTRAP_SEED, signature

METRICS_DOC = Path(__file__).resolve().parents[3] / "docs" / "metrics.md"
UNITS = ("task", "scenario")


@dataclass(frozen=True)
class Report:
    sources: tuple[Source, ...]
    paragraphs: tuple[tuple[str, str], ...]  # (heading, text), the header
    blocks: tuple[Table | Figure, ...]  # in reading order


@dataclass(frozen=True)
class ReportFiles:
    markdown: Path
    html: Path
    tables: Path
    figures: Path


# -- building --------------------------------------------------------------------------------------


def build_report(
    paths: Sequence[Path],
    *,
    resamples: int = 10_000,
    unit: str = "task",
    seed: int = DEFAULT_BOOTSTRAP_SEED,
) -> Report:
    """Read the runs and compute every table and figure; nothing is written."""
    if unit not in UNITS:
        raise UsageError(f"--unit {unit!r}: expected one of {', '.join(UNITS)}.")
    if resamples < 100:
        raise UsageError(
            f"--resamples {resamples}: use at least 100 (10000 for reported intervals)."
        )
    sources = load_sources(paths)
    a = Analysis(sources, labelled(sources), unit, resamples, seed)  # type: ignore[arg-type]  # checked above
    sigs = signature(a.outcomes)
    main, hazards = main_table(a, sigs), hazard_table(a, sigs)
    blocks: list[Table | Figure] = [
        main,
        snapshot_gap_figure(a),
        hazards,
        hazard_figure(a),
        intervention_table(a),
        repair_table(a),
        repair_effect_table(a),
        replication_table(a),
        paired_table(a),
        guard_table(a),
        guard_figure(a),
        crash_table(a),
        idioms_table(a),
        *diagnosis_tables(a),
    ]
    blocks = _numbered(blocks)
    return Report(
        sources=tuple(sources),
        paragraphs=tuple(_header(sources, unit, resamples, seed)),
        blocks=tuple(blocks),
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
                "both. A rate of exactly 0% or 100% is shown with its one-sided rule-of-three 95% bound (about 3/n over "
                "n tasks) instead of an interval, because resampling an all-zero sample returns [0, 0]."
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


def render_markdown(report: Report, link: str) -> str:
    lines = ["# ArrivalBench report", ""]
    for heading, text in report.paragraphs:
        text = text.replace("docs/metrics.md", f"[docs/metrics.md]({link})")
        lines += [f"**{heading}.** {text}", ""]
    for block in report.blocks:
        lines += [f"## {block.heading}", ""]
        if isinstance(block, Figure):
            lines += [f"![{block.heading}](figures/{block.key}.png)", "", block.caption, ""]
            continue
        lines += [block.caption, ""]
        cell = lambda text: text.replace("|", "\\|")  # noqa: E731
        lines.append("| " + " | ".join(map(cell, block.columns)) + " |")
        lines.append(
            "| "
            + " | ".join("---" if i < block.labels else "---:" for i in range(len(block.columns)))
            + " |"
        )
        lines += ["| " + " | ".join(map(cell, row)) + " |" for row in block.rows]
        lines.append("")
        if block.note:
            lines += [block.note, ""]
    return "\n".join(lines)


def render_csv(table: Table) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(table.columns)
    writer.writerows(table.rows)
    return buffer.getvalue()


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


_STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 96rem; margin: 2rem auto; padding: 0 1rem; color: #1d1d1f; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-variant-numeric: tabular-nums; }
th, td { padding: .25rem .6rem; border-bottom: 1px solid #ddd; text-align: right; white-space: nowrap; }
th.label, td.label { text-align: left; }
thead th { border-bottom: 2px solid #444; }
figure { margin: 1.5rem 0; } figure img { max-width: 100%; height: auto; }
figcaption, .caption, .note { font-size: .9rem; color: #444; max-width: 60rem; }
.scroll { overflow-x: auto; }
#decode-warning { background: #fde8e8; padding: .5rem; }
"""

# Marks every figure as decoded or not once the page has loaded, so a broken embedding is visible
# to a reader (a warning) and to the headless-browser test (data attributes in the dumped DOM).
_SCRIPT = """
window.addEventListener("load", () => {
  let broken = 0;
  for (const img of document.images) {
    const ok = img.complete && img.naturalWidth > 0;
    img.dataset.decoded = ok ? "yes" : "no";
    img.dataset.naturalWidth = String(img.naturalWidth);
    if (!ok) broken += 1;
  }
  document.body.dataset.figuresChecked = String(document.images.length);
  if (broken) document.getElementById("decode-warning").hidden = false;
});
"""


def render_html(report: Report, link: str) -> str:
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        "<title>ArrivalBench report</title>",
        f"<style>{_STYLE}</style>",
        "</head>",
        "<body>",
        "<h1>ArrivalBench report</h1>",
        '<p id="decode-warning" hidden>Some figures on this page could not be decoded.</p>',
    ]
    for heading, text in report.paragraphs:
        body = e(text).replace("docs/metrics.md", f'<a href="{e(link)}">docs/metrics.md</a>')
        parts.append(f"<p><strong>{e(heading)}.</strong> {body}</p>")
    parts.append(
        "<nav><ul>"
        + "".join(f'<li><a href="#{_anchor(b)}">{e(b.heading)}</a></li>' for b in report.blocks)
        + "</ul></nav>"
    )
    for block in report.blocks:
        if isinstance(block, Figure):
            data = base64.b64encode(block.png).decode("ascii")
            parts.append(
                f'<figure id="{_anchor(block)}" data-figure="{block.key}"><h2>{e(block.heading)}</h2>'
                f'<img alt="{e(block.title)}" src="data:image/png;base64,{data}">'
                f"<figcaption>{e(block.caption)}</figcaption></figure>"
            )
            continue
        left = ' class="label"'
        head = "".join(
            f'<th scope="col"{left if i < block.labels else ""}>{e(c)}</th>'
            for i, c in enumerate(block.columns)
        )
        body = "".join(
            "<tr>"
            + "".join(
                (
                    f'<th scope="row"{left}>{e(c)}</th>'
                    if i == 0
                    else f"<td{left if i < block.labels else ''}>{e(c)}</td>"
                )
                for i, c in enumerate(row)
            )
            + "</tr>"
            for row in block.rows
        )
        note = f'<p class="note">{e(block.note)}</p>' if block.note else ""
        parts.append(
            f'<section id="{_anchor(block)}"><h2>{e(block.heading)}</h2><p class="caption">{e(block.caption)}</p>'
            f'<div class="scroll"><table data-table="{block.key}"><thead><tr>{head}</tr></thead>'
            f"<tbody>{body}</tbody></table></div>{note}</section>"
        )
    parts += [f"<script>{_SCRIPT}</script>", "</body>", "</html>", ""]
    return "\n".join(parts)


def _anchor(block: Table | Figure) -> str:
    return f"{'figure' if isinstance(block, Figure) else 'table'}-{block.key}"


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
) -> ReportFiles:
    """Build the report of the runs and write every file under `out`; returns where they are."""
    report = build_report(paths, resamples=resamples, unit=unit, seed=seed)
    out = Path(out)
    files = ReportFiles(
        markdown=out / "report.md",
        html=out / "report.html",
        tables=out / "tables",
        figures=out / "figures",
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
        files.html.write_text(render_html(report, link), encoding="utf-8")
    except OSError as exc:
        raise UsageError(
            f"{out}: cannot write the report ({exc.strerror}); choose a writable --out."
        ) from None
    return files
