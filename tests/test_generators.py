"""Logical log generators: deterministic, unique ids, canonical order, declared types, archetype rules."""

from __future__ import annotations

from collections import Counter
from itertools import pairwise

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from arrivalbench.errors import UnknownNameError
from arrivalbench.generators import (
    EVOLVING_NULL_SHARE,
    generator_kinds,
    get_generator,
    make_log,
    validate_generator,
)
from arrivalbench.spec import SourceSpec
from arrivalbench.sqltypes import arrow_type

SALES = {
    "name": "sales",
    "columns": {
        "event_id": "BIGINT",
        "ts_event": "TIMESTAMP",
        "store_id": "INTEGER",
        "customer_id": "INTEGER",
        "product_id": "INTEGER",
        "quantity": "INTEGER",
        "amount": "DECIMAL(12,2)",
    },
    "generator": {"kind": "sales", "params": {"events": 300}},
}
ORDERS = {
    "name": "orders",
    "columns": {
        "event_id": "BIGINT",
        "ts_event": "TIMESTAMP",
        "order_id": "BIGINT",
        "store_id": "INTEGER",
        "customer_id": "INTEGER",
        "kind": "VARCHAR",
        "amount": "DECIMAL(12,2)",
    },
    "generator": {"kind": "orders_refunds", "params": {"events": 400, "max_refund_lag_hours": 48}},
}
CHANGES = {
    "name": "accounts",
    "columns": {
        "event_id": "BIGINT",
        "ts_event": "TIMESTAMP",
        "account_id": "INTEGER",
        "version": "BIGINT",
        "op": "VARCHAR",
        "status": "VARCHAR",
        "amount": "DECIMAL(12,2)",
    },
    "entity_key": "account_id",
    "generator": {
        "kind": "entity_changes",
        "params": {"events": 400, "entities": 25, "key": "account_id", "tie_share": 0.3},
    },
}
ALL = {"sales": SALES, "orders_refunds": ORDERS, "entity_changes": CHANGES}


def source(base: dict, **changes: object) -> SourceSpec:
    data = {**base, **changes}
    return SourceSpec.model_validate(data)


def with_params(base: dict, **params: object) -> SourceSpec:
    generator = {**base["generator"], "params": {**base["generator"]["params"], **params}}
    return source(base, generator=generator)


def ids(table: pa.Table) -> np.ndarray:
    return table.column("event_id").to_numpy()


def micros(table: pa.Table) -> np.ndarray:
    return table.column("ts_event").cast(pa.int64()).to_numpy()


def test_every_archetype_is_registered() -> None:
    assert {"sales", "orders_refunds", "entity_changes"} <= set(generator_kinds())


def test_unknown_kind_suggests_the_closest() -> None:
    with pytest.raises(UnknownNameError, match="Did you mean 'entity_changes'"):
        get_generator("entity_change")


# ---------------------------------------------------------------------------------------------
# Properties common to every archetype


@pytest.mark.parametrize("kind", sorted(ALL))
def test_same_seed_gives_an_identical_table(kind: str) -> None:
    spec = source(ALL[kind])
    first, second = make_log(spec, 42), make_log(spec, 42)
    assert first.equals(second, check_metadata=True)
    assert first.num_rows > 0


@pytest.mark.parametrize("kind", sorted(ALL))
def test_different_seed_gives_a_different_table(kind: str) -> None:
    spec = source(ALL[kind])
    first, second = make_log(spec, 42), make_log(spec, 43)
    assert first.schema == second.schema
    assert not first.equals(second)
    assert not np.array_equal(micros(first), micros(second))


@pytest.mark.parametrize("kind", sorted(ALL))
def test_event_ids_are_unique_and_unrelated_to_time(kind: str) -> None:
    table = make_log(source(ALL[kind]), 7)
    event_ids = ids(table)
    assert len(np.unique(event_ids)) == table.num_rows
    assert table.column("event_id").null_count == 0
    # Ids are a permutation, not a counter in time order: "largest id" must not mean "latest".
    assert not np.all(np.diff(event_ids) > 0)


@pytest.mark.parametrize("kind", sorted(ALL))
def test_log_is_in_canonical_order(kind: str) -> None:
    table = make_log(source(ALL[kind]), 11)
    ts, event_ids = micros(table), ids(table)
    assert np.all(np.diff(ts) >= 0), "event time never decreases"
    ties = np.diff(ts) == 0
    assert np.all(np.diff(event_ids)[ties] > 0), "equal times are ordered by event id"
    assert np.array_equal(np.lexsort((event_ids, ts)), np.arange(table.num_rows))


