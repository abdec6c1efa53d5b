"""Static SQL idioms of one pipeline script, among them the within-batch guard.

`idioms` reads one script with sqlglot (DuckDB dialect), statement by statement, and reports which
of a fixed set of features it uses. Features are syntactic: they say what the script wrote, not
whether it is correct, and no script is executed.

The guard rule. A script has a *within-batch guard* when it declares a key (PRIMARY KEY / UNIQUE),
deduplicates inside the arriving batch, or writes through an upsert (MERGE, ON CONFLICT, INSERT OR
REPLACE / IGNORE). Duplicate delivery is the hazard that tells these apart: when one batch carries
an event twice, neither copy is in stored history yet, so an anti-join against history alone
lets both land and the table is silently wrong, while deduplicating the batch absorbs the copy
and a key that the copy violates makes the run crash instead. The rule is deliberately broad: a
key on an aggregate target that duplicates never reach, or an upsert that adds the copy's amount
(ON CONFLICT DO UPDATE SET n = n + excluded.n), still counts. Such false guards put silently
failing cells in the guarded group, which can only blur the split (guards.py, over a graded run),
never create it.

Scope of "the batch". The arriving rows are `<source>_batch` for each given source (any table
named `*_batch` when none are given), plus what is derived from them within one run: CTEs, views
and temporary tables over the batch, and tables rebuilt from the batch alone. A table that also
reads itself (`CREATE OR REPLACE TABLE h AS SELECT * FROM h UNION ALL ... FROM x_batch`) is
history, not batch. Deduplication applied only when reading history back (append raw, then
DISTINCT ON over the whole history) is therefore not `batch_dedup`.

Deduplication counts only where rows flow into a result (FROM, JOIN, CTEs, set operations), not
in a WHERE or IN subquery. DISTINCT ON and a first ROW_NUMBER count with any key. Set semantics
(DISTINCT, UNION, EXCEPT, GROUP BY) count only when the rows keep `event_id`, the key every
source carries, and not `_arrival_seq`, which differs between copies (a bare `*` over the batch
keeps it): so `SELECT DISTINCT store_id, day FROM sales_batch`, which lists the days to recompute,
is not mistaken for a guard. GROUP BY counts only when every aggregate ignores duplicates (min,
max, arg_max, bool_or, any_value, COUNT(DISTINCT ...), ...).

Unparseable statements. A statement sqlglot cannot parse (or parses only as an opaque command)
sets `parsed=False`; the other statements are still read from their trees, and that one is
scanned with keyword patterns that report a feature only on an unambiguous match: key
declarations, upserts and window functions; DISTINCT ON or QUALIFY ROW_NUMBER() ... = 1 (also
batch_dedup when the statement reads a batch table); NOT EXISTS, NOT IN (SELECT, ANTI JOIN or
EXCEPT in a statement that reads a batch table; and the leading CREATE [OR REPLACE] TABLE,
INSERT, DELETE, TRUNCATE or DROP that the sequence features need, with the tables named after
FROM and JOIN as what it reads. Transaction control is always recognised by its leading words.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields

from sqlglot import exp

from arrivalbench.analysis.idiom_text import (
    _ANTI,
    _DISTINCT_ON,
    _PATTERNS,
    _QUALIFY_FIRST,
    _READS,
    _bare,
    _control,
    _parse,
    _scan_write,
    _statements,
    _strip_comments,
    _Write,
)

__all__ = ["FEATURES", "Idioms", "idioms"]

ARRIVAL = "_arrival_seq"
EVENT = "event_id"  # every source carries it (spec.SourceSpec)


@dataclass(frozen=True)
class Idioms:
    """The features of one script; `guard` is derived (see the module docstring for the rule).

    - key_constraint: a PRIMARY KEY or UNIQUE (column, table or ALTER) or CREATE UNIQUE INDEX;
    - batch_dedup: a query over the arriving rows keeps one row of several copies (DISTINCT ON, a
      first ROW_NUMBER per key, DISTINCT / UNION / EXCEPT / duplicate-blind GROUP BY keeping
      `event_id`, NOT EXISTS an earlier copy by `_arrival_seq`);
    - history_antijoin: arriving rows filtered against a stored table (NOT EXISTS, NOT IN,
      ANTI JOIN, LEFT JOIN ... IS NULL, EXCEPT, or deleting stored ids from a staged batch);
    - window_functions: any function with OVER;
    - row_number_dedup: a ROW_NUMBER partitioned by a key and filtered to 1, or DISTINCT ON,
      over any relation;
    - delete_reinsert: DELETE or TRUNCATE of the target, then INSERT into it; or INSERT OR REPLACE
      into it;
    - full_recompute: CREATE OR REPLACE (or DROP, CREATE) of the target, or an unfiltered DELETE or
      TRUNCATE then INSERT, from a stored table other than the target;
    - merge_upsert: MERGE, INSERT ... ON CONFLICT, INSERT OR REPLACE / IGNORE, into any table;
    - transaction: BEGIN (or START TRANSACTION) and a later COMMIT (or END).

    With no target given, the target features apply to any table.
    """

    parsed: bool = True
    key_constraint: bool = False
    batch_dedup: bool = False
    history_antijoin: bool = False
    window_functions: bool = False
    row_number_dedup: bool = False
    delete_reinsert: bool = False
    full_recompute: bool = False
    merge_upsert: bool = False
    transaction: bool = False

    @property
    def guard(self) -> bool:
        """A within-batch guard: a key that fires, a batch dedup, or an upsert."""
        return self.key_constraint or self.batch_dedup or self.merge_upsert


FEATURES: tuple[str, ...] = tuple(f.name for f in fields(Idioms) if f.name != "parsed")


def idioms(script: str, sources: Sequence[str] = (), target: str | None = None) -> Idioms:
    """The features of one script; `sources` name its streams, `target` the table it maintains.

    Never raises on bad SQL: an unparseable statement sets `parsed=False` and is scanned by pattern.
    """
    if isinstance(sources, str):
        sources = (sources,)
    batch = frozenset(f"{s.lower()}_batch" for s in sources) or None
    reader = _Reader(batch)
    for chunk in _statements(script):
        reader.read(chunk)
    return reader.result(target.lower() if target else None)


# -- reading statements ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _Flow:
    """Where the rows of a relation come from, and which columns hold a per-key ROW_NUMBER."""

    batch: bool = False
    stored: frozenset[str] = frozenset()
    ranks: frozenset[str] = frozenset()

    def __or__(self, other: _Flow) -> _Flow:
        """Rows from either relation; rank columns belong to one relation and are not carried."""
        return _Flow(self.batch or other.batch, self.stored | other.stored)


_NOTHING = _Flow()


@dataclass
class _Reader:
    """Reads a script statement by statement, keeping what the batch has flowed into so far."""

    batch: frozenset[str] | None
    derived: dict[str, _Flow] = field(default_factory=dict)
    temporary: set[str] = field(default_factory=set)
    writes: list[_Write] = field(default_factory=list)
    found: set[str] = field(default_factory=set)
    parsed: bool = True

    def is_batch(self, name: str) -> bool:
        return name in self.batch if self.batch is not None else name.endswith("_batch")

    def delivered(self, name: str) -> bool:
        """A batch table or a copy of one: its rows still carry `_arrival_seq`."""
        return self.is_batch(name) or self.derived.get(name, _NOTHING).batch

    def result(self, target: str | None) -> Idioms:
        found = self.found | _sequence(self.writes, target)
        return Idioms(parsed=self.parsed, **{name: name in found for name in FEATURES})

    def read(self, text: str) -> None:
        control = _control(text)
        if control:
            self.writes.append(_Write(control))
            return
        tree = _parse(text)
        if tree is None or isinstance(tree, exp.Command):
            self.parsed = False
            self._scan(text)
        else:
            self._statement(tree)

    # -- trees ------------------------------------------------------------------------------------
    def _statement(self, tree: exp.Expr) -> None:
        if any(isinstance(w.this, exp.Func) for w in tree.find_all(exp.Window)):
            self.found.add("window_functions")
        if isinstance(tree, exp.Create | exp.Alter) and _declares_key(tree):
            self.found.add("key_constraint")
        if isinstance(tree, exp.Create):
            self._create(tree)
        elif isinstance(tree, exp.Insert):
            self._insert(tree)
        elif isinstance(tree, exp.Merge):
            self.found.add("merge_upsert")
            rows = self._relation(tree.args.get("using"), {}, data=True)
            self.writes.append(_Write("merge", _name(tree.this), rows))
        elif isinstance(tree, exp.Delete):
            self._delete(tree)
        elif isinstance(tree, exp.TruncateTable):
            self.writes.extend(_Write("truncate", _name(t)) for t in tree.expressions)
        elif isinstance(tree, exp.Drop):
            for table in tree.args.get("tables") or [tree.this]:
                self.derived.pop(_name(table) or "", None)
                self.writes.append(_Write("drop", _name(table)))
        elif isinstance(tree, exp.Query):
            self._query(tree, {}, data=True)
        else:
            for query in _nested_queries(tree):
                self._query(query, {}, data=False)

    def _create(self, tree: exp.Create) -> None:
        kind = str(tree.args.get("kind") or "").upper()
        name = _name(tree.this)
        if kind not in ("TABLE", "VIEW") or name is None:
            return
        temporary = tree.find(exp.TemporaryProperty) is not None
        query = tree.expression if isinstance(tree.expression, exp.Query) else None
        rows = self._query(query, {}, data=True) if query is not None else None
        rebuilt = not tree.args.get("exists")
        if temporary:
            self.temporary.add(name)
        if kind == "VIEW" or temporary:
            self.derived[name] = rows if rows is not None else _NOTHING
        elif rows is not None and rebuilt and rows.batch and not rows.stored:
            self.derived[name] = rows  # a persistent copy of this batch, rebuilt every run
        else:
            self.derived.pop(name, None)
        rebuild = bool(tree.args.get("replace")) and rebuilt
        self.writes.append(_Write("create", name, rows, rebuild=rebuild))

    def _insert(self, tree: exp.Insert) -> None:
        name = _name(tree.this)
        query = tree.expression
        rows = self._query(query, {}, data=True) if isinstance(query, exp.Query) else _NOTHING
        alternative = str(tree.args.get("alternative") or "").upper() or None
        if tree.args.get("conflict") is not None or alternative in ("REPLACE", "IGNORE"):
            self.found.add("merge_upsert")
        if name in self.temporary:
            self.derived[name] = self.derived.get(name, _NOTHING) | rows
        self.writes.append(_Write("insert", name, rows, alternative=alternative))

    def _delete(self, tree: exp.Delete) -> None:
        name = _name(tree.this)
        where = tree.args.get("where")
        using = tree.args.get("using") or []
        using = using if isinstance(using, list) else [using]
        flows = {id(q): self._query(q, {}, data=False) for q in _nested_queries(tree)}
        if (
            name is not None
            and self.delivered(name)
            and (
                any(self._relation(u, {}, data=False).stored for u in using)
                or _excludes_stored(where, flows, negated=False)
            )
        ):
            self.found.add("history_antijoin")
        self.writes.append(_Write("delete", name, filtered=bool(where or using)))

    # -- queries ----------------------------------------------------------------------------------
    def _query(self, node: exp.Expr | None, ctes: Mapping[str, _Flow], data: bool) -> _Flow:
        """The flow of a query, recording the features of every SELECT in it on the way.

        `data` is False inside predicates (WHERE, IN, EXISTS, scalar subqueries): rows there only
        decide which other rows pass, so deduplicating them guards nothing.
        """
        if isinstance(node, exp.Subquery):
            return self._query(node.this, ctes, data)
        if not isinstance(node, exp.Query):
            return _NOTHING
        ctes = self._ctes(node, ctes, data)
        if isinstance(node, exp.Select):
            return self._select(node, ctes, data)
        if isinstance(node, exp.SetOperation):
            left = self._query(node.this, ctes, data)
            right = self._query(node.expression, ctes, data)
            flow = left | right if isinstance(node, exp.Union) else left
            if (
                data
                and node.args.get("distinct")
                and flow.batch
                and _deduplicates_events(node, self)
            ):
                self.found.add("batch_dedup")
            if data and isinstance(node, exp.Except) and left.batch and right.stored:
                self.found.add("history_antijoin")
            return flow
        return _NOTHING

    def _ctes(self, node: exp.Expr, ctes: Mapping[str, _Flow], data: bool) -> Mapping[str, _Flow]:
        with_ = node.args.get("with_")
        if not isinstance(with_, exp.With):
            return ctes
        scope = dict(ctes)
        for cte in with_.expressions:
            scope[cte.alias_or_name.lower()] = self._query(cte.this, scope, data)
        return scope

    def _relation(self, node: exp.Expr | None, ctes: Mapping[str, _Flow], data: bool) -> _Flow:
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
            name = node.name.lower()
            if not node.args.get("db") and name in ctes:
                return ctes[name]
            if name in self.derived:
                return self.derived[name]
            return _Flow(batch=True) if self.is_batch(name) else _Flow(stored=frozenset([name]))
        if isinstance(node, exp.Subquery | exp.Query):
            return self._query(node, ctes, data)
        return _NOTHING

    def _select(self, node: exp.Select, ctes: Mapping[str, _Flow], data: bool) -> _Flow:
        flow, ranks, anti, left_stored = _NOTHING, set(), False, set()
        from_ = node.args.get("from_")
        if isinstance(from_, exp.From):
            source = self._relation(from_.this, ctes, data)
            flow, ranks = flow | source, ranks | source.ranks
        for join in node.args.get("joins") or []:
            kind = str(join.args.get("kind") or "").upper()
            source = self._relation(join.this, ctes, data and kind not in ("ANTI", "SEMI"))
            if kind in ("ANTI", "SEMI"):
                anti = anti or (kind == "ANTI" and bool(source.stored))
                continue
            flow, ranks = flow | source, ranks | source.ranks
            if str(join.args.get("side") or "").upper() == "LEFT" and source.stored:
                left_stored.add(join.this.alias_or_name.lower())
        flows = {id(q): self._query(q, ctes, data=False) for q in _nested_queries(node)}
        named = _named_windows(node)
        own_ranks = {
            p.alias.lower() for p in node.expressions if p.alias and _is_rank(p.unalias(), named)
        }
        distinct = node.args.get("distinct")
        keyed = isinstance(distinct, exp.Distinct) and distinct.args.get("on") is not None
        first = _keeps_first(node.args.get("qualify"), own_ranks, named) or _keeps_first(
            node.args.get("where"), ranks, named
        )
        if keyed or first:
            self.found.add("row_number_dedup")
        where = node.args.get("where")
        if data and flow.batch:
            if (
                keyed
                or first
                or (distinct is not None and _deduplicates_events(node, self))
                or _groups_away_duplicates(node)
                or _excludes_earlier_copy(where, flows)
            ):
                self.found.add("batch_dedup")
            if (
                anti
                or _excludes_stored(where, flows, negated=True)
                or _null_probe(where, left_stored)
            ):
                self.found.add("history_antijoin")
        return _Flow(flow.batch, flow.stored, frozenset(own_ranks))

    # -- patterns, for what sqlglot cannot parse --------------------------------------------------
    def _scan(self, text: str) -> None:
        text = _strip_comments(text)
        names = {_bare(m) for m in _READS.findall(text)}
        reads_batch = any(self.is_batch(n) for n in names)
        for feature, pattern in _PATTERNS.items():
            if pattern.search(text):
                self.found.add(feature)
        dedup = bool(_DISTINCT_ON.search(text) or _QUALIFY_FIRST.search(text))
        if dedup:
            self.found.add("row_number_dedup")
        if reads_batch and dedup:
            self.found.add("batch_dedup")
        if reads_batch and _ANTI.search(text):
            self.found.add("history_antijoin")
        write = _scan_write(text)
        if write is not None:
            stored = frozenset(n for n in names if not self.is_batch(n) and n != write.table)
            write.rows = _Flow(reads_batch, stored) if write.kind in ("create", "insert") else None
            self.writes.append(write)


def _sequence(writes: Sequence[_Write], target: str | None) -> set[str]:
    """The features that depend on statement order: transactions, delete-and-reinsert, rebuilds."""
    found: set[str] = set()
    began = False
    cleared: dict[str, bool] = {}  # table -> emptied entirely
    dropped: set[str] = set()
    for w in writes:
        if w.kind == "begin":
            began = True
        elif w.kind == "commit" and began:
            found.add("transaction")
        if w.table is None or (target is not None and w.table != target):
            continue
        rebuilt_from_store = w.rows is not None and bool(w.rows.stored - {w.table})
        if w.kind == "drop":
            dropped.add(w.table)
        elif w.kind in ("delete", "truncate"):
            cleared[w.table] = w.kind == "truncate" or not w.filtered
        elif w.kind == "insert":
            if w.alternative == "REPLACE" or w.table in cleared:
                found.add("delete_reinsert")
            if cleared.get(w.table) and rebuilt_from_store:
                found.add("full_recompute")
        elif w.kind == "create" and (w.rebuild or w.table in dropped) and rebuilt_from_store:
            found.add("full_recompute")
    return found


# -- helpers over trees ---------------------------------------------------------------------------

_INSENSITIVE = (
    exp.Max, exp.Min, exp.ArgMax, exp.ArgMin, exp.LogicalOr, exp.LogicalAnd, exp.AnyValue,
    exp.First, exp.Last, exp.ApproxDistinct, exp.BitwiseOrAgg, exp.BitwiseAndAgg,
)  # fmt: skip


def _name(node: exp.Expr | None) -> str | None:
    if isinstance(node, exp.Schema):
        node = node.this
    if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
        return node.name.lower()
    return None


def _declares_key(tree: exp.Expr) -> bool:
    if isinstance(tree, exp.Create) and str(tree.args.get("kind") or "").upper() == "INDEX":
        return bool(tree.args.get("unique"))
    keys = (exp.PrimaryKeyColumnConstraint, exp.PrimaryKey, exp.UniqueColumnConstraint)
    return tree.find(*keys) is not None


def _nested_queries(node: exp.Expr) -> Iterator[exp.Expr]:
    """Queries inside a statement or SELECT other than its FROM / JOIN sources and CTEs."""
    if isinstance(node, exp.Select):
        parts = [v for k, v in node.args.items() if k not in ("from_", "joins", "with_")]
        parts += [j.args.get("on") for j in node.args.get("joins") or []]
    else:
        parts = [v for k, v in node.args.items() if k != "with_"]
    for part in parts:
        for item in part if isinstance(part, list) else [part]:
            if isinstance(item, exp.Expr):
                for found in item.walk(prune=lambda n: isinstance(n, exp.Query)):
                    if isinstance(found, exp.Query):
                        yield found


def _own(node: exp.Expr | None, kind: type[exp.Expr]) -> Iterator[exp.Expr]:
    """Nodes of a kind inside an expression, not looking into nested queries."""
    if node is None:
        return
    for found in node.walk(prune=lambda n: isinstance(n, exp.Query) and n is not node):
        if isinstance(found, kind):
            yield found


def _named_windows(select: exp.Select) -> dict[str, exp.Window]:
    return {
        w.name.lower(): w for w in select.args.get("windows") or [] if isinstance(w, exp.Window)
    }


def _is_rank(node: exp.Expr, named: Mapping[str, exp.Window]) -> bool:
    """A ROW_NUMBER() partitioned by something other than the arrival sequence."""
    if not isinstance(node, exp.Window) or not isinstance(node.this, exp.RowNumber):
        return False
    partition = list(node.args.get("partition_by") or [])
    reference = node.args.get("alias")
    if not partition and reference is not None and reference.name.lower() in named:
        partition = list(named[reference.name.lower()].args.get("partition_by") or [])
    return any(not (isinstance(p, exp.Column) and p.name.lower() == ARRIVAL) for p in partition)


def _keeps_first(
    condition: exp.Expr | None, ranks: Iterable[str], named: Mapping[str, exp.Window]
) -> bool:
    """Whether a filter keeps only the first row per key: rank = 1, rank <= 1, rank < 2."""
    ranks = set(ranks)

    def is_rank(n: exp.Expr) -> bool:
        return _is_rank(n, named) or (isinstance(n, exp.Column) and n.name.lower() in ranks)

    def number(n: exp.Expr) -> int | None:
        return int(n.this) if isinstance(n, exp.Literal) and n.is_int else None

    for cmp in _own(condition, exp.Binary):
        left, right = cmp.this, cmp.expression
        if is_rank(left) and number(right) is not None:
            op, bound = type(cmp), number(right)
        elif is_rank(right) and number(left) is not None:
            flip = {exp.GTE: exp.LTE, exp.GT: exp.LT, exp.LTE: exp.GTE, exp.LT: exp.GT}
            op, bound = flip.get(type(cmp), type(cmp)), number(left)
        else:
            continue
        if (op, bound) in ((exp.EQ, 1), (exp.LTE, 1), (exp.LT, 2)):
            return True
    return False


def _kept(node: exp.Expr, reader: _Reader) -> set[str]:
    """The column names a query's rows keep; a `*` keeps `event_id`, and `_arrival_seq` over the batch."""
    if isinstance(node, exp.SetOperation):
        left, right = _kept(node.this, reader), _kept(node.expression, reader)
        return left | (right & {ARRIVAL})
    if isinstance(node, exp.Subquery):
        return _kept(node.this, reader)
    if not isinstance(node, exp.Select):
        return set()
    sources = [node.args["from_"].this] if isinstance(node.args.get("from_"), exp.From) else []
    sources += [j.this for j in node.args.get("joins") or []]
    raw = any(isinstance(s, exp.Table) and reader.delivered(s.name.lower()) for s in sources)
    kept: set[str] = set()
    for projection in node.expressions:
        star = projection if isinstance(projection, exp.Star) else None
        if isinstance(projection, exp.Column) and isinstance(projection.this, exp.Star):
            star = projection.this
        if star is None:
            kept |= _columns(projection)
        else:
            kept |= {EVENT, ARRIVAL} - _columns(star) if raw else {EVENT} - _columns(star)
    return kept


