"""Delivery schedules: coverage and determinism as properties, each hazard's required shape, JSON files.

Every check is computed from the deliveries themselves (row positions in the log's canonical
order), not from the builders' internals. The in-order partition a hazard perturbs is taken from
the `in_order_stream` schedule of the same task and seed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from collections import Counter, OrderedDict, defaultdict
from itertools import pairwise
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from arrivalbench import logs
from arrivalbench.errors import ScheduleError, UnknownNameError, UsageError
from arrivalbench.logs import Log
from arrivalbench.schedules import (
    SCHEDULE_NAMES,
    Crash,
    Schedule,
    build_schedule,
    load_schedule_file,
    resolve_schedules,
    schedule_from_json,
    schedule_to_json,
)
from arrivalbench.seeds import PrivateSeed, private_seed
from arrivalbench.spec import HAZARDS, Task, get_task, load_suite

STABLE_TASKS = ("daily_revenue", "customer_state")
FIXED_SEEDS = (0, 1, 7, 20260101)
DAY_US = 86_400_000_000
EVOLVING_OMITTED = (("quantity",), ("sales.quantity",))
"""How a delivery names the evolving column it omits: bare, or qualified by its source."""
PROPERTY = settings(max_examples=8, deadline=None)
seeds = st.integers(min_value=0, max_value=2**40)


@pytest.fixture(scope="module")
def tasks() -> dict[str, Task]:
    return {task_id: get_task(task_id) for task_id in STABLE_TASKS}


def arrivals(schedule: Schedule) -> list[tuple[int, int]]:
    """(delivery index, log row) for every delivered row, in arrival order."""
    return [(b, row) for b, d in enumerate(schedule.deliveries) for row in d.rows]


def first_delivery(schedule: Schedule) -> dict[int, int]:
    """Log row -> index of the delivery that first carries it."""
    first: dict[int, int] = {}
    for b, row in arrivals(schedule):
        first.setdefault(row, b)
    return first


def base_batches(task: Task, seed: int) -> list[tuple[int, ...]]:
    """The in-order partition of the hidden log that the hazards perturb."""
    stream, _ = build_schedule(task, "in_order_stream", seed)
    return [d.rows for d in stream.deliveries]


def base_batch_of(task: Task, seed: int) -> dict[int, int]:
    return {row: b for b, rows in enumerate(base_batches(task, seed)) for row in rows}


def column(log: Log, name: str) -> np.ndarray:
    return log.table.column(name).to_numpy(zero_copy_only=False)


def roundtrip(schedule: Schedule, log: Log, task: Task) -> tuple[Schedule, Log]:
    text = json.dumps(schedule_to_json(schedule, log))
    return schedule_from_json(json.loads(text), task)


# ---------------------------------------------------------------------------------------------
# Properties over every schedule and random seeds


@PROPERTY
@given(task_id=st.sampled_from(STABLE_TASKS), name=st.sampled_from(SCHEDULE_NAMES), seed=seeds)
def test_every_event_is_delivered_at_least_once(tasks, task_id: str, name: str, seed: int) -> None:
    schedule, log = build_schedule(tasks[task_id], name, seed)
    delivered = [row for d in schedule.deliveries for row in d.rows]
    assert set(delivered) == set(range(log.n))
    assert all(0 <= row < log.n for row in delivered)
    assert all(d.rows for d in schedule.deliveries), "no empty batch"
    assert [d.batch_id for d in schedule.deliveries] == list(range(1, len(schedule.deliveries) + 1))
    assert schedule.name == name and schedule.task_id == task_id
    assert schedule.log_fingerprint == log.fingerprint()
    assert schedule.delivered_rows() == len(delivered)


@PROPERTY
@given(name=st.sampled_from(SCHEDULE_NAMES), seed=seeds)
def test_every_event_is_delivered_at_least_once_with_an_evolving_column(
    evolving_task, name: str, seed: int
) -> None:
    schedule, log = build_schedule(evolving_task, name, seed)
    assert {row for d in schedule.deliveries for row in d.rows} == set(range(log.n))


@PROPERTY
@given(task_id=st.sampled_from(STABLE_TASKS), name=st.sampled_from(SCHEDULE_NAMES), seed=seeds)
def test_same_seed_gives_an_equal_schedule(tasks, task_id: str, name: str, seed: int) -> None:
    first, first_log = build_schedule(tasks[task_id], name, seed)
    # A cold log cache: the log is generated again, not reused.
    with mock.patch.object(logs, "_CACHE", OrderedDict()):
        second, second_log = build_schedule(tasks[task_id], name, seed)
    assert second_log is not first_log
    assert second == first
    assert schedule_to_json(second, second_log) == schedule_to_json(first, first_log)


@PROPERTY
@given(task_id=st.sampled_from(STABLE_TASKS), name=st.sampled_from(SCHEDULE_NAMES), seed=seeds)
def test_json_round_trip_gives_an_equal_schedule(tasks, task_id: str, name: str, seed: int) -> None:
    schedule, log = build_schedule(tasks[task_id], name, seed)
    again, again_log = roundtrip(schedule, log, tasks[task_id])
    assert again == schedule
    assert again_log.fingerprint() == log.fingerprint()


@pytest.mark.parametrize("name", SCHEDULE_NAMES)
def test_json_round_trip_with_an_evolving_column(evolving_task, name: str) -> None:
    schedule, log = build_schedule(evolving_task, name, 3)
    again, _ = roundtrip(schedule, log, evolving_task)
    assert again == schedule


def test_different_seeds_give_different_hidden_logs(tasks) -> None:
    task = tasks["daily_revenue"]
    first, first_log = build_schedule(task, "late_arrival", 1)
    second, second_log = build_schedule(task, "late_arrival", 2)
    assert first_log.fingerprint() != second_log.fingerprint()
    assert first != second


def test_snapshot_delivers_the_visible_log_and_the_rest_the_hidden_one(tasks) -> None:
    task = tasks["daily_revenue"]
    snap, visible = build_schedule(task, "snapshot", 5)
    single, hidden = build_schedule(task, "single_batch", 5)
    assert (snap.log_kind, single.log_kind) == ("visible", "hidden")
    assert visible.fingerprint() != hidden.fingerprint()
    for name in SCHEDULE_NAMES:
        if name != "snapshot":
            schedule, log = build_schedule(task, name, 5)
            assert schedule.log_kind == "hidden"
            assert log.fingerprint() == hidden.fingerprint()


# ---------------------------------------------------------------------------------------------
# JSON files that must be refused


@pytest.fixture
def crash_json(tasks) -> dict:
    schedule, log = build_schedule(tasks["daily_revenue"], "crash_retry", 4)
    return json.loads(json.dumps(schedule_to_json(schedule, log)))


def test_schedule_json_names_event_ids_not_positions(tasks, crash_json: dict) -> None:
    _, log = build_schedule(tasks["daily_revenue"], "crash_retry", 4)
    delivered = [e for d in crash_json["deliveries"] for e in d["event_ids"]]
    assert sorted(delivered) == sorted(int(e) for e in log.event_ids())
    assert crash_json["task"] == "daily_revenue" and crash_json["name"] == "crash_retry"
    assert (
        sum(d["crash"] is not None for d in crash_json["deliveries"])
        == crash_json["perturbation"]["crashed_batches"]
    )


def test_tampered_fingerprint_is_refused(tasks, crash_json: dict) -> None:
    crash_json["log"]["fingerprint"] = "0" * 64
    with pytest.raises(ScheduleError, match="fingerprint"):
        schedule_from_json(crash_json, tasks["daily_revenue"], where="tampered.json")


def test_tampered_log_seed_is_refused(tasks, crash_json: dict) -> None:
    crash_json["log"]["seed"] = int(crash_json["log"]["seed"]) + 1
    with pytest.raises(ScheduleError, match="fingerprint"):
        schedule_from_json(crash_json, tasks["daily_revenue"])


def test_schedule_for_another_task_is_refused(tasks, crash_json: dict) -> None:
    with pytest.raises(ScheduleError, match="built for task 'daily_revenue', not 'customer_state'"):
        schedule_from_json(crash_json, tasks["customer_state"], where="other.json")


def test_wrong_format_is_refused(tasks, crash_json: dict) -> None:
    crash_json["format"] = 99
    with pytest.raises(ScheduleError, match="format"):
        schedule_from_json(crash_json, tasks["daily_revenue"])
    with pytest.raises(ScheduleError):
        schedule_from_json([1, 2, 3], tasks["daily_revenue"])


def test_unknown_event_id_is_refused(tasks, crash_json: dict) -> None:
    crash_json["deliveries"][0]["event_ids"].append(1)
    with pytest.raises(ScheduleError, match="malformed"):
        schedule_from_json(crash_json, tasks["daily_revenue"])


def test_missing_field_is_refused(tasks, crash_json: dict) -> None:
    del crash_json["deliveries"]
    with pytest.raises(ScheduleError, match="malformed"):
        schedule_from_json(crash_json, tasks["daily_revenue"])


def _set(path: str, value: object):
    """A change to a schedule file: set the field at a dotted path ('deliveries.1.batch_id')."""

    def change(data: dict) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        for p in parents:
            data = data[p]
        data[last] = value

    return change


def _drop(path: str):
    def change(data: dict) -> None:
        *parents, last = [int(p) if p.isdigit() else p for p in path.split(".")]
        for p in parents:
            data = data[p]
        del data[last]

    return change


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        (
            _set("deliveries.1.batch_id", 1),
            "deliveries[1] (batch 1): batch id is not above batch 1",
        ),
        (
            _set("deliveries.3.batch_id", 2),
            "deliveries[3] (batch 2): batch id is not above batch 3",
        ),
        (_set("deliveries.0.batch_id", 0), "deliveries[0] (batch 0): batch id is not positive"),
        (_set("deliveries.0.batch_id", -4), "batch id is not positive"),
        (_set("seed", -1), "malformed schedule: seed: a seed is an integer from 0 to 2**63 - 1"),
        (_set("seed", 2**64 + 5), "seed: a seed is an integer from 0 to 2**63 - 1 (found 1844"),
        (_set("log.seed", -3), "log.seed: a seed is an integer"),
        (_set("seed", "12"), 'seed: Input should be a valid integer (found "12")'),
        (_set("seed", 1.5), "seed: Input should be a valid integer"),
        (_drop("name"), "name: Field required"),
        (_drop("log.kind"), "log.kind: Field required"),
        (_drop("deliveries.2.event_ids"), "deliveries[2].event_ids: Field required"),
        (_set("deliveries", {}), "deliveries: Input should be a valid list"),
        (_set("deliveries.0.event_ids.0", "7"), "deliveries[0].event_ids[0]: Input should be"),
        (_set("deliveries.0.batch_id", True), "deliveries[0].batch_id: Input should be"),
        (_set("deliveries.0.add_synthetic", "no"), "deliveries[0].add_synthetic: Input should"),
        (_set("deliveries.0.omit_column", []), "deliveries[0].omit_column: Extra inputs"),
        (_set("deliveries.0.crash", {"slot": "0", "of": 4}), "deliveries[0].crash.slot:"),
        (_set("perturbation", []), "perturbation: Input should be a valid dictionary"),
        (_set("log.kind", "future"), "log.kind: Input should be 'visible' or 'hidden'"),
        (_set("source", "orders"), "source 'orders', but this task's primary source is 'sales'"),
    ],
)
def test_schedule_file_field_that_is_wrong_is_named(
    tasks, crash_json: dict, change, phrase
) -> None:
    """Regression: duplicate or falling batch ids, negative or 65-bit seeds, strings for booleans
    and misspelt fields were accepted (or crashed with a traceback); each names its field now."""
    change(crash_json)
    with pytest.raises(ScheduleError) as caught:
        schedule_from_json(crash_json, tasks["daily_revenue"], where="edited.json")
    message = str(caught.value)
    assert message.startswith("edited.json: ") and phrase in message, message


def test_unknown_event_names_the_delivery_and_the_event(tasks, crash_json: dict) -> None:
    crash_json["deliveries"][2]["event_ids"].append(-5)
    with pytest.raises(
        ScheduleError, match=r"deliveries\[2\] \(batch 3\): malformed schedule: event -5"
    ):
        schedule_from_json(crash_json, tasks["daily_revenue"])


@pytest.fixture
def private_json(tasks) -> tuple[dict, PrivateSeed]:
    """A duplicate_delivery file of daily_revenue built from a private seed (no log seed in it)."""
    private = private_seed("ab" * 16, "test.seed")
    schedule, log = build_schedule(tasks["daily_revenue"], "duplicate_delivery", 4, private)
    return json.loads(json.dumps(schedule_to_json(schedule, log))), private


@pytest.mark.parametrize(
    ("change", "phrase"),
    [
        (_set("log.seed", 7), "log.seed must be null in the file of a private schedule"),
        (_drop("seed_commitment"), "log.seed is null without a seed_commitment"),
        (_set("seed_commitment", "AB" * 32), "seed_commitment: String should match pattern"),
        (_set("seed_commitment", 5), "seed_commitment: Input should be a valid string"),
    ],
)
def test_private_schedule_file_with_a_wrong_seed_field_is_named(
    tasks, private_json, change, phrase
) -> None:
    data, private = private_json
    change(data)
    with pytest.raises(ScheduleError, match=re.escape(phrase)):
        schedule_from_json(data, tasks["daily_revenue"], where="edited.json", private=private)


def test_unknown_event_in_a_private_schedule_names_no_seed(tasks, private_json) -> None:
    """The message about a foreign event names the private seed by its commitment, never the
    seed of the hidden log it rebuilt (which would let anyone rebuild that log)."""
    data, private = private_json
    data["deliveries"][0]["event_ids"].append(-5)
    with pytest.raises(ScheduleError) as caught:
        schedule_from_json(data, tasks["daily_revenue"], private=private)
    message = str(caught.value)
    assert "event -5 is not in the hidden log of the private seed " + private.short in message
    hidden_seed = logs.log_seed("daily_revenue", "hidden", private.seed)
    assert str(hidden_seed) not in message and str(private.seed) not in message


def test_schedule_file_with_gaps_in_batch_ids_is_accepted(tasks, crash_json: dict) -> None:
    for d in crash_json["deliveries"]:
        d["batch_id"] *= 10
    schedule, _ = schedule_from_json(crash_json, tasks["daily_revenue"])
    assert [d.batch_id for d in schedule.deliveries] == [10, 20, 30, 40, 50, 60]


def test_schedule_file_round_trip_and_unreadable_files(tasks, crash_json: dict, tmp_path) -> None:
    task = tasks["daily_revenue"]
    good = tmp_path / "crash.json"
    good.write_text(json.dumps(crash_json))
    schedule, _ = load_schedule_file(str(good), task)
    assert schedule == build_schedule(task, "crash_retry", 4)[0]
    bad = tmp_path / "bad.json"
    bad.write_text("{\n  not json")
    with pytest.raises(ScheduleError, match=r"not JSON \(line 2"):
        load_schedule_file(str(bad), task)
    with pytest.raises(ScheduleError, match="cannot read"):
        load_schedule_file(str(tmp_path / "absent.json"), task)


# ---------------------------------------------------------------------------------------------
# Snapshot and benign controls


@pytest.mark.parametrize("task_id", STABLE_TASKS)
@pytest.mark.parametrize("name", ["snapshot", "single_batch"])
def test_one_batch_in_canonical_order(tasks, task_id: str, name: str) -> None:
    schedule, log = build_schedule(tasks[task_id], name, 9)
    assert len(schedule.deliveries) == 1
    delivery = schedule.deliveries[0]
    assert delivery.rows == tuple(range(log.n))
    assert delivery.crash is None and delivery.omit_columns == () and not delivery.add_synthetic
    assert not schedule.bites()


@pytest.mark.parametrize("task_id", STABLE_TASKS)
def test_in_order_stream_is_contiguous_chunks(tasks, task_id: str) -> None:
    schedule, log = build_schedule(tasks[task_id], "in_order_stream", 9)
    assert len(schedule.deliveries) > 1
    rows = [row for d in schedule.deliveries for row in d.rows]
    assert rows == list(range(log.n))
    sizes = [len(d.rows) for d in schedule.deliveries]
    assert max(sizes) - min(sizes) <= 1
    assert not schedule.bites()


# ---------------------------------------------------------------------------------------------
# late_arrival


@pytest.mark.parametrize("task_id", STABLE_TASKS)
@pytest.mark.parametrize("seed", FIXED_SEEDS)
def test_late_arrival_delays_events_and_sends_a_deep_tail_last(
    tasks, task_id: str, seed: int
) -> None:
    task = tasks[task_id]
    schedule, log = build_schedule(task, "late_arrival", seed)
    base = base_batch_of(task, seed)
    last = len(schedule.deliveries) - 1
    arrived = dict((row, b) for b, row in arrivals(schedule))
    assert Counter(row for _, row in arrivals(schedule)) == Counter(range(log.n)), (
        "each event exactly once"
    )
    delays = {row: arrived[row] - base[row] for row in range(log.n)}
    assert min(delays.values()) >= 0, "nothing arrives early"
    late = [row for row, d in delays.items() if d > 0]
    assert len(late) == schedule.perturbation["late_events"] > 0
    # Moderate delays are one or two batches; anything later is the deep tail of early events.
    deep = [row for row, d in delays.items() if d > 2]
    assert len(deep) == schedule.perturbation["deep_tail_events"] > 0
    assert all(arrived[row] == last for row in deep), (
        "the deep tail arrives only in the final batch"
    )
    assert all(row < log.n // 2 for row in deep), (
        "the deep tail comes from the early half of the log"
    )
    final_ts = log.ts_micros()[list(schedule.deliveries[last].rows)]
    assert final_ts.min() < log.ts_micros()[list(schedule.deliveries[0].rows)].max()


# ---------------------------------------------------------------------------------------------
# out_of_order


def same_key_inversions(schedule: Schedule, log: Log, key: str) -> tuple[int, int]:
    """(across batches, within a batch): pairs of one key's events where the older arrives after the newer."""
    keys = column(log, key)
    position = {row: i for i, (_, row) in enumerate(arrivals(schedule))}
    batch = {row: b for b, row in arrivals(schedule)}
    by_key: dict[object, list[int]] = defaultdict(list)
    for row in range(log.n):
        by_key[keys[row]].append(row)  # canonical order: older rows first
    across = within = 0
    for rows in by_key.values():
        for i, older in enumerate(rows):
            for newer in rows[i + 1 :]:
                if position[older] > position[newer]:
                    if batch[older] > batch[newer]:
                        across += 1
                    else:
                        within += 1
    return across, within


