"""A task's reference scripts (gold, controls, existing pipeline) in another engine's SQL.

The suite is authored in DuckDB SQL. For another engine each script is transpiled with sqlglot,
unless the task holds an override beside it: `gold.sqlite.sql` for `gold.sql`,
`controls/x.postgres.sql` for `controls/x.sql`. An override is written by hand where a
transpile is wrong or impossible (DuckDB's DISTINCT ON, `* EXCLUDE`, `UNION ALL BY NAME`,
IGNORE NULLS). Beyond sqlglot, `CREATE OR REPLACE TABLE|VIEW` (DuckDB's) becomes a DROP ... IF
EXISTS followed by a CREATE, which both other engines run. SQLite holds DuckDB's exact DECIMAL
as a binary float, so there every decimal sum, difference and cast is rounded to its scale
(`_sqlite_exact_decimals`); decimal-ness goes by name, as SQLite has no types to ask.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import sqlglot
from sqlglot import exp
from sqlglot.errors import ErrorLevel, SqlglotError

from arrivalbench.errors import ArrivalBenchError
from arrivalbench.spec import Task

AUTHORED = "duckdb"


class TranspileError(ArrivalBenchError):
    """A reference script that sqlglot cannot carry into an engine's SQL."""


def override_path(folder: Path, file: str, engine: str) -> Path:
    """Where a script's hand-written version for `engine` lives: gold.sql -> gold.sqlite.sql."""
    stem = file[: -len(".sql")] if file.endswith(".sql") else file
    return folder / f"{stem}.{engine}.sql"


def _statements(expression: exp.Expression) -> list[exp.Expression]:
    if isinstance(expression, exp.Create) and expression.args.get("replace"):
        kind = (expression.kind or "").upper()
        if kind in ("TABLE", "VIEW"):
            target = expression.this
            table = target.this if isinstance(target, exp.Schema) else target
            create = expression.copy()
            create.set("replace", False)
            drop = exp.Drop(tables=[table.copy()], kind=kind, exists=True)
            query = expression.expression
            reads_itself = query is not None and any(
                t.name.lower() == table.name.lower() for t in query.find_all(exp.Table)
            )
            if kind == "TABLE" and reads_itself:  # built from its old rows: build, then swap
                fresh = exp.to_identifier(f"__arrivalbench_new_{table.name}")
                create.this.set("this", fresh) if isinstance(target, exp.Schema) else create.set(
                    "this", exp.Table(this=fresh, db=table.args.get("db"))
                )
                rename = exp.Alter(
                    this=exp.Table(this=fresh.copy(), db=table.args.get("db")),
                    kind="TABLE",
                    actions=[exp.AlterRename(this=exp.Table(this=table.this.copy()))],
                )
                return [create, drop, rename]
            return [drop, create]
    return [expression]


def _sqlite_null_order(expression: exp.Expression) -> exp.Expression:
    """DuckDB puts NULLs last in either direction, SQLite first when ascending; SQLite refuses
    NULLS FIRST/LAST in a window's ORDER BY, so a key whose NULLs must move is preceded by
    `key IS NULL` and left to SQLite's default."""
    for order in list(expression.find_all(exp.Order)):
        keys: list[exp.Expression] = []
        for ordered in order.expressions:
            if not isinstance(ordered, exp.Ordered):
                keys.append(ordered)
                continue
            desc = bool(ordered.args.get("desc"))
            nulls_first = bool(ordered.args.get("nulls_first"))
            default_first = not desc  # SQLite: NULL is the smallest value
            fixed = ordered.copy()
            fixed.set("nulls_first", default_first)
            if nulls_first != default_first and not isinstance(ordered.this, exp.Literal):
                null = exp.Is(this=ordered.this.copy(), expression=exp.Null())
                keys.append(exp.Ordered(this=null, desc=nulls_first, nulls_first=not nulls_first))
            keys.append(fixed)
        order.set("expressions", keys)
    return expression


_SQLITE_UNITS = {"SECOND": "seconds", "MINUTE": "minutes", "HOUR": "hours", "DAY": "days"}


def _sqlite_interval(node: exp.Expression) -> exp.Expression:
    """`ts + INTERVAL '30' MINUTE` (DuckDB) as `datetime(ts, '+30 minutes')`."""
    if not isinstance(node, exp.Add | exp.Sub) or not isinstance(node.expression, exp.Interval):
        return node
    interval = node.expression
    unit = str(interval.args.get("unit") or "").upper().rstrip("S")
    amount = interval.this
    if unit not in _SQLITE_UNITS or not isinstance(amount, exp.Literal):
        return node
    sign = "-" if isinstance(node, exp.Sub) else "+"
    modifier = exp.Literal.string(f"{sign}{amount.this} {_SQLITE_UNITS[unit]}")
    return exp.Anonymous(this="datetime", expressions=[node.this.copy(), modifier])