def _deduplicates_events(node: exp.Expr, reader: _Reader) -> bool:
    """Set semantics that merge copies of one event: the rows keep `event_id` but not `_arrival_seq`."""
    kept = _kept(node, reader)
    return EVENT in kept and ARRIVAL not in kept


def _columns(node: exp.Expr | None) -> set[str]:
    return {c.name.lower() for c in _own(node, exp.Column)}


def _groups_away_duplicates(select: exp.Select) -> bool:
    """A GROUP BY on `event_id` whose every aggregate gives the same answer with a row counted twice."""
    group = select.args.get("group")
    if not isinstance(group, exp.Group):
        return False
    projections = select.expressions
    if group.args.get("all"):
        keys = [p for p in projections if next(_own(p, exp.AggFunc), None) is None]
    else:
        keys = [
            projections[int(k.this) - 1] if k.is_int and 0 < int(k.this) <= len(projections) else k
            for k in group.expressions
        ]
    names = set().union(*(_columns(k) for k in keys))
    if EVENT not in names or ARRIVAL in names:
        return False
    for part in [*projections, select.args.get("having")]:
        for agg in _own(part, exp.AggFunc):
            if isinstance(agg.parent, exp.Window):
                continue
            if not (isinstance(agg, _INSENSITIVE) or isinstance(agg.this, exp.Distinct)):
                return False
    return True