@pytest.mark.parametrize("seed", FIXED_SEEDS)
def test_out_of_order_reorders_one_keys_updates_across_and_within_batches(tasks, seed: int) -> None:
    task = tasks["customer_state"]
    schedule, log = build_schedule(task, "out_of_order", seed)
    assert Counter(row for _, row in arrivals(schedule)) == Counter(range(log.n)), (
        "each event exactly once"
    )
    across, within = same_key_inversions(schedule, log, task.spec.source.entity_key)
    assert across > 0, "an older update of a customer arrives in a later batch than a newer one"
    assert within > 0, "an older update of a customer arrives after a newer one in the same batch"
    assert schedule.perturbation["same_key_within_batch"] > 0


@pytest.mark.parametrize("task_id", STABLE_TASKS)
@pytest.mark.parametrize("seed", FIXED_SEEDS)
def test_out_of_order_counts_match_the_deliveries(tasks, task_id: str, seed: int) -> None:
    task = tasks[task_id]
    schedule, _ = build_schedule(task, "out_of_order", seed)
    base = base_batch_of(task, seed)
    moved = sum(1 for b, row in arrivals(schedule) if b != base[row])
    inversions = sum(1 for d in schedule.deliveries for a, b in pairwise(d.rows) if b < a)
    assert schedule.perturbation["cross_batch_moves"] == moved > 0
    assert schedule.perturbation["within_batch_inversions"] == inversions > 0
    # Events move between neighbouring batches or towards a newer update of their key; never backwards
    # by more than one batch.
    assert all(b - base[row] >= -1 for b, row in arrivals(schedule))


