"""explain's shape diagnoses (issue 28): each labels the fixture with exactly that bug, on its
minimal schedule, and not its correct neighbour; late_dropped tells a per-source watermark from
one across all sources; sequence_by_arrival's table on three clicks, by hand."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from arrivalbench.engines import oracle_engine
from arrivalbench.explain import diagnose_schedule, explain
from arrivalbench.explain.semantics import SHAPES
from arrivalbench.explain.shapes import sequence_by_arrival
from arrivalbench.explain.shapes.boundary_strictness import flipped
from arrivalbench.explain.shapes.oracle_rewrite import parsed
from arrivalbench.explain.shapes.window_off_by_one import moved
from arrivalbench.schedules import Delivery, build_schedule
from arrivalbench.spec import get_task

FIXTURES = Path(__file__).parent / "fixtures" / "explain_shapes"
BUDGET = 180.0
"""Shrinking seconds: a zero balance shrinks slowly (most removals move it), more so under load."""

# label -> (built-in task with that shape, a schedule the bug fails on)
CASES = {
    "distinct_summed": ("daily_distinct_customers", "out_of_order"),
    "kept_rows_only": ("top3_products_daily", "out_of_order"),
    "window_off_by_one": ("rolling_revenue_7d", "in_order_stream"),
    "boundary_strictness": ("overdraft_days", "in_order_stream"),
    "history_by_arrival": ("customer_tier_history", "out_of_order"),
    "sequence_by_arrival": ("web_sessions", "out_of_order"),
}


def script(name: str) -> str:
    return (FIXTURES / f"{name}.sql").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def explained():
    """Each buggy fixture explained once (shrinking on): label -> (Explanation, task, log)."""
    out = {}
    for label, (task_id, schedule_name) in CASES.items():
        task = get_task(task_id)
        schedule, log = build_schedule(task, schedule_name, 0)
        e = explain(task, script(label), schedule, log, budget_seconds=BUDGET)
        out[label] = (e, task, log)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("label", list(CASES))
def test_each_shape_is_named_on_its_minimal_schedule(explained, label: str) -> None:
    e, task, log = explained[label]
    assert e.verdict == "FAIL" and label in e.diagnosis
    assert e.minimal is not None and e.minimal.delivered_rows() < 10
    assert label in diagnose_schedule(task, script(label), e.minimal, log)


@pytest.mark.slow
@pytest.mark.parametrize("label", list(CASES))
def test_each_shape_fixture_gets_no_other_shape_label(explained, label: str) -> None:
    e, _, _ = explained[label]
    assert set(e.diagnosis) & set(SHAPES) == {label}


@pytest.mark.slow
@pytest.mark.parametrize("label", list(CASES))
def test_the_correct_neighbour_passes_and_is_not_labelled(explained, label: str) -> None:
    task_id, schedule_name = CASES[label]
    task = get_task(task_id)
    schedule, log = build_schedule(task, schedule_name, 0)
    neighbour = script(f"{label}.correct")
    assert explain(task, neighbour, schedule, log, shrinking=False).verdict == "PASS"
    e, _, _ = explained[label]
    assert diagnose_schedule(task, neighbour, e.minimal, log) == []


def test_oracle_rewrites_flip_one_comparison_and_move_one_window_bound() -> None:
    """The rewrites come from the task's oracle, not from a pipeline's text."""
    overdraft = parsed(get_task("overdraft_days"))
    flips = {words for node in overdraft.walk() for _, words in flipped(node)}
    assert "`closing_balance < 0` taken as `closing_balance <= 0`" in flips
    rolling = parsed(get_task("rolling_revenue_7d"))
    moves = {words for node in rolling.walk() for _, words in moved(node)}
    assert moves == {"`d.day - 6` taken as `d.day - 5`", "`d.day - 6` taken as `d.day - 7`"}
    frame = parsed(get_task("rolling_orders_3d_modify"))
    assert any("1 preceding" in w.lower() for n in frame.walk() for _, w in moved(n))


def _region_schedule(log, batches: list[list[int]]):
    """A hand-built schedule of region_revenue's log over these spine rows."""
    schedule, _ = build_schedule(get_task("region_revenue"), "in_order_stream", 0)
    deliveries = tuple(Delivery(batch_id=i + 1, rows=tuple(b)) for i, b in enumerate(batches))
    return dataclasses.replace(schedule, deliveries=deliveries, partial=True, perturbation={})


@pytest.fixture(scope="module")
def region():
    """region_revenue's sales s3 < s1 < s2 and a region change c after them, by event time."""
    task = get_task("region_revenue")
    _, log = build_schedule(task, "in_order_stream", 0)
    ts, source = log.ts_micros(), log.spine.source
    sales = sorted(np.flatnonzero(source == 0), key=lambda r: ts[r])
    s3, s1, s2 = (int(r) for r in (sales[0], sales[10], sales[20]))
    assert ts[s3] < ts[s1] < ts[s2]
    c = next(
        int(r) for r in sorted(np.flatnonzero(source == 1), key=lambda r: ts[r]) if ts[r] > ts[s2]
    )
    return task, log, (s3, s1, s2, c)