def test_ties_in_event_time_exist_and_are_broken_by_event_id() -> None:
    table = make_log(with_params(CHANGES, tie_share=0.5), 3)
    ts, event_ids = micros(table), ids(table)
    ties = np.flatnonzero(np.diff(ts) == 0)
    assert len(ties) > 10, "the entity_changes generator stamps some events with equal times"
    assert np.all(event_ids[ties + 1] > event_ids[ties])


@pytest.mark.parametrize("kind", sorted(ALL))
def test_declared_columns_and_types_exactly(kind: str) -> None:
    spec = source(ALL[kind])
    table = make_log(spec, 5)
    expected = pa.schema([(name, arrow_type(t)) for name, t in spec.columns.items()])
    assert table.schema.equals(expected)
    for name in spec.columns:
        assert table.column(name).null_count == 0, name


def test_only_declared_columns_in_declared_order() -> None:
    columns = {
        "amount": "DECIMAL(12,2)",
        "event_id": "BIGINT",
        "store_id": "INTEGER",
        "ts_event": "TIMESTAMP",
    }
    table = make_log(source(SALES, columns=columns), 5)
    assert table.column_names == ["amount", "event_id", "store_id", "ts_event"]
    assert table.schema.field("store_id").type == pa.int32()
    assert table.schema.field("amount").type == pa.decimal128(12, 2)


def test_declared_type_wider_than_produced_is_cast() -> None:
    columns = {**SALES["columns"], "store_id": "BIGINT", "amount": "DECIMAL(18,2)"}
    table = make_log(source(SALES, columns=columns), 5)
    assert table.schema.field("store_id").type == pa.int64()
    assert table.schema.field("amount").type == pa.decimal128(18, 2)


@pytest.mark.parametrize("kind", ["sales", "entity_changes"])
def test_event_times_are_whole_seconds_inside_the_window(kind: str) -> None:
    spec = with_params(ALL[kind], start="2026-03-01", days=3)
    ts = micros(make_log(spec, 9))
    origin = np.datetime64("2026-03-01", "us").astype(np.int64)
    assert ts.min() >= origin
    assert ts.max() < origin + 3 * 86_400_000_000
    assert np.all(ts % 1_000_000 == 0)


def test_event_count_follows_the_params() -> None:
    assert make_log(with_params(SALES, events=123), 1).num_rows == 123
    assert make_log(with_params(ORDERS, events=123), 1).num_rows == 123
    assert make_log(with_params(CHANGES, events=123), 1).num_rows == 123


def test_validate_generator_refuses_a_column_it_does_not_produce() -> None:
    spec = source(SALES, columns={**SALES["columns"], "discount": "DOUBLE"})
    with pytest.raises(ValueError, match=r"does not produce \['discount'\]"):
        validate_generator(spec)


def test_validate_generator_refuses_bad_params() -> None:
    with pytest.raises(ValueError, match="param 'events'"):
        validate_generator(with_params(SALES, events=5))
    with pytest.raises(ValueError, match="param 'colour'"):
        validate_generator(with_params(SALES, colour="red"))


# ---------------------------------------------------------------------------------------------
# entity_changes


def test_entity_versions_count_each_entitys_events_in_canonical_order() -> None:
    table = make_log(source(CHANGES), 21)
    entity = table.column("account_id").to_numpy()
    version = table.column("version").to_numpy()
    op = table.column("op").to_pylist()
    seen: Counter[int] = Counter()
    for i in range(table.num_rows):
        seen[int(entity[i])] += 1
        assert version[i] == seen[int(entity[i])], f"row {i}: entity {entity[i]}"
        assert (op[i] == "insert") == (version[i] == 1), f"row {i}: version {version[i]} op {op[i]}"
    assert max(seen.values()) > 1
    assert set(op) == {"insert", "update"}  # delete_share defaults to 0


def test_entity_versions_follow_the_event_id_tie_break() -> None:
    table = make_log(with_params(CHANGES, tie_share=0.5), 4)
    rows = table.select(["ts_event", "event_id", "account_id", "version"]).to_pylist()
    by_entity: dict[int, list[dict]] = {}
    for row in rows:
        by_entity.setdefault(row["account_id"], []).append(row)
    tied = 0
    for events in by_entity.values():
        events_sorted = sorted(events, key=lambda r: (r["ts_event"], r["event_id"]))
        assert [r["version"] for r in events_sorted] == list(range(1, len(events) + 1))
        tied += sum(a["ts_event"] == b["ts_event"] for a, b in pairwise(events_sorted))
    assert tied > 0, "some entity has two events at the same time"


