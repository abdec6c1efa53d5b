"""Each rewrite rule alone, on fixture files named after it (sqlglot's optimizer-fixture habit).

`tests/fixtures/dialects/<rule>/<case>.sql` is DuckDB SQL; `<case>.<engine>.sql` beside it is
what the rule alone makes of each statement for every engine whose rule tuple holds it, printed
in that engine's SQL one statement a line (`<case>.all.sql` when every such engine gets the
same bytes). The whole transpile (rules in order, overrides) is tested on the suite's own
scripts in test_dialects.py and the engine tests.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlglot
from sqlglot.errors import ErrorLevel

from arrivalbench.dialects import AUTHORED, DIALECTS, Context
from arrivalbench.dialects.decimals import decimal_names
from arrivalbench.dialects.merge import merge
from arrivalbench.dialects.name_projections import name_projections
from arrivalbench.dialects.replace import replace_statements
from arrivalbench.dialects.upsert import tables_made
from arrivalbench.engines import engine_info

FIXTURES = Path(__file__).parent / "fixtures" / "dialects"
COLUMNS = {
    "orders_batch": ["customer", "region", "amount", "?status:VARCHAR", "_arrival_seq", "_batch_id"]
}
"""The delivery tables the fixtures read; `status` is the evolving column."""
SOURCE_DECIMALS = {"amount": 2}
SHARED = "all"
"""The expected file's engine part when every engine that runs the rule gets the same bytes."""
STATEMENT_RULES = {"name_projections", "replace", "merge"}
"""Rules the transpiler applies to every statement outside an engine's tuple."""


def _engines_running(rule: str) -> list[str]:
    if rule in ("name_projections", "replace"):
        return sorted(DIALECTS)
    if rule == "merge":
        return sorted(e for e, d in DIALECTS.items() if d.merge is merge)
    return sorted(e for e, d in DIALECTS.items() if rule in {r.__name__ for r in d.rules})


def _apply(rule: str, sql: str, engine: str) -> str:
    """What `rule` alone makes of each statement of `sql` for `engine`, one per line group."""
    parsed = [name_projections(e) for e in sqlglot.parse(sql, read=AUTHORED) if e is not None]
    dialect = DIALECTS[engine]
    context = Context(
        where="fixture.sql",
        columns=COLUMNS,
        decimals=decimal_names(parsed, SOURCE_DECIMALS),
        made=tables_made(parsed),
        delivered=dialect.delivered,
    )
    rules = {r.__name__: r for r in dialect.rules}
    out: list[str] = []
    for expression in parsed:
        if rule == "merge" and isinstance(expression, sqlglot.exp.Merge):
            out += merge(expression, context.where)
            continue
        if rule == "replace":
            trees = replace_statements(expression)
        elif rule in rules:
            trees = [rules[rule](expression, context)]
        else:
            trees = [expression]
        printed = engine_info(engine).dialect
        out += [t.sql(dialect=printed, unsupported_level=ErrorLevel.RAISE) for t in trees]
    return "".join(s + ";\n" for s in out)


CASES = [
    pytest.param(path, engine, id=f"{path.parent.name}/{path.stem}/{engine}")
    for path in sorted(FIXTURES.glob("*/*.sql"))
    if path.stem.count(".") == 0
    for engine in _engines_running(path.parent.name)
]


@pytest.mark.parametrize(("source", "engine"), CASES)
def test_rule_makes_the_expected_sql(source: Path, engine: str):
    expected = source.with_name(f"{source.stem}.{engine}.sql")
    if not expected.is_file():
        expected = source.with_name(f"{source.stem}.{SHARED}.sql")
    assert expected.is_file(), f"{expected} is missing"
    assert _apply(source.parent.name, source.read_text(), engine) == expected.read_text()


def test_every_rule_of_every_engine_has_fixtures():
    rules = {r.__name__ for d in DIALECTS.values() for r in d.rules} | STATEMENT_RULES
    folders = {p.name for p in FIXTURES.iterdir() if any(p.glob("*.sql"))}
    assert rules <= folders, sorted(rules - folders)


def test_no_expected_file_is_left_without_its_engine():
    """An expected output for an engine that does not run the rule would never be read."""
    for path in FIXTURES.glob("*/*.*.sql"):
        case, engine = path.stem.split(".")
        assert (path.parent / f"{case}.sql").is_file(), path
        assert engine == SHARED or engine in _engines_running(path.parent.name), path