PER_SOURCE = "region_revenue/controls/sales_watermark.sql"


def _watermark_detail(task, log, path: Path, batches: list[list[int]]) -> tuple[str, dict]:
    e = explain(task, path.read_text(), _region_schedule(log, batches), log, shrinking=False)
    return e.verdict, e.details


@pytest.mark.slow
def test_late_dropped_names_one_watermark_across_all_sources(region) -> None:
    task, log, (_, s1, s2, c) = region
    batches = [[s1, c], [s2]]  # s2 is new for sales, older than the region change c
    verdict, details = _watermark_detail(task, log, FIXTURES / "late_dropped_global.sql", batches)
    assert verdict == "FAIL"
    assert details["late_dropped"].startswith("one watermark across all sources")
    assert "per source" not in details["late_dropped"]
    per_source = task.folder / "controls" / "sales_watermark.sql"
    assert _watermark_detail(task, log, per_source, batches)[0] == "PASS"


@pytest.mark.slow
def test_late_dropped_names_a_watermark_per_source(region) -> None:
    task, log, (s3, s1, s2, c) = region
    batches = [[s1, c], [s2, s3]]  # per source only s3 is late; across sources s2 is too
    per_source = task.folder / "controls" / "sales_watermark.sql"
    verdict, details = _watermark_detail(task, log, per_source, batches)
    assert verdict == "FAIL" and details["late_dropped"].startswith("a watermark per source")
    assert "across all sources" not in details["late_dropped"]
    verdict, details = _watermark_detail(task, log, FIXTURES / "late_dropped_global.sql", batches)
    assert verdict == "FAIL" and "per source" not in details["late_dropped"]


def _daily_revenue_late_rows():
    """daily_revenue's log, three sales a < b < c of one day and a sale e of an earlier day."""
    task = get_task("daily_revenue")
    _, log = build_schedule(task, "in_order_stream", 0)
    ts = log.ts_micros()
    day = ts // 86_400_000_000
    by_day: dict[int, list[int]] = {}
    for r in sorted(range(len(ts)), key=lambda r: ts[r]):
        by_day.setdefault(int(day[r]), []).append(r)
    first, later = sorted(by_day)[0], sorted(by_day)[1]
    a, b, c = by_day[later][0], by_day[later][1], by_day[later][-1]
    assert ts[a] < ts[b] < ts[c]
    return task, log, (by_day[first][0], a, b, c)


def _daily_revenue_schedule(task, batches: list[list[int]]):
    schedule, _ = build_schedule(task, "in_order_stream", 0)
    deliveries = tuple(Delivery(batch_id=i + 1, rows=tuple(b)) for i, b in enumerate(batches))
    return dataclasses.replace(schedule, deliveries=deliveries, partial=True, perturbation={})


def _late_dropped_detail(fixture: str) -> str:
    """b first; then a (older, same day), e (an earlier day) and c (newer): a watermark on event
    times drops a and e, one on closed days drops e alone, one that loads each day once drops all."""
    task, log, (e, a, b, c) = _daily_revenue_late_rows()
    schedule = _daily_revenue_schedule(task, [[b], [a, e, c]])
    script = (FIXTURES / fixture).read_text(encoding="utf-8")
    explained = explain(task, script, schedule, log, shrinking=False)
    assert explained.verdict == "FAIL" and "late_dropped" in explained.diagnosis
    return explained.details["late_dropped"]


@pytest.mark.slow
def test_late_dropped_names_a_watermark_on_closed_days() -> None:
    assert _late_dropped_detail("late_dropped_closed_days.sql") == (
        "a watermark per source, on sales, at day grain (closed days)"
    )


@pytest.mark.slow
def test_an_event_time_watermark_is_not_called_closed_days() -> None:
    assert _late_dropped_detail("late_dropped_event_time.sql") == "a watermark per source, on sales"


WATERMARKS = {
    "per source": "region_revenue/controls/sales_watermark.sql",
    "global": "late_dropped_global.sql",
}


def _watermark_script(kind: str) -> str:
    if kind == "per source":
        return (get_task("region_revenue").folder / "controls" / "sales_watermark.sql").read_text()
    return (FIXTURES / WATERMARKS[kind]).read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def watermarks():
    """Both watermark bugs explained on region_revenue's late_arrival schedule, shrinking on."""
    task = get_task("region_revenue")
    schedule, log = build_schedule(task, "late_arrival", 0)
    return {
        kind: explain(task, _watermark_script(kind), schedule, log, budget_seconds=BUDGET)
        for kind in WATERMARKS
    }