def _sqlite_distinct_window(node: exp.Expression) -> exp.Expression:
    """count(DISTINCT x) OVER (PARTITION BY p), which SQLite refuses, as two dense ranks: the
    rank from below plus the rank from above, less one, less one more when x has a NULL."""
    if not isinstance(node, exp.Window) or node.args.get("order") or node.args.get("spec"):
        return node
    count = node.this
    distinct = count.this if isinstance(count, exp.Count) else None
    if not isinstance(distinct, exp.Distinct) or len(distinct.expressions) != 1:
        return node
    value = distinct.expressions[0]
    partition = node.args.get("partition_by") or []

    def window(function: exp.Expression, order: exp.Order | None) -> exp.Window:
        return exp.Window(
            this=function, partition_by=[p.copy() for p in partition], order=order, over="OVER"
        )

    def by(desc: bool) -> exp.Order:
        return exp.Order(
            expressions=[exp.Ordered(this=value.copy(), desc=desc, nulls_first=not desc)]
        )

    null = exp.Is(this=value.copy(), expression=exp.Null())
    has_null = exp.Max(this=exp.Cast(this=null, to=exp.DataType.build("INTEGER")))
    total = exp.Sub(
        this=exp.Sub(
            this=exp.Add(
                this=window(exp.Anonymous(this="DENSE_RANK"), by(False)),
                expression=window(exp.Anonymous(this="DENSE_RANK"), by(True)),
            ),
            expression=exp.Literal.number(1),
        ),
        expression=window(has_null, None),
    )
    return exp.Paren(this=total)


_SECONDS = {"SECOND": 1, "MINUTE": 60, "HOUR": 3600, "DAY": 86400}


def _interval_seconds(interval: exp.Interval) -> float | None:
    unit = str(interval.args.get("unit") or "").upper().rstrip("S")
    amount = interval.this
    if unit not in _SECONDS or not isinstance(amount, exp.Literal):
        return None
    try:
        return float(amount.this) * _SECONDS[unit]
    except ValueError:
        return None


_TIME_FUNCTIONS = (exp.Lag, exp.Lead, exp.Min, exp.Max, exp.FirstValue, exp.LastValue)


def _is_timestamp(node: exp.Expression) -> bool:
    """Whether an expression is a timestamp by the suite's naming (ts_*, *_at, *_start, *_end),
    directly or through lag/lead/min/max/first/last of one: SQLite has no types to ask."""
    if isinstance(node, exp.Window):
        return _is_timestamp(node.this)
    if isinstance(node, _TIME_FUNCTIONS):
        return _is_timestamp(node.this)
    if isinstance(node, exp.Column):
        name = node.name.lower()
        return name.startswith("ts") or name.endswith(("_at", "_start", "_end"))
    return False


def _is_date(node: exp.Expression) -> bool:
    """Whether an expression is a date: CAST(... AS DATE), or a column named day, *_day, *date."""
    if isinstance(node, exp.Cast):
        return node.to.is_type(exp.DataType.Type.DATE)
    if isinstance(node, exp.Window | exp.Min | exp.Max | exp.Lag | exp.Lead):
        return _is_date(node.this)
    if isinstance(node, exp.Column):
        name = node.name.lower()
        return name == "day" or name.endswith(("_day", "date"))
    return False


def _sqlite_time_arithmetic(node: exp.Expression) -> exp.Expression:
    """Timestamp differences as whole seconds (`strftime('%s', a) - strftime('%s', b)`), an interval
    compared with one as its seconds, and `range(a, b)` of literals as a UNION of rows."""
    if isinstance(node, exp.DateDiff) and str(node.args.get("unit") or "").upper() == "SECOND":
        node = exp.Sub(this=node.this.copy(), expression=node.expression.copy())
        forced = True
    else:
        forced = False
    if isinstance(node, exp.Sub) and (
        forced or (_is_timestamp(node.this) and _is_timestamp(node.expression))
    ):

        def epoch(value: exp.Expression) -> exp.Expression:  # whole seconds, exactly
            seconds = exp.Anonymous(this="strftime", expressions=[exp.Literal.string("%s"), value])
            return exp.Cast(this=seconds, to=exp.DataType.build("INTEGER"))

        return exp.Paren(
            this=exp.Sub(this=epoch(node.this.copy()), expression=epoch(node.expression.copy()))
        )
    if isinstance(node, exp.Add | exp.Sub) and _is_date(node.this):
        other = node.expression
        if _is_date(other) and isinstance(node, exp.Sub):  # days between two dates
            return exp.Paren(
                this=exp.Cast(
                    this=exp.Sub(
                        this=exp.Anonymous(this="julianday", expressions=[node.this.copy()]),
                        expression=exp.Anonymous(this="julianday", expressions=[other.copy()]),
                    ),
                    to=exp.DataType.build("INTEGER"),
                )
            )
        if not isinstance(other, exp.Interval) and not _is_date(other):  # date + n days
            sign = "-" if isinstance(node, exp.Sub) else "+"
            shift = exp.Anonymous(
                this="printf",
                expressions=[exp.Literal.string(f"{sign}%d days"), other.copy()],
            )
            return exp.Anonymous(this="date", expressions=[node.this.copy(), shift])
    parent = node.parent
    if isinstance(node, exp.Interval) and isinstance(parent, exp.Binary):
        seconds = _interval_seconds(node)
        if seconds is not None and not isinstance(parent, exp.Add | exp.Sub):
            return exp.Literal.number(seconds)
    if isinstance(node, exp.Table) and isinstance(node.this, exp.GenerateSeries):
        series = node.this
        start, end = series.args.get("start"), series.args.get("end")
        alias = node.args.get("alias")
        if (
            isinstance(start, exp.Literal)
            and isinstance(end, exp.Literal)
            and not start.is_string
            and not end.is_string
            and alias is not None
            and len(alias.columns) == 1
        ):
            last = int(end.this) - (1 if series.args.get("is_end_exclusive") else 0)
            column = alias.columns[0].name
            rows = [
                exp.select(exp.alias_(exp.Literal.number(v), column))
                for v in range(int(start.this), last + 1)
            ]
            union: exp.Expression = rows[0]
            for row in rows[1:]:
                union = exp.union(union, row, distinct=False)
            return exp.Subquery(this=union, alias=exp.TableAlias(this=alias.this.copy()))
    return node