def test_out_of_order_without_entity_key_shuffles_every_batch(tasks) -> None:
    schedule, _ = build_schedule(tasks["daily_revenue"], "out_of_order", 5)
    for d in schedule.deliveries:
        assert list(d.rows) != sorted(d.rows), f"batch {d.batch_id} arrives in canonical order"


def test_out_of_order_moved_older_update_arrives_after_its_newer_sibling(tasks) -> None:
    """Regression: an older update moved out of its batch used to land in its newer sibling's batch,
    unordered, so about one move in six still arrived before the newer update."""
    task = tasks["customer_state"]
    for seed in FIXED_SEEDS:
        schedule, log = build_schedule(task, "out_of_order", seed)
        base = base_batch_of(task, seed)
        keys = column(log, task.spec.source.entity_key)
        position = {row: i for i, (_, row) in enumerate(arrivals(schedule))}
        batch = {row: b for b, row in arrivals(schedule)}
        next_of: dict[int, int] = {}
        last_row: dict[object, int] = {}
        for row in range(log.n):
            if keys[row] in last_row:
                next_of[last_row[keys[row]]] = row
            last_row[keys[row]] = row
        for row in range(log.n):
            if batch[row] > base[row] and row in next_of:
                newer = next_of[row]
                assert position[row] > position[newer], (
                    f"seed {seed}: moved row {row} arrives before {newer}"
                )


