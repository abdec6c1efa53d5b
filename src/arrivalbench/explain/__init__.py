"""Explain a FAIL: a minimal counterexample, the first batch where the state left the truth, and
which wrong semantics the table equals (issue 13). Never shown to an agent: it names the hazard."""

from arrivalbench.explain.explanation import (
    Explanation,
    diagnose_schedule,
    diagnosis_details,
    explain,
    explain_command,
)
from arrivalbench.explain.semantics import LABELS, SENTENCES, diagnose
from arrivalbench.explain.shrink import DEFAULT_BUDGET_SECONDS, DEFAULT_MAX_REPLAYS, shrink

__all__ = [
    "DEFAULT_BUDGET_SECONDS",
    "DEFAULT_MAX_REPLAYS",
    "LABELS",
    "SENTENCES",
    "Explanation",
    "diagnose",
    "diagnose_schedule",
    "diagnosis_details",
    "explain",
    "explain_command",
    "shrink",
]