def test_entity_deletes_never_on_the_first_version() -> None:
    table = make_log(with_params(CHANGES, delete_share=0.4), 8)
    version = table.column("version").to_numpy()
    op = np.array(table.column("op").to_pylist())
    assert (op == "delete").sum() > 0
    assert set(op[version == 1]) == {"insert"}
    assert "insert" not in set(op[version > 1])


def test_entity_attributes_come_from_the_declared_values() -> None:
    spec = with_params(CHANGES, attributes={"status": ["a", "b"]})
    statuses = set(make_log(spec, 2).column("status").to_pylist())
    assert statuses == {"a", "b"}


# ---------------------------------------------------------------------------------------------
# orders_refunds


def test_refunds_reference_an_earlier_sale_of_the_same_order() -> None:
    table = make_log(source(ORDERS), 13)
    rows = table.to_pylist()
    sales: dict[int, tuple[int, dict]] = {}
    refunds = 0
    for position, row in enumerate(rows):
        if row["kind"] == "sale":
            assert row["order_id"] not in sales, "each order is sold once"
            sales[row["order_id"]] = (position, row)
            continue
        assert row["kind"] == "refund"
        refunds += 1
        assert row["order_id"] in sales, "a refund comes after its sale in canonical order"
        sale_position, sale = sales[row["order_id"]]
        assert sale_position < position
        lag = (row["ts_event"] - sale["ts_event"]).total_seconds()
        # The generator draws the lag in [60 s, max_refund_lag_hours) after the sale.
        assert 60 <= lag < 48 * 3600
        assert 0 < row["amount"] <= sale["amount"]
        assert (row["store_id"], row["customer_id"]) == (sale["store_id"], sale["customer_id"])
    assert refunds == int(400 * 0.2)


def test_each_order_is_refunded_at_most_once() -> None:
    table = make_log(with_params(ORDERS, refund_share=0.5), 17)
    refunded = Counter(
        r["order_id"]
        for r in table.select(["order_id", "kind"]).to_pylist()
        if r["kind"] == "refund"
    )
    assert refunded and max(refunded.values()) == 1
    assert sum(refunded.values()) == 200


def test_no_refunds_when_refund_share_is_zero() -> None:
    table = make_log(with_params(ORDERS, refund_share=0.0), 1)
    assert set(table.column("kind").to_pylist()) == {"sale"}


# ---------------------------------------------------------------------------------------------
# Evolving column


@pytest.mark.parametrize("column", ["quantity", "amount"])
def test_evolving_column_is_null_exactly_for_the_earliest_share(column: str) -> None:
    spec = source(SALES, evolving_column=column)
    table = make_log(spec, 31)
    n = table.num_rows
    cut = int(n * EVOLVING_NULL_SHARE)
    assert pytest.approx(0.4) == EVOLVING_NULL_SHARE
    nulls = table.column(column).is_null().to_numpy(zero_copy_only=False)
    assert nulls[:cut].all()
    assert not nulls[cut:].any()
    assert table.schema.field(column).type == arrow_type(SALES["columns"][column])
    # Other columns are untouched by the evolving column.
    assert table.column("store_id").null_count == 0


def test_evolving_column_leaves_the_rest_of_the_log_as_without_it() -> None:
    plain = make_log(source(SALES), 31)
    evolving = make_log(source(SALES, evolving_column="quantity"), 31)
    assert plain.drop_columns(["quantity"]).equals(evolving.drop_columns(["quantity"]))
    n = plain.num_rows
    cut = int(n * EVOLVING_NULL_SHARE)
    assert plain.column("quantity").slice(cut).equals(evolving.column("quantity").slice(cut))


# ---------------------------------------------------------------------------------------------
# Scale


def test_a_log_of_a_million_events_can_be_generated() -> None:
    spec = source(
        SALES,
        columns={"event_id": "BIGINT", "ts_event": "TIMESTAMP", "store_id": "INTEGER"},
        generator={"kind": "sales", "params": {"events": 1_000_000}},
    )
    table = make_log(spec, 1)
    assert table.num_rows == 1_000_000
    assert pc.count_distinct(table.column("event_id")).as_py() == 1_000_000


# ---------------------------------------------------------------------------------------------
# Edge-case parameters: off by default; on, they inject the boundary case a stated rule needs and
# leave every other column as it was.

CLICKS = {
    "name": "clicks",
    "columns": {
        "event_id": "BIGINT",
        "ts_event": "TIMESTAMP",
        "user_id": "INTEGER",
        "page": "VARCHAR",
        "action": "VARCHAR",
    },
    "generator": {"kind": "clickstream", "params": {"events": 400, "users": 12, "days": 4}},
}


