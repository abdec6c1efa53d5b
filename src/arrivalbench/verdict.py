"""A verdict: what one replay of one schedule earned, judged against the expected table.

`judge` is the one place a replay becomes PASS, FAIL or ERROR (grade, check and explain all call
it); `Verdict` and `Diff` are its frozen result, and `Record` is a graded artifact's verdicts with
the facts that make them reproducible. Their JSON is the on-disk format and is fixed byte for
byte: `to_json` gives exactly the keys the records have always had (an ERROR carries its four
fields even when null; a PASS has no diff), and `dumps` is the one canonical text (sorted keys,
two-space indent; `compact` for a row's `record` column), so a regraded run compares by bytes.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

import pyarrow as pa

from arrivalbench.compare import Comparison
from arrivalbench.replay import ReplayResult, RunError

RECORD_FORMAT = 2
"""2: a FAIL's diff carries its `severity` (severity.py); 1 had none, and is read as it was."""
Outcome = Literal["PASS", "FAIL", "ERROR"]
OUTCOMES: tuple[Outcome, ...] = ("PASS", "FAIL", "ERROR")
ORACLE_FAILED = "oracle_failed"
"""The error class of a verdict whose expected table could not be computed (check's full refresh)."""


@dataclass(frozen=True)
class Diff:
    """How the final table differs from the expected one (compare.compare's explanation)."""

    counts: Mapping[str, int]
    examples: Mapping[str, Any]
    expected_rows: int
    actual_rows: int
    right_rows_share: float
    changed_columns: Mapping[str, int] | None = None
    severity: Mapping[str, Any] | None = None
    """How wrong the table is (severity.py); None in a diff of record format 1."""

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Diff:
        return cls(
            counts=data["counts"],
            examples=data["examples"],
            expected_rows=data["expected_rows"],
            actual_rows=data["actual_rows"],
            right_rows_share=data["right_rows_share"],
            changed_columns=data.get("changed_columns"),
            severity=data.get("severity"),
        )

    def to_json(self) -> dict[str, Any]:
        data = {
            "counts": dict(self.counts),
            "examples": dict(self.examples),
            "expected_rows": self.expected_rows,
            "actual_rows": self.actual_rows,
            "right_rows_share": self.right_rows_share,
        }
        if self.changed_columns:
            data["changed_columns"] = dict(self.changed_columns)
        if self.severity is not None:
            data["severity"] = dict(self.severity)
        return data

    def summary(self) -> str:
        """The nonzero counts, the row counts and the share of right rows, in one line."""
        counts = ", ".join(f"{k} {v}" for k, v in self.counts.items() if v)
        return (
            f"{counts}; {self.actual_rows} rows against {self.expected_rows} expected; "
            f"right rows {self.right_rows_share:.1%}"
        )


@dataclass(frozen=True)
class Verdict:
    """One schedule's verdict: a FAIL has its diff, an ERROR its class, place and message."""

    outcome: Outcome
    diff: Diff | None = None
    error_class: str | None = None
    batch: int | None = None
    statement: int | None = None
    message: str | None = None
    schedule_sha256: str | None = None
    """What was replayed (grade: the schedule file's hash; check: schedule_digest)."""

    @classmethod
    def passed(cls) -> Verdict:
        return cls("PASS")

    @classmethod
    def failed(cls, diff: Diff) -> Verdict:
        return cls("FAIL", diff=diff)

    @classmethod
    def errored(cls, error: RunError) -> Verdict:
        return cls(
            "ERROR",
            error_class=error.error_class,
            batch=error.batch,
            statement=error.statement,
            message=error.message,
        )

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Verdict:
        diff = data.get("diff")
        return cls(
            outcome=data["verdict"],
            diff=Diff.from_json(diff) if diff is not None else None,
            error_class=data.get("error_class"),
            batch=data.get("batch"),
            statement=data.get("statement"),
            message=data.get("message"),
            schedule_sha256=data.get("schedule_sha256"),
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"verdict": self.outcome}
        if self.outcome == "FAIL" and self.diff is not None:
            data["diff"] = self.diff.to_json()
        if self.outcome == "ERROR":
            data.update(
                error_class=self.error_class,
                batch=self.batch,
                statement=self.statement,
                message=self.message,
            )
        if self.schedule_sha256 is not None:
            data["schedule_sha256"] = self.schedule_sha256
        return data

    def replayed(self, schedule_sha256: str) -> Verdict:
        """This verdict, stamped with what was replayed."""
        return replace(self, schedule_sha256=schedule_sha256)

    @property
    def key(self) -> tuple[str, ...]:
        """("PASS",), ("FAIL",) or ("ERROR", error_class): what a smaller schedule must keep."""
        if self.outcome == "ERROR":
            return (self.outcome, str(self.error_class))
        return (self.outcome,)