# ---------------------------------------------------------------------------------------------
# duplicate_delivery


@pytest.mark.parametrize("task_id", STABLE_TASKS)
@pytest.mark.parametrize("seed", FIXED_SEEDS)
def test_duplicate_delivery_repeats_within_a_batch_and_in_a_later_batch(
    tasks, task_id: str, seed: int
) -> None:
    task = tasks[task_id]
    schedule, log = build_schedule(task, "duplicate_delivery", seed)
    base = base_batch_of(task, seed)
    copies = Counter(row for _, row in arrivals(schedule))
    assert set(copies) == set(range(log.n))
    assert max(copies.values()) == 2
    within = cross = 0
    for row in (r for r, c in copies.items() if c == 2):
        batches = [b for b, r in arrivals(schedule) if r == row]
        assert batches[0] == base[row], "the first copy arrives on time"
        if batches[0] == batches[1]:
            within += 1
        else:
            assert batches[1] > batches[0]
            cross += 1
    assert within == schedule.perturbation["within_batch_duplicates"] > 0
    assert cross == schedule.perturbation["cross_batch_duplicates"] > 0
    assert schedule.delivered_rows() == log.n + within + cross


def test_duplicate_delivery_keeps_originals_in_order(tasks) -> None:
    schedule, _ = build_schedule(tasks["customer_state"], "duplicate_delivery", 3)
    first = first_delivery(schedule)
    for b, d in enumerate(schedule.deliveries):
        originals = [
            row for i, row in enumerate(d.rows) if first[row] == b and row not in d.rows[:i]
        ]
        assert originals == sorted(originals), "first copies keep the canonical order"