def rows_without(table: pa.Table, *columns: str) -> Counter:
    """The log's rows as a bag, leaving out event_id (a permutation drawn after the edge cases)."""
    kept = [c for c in table.column_names if c not in {"event_id", *columns}]
    return Counter(tuple(r.values()) for r in table.select(kept).to_pylist())


def test_calendar_gaps_empty_some_store_days_and_move_only_the_store() -> None:
    plain = make_log(with_params(SALES, stores=4, days=21), 3)
    gapped = make_log(with_params(SALES, stores=4, days=21, calendar_gaps=0.15), 3)
    assert gapped.num_rows == plain.num_rows
    assert rows_without(gapped, "store_id") == rows_without(plain, "store_id")
    day = pc.cast(gapped.column("ts_event"), pa.date32()).to_pylist()
    cells = set(zip(gapped.column("store_id").to_pylist(), day, strict=True))
    days = sorted(set(day))
    assert len(days) == 21, "every day keeps a store with sales"
    empty = [(s, d) for s in range(1, 5) for d in days if (s, d) not in cells]
    plain_day = pc.cast(plain.column("ts_event"), pa.date32()).to_pylist()
    plain_cells = set(zip(plain.column("store_id").to_pylist(), plain_day, strict=True))
    assert len(empty) >= 5 > 4 * 21 - len(plain_cells)


