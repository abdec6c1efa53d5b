"""Arm roles and run indices (analysis/roles.py): recorded in arm_info or inferred, and the options
that choose which arms the tests count."""

from __future__ import annotations

import pytest

from arrivalbench.analysis.roles import arm_roles, infer_role, parse_arms, parse_runs
from arrivalbench.errors import UsageError

UNHINTED = {"model": "m", "prompt_arm": "unhinted"}


@pytest.mark.parametrize(
    ("arm", "info", "role"),
    [
        ("gold", None, "reference"),
        ("controls", None, "reference"),
        ("naive_append", None, "reference"),
        ("batch_only", {}, "reference"),
        ("pk_constraint", None, "reference"),
        ("pk_dedup", None, "reference"),
        ("m-unhinted", UNHINTED, "model"),
        ("m-hint", {"model": "m", "prompt_arm": "hint"}, "intervention"),
        ("m-arch", {"model": "m", "prompt_arm": "arch"}, "intervention"),
        ("m-hint-strong", {"model": "m", "prompt_arm": "hint_strong"}, "intervention"),
        ("imported", None, "model"),
        # a recorded role wins over every inference
        ("gold", {"role": "human"}, "human"),
        ("m-hint", {"prompt_arm": "hint", "role": "model"}, "model"),
    ],
)
def test_role_is_recorded_or_inferred(arm, info, role):
    assert infer_role(arm, info) == role


def test_an_unknown_recorded_role_is_a_usage_error_naming_the_fix():
    with pytest.raises(
        UsageError, match=r"arm 'x': arm_info role 'oracle' is not one of .*manifest"
    ):
        infer_role("x", {"role": "oracle"})


def test_the_second_run_holding_an_arm_is_run_two_unless_recorded():
    roles = arm_roles(
        [
            ("r1", {"m-unhinted": UNHINTED}, ["gold", "m-unhinted"]),
            ("r2", {"m-unhinted": UNHINTED}, ["m-unhinted"]),
            ("r3", {"m-unhinted": {**UNHINTED, "run": 1, "role": "model"}}, ["m-unhinted"]),
        ]
    )
    assert (roles[("r1", "m-unhinted")].run, roles[("r2", "m-unhinted")].run) == (1, 2)
    assert roles[("r3", "m-unhinted")].run == 1 and roles[("r3", "m-unhinted")].recorded
    assert not roles[("r1", "m-unhinted")].recorded
    assert roles[("r1", "gold")].role == "reference"


def test_the_same_arm_name_of_another_model_is_its_own_first_run():
    other = {"model": "n", "prompt_arm": "unhinted"}
    roles = arm_roles(
        [("a", {"unhinted": UNHINTED}, ["unhinted"]), ("b", {"unhinted": other}, ["unhinted"])]
    )
    assert (roles[("a", "unhinted")].run, roles[("b", "unhinted")].run) == (1, 1)


@pytest.mark.parametrize("bad", [0, -1, "2", True, 1.5])
def test_a_recorded_run_that_is_not_a_positive_integer_is_a_usage_error(bad):
    with pytest.raises(UsageError, match="is not a positive integer"):
        arm_roles([("r", {"m": {**UNHINTED, "run": bad}}, ["m"])])


def test_runs_and_arms_options():
    assert parse_runs(None) is None and parse_runs(" ") is None
    assert parse_runs("1, 2") == frozenset({1, 2})
    for bad, phrase in (("one", "separated by commas"), ("0", "start at 1"), (",", "start at 1")):
        with pytest.raises(UsageError, match=phrase):
            parse_runs(bad)
    assert parse_arms(None) is None
    assert parse_arms("a, b,") == ("a", "b")