def _sqlite_range_window(expression: exp.Expression) -> None:
    """RANGE frames over a date or timestamp with interval offsets: SQLite's RANGE needs a
    number, so the ORDER BY key is its julianday() and the offsets are days."""
    for window in list(expression.find_all(exp.Window)):
        spec = window.args.get("spec")
        order = window.args.get("order")
        if spec is None or str(spec.args.get("kind") or "").upper() != "RANGE" or order is None:
            continue
        bounds = [spec.args.get("start"), spec.args.get("end")]
        if not any(isinstance(b, exp.Interval) for b in bounds) or len(order.expressions) != 1:
            continue
        for side in ("start", "end"):
            bound = spec.args.get(side)
            if isinstance(bound, exp.Interval):
                seconds = _interval_seconds(bound)
                if seconds is None:
                    raise TranspileError("an interval RANGE offset that is not a fixed length")
                spec.set(side, exp.Literal.number(seconds / 86400))
        key = order.expressions[0]
        key.set("this", exp.Anonymous(this="julianday", expressions=[key.this.copy()]))
        key.set("nulls_first", not key.args.get("desc"))  # one key only: SQLite's NULL order


def _sqlite_arg_extremes(expression: exp.Expression) -> None:
    """arg_max/arg_min(v, key) in a grouped SELECT over one source: the source becomes a
    subquery (under the same alias, the WHERE inside it) adding each group's first `v` by
    `key` as a window column, and the aggregate reads that column back with max()."""
    for select in list(expression.find_all(exp.Select)):
        calls = [
            c
            for c in select.find_all(exp.ArgMax, exp.ArgMin)
            if c.parent_select is select and not c.find_ancestor(exp.Window, exp.Filter)
        ]  # one under FILTER (WHERE ...) would lose its filter: left for an override
        group = select.args.get("group")
        source = select.args.get("from_") or select.args.get("from")
        if not calls or group is None or source is None or select.args.get("joins"):
            continue
        table = source.this
        alias = table.alias_or_name
        keys = [k.copy() for k in group.expressions]
        inner = exp.select(exp.Star()).from_(table.copy())
        where = select.args.get("where")
        if where is not None:
            inner.set("where", where.copy())
            select.set("where", None)
        for n, call in enumerate(calls, 1):
            key = call.expression
            parts = key.expressions if isinstance(key, exp.Tuple) else [key]
            desc = isinstance(call, exp.ArgMax)
            order = []
            for part in parts:  # NULL keys last, as DuckDB skips them
                if not desc:
                    null = exp.Is(this=part.copy(), expression=exp.Null())
                    order.append(exp.Ordered(this=null, nulls_first=True))
                order.append(exp.Ordered(this=part.copy(), desc=desc, nulls_first=not desc))
            window = exp.Window(
                this=exp.FirstValue(this=call.this.copy()),
                partition_by=[k.copy() for k in keys],
                order=exp.Order(expressions=order),
                over="OVER",
            )
            name = f"__arrivalbench_arg_{n}"
            inner.select(exp.alias_(window, name), copy=False)
            call.replace(exp.Max(this=exp.column(name)))
        source.set(
            "this", exp.Subquery(this=inner, alias=exp.TableAlias(this=exp.to_identifier(alias)))
        )


def _group_by_all(expression: exp.Expression) -> None:
    """GROUP BY ALL (DuckDB's) as the list of the select's non-aggregate expressions."""
    for group in list(expression.find_all(exp.Group)):
        select = group.parent
        if group.args.get("all") and isinstance(select, exp.Select):
            keys = [
                (e.this if isinstance(e, exp.Alias) else e).copy()
                for e in select.expressions
                if not e.find(exp.AggFunc) and not isinstance(e, exp.Star)
            ]
            group.set("all", None)
            group.set("expressions", keys)