@pytest.mark.slow
def test_regression_late_dropped_tells_a_per_source_watermark_on_a_graded_schedule(
    watermarks,
) -> None:
    """Its minimal schedule (two sales) and the original both fit either watermark, so the
    detail said 'these deliveries do not tell them apart'; a probe (a region change newer than
    a sale, delivered first) tells them apart."""
    e = watermarks["per source"]
    assert e.verdict == "FAIL" and e.diagnosis == ["late_dropped"]
    assert e.details["late_dropped"] == "a watermark per source, on sales"


@pytest.mark.slow
def test_regression_late_dropped_tells_one_watermark_across_sources_on_a_graded_schedule(
    watermarks,
) -> None:
    e = watermarks["global"]
    assert e.verdict == "FAIL" and e.diagnosis == ["late_dropped"]
    assert e.details["late_dropped"] == "one watermark across all sources, on sales"
    assert "(one watermark across all sources, on sales.)" in e.sentence()


@pytest.mark.slow
def test_the_watermarks_correct_neighbour_passes_and_is_not_labelled(watermarks) -> None:
    task = get_task("region_revenue")
    neighbour = script("late_dropped.correct")
    for name in ("late_arrival", "out_of_order"):
        schedule, log = build_schedule(task, name, 0)
        assert explain(task, neighbour, schedule, log, shrinking=False).verdict == "PASS"
    for e in watermarks.values():
        assert diagnose_schedule(task, neighbour, e.minimal, e.log) == []


def test_late_dropped_probes_put_the_newest_event_of_one_source_before_an_older_one_of_another(
    region,
) -> None:
    from arrivalbench.explain.semantics import late_dropped_probes

    _, log, (s3, s1, s2, c) = region
    ts, source = log.ts_micros(), log.spine.source
    probes = list(late_dropped_probes(log, _region_schedule(log, [[s1, c], [s2, s3]])))
    assert probes
    for first, second in probes:
        (y,), (x,) = first.rows, second.rows
        assert source[y] != source[x] and ts[x] < ts[y]
    assert {int(source[p[0].rows[0]]) for p in probes} == {0, 1}


