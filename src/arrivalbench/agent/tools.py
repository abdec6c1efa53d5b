"""The agent scaffold's tools: `query`, `test` and `submit`, each a job for the sandbox worker.

`query` runs one read-only statement against a database holding the visible snapshot only: a
fresh instance per call, loaded with exactly the `<source>_batch` tables the snapshot test
delivers (visible log, one batch, arrival metadata), never the hidden log, the oracle or a
schedule. Statements other than SELECT, WITH, DESCRIBE and SUMMARIZE are refused, with the
reason, before anything runs (the engine's own parser and tokenizer decide, never a regex);
the engine's screen and limits apply as to any script. The result comes back typed (column
names and types) and capped (`QUERY_ROWS` rows, `QUERY_BYTES` bytes of text). `test` is the
repair loop's snapshot check verbatim, and its feedback is the loop's own text. A failing call
(bad SQL, a timeout, memory) is a result the agent reads, never a harness error.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import pyarrow as pa

from arrivalbench.agent.loop import GraderPool
from arrivalbench.agent.models import ToolSpec
from arrivalbench.agent.prompts import diff_feedback, error_feedback
from arrivalbench.engines import DEFAULT_ENGINE, Database, Engine, Limits, Statement
from arrivalbench.engines.duckdb import leading_keywords
from arrivalbench.logs import log_from_seed
from arrivalbench.replay import (
    RESULT_TABLE,
    Heartbeat,
    ReplayResult,
    RunError,
    delivery_tables,
    watchdog,
)
from arrivalbench.schedules import Schedule
from arrivalbench.spec import Task

QUERY_ROWS = 50
"""Rows of a query result the agent sees; the rest are counted, not shown."""
QUERY_BYTES = 8_192
"""UTF-8 bytes of a rendered query result; a longer one is cut at a row boundary."""
READ_BYTES = 4 << 20
"""Bytes of result the worker reads back at most before rendering (a wide row is the script's to make)."""
READ_ONLY = ("SELECT", "WITH", "DESCRIBE", "SUMMARIZE", "FROM")
"""Leading keywords a query may have (FROM is DuckDB's SELECT without a select list)."""
READ_ONLY_KINDS = frozenset({"SELECT", "WITH"})
"""Statement kinds, as the engine's parser names them, that a query may be."""

TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec(
        name="query",
        description=(
            "Run one read-only SQL statement (SELECT, WITH, DESCRIBE or SUMMARIZE) against a "
            "database holding the test's input tables, and see the typed result (at most "
            f"{QUERY_ROWS} rows)."
        ),
        parameters={"sql": "The one statement to run."},
    ),
    ToolSpec(
        name="test",
        description=(
            "Run a complete pipeline script through the test described in the task and see its "
            "result: the engine's error, or how the target table differs from the expected one."
        ),
        parameters={"script": "The whole SQL script."},
    ),
    ToolSpec(
        name="submit",
        description="Submit the final pipeline script. This ends your work on the task.",
        parameters={"script": "The whole SQL script."},
    ),
)
TOOL_NAMES = tuple(t.name for t in TOOLS)


def read_only_refusal(statements: list[Statement]) -> str | None:
    """Why a parsed query may not run, or None: exactly one statement, read-only by the engine's
    parser (its statement kind) and tokenizer (its first keyword)."""
    if len(statements) != 1:
        return f"send exactly one statement (found {len(statements)})"
    statement = statements[0]
    words = leading_keywords(statement.text, 1)
    first = words[0] if words else (statement.text.split(None, 1) or ["?"])[0].upper()
    if first not in READ_ONLY or statement.kind.upper() not in READ_ONLY_KINDS:
        return (
            f"only SELECT, WITH, DESCRIBE or SUMMARIZE statements may run here (found {first}); "
            "the database is read-only"
        )
    return None


