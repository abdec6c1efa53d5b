"""JUnit XML from a verdict record (`check` and `grade`): one testcase per schedule, for CI.

A FAIL is a <failure> whose message is the diff summary, an ERROR an <error> with the engine's
words, a skipped hazard a <skipped> with its reason. Those words are shown through
`terminal.visible`: XML 1.0 cannot hold most control characters, and a report with one raw
does not parse.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from arrivalbench.terminal import visible
from arrivalbench.verdict import Verdict
from arrivalbench.verdict import summary as verdict_summary


def summary(entry: Mapping[str, Any]) -> str:
    """One line: the diff counts of a FAIL, or where and why an ERROR (verdict.summary of the
    entry's JSON)."""
    return verdict_summary(Verdict.from_json(entry))


def junit_xml(record: Mapping[str, Any], suite: str, path: Path) -> None:
    """Write the record (its JSON, as grade and check give it) as one <testsuite> of one
    <testcase> per schedule."""
    import json

    verdicts = {name: Verdict.from_json(e) for name, e in record["verdicts"].items()}
    skipped = record.get("skipped", {})
    outcomes = [v.outcome for v in verdicts.values()]
    root = ET.Element(
        "testsuite",
        name=suite,
        tests=str(len(verdicts) + len(skipped)),
        failures=str(outcomes.count("FAIL")),
        errors=str(outcomes.count("ERROR")),
        skipped=str(len(skipped)),
    )
    classname = f"arrivalbench.{record['task']}"
    for name, verdict in verdicts.items():
        case = ET.SubElement(root, "testcase", classname=classname, name=name)
        if verdict.outcome == "FAIL" and verdict.diff is not None:
            message = visible(verdict_summary(verdict))
            failure = ET.SubElement(case, "failure", message=message, type="FAIL")
            failure.text = json.dumps(verdict.diff.to_json(), indent=2, sort_keys=True, default=str)
        elif verdict.outcome == "ERROR":
            message = visible(verdict_summary(verdict))
            error = ET.SubElement(case, "error", message=message, type=str(verdict.error_class))
            error.text = visible(verdict.message or "")
    for name, reason in skipped.items():
        case = ET.SubElement(root, "testcase", classname=classname, name=name)
        ET.SubElement(case, "skipped", message=visible(reason))
    ET.indent(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
