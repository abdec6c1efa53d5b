"""Take the script out of a model's reply.

The rule, in order:
1. Fenced blocks. A block whose info string names SQL (`sql`, `duckdb`, `postgresql`, `sqlite`,
   any case) is a SQL block; an unlabelled block counts as SQL when its text reads as SQL
   (rule 3). With several SQL blocks the LAST one is the script: a reply that shows a fragment
   and then the whole script puts the whole script last, and the system prompt asks for one
   complete block. Blocks labelled with another language are never taken.
2. An opening fence that is never closed (a reply cut off at the length cap) yields the text
   after it, when that text reads as SQL.
3. No fence: the whole reply is the script when, after leading comments, it starts with a SQL
   keyword (CREATE, INSERT, WITH, BEGIN, ...). Leading `--` and `/* */` comments are kept.
4. Otherwise the reply is prose: no script, recorded as "no_code" (an empty reply as "empty").
A block holding only comments and semicolons is not a script (it has no statement to run).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

SQL_LABELS = {"sql", "duckdb", "postgresql", "postgres", "sqlite", "psql", "pgsql", "mysql", "tsql"}
SQL_START = re.compile(
    r"^(?:create|insert|with|begin|start|delete|update|merge|drop|alter|select|truncate|set|pragma|"
    r"commit|replace|upsert|checkpoint|from)\b",
    re.IGNORECASE,
)
_FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^\s`]*)[^\n]*$", re.MULTILINE)
_LEADING_COMMENTS = re.compile(r"\A(?:\s+|--[^\n]*(?:\n|\Z)|/\*.*?\*/)*", re.DOTALL)


@dataclass(frozen=True)
class Parsed:
    script: str | None
    rule: str  # "fenced", "fenced_last_of_N", "unclosed_fence", "bare", "no_code", "empty"

    @property
    def ok(self) -> bool:
        return self.script is not None


def has_code(text: str) -> bool:
    """Anything but whitespace, comments and semicolons: a block of comments alone is not a script."""
    return bool(_LEADING_COMMENTS.sub("", text.replace(";", " ")).strip())


def reads_as_sql(text: str) -> bool:
    body = text[_LEADING_COMMENTS.match(text).end() :]  # type: ignore[union-attr]
    return bool(SQL_START.match(body))


def _blocks(reply: str) -> tuple[list[tuple[str, str]], str | None]:
    """(label, body) of every closed fenced block, and the body after an unclosed opening fence."""
    blocks: list[tuple[str, str]] = []
    position = 0
    while True:
        opening = _FENCE.search(reply, position)
        if opening is None:
            return blocks, None
        fence, label = opening.group(1), opening.group(2).lower()
        start = opening.end() + 1
        closing = re.compile(rf"^[ \t]*{re.escape(fence[0])}{{{len(fence)},}}[ \t]*$", re.MULTILINE)
        end = closing.search(reply, start)
        if end is None:
            return blocks, f"{label}\0{reply[start:]}"
        blocks.append((label, reply[start : end.start()]))
        position = end.end()


def parse_response(reply: str | None) -> Parsed:
    """The script in a reply, and which rule found it."""
    if reply is None or not reply.strip():
        return Parsed(None, "empty")
    blocks, unclosed = _blocks(reply)
    sql = [
        body for label, body in blocks if label in SQL_LABELS or (not label and reads_as_sql(body))
    ]
    sql = [body for body in sql if has_code(body)]
    if sql:
        rule = "fenced" if len(sql) == 1 else f"fenced_last_of_{len(sql)}"
        return Parsed(_clean(sql[-1]), rule)
    if unclosed is not None:
        label, body = unclosed.split("\0", 1)
        if (label in SQL_LABELS or not label) and reads_as_sql(body) and has_code(body):
            return Parsed(_clean(body), "unclosed_fence")
    if not blocks and unclosed is None and reads_as_sql(reply):
        return Parsed(_clean(reply), "bare")
    return Parsed(None, "no_code")


def _clean(script: str) -> str:
    return script.strip("\n").rstrip() + "\n"