def _excludes_stored(where: exp.Expr | None, flows: Mapping[int, _Flow], negated: bool) -> bool:
    """NOT EXISTS / NOT IN against a stored table (or, with negated=False, EXISTS / IN: for DELETE)."""
    for node in _own(where, exp.Exists):
        negation = isinstance(node.parent, exp.Not) == negated
        if negation and flows.get(id(node.this), _NOTHING).stored:
            return True
    for node in _own(where, exp.In):
        query = node.args.get("query")
        negation = isinstance(node.parent, exp.Not) == negated
        if query is not None and negation and flows.get(id(query), _NOTHING).stored:
            return True
    return False


def _excludes_earlier_copy(where: exp.Expr | None, flows: Mapping[int, _Flow]) -> bool:
    """NOT EXISTS an earlier-arriving copy in the batch itself: a within-batch dedup."""
    for node in _own(where, exp.Exists):
        flow = flows.get(id(node.this), _NOTHING)
        by_arrival = any(c.name.lower() == ARRIVAL for c in node.this.find_all(exp.Column))
        if isinstance(node.parent, exp.Not) and flow.batch and by_arrival:
            return True
    return False


def _null_probe(where: exp.Expr | None, aliases: set[str]) -> bool:
    """LEFT JOIN stored AS h ... WHERE h.col IS NULL."""
    for node in _own(where, exp.Is):
        column = node.this
        if (
            isinstance(node.expression, exp.Null)
            and not isinstance(node.parent, exp.Not)
            and isinstance(column, exp.Column)
            and column.table.lower() in aliases
        ):
            return True
    return False