def user_gaps(table: pa.Table) -> np.ndarray:
    """Seconds between each user's consecutive events."""
    users, ts = table.column("user_id").to_numpy(), micros(table)
    order = np.lexsort((ts, users))
    same_user = users[order][1:] == users[order][:-1]
    return (np.diff(ts[order]) // 1_000_000)[same_user]


def test_boundary_gaps_and_equal_timestamps_appear_and_move_only_the_time() -> None:
    plain = make_log(source(CLICKS), 5)
    edged = make_log(with_params(CLICKS, boundary_gaps=0.05, equal_timestamps=0.05), 5)
    assert rows_without(edged, "ts_event") == rows_without(plain, "ts_event")
    before, after = user_gaps(plain), user_gaps(edged)
    assert (before == 1800).sum() == 0 and (before == 0).sum() <= 1
    assert 8 <= (after == 1800).sum() <= 40
    assert 8 <= (after == 0).sum() <= 40
    assert (after >= 0).all()


def test_boundary_gaps_follow_boundary_seconds() -> None:
    gaps = user_gaps(make_log(with_params(CLICKS, boundary_gaps=0.2, boundary_seconds=600), 5))
    assert (gaps == 600).sum() >= 40


def test_boundary_gaps_and_equal_timestamps_may_not_exceed_all_gaps() -> None:
    with pytest.raises(ValueError, match="at most 1"):
        validate_generator(with_params(CLICKS, boundary_gaps=0.6, equal_timestamps=0.6))


def last_two_tied(table: pa.Table, key: str) -> tuple[int, int]:
    """(entities whose last two events share a time, entities with two or more events)."""
    by_entity: dict[int, list[int]] = {}
    for entity, ts in zip(table.column(key).to_pylist(), micros(table), strict=True):
        by_entity.setdefault(entity, []).append(int(ts))
    several = [sorted(t) for t in by_entity.values() if len(t) >= 2]
    return sum(t[-1] == t[-2] for t in several), len(several)


def test_last_tie_share_ties_the_last_two_events_of_that_share_of_entities() -> None:
    base = with_params(CHANGES, tie_share=0.0)
    plain = make_log(base, 8)
    assert last_two_tied(plain, "account_id")[0] == 0
    tied, several = last_two_tied(
        make_log(with_params(CHANGES, tie_share=0.0, last_tie_share=0.4), 8), "account_id"
    )
    assert several == 25 and 5 <= tied <= 16
    everyone = make_log(with_params(CHANGES, tie_share=0.0, last_tie_share=1.0), 8)
    assert last_two_tied(everyone, "account_id") == (25, 25)
    assert rows_without(everyone, "ts_event", "version", "op") == rows_without(
        plain, "ts_event", "version", "op"
    )


def test_refund_only_stores_have_refunds_of_orders_outside_the_log_and_no_sales() -> None:
    plain = make_log(source(ORDERS), 13)
    table = make_log(with_params(ORDERS, stores=4, refund_only_stores=2), 13)
    assert table.num_rows == plain.num_rows == 400
    rows = table.to_pylist()
    sold = {r["order_id"] for r in rows if r["kind"] == "sale"}
    extra = [r for r in rows if r["store_id"] > 4]
    assert Counter(r["store_id"] for r in extra) == {5: 2, 6: 2}
    assert {r["kind"] for r in extra} == {"refund"}
    assert not sold & {r["order_id"] for r in extra}
    start = np.datetime64("2026-03-01", "us").astype(object)
    assert all(60 <= (r["ts_event"] - start).total_seconds() < 48 * 3600 for r in extra)
    assert all(r["amount"] > 0 for r in extra)
    assert Counter(r["kind"] for r in rows) == Counter(r["kind"] for r in plain.to_pylist())


def test_refund_only_stores_needs_two_refunds_each() -> None:
    with pytest.raises(ValueError, match="needs 8 refunds but the log has 6"):
        validate_generator(with_params(ORDERS, events=30, refund_share=0.2, refund_only_stores=4))


LEDGER = {
    "name": "ledger",
    "columns": {
        "event_id": "BIGINT",
        "ts_event": "TIMESTAMP",
        "account_id": "INTEGER",
        "kind": "VARCHAR",
        "amount": "DECIMAL(12,2)",
    },
    "generator": {"kind": "ledger", "params": {"events": 300, "accounts": 25}},
}


def day_of(table: pa.Table) -> list:
    return pc.cast(table.column("ts_event"), pa.date32()).to_pylist()


def test_time_grain_rounds_times_down_and_keeps_every_day() -> None:
    plain = make_log(source(SALES), 4)
    grained = make_log(with_params(SALES, time_grain_seconds=3600), 4)
    assert rows_without(grained, "ts_event") == rows_without(plain, "ts_event")
    assert (micros(grained) % 3_600_000_000 == 0).all()
    assert Counter(day_of(grained)) == Counter(day_of(plain)), "rounding never changes a day"
    changes = make_log(with_params(CHANGES, time_grain_seconds=3600), 4)
    assert (micros(changes) % 3_600_000_000 == 0).all()


def test_narrow_days_leave_the_latest_days_with_few_ids() -> None:
    table = make_log(
        with_params(SALES, days=6, narrow_days=2, narrow_column="product_id", narrow_keys=2), 9
    )
    per_day: dict = {}
    for day, product in zip(day_of(table), table.column("product_id").to_pylist(), strict=True):
        per_day.setdefault(day, set()).add(product)
    days = sorted(per_day)
    assert [len(per_day[d]) for d in days[-2:]] == [2, 2]
    assert all(len(per_day[d]) > 2 for d in days[:-2])


def test_tie_days_make_the_two_best_stores_of_a_day_earn_the_same() -> None:
    def best_two(table: pa.Table) -> dict:
        revenue: Counter = Counter()
        rows = zip(
            day_of(table),
            table.column("store_id").to_pylist(),
            table.column("amount").to_pylist(),
            strict=True,
        )
        for day, store, amount in rows:
            revenue[(day, store)] += amount
        days = sorted({d for d, _ in revenue})
        return {
            d: sorted((v for (e, _), v in revenue.items() if e == d), reverse=True)[:2]
            for d in days
        }

    plain, tied = (
        best_two(make_log(source(SALES), 2)),
        best_two(make_log(with_params(SALES, tie_days=2), 2)),
    )
    days = sorted(tied)
    assert [tied[d][0] == tied[d][1] for d in days[-2:]] == [True, True]
    assert tied[days[0]] == plain[days[0]]


def test_days_without_action_clear_the_latest_days_of_that_action() -> None:
    plain = make_log(source(CLICKS), 6)
    table = make_log(with_params(CLICKS, days_without_action={"view": 1, "purchase": 1}), 6)
    assert rows_without(table, "action") == rows_without(plain, "action")
    actions: dict = {}
    for day, action in zip(day_of(table), table.column("action").to_pylist(), strict=True):
        actions.setdefault(day, set()).add(action)
    days = sorted(actions)
    assert "purchase" not in actions[days[-1]] and "view" in actions[days[-1]]
    assert "view" not in actions[days[-2]]
    assert all({"view", "purchase"} <= actions[d] for d in days[:-2])


def test_zero_balance_accounts_close_at_exactly_zero() -> None:
    table = make_log(with_params(LEDGER, zero_balance_accounts=3), 7)
    balance: Counter = Counter()
    last: dict = {}
    for row in table.to_pylist():
        balance[row["account_id"]] += row["amount"]
        last[row["account_id"]] = row
    zero = [a for a, b in balance.items() if b == 0]
    assert len(zero) == 3
    assert all((last[a]["kind"] == "deposit") == (last[a]["amount"] >= 0) for a in zero), (
        "the closing movement's kind follows its sign"
    )
