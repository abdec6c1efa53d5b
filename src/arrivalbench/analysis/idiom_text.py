"""What idioms.py reads a script's text with: statements split outside strings and comments,
sqlglot's parse in the suite's dialect, transaction control and table writes by their leading
words, and the patterns a feature is found by in text sqlglot cannot parse.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.tokens import TokenType

from arrivalbench.engines import AUTHORED

if TYPE_CHECKING:
    from arrivalbench.analysis.idioms import _Flow

DIALECT = AUTHORED.dialect


@dataclass
class _Write:
    """One statement as the sequence features see it."""

    kind: str  # create, insert, delete, truncate, merge, drop, begin, commit, rollback
    table: str | None = None
    rows: _Flow | None = None  # what the written rows read (CREATE ... AS, INSERT ... SELECT)
    rebuild: bool = False  # CREATE OR REPLACE (not IF NOT EXISTS)
    filtered: bool = False  # DELETE with WHERE or USING
    alternative: str | None = None  # INSERT OR REPLACE / IGNORE


# -- splitting and parsing ------------------------------------------------------------------------


def _statements(script: str) -> list[str]:
    """The script's statements, split on semicolons outside strings and comments."""
    try:
        tokens = Dialect.get_or_raise(DIALECT).tokenize(script)
    except Exception:  # an unterminated string or comment: split naively, parse what parses
        return [part for part in script.split(";") if part.strip()]
    chunks, start, end = [], None, 0
    for token in tokens:
        if token.token_type == TokenType.SEMICOLON:
            if start is not None:
                chunks.append(script[start : end + 1])
            start = None
            continue
        start = token.start if start is None else start
        end = token.end
    if start is not None:
        chunks.append(script[start : end + 1])
    return chunks


@contextmanager
def _quiet() -> Iterator[None]:
    """sqlglot logs a warning for each statement it falls back on; we report those as parsed=False."""
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _parse(text: str) -> exp.Expr | None:
    try:
        with _quiet():
            trees = [t for t in sqlglot.parse(text, read=DIALECT) if t is not None]
    except Exception:  # generated text can break the parser in more ways than ParseError
        return None
    return trees[0] if len(trees) == 1 else None


def _control(text: str) -> str | None:
    """Transaction control by its leading words (sqlglot reads START TRANSACTION as an alias)."""
    words = _strip_comments(text).split(None, 1)
    first = words[0].upper() if words else ""
    rest = words[1].upper().strip() if len(words) > 1 else ""
    if first == "BEGIN" or (first == "START" and rest.startswith("TRANSACTION")):
        return "begin"
    if first in ("COMMIT", "END") and rest in ("", "TRANSACTION", "WORK"):
        return "commit"
    if first in ("ROLLBACK", "ABORT"):
        return "rollback"
    return None


_NAME = r'(?:"?\w+"?\.)*"?\w+"?'
_PATTERNS = {
    "key_constraint": re.compile(
        r"\bPRIMARY\s+KEY\b|\bCREATE\s+UNIQUE\s+INDEX\b|\bUNIQUE\s*(?:\(|,|\)|$)", re.I
    ),
    "merge_upsert": re.compile(
        r"\bMERGE\s+INTO\b|\bON\s+CONFLICT\b|\bINSERT\s+OR\s+(?:REPLACE|IGNORE)\b", re.I
    ),
    "window_functions": re.compile(r"\bOVER\s*\(|\bOVER\s+[a-z_]\w*", re.I),
}
_DISTINCT_ON = re.compile(r"\bDISTINCT\s+ON\s*\(", re.I)
_QUALIFY_FIRST = re.compile(
    r"\bQUALIFY\s+ROW_NUMBER\s*\(\s*\)\s*OVER\s*\(\s*PARTITION\s+BY\b[^;]*?\)\s*(?:=\s*1|<=\s*1|<\s*2)\b",
    re.I | re.S,
)
_ANTI = re.compile(r"\bNOT\s+EXISTS\b|\bNOT\s+IN\s*\(\s*SELECT\b|\bANTI\s+JOIN\b|\bEXCEPT\b", re.I)
_READS = re.compile(rf"\b(?:FROM|JOIN)\s+({_NAME})\b(?!\s*\()", re.I)
_WRITES = {
    "create": r"CREATE\s+(?P<replace>OR\s+REPLACE\s+)?(?:TEMP\w*\s+)?TABLE\s+(?P<exists>IF\s+NOT\s+EXISTS\s+)?",
    "insert": r"INSERT\s+(?:OR\s+(?P<alternative>REPLACE|IGNORE)\s+)?INTO\s+",
    "delete": r"DELETE\s+FROM\s+",
    "truncate": r"TRUNCATE\s+(?:TABLE\s+)?",
    "drop": r"DROP\s+TABLE\s+(?:IF\s+EXISTS\s+)?",
}
_WRITE = re.compile(
    "^(?:" + "|".join(f"(?P<{k}>{v})" for k, v in _WRITES.items()) + f")(?P<table>{_NAME})", re.I
)


def _bare(name: str) -> str:
    """`main."Sales_Batch"` -> `sales_batch`: DuckDB names are case-insensitive, quoted or not."""
    return name.replace('"', "").split(".")[-1].lower()


def _strip_comments(text: str) -> str:
    return re.sub(r"--[^\n]*|/\*.*?\*/", " ", text, flags=re.S).strip()


def _scan_write(text: str) -> _Write | None:
    match = _WRITE.match(text)
    if match is None:
        return None
    kind = next(k for k in _WRITES if match.group(k))
    rest = text[match.end() :]
    alternative = match.group("alternative")
    return _Write(
        kind,
        _bare(match.group("table")),
        rebuild=bool(match.group("replace")) and not match.group("exists"),
        filtered=kind == "delete" and bool(re.search(r"\b(?:WHERE|USING)\b", rest, re.I)),
        alternative=alternative.upper() if alternative else None,
    )