# ---------------------------------------------------------------------------------------------
# crash_retry


@pytest.mark.parametrize("task_id", STABLE_TASKS)
@pytest.mark.parametrize("seed", FIXED_SEEDS)
def test_crash_retry_crashes_at_least_three_batches(tasks, task_id: str, seed: int) -> None:
    task = tasks[task_id]
    schedule, _ = build_schedule(task, "crash_retry", seed)
    assert [d.rows for d in schedule.deliveries] == base_batches(task, seed), (
        "delivery itself is in order"
    )
    crashes = [d.crash for d in schedule.deliveries if d.crash is not None]
    assert len(crashes) >= 3
    assert len(crashes) == schedule.perturbation["crashed_batches"]
    assert {c.of for c in crashes} == {len(crashes)}
    assert sorted(c.slot for c in crashes) == list(range(len(crashes)))
    for n in range(2, 2 + len(crashes) * Crash.PER_DELIVERY):
        hit = [p for c in crashes for p in c.statements(n)]
        assert set(hit) == set(range(1, n)), f"{n} statements"


@settings(max_examples=200, deadline=None)
@given(data=st.data(), of=st.integers(1, 12), n_statements=st.integers(0, 400))
def test_crash_points_are_always_between_statements(data, of: int, n_statements: int) -> None:
    slot = data.draw(st.integers(0, of - 1))
    crash = Crash(slot=slot, of=of)
    points = crash.statements(n_statements) + crash.watched(n_statements)
    if n_statements <= 1:
        assert points == ()
    else:
        assert points and all(1 <= p <= n_statements - 1 for p in points)
        assert list(points) == sorted(set(points))
        assert not (crash.statements(n_statements) and crash.watched(n_statements))


@settings(max_examples=50, deadline=None)
@given(of=st.integers(1, 8), n_statements=st.integers(2, 60))
def test_regression_long_scripts_have_every_statement_boundary_crashed(
    of: int, n_statements: int
) -> None:
    """A script longer than the crash count used to be crashed at a few spread points only, so a
    non-atomic step between two unlucky statements was never interrupted. Every boundary is still
    crashed exactly once up to `of * PER_DELIVERY` boundaries (the suite's longest script has 9)."""
    per_slot = [Crash(slot, of).statements(n_statements) for slot in range(of)]
    union = [p for points in per_slot for p in points]
    if n_statements - 1 <= of * Crash.PER_DELIVERY:
        assert set(union) == set(range(1, n_statements))
        if n_statements - 1 > of:
            assert len(union) == n_statements - 1, "each boundary is crashed exactly once"


@settings(max_examples=100, deadline=None)
@given(
    of=st.integers(1, 8),
    n_statements=st.integers(2, 5000),
    writes=st.sets(st.integers(1, 4999), max_size=40),
)
def test_regression_crash_retry_executions_grow_linearly_with_script_length(
    of: int, n_statements: int, writes: set[int]
) -> None:
    """Every boundary used to be crashed, each stop re-running a prefix: a 1,000-statement script
    ran ~500,000 statements in one crash_retry schedule. A long script's boundaries are now only
    watched, and a stop happens where the statement before it changed the committed state, so
    padding that changes nothing costs one pass (replaced the old bound of PER_DELIVERY evenly
    spread stops, which let a script dodge the crash points between them: issue 21). Here the
    replay's stopping rule is simulated with `writes` as the statements that change state in
    every attempt: the executions stay within (W + of) x n for W state-changing boundaries."""
    changing = {q for q in writes if q < n_statements}
    executions = 0
    for slot in range(of):
        crash = Crash(slot, of)
        executions += sum(crash.statements(n_statements))
        watched = crash.watched(n_statements)
        executions += sum(q for q in watched if q in changing) + n_statements
    if n_statements - 1 > of * Crash.PER_DELIVERY:  # watched: one pass plus a prefix per change
        assert executions <= (len(changing) + of) * n_statements
    else:  # short enough to crash every boundary: at most PER_DELIVERY stops per crash
        assert executions <= of * (Crash.PER_DELIVERY + 1) * n_statements


