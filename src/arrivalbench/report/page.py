"""The report as one self-contained HTML page: the tables (each number linking to the cells
behind it), the figures inline, and an expandable section per task with each cell's verdicts,
script, diffs and transcript."""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from arrivalbench.hazards import BENIGN
from arrivalbench.report.figures import Figure
from arrivalbench.report.format import Num, Table

if TYPE_CHECKING:
    from arrivalbench.analysis.outcomes import CellOutcome
    from arrivalbench.report.render import Report

_STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; max-width: 1400px; margin: 2rem auto; padding: 0 1rem; color: #1d1d1f; box-sizing: border-box; }
table { border-collapse: collapse; margin: .5rem 0 1rem; font-variant-numeric: tabular-nums; max-width: 100%; font-size: 14px; }
th, td { padding: .25rem .4rem; border-bottom: 1px solid #ddd; text-align: right; white-space: normal; vertical-align: top; }
td { min-width: 3.5rem; } .nw { white-space: nowrap; }
thead th { border-bottom: 2px solid #444; font-size: .85rem; }
th.label, td.label { text-align: left; }
td a.cells { color: inherit; text-decoration: underline dotted; }
figure { margin: 1.5rem 0; } figure img { max-width: 100%; height: auto; }
figcaption, .caption, .note { font-size: .9rem; color: #444; max-width: 60rem; }
.scroll { overflow-x: auto; }
details.task { border-top: 1px solid #ccc; padding: .3rem 0; }
details.task > summary { cursor: pointer; font-weight: 600; }
details.cell > summary { cursor: pointer; color: #2b6cb0; font-size: .85rem; }
tr.cell > th, tr.cell > td { border-bottom: none; } tr.more > td { padding-top: 0; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f6f6f6; padding: .5rem; font-size: .8rem; max-height: 30rem; overflow-y: auto; }
.PASS { color: #1a7f37; } .FAIL { color: #c62828; font-weight: 600; } .ERROR { color: #8a4b00; font-weight: 600; }
p.cellset { font-size: .85rem; } tr.target, p.target { background: #fff6d5; }
#decode-warning { background: #fde8e8; padding: .5rem; }
"""

# Marks every figure as decoded or not once the page has loaded, so a broken embedding is visible
# to a reader (a warning) and to the headless-browser test (data attributes in the dumped DOM);
# marks every table as fitting its column or not (the page wraps at 1400 px); and opens the
# <details> holding the target of a link (a cell behind a number).
_SCRIPT = """
function openTarget() {
  const id = decodeURIComponent(location.hash.slice(1));
  const target = id ? document.getElementById(id) : null;
  let node = target;
  while (node) { if (node.tagName === "DETAILS") node.open = true; node = node.parentElement; }
  // a cell's row: its details (script, diffs) are in the row after it, opened on arrival
  const more = target && target.classList.contains("cell") ? target.nextElementSibling : null;
  const details = more ? more.querySelector("details.cell") : null;
  if (details) details.open = true;
  if (target) { target.classList.add("target"); target.scrollIntoView(); }
}
window.addEventListener("hashchange", openTarget);
window.addEventListener("load", () => {
  let broken = 0;
  for (const img of document.images) {
    const ok = img.complete && img.naturalWidth > 0;
    img.dataset.decoded = ok ? "yes" : "no";
    img.dataset.naturalWidth = String(img.naturalWidth);
    if (!ok) broken += 1;
  }
  document.body.dataset.figuresChecked = String(document.images.length);
  for (const table of document.querySelectorAll("table[data-table]")) {
    const room = table.parentElement.clientWidth;
    table.dataset.fits = table.scrollWidth <= room + 1 ? "yes" : "no";
    table.dataset.width = String(table.scrollWidth);
  }
  document.body.dataset.viewport = String(window.innerWidth);
  if (broken) document.getElementById("decode-warning").hidden = false;
  openTarget();
});
"""


class _CellIds:
    """Stable ids for cells and for the sets of cells behind numbers, in first-use order."""

    def __init__(self, cells: Sequence[tuple[str, str, int]]) -> None:
        self.cell = {key: f"cell-{i}" for i, key in enumerate(sorted(cells))}
        self.sets: dict[tuple[tuple[str, str, int], ...], str] = {}

    def link(self, cells: tuple[tuple[str, str, int], ...]) -> str:
        key = tuple(sorted(c for c in cells if c in self.cell))
        if key not in self.sets:
            self.sets[key] = f"cells-{len(self.sets)}"
        return self.sets[key]


def _wrapped(text: str) -> str:
    """A number and its interval or bound as two unbreakable pieces that may wrap between them
    (and a trailing ` n=<tasks>` as a third)."""
    e = html.escape
    text, count, n = text.rpartition(" n=") if " n=" in text else (text, "", "")
    last = f' <span class="nw">{e(count[1:] + n)}</span>' if count else ""
    for mark in (" [", " ("):
        head, sep, tail = text.partition(mark)
        if sep:
            return (
                f'<span class="nw">{e(head)}</span> <span class="nw">{e(sep[1:] + tail)}</span>'
                + last
            )
    return e(text) + last


def _cell_html(cell: str, ids: _CellIds | None) -> str:
    if isinstance(cell, Num) and cell.cells and ids is not None:
        title = f"{len(cell.cells)} cell{'s' * (len(cell.cells) != 1)} behind this number"
        return (
            f'<a class="cells" href="#{ids.link(cell.cells)}" title="{title}">{_wrapped(cell)}</a>'
        )
    return _wrapped(cell) if isinstance(cell, Num) else html.escape(cell)


def _table_html(block: Table, ids: _CellIds | None) -> str:
    e = html.escape
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
                else f"<td{left if i < block.labels else ''}>{_cell_html(c, ids)}</td>"
            )
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in block.rows
    )
    return (
        f'<div class="scroll"><table data-table="{block.key}"><thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


_TEXT_LIMIT = 20_000


def _clip(text: str) -> str:
    return (
        text if len(text) <= _TEXT_LIMIT else text[:_TEXT_LIMIT] + f"\n… ({len(text):,} characters)"
    )


def _tasks_html(report: Report, ids: _CellIds) -> str:
    """One expandable section per task: each cell's verdicts, and per cell its SQL, the diff
    examples of every schedule it did not pass, and for a generated cell its transcript."""
    from arrivalbench.report.analysis import not_passing_records, transcript

    e = html.escape
    a = report.analysis
    if a is None:
        return ""
    records = not_passing_records(a.sources)
    schedules = ["snapshot", *BENIGN, *a.hazards()]
    parts = [
        '<section id="tasks"><h2>Tasks and cells</h2><p class="caption">Every cell of every task: its verdict '
        "on the snapshot, the benign schedules and each declared hazard, with the script, the diff examples of "
        "each schedule it did not pass and, for generated cells, the transcript. Numbers in the tables link to the "
        "cells behind them (listed at the end).</p>"
    ]
    by_task: dict[str, list] = {}
    for o in a.outcomes:
        by_task.setdefault(o.task, []).append(o)
    for task in sorted(by_task):
        cells = sorted(by_task[task], key=lambda o: (a.arms.index(o.arm), o.sample))
        failing = sum(
            any(o.verdicts.get(h) in ("FAIL", "ERROR") for h in o.hazards) or not o.snapshot_pass
            for o in cells
        )
        shown = [sch for sch in schedules if any(sch in o.verdicts for o in cells)]
        head = "".join(f"<th>{e(sch.replace('_', ' '))}</th>" for sch in shown)
        rows = []
        for o in cells:
            key = (o.arm, o.task, o.sample)
            source, stored = a.source_of(o.arm)
            verdicts = "".join(
                f'<td class="{e(o.verdicts.get(sch, ""))}">{e(o.verdicts.get(sch, "—"))}'
                + (f" ({e(o.error_classes[sch])})" if sch in o.error_classes else "")
                + "</td>"
                for sch in shown
            )
            detail = []
            if o.artifact_sha256:
                detail.append(
                    f"<h4>SQL</h4><pre>{e(_clip(source.run.artifact(o.artifact_sha256)))}</pre>"
                )
            else:
                detail.append(f"<p>No artifact: {e(o.no_artifact_reason or 'unknown')}.</p>")
            for sch in shown:
                record = records.get((o.arm, o.task, o.sample, sch))
                if record:
                    detail.append(
                        f"<h4>{e(sch.replace('_', ' '))}: {e(o.verdicts.get(sch, ''))}</h4>"
                        + _record_html(record)
                    )
            data = transcript(source.run, stored, o.task, o.sample)
            if data is not None:
                data = _short_transcript(data)
                detail.append(
                    f"<h4>Transcript</h4><pre>{e(_clip(json.dumps(data, indent=1, ensure_ascii=False, sort_keys=True)))}</pre>"
                )
            served = a.served_models.get(key)
            rows.append(
                f'<tr id="{ids.cell[key]}" class="cell"><th scope="row" class="label">{e(o.arm)}</th>'
                f'<td>{o.sample}</td>{verdicts}<td class="label">{e(served or "—")}</td></tr>'
                f'<tr class="more"><td class="label" colspan="{len(shown) + 3}"><details class="cell">'
                f"<summary>{e(o.arm)} / {o.sample}: script, diffs"
                f"{', transcript' if data is not None else ''}</summary>{''.join(detail)}</details></td></tr>"
            )
        parts.append(
            f'<details class="task" id="task-{e(task)}"><summary>{e(task)}: {len(cells)} cells, '
            f"{failing} failing the snapshot or a declared hazard</summary>"
            f'<div class="scroll"><table data-cells="{e(task)}"><thead><tr><th class="label">arm</th><th>sample</th>'
            f'{head}<th class="label">served model</th></tr></thead>'
            f"<tbody>{''.join(rows)}</tbody></table></div></details>"
        )
    parts.append("</section>")
    return "".join(parts)


_PROMPTS = ("system", "user")


def _short_transcript(data: dict[str, object]) -> dict[str, object]:
    """A transcript without its prompt texts, which every sample of an arm and task shares (they
    are named by prompt_sha256 and kept in the run): the page stays small for large runs."""
    return {
        k: (
            f"({len(v):,} characters, see the run's transcript)"
            if k in _PROMPTS and isinstance(v, str)
            else v
        )
        for k, v in data.items()
    }


_RECORD_NOISE = frozenset({"schedule_sha256", "verdict", "seed_commitment"})


def _value(value: object) -> str:
    return html.escape("NULL" if value is None else str(value))


def _record_html(record: dict[str, object]) -> str:
    """A stored verdict as a reader wants it: a FAIL's diff as a table of expected against actual
    values (changed rows per column, missing rows as expected only, extra rows as actual only),
    with its counts and severity in one line; anything else (an ERROR) as its JSON."""
    e = html.escape
    diff = record.get("diff")
    if not isinstance(diff, dict) or not isinstance(diff.get("examples"), dict):
        example = {k: v for k, v in record.items() if k not in _RECORD_NOISE}
        return f"<pre>{e(_clip(json.dumps(example, indent=1, ensure_ascii=False, sort_keys=True)))}</pre>"
    counts = ", ".join(f"{k} {v}" for k, v in (diff.get("counts") or {}).items() if v)
    line = (
        f"{counts or 'no counts'}; {diff.get('actual_rows')} rows against "
        f"{diff.get('expected_rows')} expected"
    )
    severity = diff.get("severity")
    if isinstance(severity, dict):
        totals = "; ".join(
            f"{column}: total {m.get('actual_total')} against {m.get('expected_total')}"
            + (
                f" ({100 * m['total_error']:.1f}% off)"
                if isinstance(m.get("total_error"), int | float)
                else ""
            )
            for column, m in (severity.get("measures") or {}).items()
        )
        line += f"; wrong rows {100 * float(severity.get('wrong_rows_share', 0)):.1f}%"
        line += f"; {totals}" if totals else ""
    rows = []
    for kind, examples in diff["examples"].items():
        for example in examples if isinstance(examples, list) else []:
            if not isinstance(example, dict):
                continue
            if kind == "changed" and isinstance(example.get("columns"), dict):
                key = ", ".join(f"{k}={v}" for k, v in (example.get("key") or {}).items())
                for column, pair in example["columns"].items():
                    pair = pair if isinstance(pair, dict) else {}
                    why = f" ({pair['reason']})" if pair.get("reason") else ""
                    rows.append(
                        (
                            kind,
                            key,
                            column,
                            _value(pair.get("expected")),
                            _value(pair.get("actual")) + e(why),
                        )
                    )
            elif kind in ("missing", "extra"):
                values = ", ".join(f"{k}={v}" for k, v in example.items() if k != "reason")
                shown = e(values) + (
                    f" ({e(str(example['reason']))})" if "reason" in example else ""
                )
                rows.append(
                    (
                        kind,
                        "",
                        "(row)",
                        shown if kind == "missing" else "—",
                        shown if kind == "extra" else "—",
                    )
                )
            else:
                text = json.dumps(example, ensure_ascii=False, sort_keys=True)
                rows.append((kind, "", "", e(_clip(text)), ""))
    body = "".join(
        f'<tr><td class="label">{e(kind)}</td><td class="label">{e(key)}</td>'
        f'<td class="label">{e(column)}</td><td>{expected}</td><td>{actual}</td></tr>'
        for kind, key, column, expected, actual in rows
    )
    table = (
        '<table class="diff"><thead><tr><th class="label">kind</th><th class="label">key</th>'
        '<th class="label">column</th><th>expected</th><th>actual</th></tr></thead>'
        f"<tbody>{body}</tbody></table>"
        if rows
        else ""
    )
    return f'<p class="diffline">{e(line)}</p>{table}'


def _failing(o: CellOutcome) -> bool:
    """A cell failing the snapshot or a declared hazard (FAIL or ERROR), as the task rows count it."""
    return not o.snapshot_pass or any(o.verdicts.get(h) in ("FAIL", "ERROR") for h in o.hazards)


def _cellsets_html(ids: _CellIds, report: Report | None = None) -> str:
    e = html.escape
    a = report.analysis if report is not None else None
    failing = {(o.arm, o.task, o.sample) for o in a.outcomes if _failing(o)} if a else set()
    parts = [
        '<section id="cellsets"><h2>Cells behind the numbers</h2><p class="caption">Each number in a table '
        "links here: the cells in its denominator, those failing the snapshot or a declared hazard first, "
        "each linking to its row under Tasks and cells, whose details open on arrival.</p>"
    ]

    def links(cells: list[tuple[str, str, int]]) -> str:
        return ", ".join(
            f'<a href="#{ids.cell[c]}">{e(c[0])} / {e(c[1])} / {c[2]}</a>' for c in cells
        )

    for cells, anchor in ids.sets.items():
        bad = [c for c in cells if c in failing]
        rest = [c for c in cells if c not in failing]
        text = (
            f"{len(bad)} failing: {links(bad)}; {len(rest)} others: {links(rest) or 'none'}"
            if bad
            else links(rest) or "none"
        )
        parts.append(f'<p class="cellset" id="{anchor}">{len(cells)} cells: {text}</p>')
    parts.append("</section>")
    return "".join(parts)


def render_html(report: Report, link: str) -> str:
    """The report as one self-contained page: every table and figure, then every task's cells."""
    e = html.escape
    a = report.analysis
    ids = _CellIds([(o.arm, o.task, o.sample) for o in a.outcomes]) if a else None
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
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
        + ('<li><a href="#tasks">Tasks and cells</a></li>' if ids else "")
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
        note = f'<p class="note">{e(block.note)}</p>' if block.note else ""
        parts.append(
            f'<section id="{_anchor(block)}"><h2>{e(block.heading)}</h2><p class="caption">{e(block.caption)}</p>'
            f"{_table_html(block, ids)}{note}</section>"
        )
    if ids is not None:
        parts.append(_tasks_html(report, ids))
        parts.append(_cellsets_html(ids, report))
    parts += [f"<script>{_SCRIPT}</script>", "</body>", "</html>", ""]
    return "\n".join(parts)


def _anchor(block: Table | Figure) -> str:
    return f"{'figure' if isinstance(block, Figure) else 'table'}-{block.key}"