def _in_row_select(expression: exp.Expression) -> None:
    """IN (SELECT (a, b) ...): DuckDB's row of two is two columns elsewhere."""
    for select in list(expression.find_all(exp.Select)):
        only = select.expressions[0] if len(select.expressions) == 1 else None
        if isinstance(only, exp.Tuple) and isinstance(select.parent, exp.Subquery | exp.In):
            select.set("expressions", [e.copy() for e in only.expressions])


def _delivery_stars(
    expression: exp.Expression,
    columns: dict[str, list[str]],
    delivered: Callable[[str, str], exp.Expression],
) -> exp.Expression:
    """`* EXCLUDE`, INSERT ... BY NAME and a batch padded by UNION ALL BY NAME, over a delivery
    table, as explicit columns (`delivered` spells each, the evolving one included)."""
    for union in list(expression.find_all(exp.Union)):  # padding: (no rows) UNION ALL BY NAME batch
        right = union.expression
        source = right.args.get("from_") if isinstance(right, exp.Select) else None
        if (
            union.args.get("by_name")
            and not union.args.get("distinct")
            and isinstance(union.this, exp.Select)
            and isinstance(union.this.args.get("where"), exp.Where)
            and union.this.args["where"].this == exp.false()
            and source is not None
            and isinstance(source.this, exp.Table)
            and source.this.name.lower() in columns
            and [type(e) for e in right.expressions] == [exp.Star]
        ):
            known = columns[source.this.name.lower()]
            union.replace(
                exp.select(*[delivered(c, source.this.alias_or_name) for c in known]).from_(
                    source.this.copy()
                )
            )
    by_name = isinstance(expression, exp.Insert) and expression.args.get("by_name")
    for star in list(expression.find_all(exp.Star)):
        dropped = star.args.get("except_") or star.args.get("except") or []
        select = star.parent
        if not (dropped or by_name) or not isinstance(select, exp.Select):
            continue
        source = select.args.get("from_") or select.args.get("from")
        table = source.this if source is not None else None
        if select.args.get("joins") or not isinstance(table, exp.Table):
            continue
        known = columns.get(table.name.lower())
        if known is None:
            continue
        drop = {c.name.lower() for c in dropped}
        kept = [
            delivered(c, table.alias_or_name)
            for c in known
            if c.lstrip("?").partition(":")[0].lower() not in drop
        ]
        index = select.expressions.index(star)
        select.set(
            "expressions", select.expressions[:index] + kept + select.expressions[index + 1 :]
        )
    select = expression.expression if by_name else None
    if isinstance(select, exp.Select) and all(e.alias_or_name for e in select.expressions):
        names = [exp.to_identifier(e.alias_or_name) for e in select.expressions]
        target = expression.this
        expression.set("by_name", None)
        expression.set("this", exp.Schema(this=target.copy(), expressions=names))
    return expression


DUCKDB_DEFAULT_SCALE = 3
"""DuckDB's bare DECIMAL is DECIMAL(18,3); DECIMAL(p) has scale 0."""


def _type_scale(kind: exp.Expression | None) -> int | None:
    """The scale of a DECIMAL type as DuckDB reads it, or None for any other type."""
    if not isinstance(kind, exp.DataType) or not kind.is_type(exp.DataType.Type.DECIMAL):
        return None
    if not kind.expressions:
        return DUCKDB_DEFAULT_SCALE
    return int(kind.expressions[1].this.this) if len(kind.expressions) == 2 else 0


def _decimal_scale(node: exp.Expression | None, decimals: dict[str, int]) -> int | None:
    """The scale of an exact DECIMAL the expression holds in DuckDB, or None: a column by its
    name (declared DECIMAL in a source, a CREATE TABLE or an alias of a decimal value), a CAST
    to DECIMAL, or a sum, difference, COALESCE, CASE or one-column subquery of them."""
    if isinstance(node, exp.Column):
        return decimals.get(node.name.lower())
    if isinstance(node, exp.Cast):
        return _type_scale(node.to)
    if isinstance(node, exp.Round) and isinstance(node.args.get("decimals"), exp.Literal):
        return int(node.args["decimals"].this)
    if isinstance(node, exp.Paren | exp.Alias | exp.Neg | exp.Sum | exp.Window | exp.Filter):
        return _decimal_scale(node.this, decimals)
    if isinstance(node, exp.Subquery) and isinstance(node.this, exp.Select):
        projections = node.this.expressions
        return _decimal_scale(projections[0], decimals) if len(projections) == 1 else None
    if isinstance(node, exp.Add | exp.Sub | exp.Coalesce | exp.Case | exp.If):
        parts = [node.this, node.expression] if isinstance(node, exp.Binary) else []
        if isinstance(node, exp.Coalesce):
            parts = [node.this, *node.expressions]
        if isinstance(node, exp.Case):
            parts = [i.args.get("true") for i in node.args.get("ifs", [])] + [
                node.args.get("default")
            ]
        if isinstance(node, exp.If):
            parts = [node.args.get("true"), node.args.get("false")]
        scales = [
            s
            for s in (_decimal_scale(p, decimals) for p in parts if p is not None)
            if s is not None
        ]
        return max(scales) if scales else None
    return None