@settings(max_examples=100, deadline=None)
@given(of=st.integers(1, 8), n_statements=st.integers(2, 400))
def test_regression_padded_scripts_have_every_statement_boundary_watched_once(
    of: int, n_statements: int
) -> None:
    """A script padded past `of * PER_DELIVERY` boundaries was crashed at 16 evenly spread points
    only, so a crash-unsafe step between two of them was never stopped (issue 21: `SELECT n;`
    padding to 20 statements passed crash_retry). Every boundary is now either crashed
    (`statements`) or watched (`watched`) by exactly one crash of the schedule."""
    per_slot = [
        Crash(slot, of).statements(n_statements) + Crash(slot, of).watched(n_statements)
        for slot in range(of)
    ]
    union = [p for points in per_slot for p in points]
    assert set(union) == set(range(1, n_statements))
    if n_statements - 1 > of:
        assert len(union) == n_statements - 1, "each boundary is dealt exactly once"


@pytest.mark.parametrize("of", [1, 4])
def test_a_one_statement_script_is_never_crashed(of: int) -> None:
    assert all(Crash(slot, of).statements(1) == () for slot in range(of))
    assert Crash(0, of).statements(0) == ()


# ---------------------------------------------------------------------------------------------
# backfill


@pytest.mark.parametrize("task_id", STABLE_TASKS)
@pytest.mark.parametrize("seed", FIXED_SEEDS)
def test_backfill_redelivers_one_past_day_and_releases_withheld_events(
    tasks, task_id: str, seed: int
) -> None:
    task = tasks[task_id]
    schedule, log = build_schedule(task, "backfill", seed)
    day = log.ts_micros() // DAY_US
    first = first_delivery(schedule)
    seen: set[int] = set()
    with_repeats = []
    for b, d in enumerate(schedule.deliveries):
        if seen & set(d.rows):
            with_repeats.append(b)
        seen |= set(d.rows)
    assert len(with_repeats) == 1, "exactly one batch redelivers"
    fill = with_repeats[0]
    rows = schedule.deliveries[fill].rows
    (the_day,) = set(day[list(rows)])
    assert sorted(rows) == list(np.flatnonzero(day == the_day)), "the whole day is redelivered"
    redelivered = [row for row in rows if first[row] < fill]
    released = [row for row in rows if first[row] == fill]
    assert len(redelivered) == schedule.perturbation["redelivered_events"] > 0
    assert len(released) == schedule.perturbation["released_events"] > 0
    earlier = [row for d in schedule.deliveries[:fill] for row in d.rows]
    assert day[earlier].max() > the_day, (
        "a later day was delivered before the backfill: the day is past"
    )
    copies = Counter(row for _, row in arrivals(schedule))
    assert all(copies[row] == (2 if row in redelivered else 1) for row in range(log.n))


# ---------------------------------------------------------------------------------------------
# schema_evolution


@pytest.mark.parametrize("task_id", STABLE_TASKS)
@pytest.mark.parametrize("seed", FIXED_SEEDS)
def test_schema_evolution_without_evolving_column_adds_a_synthetic_column_mid_stream(
    tasks, task_id: str, seed: int
) -> None:
    task = tasks[task_id]
    schedule, _ = build_schedule(task, "schema_evolution", seed)
    assert [d.rows for d in schedule.deliveries] == base_batches(task, seed)
    flags = [d.add_synthetic for d in schedule.deliveries]
    starts = flags.index(True)
    assert 0 < starts < len(flags), "absent from the first batch, present by the last"
    assert flags == [False] * starts + [True] * (len(flags) - starts)
    assert all(d.omit_columns == () for d in schedule.deliveries)
    assert schedule.perturbation["batches_before_column"] == starts


@pytest.mark.parametrize("seed", FIXED_SEEDS)
def test_schema_evolution_omits_the_evolving_column_from_early_deliveries(
    evolving_task, seed: int
) -> None:
    schedule, log = build_schedule(evolving_task, "schema_evolution", seed)
    quantity_null = log.table.column("quantity").is_null().to_numpy(zero_copy_only=False)
    omits = [d.omit_columns in EVOLVING_OMITTED for d in schedule.deliveries]
    starts = omits.index(False)
    assert starts > 0 and not any(omits[starts:]), "omitted from the first batches only"
    assert schedule.perturbation["batches_before_column"] == starts
    for d in schedule.deliveries[:starts]:
        assert quantity_null[list(d.rows)].all(), "an omitted column holds only NULLs in the log"
    assert not quantity_null[list(schedule.deliveries[starts].rows)].all(), (
        "it appears with its first values"
    )
    assert not any(d.add_synthetic for d in schedule.deliveries)
    assert all(
        d.omit_columns == () or d.omit_columns in EVOLVING_OMITTED for d in schedule.deliveries
    )


def test_evolving_fixture_task_declares_schema_evolution(evolving_task) -> None:
    assert evolving_task.spec.source.evolving_column == "quantity"
    assert "schema_evolution" in evolving_task.spec.hazards


# ---------------------------------------------------------------------------------------------
# Every hazard bites