@pytest.mark.slow
def test_grade_names_which_watermark_beside_the_label(cli, tmp_path: Path) -> None:
    """grade's line per FAIL carries the detail the explanation has, decided by the probes."""
    out = {}
    for kind in WATERMARKS:
        pipeline = tmp_path / f"{kind.replace(' ', '_')}.sql"
        pipeline.write_text(_watermark_script(kind), encoding="utf-8")
        done = cli(
            "grade", "--task", "region_revenue", "--pipeline", pipeline,
            "--schedules", "late_arrival",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        out[kind] = done.stdout
    assert (
        "late_arrival: late_dropped (a watermark per source, on sales): An event older"
        in (out["per source"])
    )
    assert (
        "late_arrival: late_dropped (one watermark across all sources, on sales):"
        in (out["global"])
    )


# --- one source or every source: duplicates_counted and arrival_order_wins ------------------------


@pytest.fixture(scope="module")
def copies():
    """region_revenue's sources under an oracle that counts both (copies_per_source.oracle.sql),
    its log, and its first sale s and first customer change c by spine position."""
    task = get_task("region_revenue")
    oracle_sql = (FIXTURES / "copies_per_source.oracle.sql").read_text(encoding="utf-8")
    task = dataclasses.replace(task, oracle_sql=oracle_sql)
    _, log = build_schedule(task, "in_order_stream", 0)
    source = log.spine.source
    s, c = (int(np.flatnonzero(source == i)[0]) for i in (0, 1))
    return task, log, (s, c)


def _copies_detail(copies, fixture: str, batches: list[list[int]]) -> tuple[str, dict]:
    task, log, _ = copies
    script = (FIXTURES / fixture).read_text(encoding="utf-8")
    e = explain(task, script, _region_schedule(log, batches), log, shrinking=False)
    return e.verdict, e.details


@pytest.mark.slow
def test_duplicates_counted_says_one_source_or_every_source(copies) -> None:
    """Both events delivered twice: a pipeline counting the sales' copies alone is told from one
    counting every copy. Before, the label carried no detail on a task with two sources."""
    _, _, (s, c) = copies
    batches = [[s, c], [s, c]]
    verdict, details = _copies_detail(copies, "copies_counted_on_sales.sql", batches)
    assert verdict == "FAIL" and details["duplicates_counted"] == "on sales"
    verdict, details = _copies_detail(copies, "copies_counted_on_every_source.sql", batches)
    assert verdict == "FAIL" and details["duplicates_counted"] == "on every source"
    assert _copies_detail(copies, "copies_counted.correct.sql", batches)[0] == "PASS"


@pytest.mark.slow
def test_duplicates_counted_probes_tell_one_source_from_every_source(copies) -> None:
    """Only the sale delivered twice: both scopes give the pipeline's table, so a probe (one batch:
    each source's first event, and the customer change once more) asks which."""
    _, _, (s, c) = copies
    batches = [[s, c], [s]]
    verdict, details = _copies_detail(copies, "copies_counted_on_sales.sql", batches)
    assert verdict == "FAIL" and details["duplicates_counted"] == "on sales"
    verdict, details = _copies_detail(copies, "copies_counted_on_every_source.sql", batches)
    assert verdict == "FAIL" and details["duplicates_counted"] == "on every source"


@pytest.mark.slow
def test_arrival_order_wins_names_the_source_on_a_task_with_several() -> None:
    """region_revenue's region_last_received takes a customer's last received region: the
    detail names customers, the one keyed source of two."""
    task = get_task("region_revenue")
    schedule, log = build_schedule(task, "out_of_order", 0)
    script = (task.folder / "controls" / "region_last_received.sql").read_text(encoding="utf-8")
    e = explain(task, script, schedule, log, shrinking=False)
    assert e.verdict == "FAIL" and "arrival_order_wins" in e.diagnosis
    assert e.details["arrival_order_wins"] == "on customers"


def test_source_scopes_name_a_source_only_when_the_task_has_several(copies) -> None:
    from arrivalbench.explain.semantics import source_scopes

    _, log, _ = copies
    assert source_scopes(log, [0, 1]) == [({0}, "on sales"), ({1}, "on customers"),
                                          ({0, 1}, "on every source")]  # fmt: skip
    assert source_scopes(log, [1]) == [({1}, "on customers")]
    _, single = build_schedule(get_task("daily_revenue"), "in_order_stream", 0)
    assert source_scopes(single, [0]) == [({0}, None)]


# --- sequence_by_arrival: the counterfactual's table by hand -------------------------------------


@pytest.fixture(scope="module")
def clicks():
    """web_sessions' log and three clicks of one user: a, b at most 30 minutes later, and d more
    than 30 minutes after b."""
    task = get_task("web_sessions")
    _, log = build_schedule(task, "in_order_stream", 0)
    ts, user = log.ts_micros(), log.table.column("user_id").to_pylist()
    minute = 60_000_000
    for a in range(log.n):
        mine = [r for r in range(log.n) if user[r] == user[a]]
        b = next((r for r in mine if 0 < ts[r] - ts[a] <= 30 * minute), None)
        d = next((r for r in mine if b is not None and ts[r] > ts[b] + 30 * minute), None)
        if d is not None:
            return task, log, (a, b, d)
    raise AssertionError("no such clicks in web_sessions' log")


def _sessions(task, log, batches: list[list[int]]):
    """sequence_by_arrival's one table on a hand-built schedule of these spine rows."""
    schedule, _ = build_schedule(task, "in_order_stream", 0)
    deliveries = tuple(Delivery(batch_id=i + 1, rows=tuple(b)) for i, b in enumerate(batches))
    schedule = dataclasses.replace(schedule, deliveries=deliveries, partial=True, perturbation={})
    (counterfactual,) = sequence_by_arrival(task, log, schedule)
    assert counterfactual.detail == "each gap measured to the event received before it"
    return counterfactual.compute(task, oracle_engine())


def _row(log, user: int, start: int, end: int, events: int) -> dict:
    stamp = log.table.column("ts_event").to_pylist()
    return {"user_id": user, "session_start": stamp[start], "session_end": stamp[end],
            "events": events}  # fmt: skip


def test_sequence_by_arrival_measures_each_gap_to_the_click_received_before_it(clicks) -> None:
    """Received a, d, b: d is more than 30 minutes after a (a new session), b is before d (no
    gap: it joins d's session), though by event time a and b are one session and d another."""
    task, log, (a, b, d) = clicks
    user = log.table.column("user_id").to_pylist()[a]
    table = _sessions(task, log, [[a], [d, b], [a]])  # a's copy counts once, at its first arrival
    rows = sorted(table.to_pylist(), key=lambda r: r["session_start"])
    assert rows == [_row(log, user, a, a, 1), _row(log, user, b, d, 2)]


def test_sequence_by_arrival_is_absent_when_arrival_order_is_time_order(clicks) -> None:
    """Nothing to explain: the walk in arrival order is the walk in event-time order."""
    task, log, (a, b, d) = clicks
    assert _sessions(task, log, [[a], [b, d]]) is None
    schedule, _ = build_schedule(task, "in_order_stream", 0)
    (counterfactual,) = sequence_by_arrival(task, log, schedule)
    assert counterfactual.compute(task, oracle_engine()) is None