@dataclass(frozen=True)
class QueryJob:
    """One read-only query over the snapshot's delivery, in a fresh database of the worker."""

    task: Task
    schedule: Schedule
    script: str
    limits: Limits
    engine: str = DEFAULT_ENGINE
    uses_database: ClassVar[bool] = True

    def run(
        self,
        engine: Engine,
        statements: list[Statement],
        heartbeat: Heartbeat,
        database: Database | None = None,
    ) -> ReplayResult:
        assert database is not None
        refused = read_only_refusal(statements)
        if refused:
            return ReplayResult(None, RunError("sandbox_refused", 1, None, refused), 0.0, 0)
        log = log_from_seed(self.task, self.schedule.log_kind, self.schedule.log_seed)
        delivery = self.schedule.deliveries[0]
        session = database.session()
        try:
            for name, table in delivery_tables(log, delivery, 1).items():
                session.load_batch(f"{name}_batch", table)
            heartbeat(delivery.batch_id, 1)
            sql = statements[0].text
            if leading_keywords(sql, 1)[:1] in (["DESCRIBE"], ["SUMMARIZE"]):
                sql = f"SELECT * FROM ({sql})"
            wrapped = (
                f'CREATE TEMP TABLE "{RESULT_TABLE}" AS SELECT * FROM ({sql}) AS q '
                f"LIMIT {QUERY_ROWS + 1}"
            )
            deadline = time.monotonic() + min(
                self.limits.statement_timeout, self.limits.replay_timeout
            )
            try:
                with watchdog().armed(session, deadline):
                    session.execute(wrapped)
                table = session.read_table(RESULT_TABLE, READ_BYTES)
            except engine.errors as exc:
                error_class = engine.classify(exc)
                message = (
                    "the query ran out of time and was interrupted"
                    if error_class == "timeout"
                    else str(exc)
                )
                return ReplayResult(None, RunError(error_class, 1, 1, message), 0.0, 1)
            if table is None:
                message = f"the result holds more than {READ_BYTES:,} bytes; select fewer columns"
                return ReplayResult(None, RunError("result_too_large", 1, 1, message), 0.0, 1)
            return ReplayResult(table, None, 0.0, 1)
        finally:
            session.close()


def _cell(value: Any) -> str:
    if value is None:
        return "NULL"
    text = str(value)
    return text.replace("|", "\\|").replace("\n", "\\n")


def render_result(table: pa.Table) -> str:
    """A query result as the agent reads it: typed header, at most QUERY_ROWS rows, QUERY_BYTES bytes."""
    header = "| " + " | ".join(f"{f.name} ({f.type})" for f in table.schema) + " |"
    lines = [header, "|" + " --- |" * table.num_columns]
    size = sum(len(line.encode()) + 1 for line in lines)
    shown = 0
    for row in table.slice(0, QUERY_ROWS).to_pylist():
        line = "| " + " | ".join(_cell(v) for v in row.values()) + " |"
        if size + len(line.encode()) + 1 > QUERY_BYTES:
            break
        lines.append(line)
        size += len(line.encode()) + 1
        shown += 1
    more = table.num_rows > QUERY_ROWS
    if more or shown < min(table.num_rows, QUERY_ROWS):
        total = f"more than {QUERY_ROWS}" if more else str(table.num_rows)
        lines.append(f"({shown} of {total} rows shown)")
    else:
        lines.append(f"({shown} row{'s' if shown != 1 else ''})")
    return "\n".join(lines)


def query_error(error: RunError) -> str:
    return f"The query failed ({error.error_class}): {error.message}"


def test_feedback(entry: dict[str, Any], target: str) -> tuple[str, str]:
    """(what the agent reads, what the leak scan reads): the loop's own feedback texts, the
    engine's message exempt from the scan as in the loop."""
    if entry["verdict"] == "PASS":
        text = "The test passed: the target table equals the expected one."
        return text, text
    if entry["verdict"] == "ERROR":
        return error_feedback(entry), error_feedback({**entry, "message": ""})
    feedback = diff_feedback(entry, target)
    return feedback, feedback


def query_result(result: ReplayResult) -> tuple[str, str, str]:
    """(outcome, what the agent reads, what the leak scan reads) of a query job's result. The
    engine's message is the agent's own error, exempt from the scan as the loop's is; rows are
    data the scan reads."""
    if result.error is not None:
        if result.error.error_class == "sandbox_refused":
            return "refused", f"Refused: {result.error.message}.", "Refused: ."
        return (
            "query_error",
            query_error(result.error),
            query_error(replace(result.error, message="")),
        )
    assert result.target is not None
    rendered = render_result(result.target)
    return "rows", rendered, rendered


class ToolPool(GraderPool):
    """The grader pool with the agent's query tool: each query a job on a pooled grader's worker."""

    def query(self, task: Task, sql: str) -> tuple[str, str, str]:
        """One read-only query over the snapshot's delivery (blocking: call it off the event loop)."""
        with self._grader() as grader:
            schedule, _ = grader.schedule(task, "snapshot")
            job = QueryJob(task, schedule, sql, self.limits, self.engine)
            return query_result(grader.run_job(job))