@pytest.mark.parametrize("task_id", STABLE_TASKS)
@pytest.mark.parametrize("hazard", HAZARDS)
def test_every_hazard_perturbs_delivery(tasks, task_id: str, hazard: str) -> None:
    task = tasks[task_id]
    schedule, _ = build_schedule(task, hazard, 20260101)
    assert schedule.perturbation, "a hazard reports what it did"
    assert schedule.bites()
    for name, count in schedule.perturbation.items():
        if name == "same_key_within_batch" and task.spec.source.entity_key is None:
            assert count == 0  # no entity key: nothing to pair
            continue
        assert count > 0, f"{hazard}: {name} = {count}"


@pytest.mark.parametrize("hazard", HAZARDS)
def test_every_hazard_perturbs_delivery_with_an_evolving_column(evolving_task, hazard: str) -> None:
    schedule, _ = build_schedule(evolving_task, hazard, 20260101)
    assert schedule.bites()


# ---------------------------------------------------------------------------------------------
# resolve_schedules


def test_resolve_all(tasks) -> None:
    assert resolve_schedules(tasks["daily_revenue"], "all") == list(SCHEDULE_NAMES)


@pytest.mark.parametrize("selection", [None, "", "default"])
def test_resolve_default_is_snapshot_controls_and_declared_hazards(tasks, selection) -> None:
    task = tasks["customer_state"]
    names = resolve_schedules(task, selection)
    assert names[:3] == ["snapshot", "single_batch", "in_order_stream"]
    assert set(names[3:]) == set(task.spec.hazards)
    assert names == [n for n in SCHEDULE_NAMES if n in names], "registry order"
    assert "schema_evolution" not in names


def test_resolve_default_includes_schema_evolution_when_declared(evolving_task) -> None:
    assert resolve_schedules(evolving_task, None)[-1] == "schema_evolution"


def test_resolve_a_comma_separated_list(tasks) -> None:
    task = tasks["daily_revenue"]
    assert resolve_schedules(task, "late_arrival,backfill") == ["late_arrival", "backfill"]
    assert resolve_schedules(task, " snapshot , crash_retry ,") == ["snapshot", "crash_retry"]


@pytest.mark.parametrize("selection", [",,", " ", " , ", ","])
def test_resolve_a_list_that_names_no_schedule_is_refused(tasks, selection) -> None:
    """Regression: --schedules ',,' graded nothing and printed an empty table with exit 0."""
    with pytest.raises(UsageError, match="names no schedule"):
        resolve_schedules(tasks["daily_revenue"], selection)


def test_resolve_a_repeated_name_grades_it_once(tasks) -> None:
    names = resolve_schedules(tasks["daily_revenue"], "snapshot,backfill,snapshot")
    assert names == ["snapshot", "backfill"]


def test_resolve_unknown_name_suggests_the_closest(tasks) -> None:
    with pytest.raises(
        UnknownNameError, match=r"Unknown schedule 'late_arival'\. Did you mean 'late_arrival'\?"
    ):
        resolve_schedules(tasks["daily_revenue"], "snapshot,late_arival")


def test_build_schedule_unknown_name(tasks) -> None:
    with pytest.raises(UnknownNameError, match="Did you mean 'backfill'"):
        build_schedule(tasks["daily_revenue"], "backfil", 1)


# ---------------------------------------------------------------------------------------------
# Multi-source tasks: every hazard that moves events moves events of every feed

MULTI_SOURCE_TASKS = ("region_revenue", "tier_revenue")
MOVING_HAZARDS = ("late_arrival", "out_of_order", "backfill")


@pytest.fixture(scope="module")
def multi() -> dict[str, Task]:
    return {task_id: get_task(task_id) for task_id in MULTI_SOURCE_TASKS}


def feed_of(log: Log) -> list[str]:
    """Per spine row, the name of the feed it belongs to."""
    names = [s.name for s in log.sources]
    return [names[i] for i in log.spine.source]


def test_multi_source_tasks_have_several_feeds(multi) -> None:
    for task in multi.values():
        assert len(task.spec.sources) > 1


@pytest.mark.parametrize("task_id", MULTI_SOURCE_TASKS)
@pytest.mark.parametrize("seed", FIXED_SEEDS)
@pytest.mark.parametrize("hazard", ("late_arrival", "out_of_order"))
def test_multi_source_hazard_moves_events_of_every_feed(
    multi, task_id: str, seed: int, hazard: str
) -> None:
    task = multi[task_id]
    schedule, log = build_schedule(task, hazard, seed)
    base = base_batch_of(task, seed)
    feed = feed_of(log)
    moved = Counter(feed[row] for b, row in arrivals(schedule) if b != base[row])
    for source in task.spec.sources:
        assert schedule.perturbation[f"moved_events.{source.name}"] == moved[source.name] > 0, (
            f"{hazard} at seed {seed}: {source.name} events moved {moved[source.name]}, "
            f"reported {dict(schedule.perturbation)}"
        )
    assert sum(moved.values()) == (
        schedule.perturbation["late_events"]
        if hazard == "late_arrival"
        else schedule.perturbation["cross_batch_moves"]
    )