def judge(
    result: ReplayResult,
    expected: pa.Table | RunError | None,
    comparing: Callable[[pa.Table, pa.Table], Comparison],
) -> Verdict:
    """The verdict of one replay: its own error first, then an expected table that could not be
    computed, then `comparing(expected, final target)`."""
    if result.error is not None:
        return Verdict.errored(result.error)
    if isinstance(expected, RunError):
        return Verdict(
            "ERROR",
            error_class=ORACLE_FAILED,
            batch=None,
            statement=expected.statement,
            message=f"the full refresh over the complete log failed: {expected.message}",
        )
    assert result.target is not None and expected is not None
    comparison = comparing(expected, result.target)
    if comparison.equal:
        return Verdict.passed()
    return Verdict.failed(Diff.from_json(comparison.diff))


def summary(verdict: Verdict, width: int = 300) -> str:
    """One line: where and why an ERROR (the engine's first line, cut at `width`), the diff of a
    FAIL, nothing for a PASS."""
    if verdict.outcome == "ERROR":
        where = f"batch {verdict.batch}" if verdict.batch is not None else "the run"
        if verdict.statement:
            where += f", statement {verdict.statement}"
        message = (verdict.message or "").strip().splitlines()
        return f"{verdict.error_class} at {where}: {message[0][:width] if message else ''}"
    if verdict.outcome == "FAIL" and verdict.diff is not None:
        return verdict.diff.summary()
    return ""


def tally(verdicts: Iterable[Verdict]) -> Counter[str]:
    """How many of each outcome."""
    return Counter(v.outcome for v in verdicts)


@dataclass(frozen=True)
class Record:
    """A graded artifact: its verdict per schedule and what makes them reproducible.

    `extra` holds what one producer adds (check: mode, oracle, skipped, log fingerprint, and a
    dbt model's name and dbt version)."""

    task: str
    artifact_sha256: str
    engine: str
    engine_version: str
    harness_version: str
    seed: int
    verdicts: Mapping[str, Verdict]
    seed_commitment: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    format: int = RECORD_FORMAT

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "format": self.format,
            "task": self.task,
            "artifact_sha256": self.artifact_sha256,
            "engine": self.engine,
            "engine_version": self.engine_version,
            "harness_version": self.harness_version,
            "seed": self.seed,
            "verdicts": {name: v.to_json() for name, v in self.verdicts.items()},
            **self.extra,
        }
        if self.seed_commitment is not None:
            data["seed_commitment"] = self.seed_commitment
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Record:
        known = {f.name for f in fields(cls)} - {"extra"}
        return cls(
            task=data["task"],
            artifact_sha256=data["artifact_sha256"],
            engine=data["engine"],
            engine_version=data["engine_version"],
            harness_version=data["harness_version"],
            seed=data["seed"],
            verdicts={n: Verdict.from_json(v) for n, v in data["verdicts"].items()},
            seed_commitment=data.get("seed_commitment"),
            extra={k: v for k, v in data.items() if k not in known},
            format=data["format"],
        )

    @property
    def passed(self) -> bool:
        return all(v.outcome == "PASS" for v in self.verdicts.values())


def as_stored(entry: Mapping[str, Any], stored: Mapping[str, Any]) -> dict[str, Any]:
    """`entry` (a verdict's JSON) in the record format `stored` was written in: a FAIL stored
    before severity (format 1) is compared without it, so regrading an older run still verifies
    every byte it has."""
    old = stored.get("diff")
    new = entry.get("diff")
    if isinstance(old, Mapping) and isinstance(new, Mapping) and "severity" not in old:
        return {**entry, "diff": {k: v for k, v in new.items() if k != "severity"}}
    return dict(entry)


def dumps(record: Mapping[str, Any]) -> str:
    """The canonical serialisation: byte-identical for identical records."""
    return json.dumps(record, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def compact(entry: Mapping[str, Any]) -> str:
    """The one-line form a verdict row's `record` column holds."""
    return json.dumps(entry, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
