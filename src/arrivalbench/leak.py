"""Hazard vocabulary and the word-boundary scan that keeps it out of what an agent is told.

The vocabulary lives here and only here; the gate scans task descriptions with it and the agent
loop scans every prompt and feedback message of the arms that must not be warned.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

VOCABULARY: tuple[str, ...] = (
    # Longer phrases first, so a match reports the whole phrase; [-_ ] also catches identifiers.
    r"late[-_ ]arriv\w*",
    r"arriv\w*[-_ ]late",
    r"lateness",
    r"late",
    r"out[-_ ]of[-_ ]order",
    r"reorder\w*",
    r"duplicat\w*",
    r"de-?dup\w*",
    r"twice",
    r"crash\w*",
    r"retr(?:y|ies|ied|ying)",
    r"backfill\w*",
    r"re-?deliver\w*",
    r"re-?play\w*",
    r"re-?process\w*",
    r"idempoten\w*",
    r"at[-_ ]least[-_ ]once",
    r"exactly[-_ ]once",
    r"schema[-_ ](?:evolution|change|drift)\w*",
    r"watermark\w*",
    r"adversarial",
)
_PATTERN = re.compile(r"\b(?:" + "|".join(VOCABULARY) + r")\b", re.IGNORECASE)


@dataclass(frozen=True)
class Leak:
    term: str
    line: int
    context: str


def scan(text: str) -> list[Leak]:
    """Every hazard term in the text, with its 1-based line and the line itself."""
    leaks = []
    for number, line in enumerate(text.splitlines(), start=1):
        for match in _PATTERN.finditer(line):
            leaks.append(Leak(term=match.group(0), line=number, context=line.strip()))
    return leaks