@pytest.mark.parametrize("task_id", MULTI_SOURCE_TASKS)
@pytest.mark.parametrize("seed", FIXED_SEEDS)
def test_multi_source_out_of_order_moves_fact_rows_across_batches(
    multi, task_id: str, seed: int
) -> None:
    """Regression: multi-source out_of_order moved only the keyed dimension feed (0 `sales`
    events crossed a batch), so a pipeline loading only orders newer than the newest loaded
    passed it. Now older orders arrive in a later batch than newer ones."""
    schedule, log = build_schedule(multi[task_id], "out_of_order", seed)
    feed = feed_of(log)
    newest_so_far = -1
    behind = 0
    for d in schedule.deliveries:
        sales = [row for row in d.rows if feed[row] == "sales"]
        behind += sum(1 for row in sales if row < newest_so_far)
        newest_so_far = max([newest_so_far, *sales])
    assert behind > 0, "no order arrives in a batch after a newer order"


@pytest.mark.parametrize("task_id", MULTI_SOURCE_TASKS)
@pytest.mark.parametrize("seed", FIXED_SEEDS)
def test_multi_source_backfill_withholds_and_redelivers_events_of_every_feed(
    multi, task_id: str, seed: int
) -> None:
    schedule, log = build_schedule(multi[task_id], "backfill", seed)
    feed = feed_of(log)
    first = first_delivery(schedule)
    (fill,) = {b for b, row in arrivals(schedule) if first[row] < b}
    rows = schedule.deliveries[fill].rows
    released = Counter(feed[row] for row in rows if first[row] == fill)
    redelivered = Counter(feed[row] for row in rows if first[row] < fill)
    for source in multi[task_id].spec.sources:
        name = source.name
        assert schedule.perturbation[f"moved_events.{name}"] == released[name] > 0
        assert schedule.perturbation[f"redelivered_events.{name}"] == redelivered[name] > 0
    assert sum(released.values()) == schedule.perturbation["released_events"]
    assert sum(redelivered.values()) == schedule.perturbation["redelivered_events"]


def test_a_hazard_that_leaves_one_feed_in_place_does_not_bite(multi) -> None:
    schedule, _ = build_schedule(multi["region_revenue"], "out_of_order", FIXED_SEEDS[0])
    assert schedule.bites()
    in_place = dict(schedule.perturbation) | {"moved_events.sales": 0}
    assert not dataclasses.replace(schedule, perturbation=in_place).bites()


@pytest.mark.parametrize("task_id", MULTI_SOURCE_TASKS)
@pytest.mark.parametrize("hazard", MOVING_HAZARDS)
def test_multi_source_hazard_is_deterministic_and_delivers_every_event(
    multi, task_id: str, hazard: str
) -> None:
    first, first_log = build_schedule(multi[task_id], hazard, 11)
    with mock.patch.object(logs, "_CACHE", OrderedDict()):
        second, second_log = build_schedule(multi[task_id], hazard, 11)
    assert schedule_to_json(second, second_log) == schedule_to_json(first, first_log)
    assert {row for d in first.deliveries for row in d.rows} == set(range(first_log.n))
    again, _ = roundtrip(first, first_log, multi[task_id])
    assert again == first
    other, _ = build_schedule(multi[task_id], hazard, 12)
    assert other != first, "another seed perturbs differently"


# ---------------------------------------------------------------------------------------------
# Single-source schedules are pinned


PINS = Path(__file__).parent / "fixtures" / "schedules" / "single_source_pins.json"
PIN_SEEDS = (20260101, 1, 7)
REPIN = "PYTHONPATH=src python tests/test_schedules.py --repin"


def _digest(*texts: str) -> str:
    return hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]


def single_source_pins() -> dict[str, dict[str, object]]:
    """Per single-source task: a digest of its logs at PIN_SEEDS, and per schedule a digest of its
    JSON files (the bytes a stored verdict was graded from) at those seeds."""
    pins: dict[str, dict[str, object]] = {}
    for task_id, task in sorted(load_suite().items()):
        if len(task.spec.sources) != 1:
            continue
        fingerprints: list[str] = []
        schedules: dict[str, str] = {}
        for name in SCHEDULE_NAMES:
            files = []
            for seed in PIN_SEEDS:
                schedule, log = build_schedule(task, name, seed)
                fingerprints.append(log.fingerprint())
                files.append(json.dumps(schedule_to_json(schedule, log)))
            schedules[name] = _digest(*files)
        pins[task_id] = {"logs": _digest(*fingerprints), "schedules": schedules}
    return pins


def test_multi_source_hazards_leave_single_source_schedules_unchanged() -> None:
    """Moving events of every feed on multi-source tasks must not change one byte of a
    single-source task's schedules, or every stored verdict of those tasks would change with it."""
    pinned = json.loads(PINS.read_text())
    now = single_source_pins()
    assert set(pinned) <= set(now), f"pinned tasks gone: {sorted(set(pinned) - set(now))}"
    logs_changed = [t for t in pinned if pinned[t]["logs"] != now[t]["logs"]]
    assert not logs_changed, (
        f"the logs of {logs_changed} changed (a generator or task.yaml did): if intended, "
        f"re-pin with: {REPIN}"
    )
    changed = [
        f"{task_id}/{name}"
        for task_id, pin in pinned.items()
        for name, digest in pin["schedules"].items()
        if now[task_id]["schedules"].get(name) != digest
    ]
    assert not changed, f"schedules of unchanged logs differ: {changed}"


if __name__ == "__main__":
    import sys

    if sys.argv[1:] != ["--repin"]:
        raise SystemExit(f"usage: {REPIN}")
    PINS.parent.mkdir(parents=True, exist_ok=True)
    PINS.write_text(json.dumps(single_source_pins(), indent=1, sort_keys=True) + "\n")
    print(f"wrote {PINS}")
