"""Names for the unnamed projections of a select with QUALIFY or DISTINCT ON."""

from __future__ import annotations

from sqlglot import exp


def name_projections(expression: exp.Expression) -> exp.Expression:
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
