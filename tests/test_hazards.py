"""The schedule vocabulary: one registry, and every other module's names derived from it."""

from __future__ import annotations

import pytest

from arrivalbench import hazards
from arrivalbench.analysis import stats
from arrivalbench.check.runner import CHECK_SCHEDULES
from arrivalbench.leak import scan
from arrivalbench.schedules import REGISTRY as SCHEDULES
from arrivalbench.schedules import default_schedules
from arrivalbench.spec import HAZARDS, LOUD, get_task


def test_groups_are_the_designed_ones():
    assert hazards.BENIGN == ("single_batch", "in_order_stream")
    assert hazards.ORDERING == ("late_arrival", "out_of_order")
    assert hazards.IDEMPOTENCY == ("duplicate_delivery", "crash_retry", "backfill")
    assert hazards.LOUD == ("schema_evolution",)
    assert (*hazards.ORDERING, *hazards.IDEMPOTENCY) == hazards.SILENT
    assert (*hazards.SILENT, *hazards.LOUD) == hazards.HAZARDS
    assert not hazards.is_hazard("snapshot") and not hazards.is_hazard("in_order_stream")
    assert hazards.is_hazard("backfill") and not hazards.is_hazard("no_such_schedule")


def test_every_module_names_the_registry():
    """spec, schedules, statistics and check derive their names from hazards.REGISTRY."""
    assert (HAZARDS, LOUD) == (hazards.HAZARDS, hazards.LOUD)
    assert tuple(SCHEDULES) == hazards.SCHEDULE_NAMES
    assert all(kind.group == hazards.REGISTRY[n].group for n, kind in SCHEDULES.items())
    assert (stats.BENIGN, stats.ORDERING, stats.IDEMPOTENCY, stats.SILENT, stats.LOUD) == (
        hazards.BENIGN,
        hazards.ORDERING,
        hazards.IDEMPOTENCY,
        hazards.SILENT,
        hazards.LOUD,
    )
    assert hazards.SCHEDULE_NAMES[1:] == CHECK_SCHEDULES


def test_default_schedules_are_the_non_hazards_and_the_declared():
    task = get_task("daily_revenue")
    expected = ["snapshot", *hazards.BENIGN, *task.spec.hazards]
    assert default_schedules(task) == expected


@pytest.mark.parametrize("name", hazards.HAZARDS)
def test_every_hazard_name_is_hazard_vocabulary(name):
    assert scan(name), name


def test_regression_check_skips_by_capability_not_by_name():
    """check/runner.py skipped schema_evolution by its name; it now asks the hazard whether it
    needs an evolving column, and only schema_evolution does."""
    needing = [h.name for h in hazards.REGISTRY.values() if h.needs_evolving_column]
    assert needing == ["schema_evolution"]
    assert all(SCHEDULES[n].role.needs_evolving_column == (n in needing) for n in SCHEDULES)
