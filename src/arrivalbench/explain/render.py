"""The human form of an explanation: a few lines and the story as a small table (the paper's Figure 4).

Task ids, values, column names and engine messages are untrusted: every one is printed through
`terminal.text`, never as Rich markup.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from arrivalbench.explain.explanation import Explanation
from arrivalbench.explain.semantics import SENTENCES
from arrivalbench.terminal import text

STORY_ROWS = 6
"""Rows shown per cell of the story table; more are counted, not printed."""


def _values(rows: list[dict[str, Any]], sep: str = "\n") -> str:
    shown = [
        "(" + ", ".join("NULL" if v is None else str(v) for v in r.values()) + ")" for r in rows
    ]
    if len(shown) > STORY_ROWS:
        shown = [*shown[:STORY_ROWS], f"… {len(shown) - STORY_ROWS} more"]
    return sep.join(shown) or "-"


def _columns(rows: list[dict[str, Any]]) -> str:
    return f" ({', '.join(rows[0])})" if rows else ""


def render(explanation: Explanation, console: Console, replay_hint: str | None = None) -> None:
    """Print the verdict, the minimal counterexample and its story, the divergence and the diagnosis."""
    e = explanation
    head = f"{e.task} · {e.schedule} · seed {e.seed}: "
    if e.passed:
        console.print(text(head + "PASS: nothing to explain."))
        return
    verdict = e.verdict + (f" ({e.error_class})" if e.error_class else "")
    console.print(text(head, (verdict, "bold red")))
    if e.minimal is not None and e.shrunk is not None:
        n = len(e.minimal.deliveries)
        crashes = sum(1 for d in e.minimal.deliveries if d.crash)
        budget = " (budget ran out: the best found, not 1-minimal)" if e.shrunk.exhausted else ""
        console.print(
            text(
                f"Minimal counterexample: {n} batch{'es' if n != 1 else ''}, "
                f"{e.minimal.delivered_rows()} rows delivered (of {e.original_rows})"
                + (f", {crashes} crash{'es' if crashes != 1 else ''}" if crashes else "")
                + f"; {e.shrunk.replays} replays in {e.shrunk.seconds:.1f} s{budget}."
            )
        )
    if e.story:
        delivered = next((s.delivered for s in e.story if s.delivered), [])
        target = next((s.target_rows or s.oracle_rows for s in e.story if not s.equal), [])
        table = Table(
            title="What happened, batch by batch (minimal schedule)", title_justify="left"
        )
        table.add_column("batch", justify="right")
        table.add_column(text("delivered" + _columns(delivered)))
        table.add_column(text("target after it, where it differs" + _columns(target)))
        table.add_column("truth so far, where it differs")
        assert e.minimal is not None
        for step, delivery in zip(e.story, e.minimal.deliveries, strict=False):
            label = str(step.batch) + (" ✗crash" if delivery.crash else "")
            if step.error is not None:
                after = f"ERROR {step.error}"
            elif not step.defined:
                after = "(no target yet)"
            elif step.equal:
                after = "= truth"
            else:
                after = _values(step.target_rows) if step.target_rows else "(no such row)"
            truth = "" if step.equal or not step.defined else _values(step.oracle_rows)
            table.add_row(text(label), text(_values(step.delivered)), text(after), text(truth))
        console.print(table)
    if e.divergence is not None:
        d = e.divergence
        if d.batch is None:
            console.print(text(f"First divergence in the original schedule: none: {d.note}."))
        else:
            console.print(
                text(
                    f"First divergence in the original schedule: batch {d.batch}"
                    + (f" ({d.note})" if "not exist" in d.note or "ERROR" in d.note else "")
                    + (f"; target {_values(d.target_rows[:2], ' ')}" if d.target_rows else "")
                    + (f"; truth {_values(d.oracle_rows[:2], ' ')}" if d.oracle_rows else "")
                )
            )
    if e.verdict == "ERROR":
        console.print(text(e.sentence()))
    labels = e.diagnosis or ([] if e.verdict == "ERROR" else ["unclassified"])
    for label in labels:
        console.print(text("Diagnosis: ", (label, "bold"), f": {SENTENCES[label]}"))
    if replay_hint:
        console.print("Replay the minimal schedule with:", style="dim")
        console.print(text("  " + replay_hint), soft_wrap=True)