def decimal_names(parsed: list[exp.Expression | None], sources: dict[str, int]) -> dict[str, int]:
    """Every name that holds an exact DECIMAL in a script: the sources' DECIMAL columns, the
    DECIMAL columns its CREATE TABLEs declare, and the aliases of decimal values (to a fixpoint;
    SQLite has no types to ask, so this goes by name, as dates and timestamps do)."""
    names = dict(sources)
    for expression in parsed:
        for column in expression.find_all(exp.ColumnDef) if expression else ():
            scale = _type_scale(column.args.get("kind"))
            if scale is not None:
                names[column.name.lower()] = scale
    while True:
        found = {
            alias.alias.lower(): scale
            for expression in parsed
            if expression is not None
            for alias in expression.find_all(exp.Alias)
            if alias.alias.lower() not in names
            and (scale := _decimal_scale(alias.this, names)) is not None
        }
        if not found:
            return names
        names.update(found)


def _sqlite_exact_decimals(expression: exp.Expression, decimals: dict[str, int]) -> exp.Expression:
    """DuckDB's DECIMAL is exact; SQLite holds it as a binary float, so sums of the same amounts
    in another order differ in the last bit, break ties and miss "exactly 0". Every decimal
    CAST, SUM (aggregate or window) and sum or difference is rounded to its scale, which
    gives the float nearest the exact decimal whatever the order of addition."""

    def rounded(node: exp.Expression, scale: int) -> exp.Expression:
        return exp.Round(this=node, decimals=exp.Literal.number(scale))

    for node in reversed(list(expression.walk())):  # children before their parents
        if isinstance(node, exp.Cast):
            scale = _decimal_scale(node, decimals)
            if scale is not None and _decimal_scale(node.this, decimals) == scale:
                node.replace(node.this.copy())  # already rounded to the scale
            elif scale is not None:
                node.replace(rounded(node.this.copy(), scale))
        elif isinstance(node, exp.Sum):
            scale = _decimal_scale(node.this, decimals)
            top = node  # the whole aggregate: with its FILTER (WHERE ...) and OVER (...)
            while isinstance(top.parent, exp.Filter | exp.Window) and top.parent.this is top:
                top = top.parent
            if scale is not None:
                top.replace(rounded(top.copy(), scale))
        elif isinstance(node, exp.Add | exp.Sub) and not isinstance(node.parent, exp.Add | exp.Sub):
            scale = _decimal_scale(node, decimals)
            if scale is not None:
                node.replace(rounded(node.copy(), scale))
    return expression


def _for_sqlite(
    expression: exp.Expression, columns: dict[str, list[str]], decimals: dict[str, int]
) -> exp.Expression:
    """DuckDB forms SQLite lacks, rewritten where the meaning is certain: GROUP BY ALL, NULL
    order, interval arithmetic, `* EXCLUDE` over a delivery table, DELETE ... USING (as
    WHERE EXISTS), and the WHERE an
    `INSERT ... SELECT ... ON CONFLICT` needs so SQLite does not read ON as a join's."""
    _sqlite_range_window(expression)
    _sqlite_arg_extremes(expression)
    expression = _sqlite_exact_decimals(expression, decimals)
    expression = _sqlite_null_order(expression)
    for ordered in expression.find_all(exp.Ordered):
        if not isinstance(ordered.parent, exp.Order):  # ON CONFLICT keys: no NULL order
            ordered.set("nulls_first", not ordered.args.get("desc"))
    _group_by_all(expression)
    expression = expression.transform(_sqlite_interval)
    _in_row_select(expression)
    expression = expression.transform(_sqlite_time_arithmetic)
    expression = expression.transform(_sqlite_distinct_window)
    for any_value in list(expression.find_all(exp.AnyValue)):  # any non-NULL value: MAX is one
        outer = any_value.parent if isinstance(any_value.parent, exp.IgnoreNulls) else any_value
        outer.replace(exp.Max(this=any_value.this.copy()))
    expression = _delivery_stars(expression, columns, _delivered)
    if isinstance(expression, exp.Delete) and expression.args.get("using"):
        using = expression.args["using"]
        where = expression.args.get("where")
        probe = exp.select("1").from_(using[0].copy())
        for extra in using[1:]:
            probe = probe.join(extra.copy())
        if where is not None:
            probe = probe.where(where.this.copy())
        expression.set("using", None)
        expression.set("where", exp.Where(this=exp.Exists(this=probe)))
    if isinstance(expression, exp.Insert) and expression.args.get("conflict"):
        select = expression.expression
        if isinstance(select, exp.Select) and not select.args.get("where"):
            select.where(exp.true(), copy=False)
    return expression


