"""JUnit XML from a verdict record (`check` and `grade`): one testcase per schedule, for CI.

A FAIL is a <failure> whose message is the diff summary, an ERROR an <error> with the engine's
words, a skipped hazard a <skipped> with its reason. Those words are shown through
`terminal.visible`: XML 1.0 cannot hold most control characters, and a report with one raw
does not parse.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

from arrivalbench.terminal import visible


def summary(entry: dict[str, Any]) -> str:
    """One line: the diff counts of a FAIL, or where and why an ERROR."""
    if entry["verdict"] == "ERROR":
        where = f"batch {entry['batch']}" if entry.get("batch") is not None else "the run"
        if entry.get("statement"):
            where += f", statement {entry['statement']}"
        message = (entry.get("message") or "").strip().splitlines()
        return f"{entry['error_class']} at {where}: {message[0][:300] if message else ''}"
    if entry["verdict"] == "FAIL":
        diff = entry["diff"]
        counts = ", ".join(f"{k} {v}" for k, v in diff["counts"].items() if v)
        return (
            f"{counts}; {diff['actual_rows']} rows against {diff['expected_rows']} expected; "
            f"right rows {diff['right_rows_share']:.1%}"
        )
    return ""


def junit_xml(record: dict[str, Any], suite: str, path: Path) -> None:
    """Write the record as one <testsuite> of one <testcase> per schedule."""
    import json

    verdicts = record["verdicts"]
    skipped = record.get("skipped", {})
    counts = [e["verdict"] for e in verdicts.values()]
    root = ET.Element(
        "testsuite",
        name=suite,
        tests=str(len(verdicts) + len(skipped)),
        failures=str(counts.count("FAIL")),
        errors=str(counts.count("ERROR")),
        skipped=str(len(skipped)),
    )
    classname = f"arrivalbench.{record['task']}"
    for name, entry in verdicts.items():
        case = ET.SubElement(root, "testcase", classname=classname, name=name)
        if entry["verdict"] == "FAIL":
            failure = ET.SubElement(case, "failure", message=visible(summary(entry)), type="FAIL")
            failure.text = json.dumps(entry["diff"], indent=2, sort_keys=True, default=str)
        elif entry["verdict"] == "ERROR":
            message = visible(summary(entry))
            error = ET.SubElement(case, "error", message=message, type=entry["error_class"])
            error.text = visible(entry.get("message") or "")
    for name, reason in skipped.items():
        case = ET.SubElement(root, "testcase", classname=classname, name=name)
        ET.SubElement(case, "skipped", message=visible(reason))
    ET.indent(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