MERGE_SOURCE = "__arrivalbench_merge_source"


def _sqlite_merge(merge: exp.Merge, where: str) -> list[str]:
    """DuckDB's MERGE as SQLite statements inside one SAVEPOINT (atomic, as the MERGE was).

    The source is kept once in a TEMP table with, for each row, whether it matched the target
    before the MERGE and which WHEN MATCHED clause took it then (the first whose condition
    held: an ON that matches at most one target row, as a MERGE's should); each matched clause
    then changes only its own rows, and the INSERT clauses take the rows that matched nothing,
    each excluding those an earlier INSERT clause took.
    """

    def fail(why: str) -> TranspileError:
        return TranspileError(
            f"{where}: a MERGE {why} has no SQLite form here; write the script by hand beside "
            f"it as {Path(where).name.removesuffix('.sql')}.sqlite.sql."
        )

    def sql(node: exp.Expression) -> str:
        return node.sql(dialect="sqlite", unsupported_level=ErrorLevel.RAISE)

    target = merge.this
    using = merge.args.get("using")
    on = merge.args.get("on")
    whens = merge.args.get("whens")
    if not isinstance(target, exp.Table) or using is None or on is None or whens is None:
        raise fail("without a plain target, source and ON condition")
    talias = target.alias or target.name
    table = sql(exp.table_(target.name, db=target.args.get("db")))
    salias = using.alias or (using.name if isinstance(using, exp.Table) else "")
    if not salias:
        raise fail("whose source has no name")
    source = using.copy()
    source.set("alias", None)
    cond = sql(on)

    def matches(extra: str = "") -> str:
        return f"EXISTS (SELECT 1 FROM {table} AS {talias} WHERE {cond}{extra})"

    arms: list[str] = []
    changes: list[str] = []
    inserts: list[str] = []
    unmatched_before: list[str] = []
    for when in whens.expressions:
        if when.args.get("source"):
            raise fail("with WHEN NOT MATCHED BY SOURCE")
        condition = when.args.get("condition")
        then = when.args.get("then")
        extra = f" AND ({sql(condition)})" if condition is not None else ""
        if when.args.get("matched"):
            clause = len(arms) + 1
            arms.append(f"WHEN {matches(extra)} THEN {clause}")
            mine = f"{cond} AND {salias}.__clause = {clause}"
            if isinstance(then, exp.Var) and then.name.upper() == "DELETE":
                changes.append(
                    f"DELETE FROM {table} AS {talias} WHERE EXISTS (SELECT 1 FROM "
                    f"temp.{MERGE_SOURCE} AS {salias} WHERE {mine})"
                )
            elif isinstance(then, exp.Update) and then.expressions:
                sets = ", ".join(
                    f"{sql(exp.to_identifier(e.this.name))} = {sql(e.expression)}"
                    for e in then.expressions
                )
                changes.append(
                    f"UPDATE {table} AS {talias} SET {sets} FROM temp.{MERGE_SOURCE} AS "
                    f"{salias} WHERE {mine}"
                )
            else:
                raise fail("clause other than UPDATE SET or DELETE")
        else:
            if not isinstance(then, exp.Insert) or not isinstance(then.expression, exp.Tuple):
                raise fail("clause other than INSERT ... VALUES")
            columns = (
                f" ({', '.join(sql(c) for c in then.this.expressions)})"
                if isinstance(then.this, exp.Tuple)
                else ""
            )
            values = ", ".join(sql(v) for v in then.expression.expressions)
            guard = "".join(f" AND NOT coalesce(({e}), FALSE)" for e in unmatched_before)
            inserts.append(
                f"INSERT INTO {table}{columns} SELECT {values} FROM temp.{MERGE_SOURCE} AS "
                f"{salias} WHERE NOT {salias}.__matched{extra}{guard}"
            )
            unmatched_before.append(sql(condition) if condition is not None else "TRUE")
    clause = f"CASE {' '.join(arms)} END" if arms else "NULL"
    out = [
        "SAVEPOINT arrivalbench_merge",
        f"DROP TABLE IF EXISTS temp.{MERGE_SOURCE}",
        f"CREATE TEMP TABLE {MERGE_SOURCE} AS SELECT {salias}.*, {matches()} AS __matched, "
        f"{clause} AS __clause FROM {sql(source)} AS {salias}",
        *changes,
        *inserts,
    ]
    out += [f"DROP TABLE temp.{MERGE_SOURCE}", "RELEASE arrivalbench_merge"]
    return out


def _name_qualified_projections(expression: exp.Expression) -> exp.Expression:
    """sqlglot rewrites QUALIFY (and DISTINCT ON) as a subquery and selects its columns by name,
    so an unnamed projection such as `CAST(ts_event AS DATE)` would be lost: name it."""
    for select in list(expression.find_all(exp.Select)):
        distinct = select.args.get("distinct")
        if not (select.args.get("qualify") or (distinct is not None and distinct.args.get("on"))):
            continue
        select.set(
            "expressions",
            [
                e
                if isinstance(e, exp.Column | exp.Star | exp.Alias)
                else exp.alias_(e, f"_c{i}", copy=False)
                for i, e in enumerate(select.expressions, 1)
            ],
        )
    return expression


def _tables_made(parsed: list[exp.Expression | None]) -> dict[str, tuple[list[str], list[str]]]:
    """The script's own CREATE TABLE column lists: name -> (columns, primary key)."""
    made: dict[str, tuple[list[str], list[str]]] = {}
    for expression in parsed:
        if not isinstance(expression, exp.Create) or not isinstance(expression.this, exp.Schema):
            continue
        schema = expression.this
        columns = [d.name for d in schema.expressions if isinstance(d, exp.ColumnDef)]
        key = [
            d.name
            for d in schema.expressions
            if isinstance(d, exp.ColumnDef) and d.find(exp.PrimaryKeyColumnConstraint)
        ]
        for constraint in schema.expressions:
            if isinstance(constraint, exp.PrimaryKey):
                key = [c.name for c in constraint.expressions]
        made[schema.this.name.lower()] = (columns, key)
    return made


def _for_postgres(
    expression: exp.Expression,
    where: str,
    made: dict[str, tuple[list[str], list[str]]] | None = None,
    columns: dict[str, list[str]] | None = None,
) -> exp.Expression:
    """DuckDB forms PostgreSQL lacks: INSERT OR IGNORE (ON CONFLICT DO NOTHING), INSERT OR
    REPLACE into a table the script made with a primary key (ON CONFLICT (key) DO UPDATE of
    every other column), any_value (PostgreSQL 16's: max here), arg_max/arg_min and
    count(DISTINCT) OVER as on SQLite, and an alias for every subquery in FROM (PostgreSQL 15
    requires one)."""
    for any_value in list(expression.find_all(exp.AnyValue)):
        outer = any_value.parent if isinstance(any_value.parent, exp.IgnoreNulls) else any_value
        outer.replace(exp.Max(this=any_value.this.copy()))
    _group_by_all(expression)
    _in_row_select(expression)
    _sqlite_arg_extremes(expression)  # PostgreSQL has no arg_max either
    expression = expression.transform(_sqlite_distinct_window)  # nor count(DISTINCT) OVER
    for n, subquery in enumerate(list(expression.find_all(exp.Subquery)), 1):
        if not subquery.alias and isinstance(subquery.parent, exp.From | exp.Join):
            subquery.set("alias", exp.TableAlias(this=exp.to_identifier(f"_subquery_{n}")))
    expression = _delivery_stars(expression, columns or {}, _delivered_postgres)
    if isinstance(expression, exp.Insert):
        alternative = str(expression.args.get("alternative") or "").upper()
        target = expression.this
        table = target.this if isinstance(target, exp.Schema) else target
        columns, key = (made or {}).get(table.name.lower(), ([], []))
        if isinstance(target, exp.Schema):
            columns = [c.name for c in target.expressions]
        if alternative == "IGNORE":
            expression.set("alternative", None)
            expression.set("conflict", exp.OnConflict(action=exp.var("DO NOTHING")))
        elif alternative == "REPLACE" and key and columns:
            updates = [
                exp.EQ(this=exp.column(c), expression=exp.column(c, table="excluded"))
                for c in columns
                if c not in key
            ]
            expression.set("alternative", None)
            expression.set(
                "conflict",
                exp.OnConflict(
                    conflict_keys=[exp.to_identifier(k) for k in key],
                    action=exp.var("DO UPDATE"),
                    expressions=updates,
                ),
            )
        elif alternative:
            raise TranspileError(
                f"{where}: INSERT OR {alternative} has no PostgreSQL form without the conflict "
                f"columns; write the script by hand beside it as "
                f"{Path(where).name.removesuffix('.sql')}.postgres.sql."
            )
    return expression


def _delivered(column: str, table: str = "") -> exp.Expression:
    """A delivery column by name; `?name` marks the evolving column, absent from some
    deliveries: SQLite reads a double-quoted name that is no column as that text, so
    NULLIF("page", 'page') is the column when delivered and NULL when not."""
    if not column.startswith("?"):
        return exp.column(column)
    name = column[1:].partition(":")[0]
    value = exp.Nullif(this=exp.column(name, quoted=True), expression=exp.Literal.string(name))
    return exp.alias_(value, name)


def _delivered_postgres(column: str, table: str = "") -> exp.Expression:
    """A delivery column by name; the evolving one (`?name:TYPE`) read from the row as JSON,
    which has the key only when the delivery has the column: NULL otherwise."""
    if not column.startswith("?"):
        return exp.column(column)
    name, _, kind = column[1:].partition(":")
    row = exp.Anonymous(this="to_jsonb", expressions=[exp.column(table)])
    value = exp.JSONExtractScalar(this=row, expression=exp.Literal.string(name))
    return exp.alias_(exp.Cast(this=value, to=exp.DataType.build(kind or "TEXT")), name)


def delivery_columns(task: Task) -> dict[str, list[str]]:
    """Each delivery table's columns, as the harness loads them (for `* EXCLUDE` and INSERT
    ... BY NAME); the evolving column, which some deliveries lack, is marked `?name`."""
    return {
        f"{source.name}_batch".lower(): [
            f"?{c}:{t}" if c == source.evolving_column else c for c, t in source.columns.items()
        ]
        + ["_arrival_seq", "_batch_id"]
        for source in task.spec.sources
    }


def source_decimals(task: Task) -> dict[str, int]:
    """The sources' DECIMAL(p, s) columns with their scales, by lower-case name."""
    out = {}
    for source in task.spec.sources:
        for column, kind in source.columns.items():
            scale = _type_scale(exp.DataType.build(kind, dialect=AUTHORED))
            if scale is not None:
                out[column.lower()] = scale
    return out


def transpile(
    sql: str,
    engine: str,
    where: str = "script",
    columns: dict[str, list[str]] | None = None,
    decimals: dict[str, int] | None = None,
) -> str:
    """`sql` (DuckDB) in `engine`'s SQL, one statement a line group, each ending with ';'.
    `columns` are the delivery tables' columns and `decimals` the sources' DECIMAL columns with
    their scales (`delivery_columns`, `source_decimals`)."""
    if engine == AUTHORED:
        return sql
    try:
        parsed = sqlglot.parse(sql, read=AUTHORED)
        parsed = [None if e is None else _name_qualified_projections(e) for e in parsed]
        if engine == "sqlite":
            names = decimal_names(parsed, decimals or {})
            parsed = [None if e is None else _for_sqlite(e, columns or {}, names) for e in parsed]
        if engine == "postgres":
            made = _tables_made(parsed)
            parsed = [None if e is None else _for_postgres(e, where, made, columns) for e in parsed]
        out = []
        in_transaction = False  # the script's own BEGIN ... COMMIT, read in order
        for expression in parsed:
            if expression is None:
                continue
            if isinstance(expression, exp.Transaction):
                in_transaction = True
            elif isinstance(expression, exp.Commit | exp.Rollback):
                in_transaction = False
            if engine == "sqlite" and isinstance(expression, exp.Merge):
                out += _sqlite_merge(expression, where)
                continue
            parts = [
                s.sql(dialect=engine, pretty=True, unsupported_level=ErrorLevel.RAISE)
                for s in _statements(expression)
            ]
            if engine == "sqlite" and len(parts) > 1:  # atomic, as DuckDB's one statement was
                parts = ["SAVEPOINT arrivalbench_replace", *parts, "RELEASE arrivalbench_replace"]
            elif len(parts) > 1 and not in_transaction:  # PostgreSQL: a SAVEPOINT needs a BEGIN
                parts = ["BEGIN", *parts, "COMMIT"]
            out += parts
    except SqlglotError as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TranspileError(
            f"{where}: does not transpile from DuckDB to {engine} SQL ({first}); write it by "
            f"hand beside it as {Path(where).name.removesuffix('.sql')}.{engine}.sql."
        ) from None
    return "".join(statement + ";\n" for statement in out)


def orphan_overrides(task: Task) -> list[str]:
    """The task's engine override files with no script beside them to override (left behind when
    a control was renamed or dropped): never read, and so never checked by any gate."""
    from arrivalbench.engines import ENGINES

    scripts = {"gold.sql", "existing.sql", *task.controls}
    found = []
    for engine in ENGINES:
        if engine == AUTHORED:
            continue
        for path in sorted(task.folder.rglob(f"*.{engine}.sql")):
            relative = path.relative_to(task.folder).as_posix()
            if relative.removesuffix(f".{engine}.sql") + ".sql" not in scripts:
                found.append(relative)
    return found


def script_for(task: Task, file: str, text: str, engine: str) -> str:
    """The task's script `file` (gold.sql, controls/x.sql, existing.sql) for `engine`: the
    override beside it when there is one, else `text` transpiled."""
    if engine == AUTHORED:
        return text
    override = override_path(task.folder, file, engine)
    if override.is_file():
        return override.read_text(encoding="utf-8")
    return transpile(
        text, engine, str(task.folder / file), delivery_columns(task), source_decimals(task)
    )


def engine_task(task: Task, engine: str) -> Task:
    """The task with its gold, controls and existing pipeline in `engine`'s SQL (the oracle
    stays DuckDB's: it is the one reference computation)."""
    if engine == AUTHORED:
        return task
    import dataclasses

    controls = {f: script_for(task, f, text, engine) for f, text in task.controls.items()}
    existing = (
        None
        if task.existing_sql is None
        else script_for(task, "existing.sql", task.existing_sql, engine)
    )
    return dataclasses.replace(
        task,
        gold_sql=script_for(task, "gold.sql", task.gold_sql, engine),
        controls=controls,
        existing_sql=existing,
    )
