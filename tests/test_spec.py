"""Task specs and the suite loader: built-in tasks load, and every broken spec is a one-line SpecError.

Broken tasks are copies of a built-in folder in tmp_path with one defect each, loaded directly
with `load_task(folder)`, so the tests never depend on other suite folders.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
from pathlib import Path

import pytest
from pydantic import ValidationError

from arrivalbench.errors import ArrivalBenchError, SpecError, UnknownNameError, UsageError
from arrivalbench.scaffold import new_task
from arrivalbench.seeds import gate_seeds
from arrivalbench.spec import (
    DEFAULT_FLOAT_TOLERANCE,
    HAZARDS,
    SUITE_DIR,
    SUITE_PATH_ENV,
    TargetSpec,
    Task,
    Tolerance,
    folder_hash,
    get_task,
    load_suite,
    load_task,
    suite_hash,
    suite_path,
    use_suite_dirs,
    user_suite_dirs,
)

STABLE_TASKS = ("daily_revenue", "customer_state")

# ---------------------------------------------------------------------------------------------
# Built-in tasks


@pytest.mark.parametrize("task_id", STABLE_TASKS)
def test_builtin_task_loads_with_its_sql_files(task_id: str) -> None:
    task = load_task(SUITE_DIR / task_id)
    assert isinstance(task, Task)
    assert task.id == task_id == task.folder.name
    assert task.spec.schema_version == 1
    assert "SELECT" in task.oracle_sql.upper()
    assert task.gold_sql.strip()
    assert set(task.controls) == {c.file for c in task.spec.controls} | {
        r.control for r in task.spec.rules
    }
    assert all(text.strip() for text in task.controls.values())
    assert task.spec.mode == "create" and task.existing_sql is None
    assert set(task.spec.hazards) <= set(HAZARDS)
    for control in task.spec.controls:
        assert set(control.fails) <= set(task.spec.hazards)
    assert task.spec.target.key and set(task.spec.target.key) <= set(task.spec.target.columns)
    assert task.spec.source.columns["event_id"] == "BIGINT"
    assert task.spec.source.columns["ts_event"] == "TIMESTAMP"


@pytest.mark.parametrize("task_id", STABLE_TASKS)
def test_get_task_returns_the_builtin_task(task_id: str) -> None:
    task = get_task(task_id)
    assert task.id == task_id
    assert task.folder.resolve() == (SUITE_DIR / task_id).resolve()
    assert task.content_hash() == load_task(SUITE_DIR / task_id).content_hash()


def test_customer_state_declares_its_entity_key() -> None:
    source = get_task("customer_state").spec.source
    assert source.entity_key == "customer_id"
    assert source.evolving_column is None


def test_get_task_unknown_name_suggests_the_closest() -> None:
    with pytest.raises(
        UnknownNameError, match=r"Unknown task 'daily_revenu'\. Did you mean 'daily_revenue'\?"
    ):
        get_task("daily_revenu")


def test_get_task_refuses_a_path_instead_of_an_id() -> None:
    with pytest.raises(UnknownNameError):
        get_task("../suite/daily_revenue")


def test_get_task_unknown_name_says_how_to_add_a_folder_of_tasks() -> None:
    with pytest.raises(UnknownNameError, match=r"--suite-dir DIR"):
        get_task("my_own_task")


# ---------------------------------------------------------------------------------------------
# The suite path: the built-in suite plus the user's folders of task folders


def _old_builtin_hash() -> str:
    """The suite hash of the built-in folder alone, as computed before user folders existed, with
    the gate seeds first (they are part of what a suite admits)."""
    digest = hashlib.sha256()
    digest.update(f"gate_seeds:{gate_seeds()}\n".encode())
    for folder in sorted(p for p in SUITE_DIR.iterdir() if (p / "task.yaml").is_file()):
        digest.update(f"{folder.name}:{folder_hash(folder)}\n".encode())
    return digest.hexdigest()


def test_builtin_suite_hash_is_unchanged_when_no_dir_is_given() -> None:
    assert suite_hash() == suite_hash([]) == _old_builtin_hash()
    assert suite_hash([SUITE_DIR]) == _old_builtin_hash()  # the built-in folder is not added twice
    assert user_suite_dirs() == () and suite_path() == (SUITE_DIR.resolve(),)


def test_load_suite_adds_user_task_folders_and_skips_other_folders(tmp_path: Path) -> None:
    for name in ("mine_b", "mine_a"):
        new_task(name, suite_dir=tmp_path)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("not a task")
    suite = load_suite([tmp_path])
    assert list(suite) == sorted([*load_suite(), "mine_a", "mine_b"])
    assert suite["mine_a"].folder == tmp_path.resolve() / "mine_a"
    assert suite["daily_revenue"].folder.parent == SUITE_DIR.resolve()
    assert get_task("mine_b", [tmp_path]).folder == tmp_path.resolve() / "mine_b"
    assert "mine_a" not in load_suite()
    with pytest.raises(UnknownNameError):
        get_task("mine_a")


def test_suite_hash_covers_the_user_task_folders(tmp_path: Path) -> None:
    builtin = suite_hash()
    new_task("mine", suite_dir=tmp_path)
    with_mine = suite_hash([tmp_path])
    assert with_mine != builtin
    (tmp_path / "mine" / "oracle.sql").write_text("SELECT 1 AS day, 1 AS events\n")
    assert suite_hash([tmp_path]) not in (builtin, with_mine)
    assert suite_hash() == builtin


def test_task_id_in_two_suite_folders_is_an_error_naming_both(copy_task, tmp_path: Path) -> None:
    copy_task("daily_revenue")  # tmp_path/daily_revenue, the built-in id again
    for look_up in (
        lambda: get_task("daily_revenue", [tmp_path]),
        lambda: load_suite([tmp_path]),
        lambda: suite_hash([tmp_path]),
    ):
        with pytest.raises(SpecError) as raised:
            look_up()
        message = str(raised.value)
        assert "'daily_revenue' is defined in two suite folders" in message
        assert f"{SUITE_DIR.resolve()} (built-in)" in message and str(tmp_path.resolve()) in message
        assert "\n" not in message
    assert get_task("customer_state", [tmp_path]).id == "customer_state"  # others still resolve


def test_task_id_in_two_user_folders_is_an_error_naming_both(tmp_path: Path) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    new_task("mine", suite_dir=first)
    new_task("mine", suite_dir=second)
    with pytest.raises(SpecError, match=rf"{first.resolve()} and {second.resolve()}"):
        get_task("mine", [first, second])
    assert get_task("mine", [second]).folder.parent == second.resolve()


def test_a_broken_user_task_does_not_block_its_neighbours(tmp_path: Path) -> None:
    new_task("good", suite_dir=tmp_path)
    new_task("broken", suite_dir=tmp_path)
    (tmp_path / "broken" / "task.yaml").write_text("id: broken\ntitle: [unclosed\n")
    assert get_task("good", [tmp_path]).id == "good"
    assert len(suite_hash([tmp_path])) == 64  # hashing reads bytes, it does not validate
    with pytest.raises(SpecError, match=r"broken/task\.yaml"):
        get_task("broken", [tmp_path])
    with pytest.raises(SpecError, match=r"broken/task\.yaml"):
        load_suite([tmp_path])


@pytest.mark.parametrize(
    ("layout", "phrase"),
    [
        ("missing", "no such folder"),
        ("file", "not a folder"),
        ("empty", "holds no task folder"),
        ("task folder", "is itself a task folder; pass the folder that holds it"),
    ],
)
def test_a_suite_dir_without_tasks_is_one_line(tmp_path: Path, layout: str, phrase: str) -> None:
    where = tmp_path / "dir"
    if layout == "file":
        where.write_text("x")
    elif layout == "empty":
        (where / "not_a_task").mkdir(parents=True)
    elif layout == "task folder":
        where = new_task("mine", suite_dir=tmp_path)
    with pytest.raises(UsageError) as raised:
        get_task("daily_revenue", [where])
    message = str(raised.value)
    assert phrase in message and str(where) in message and "\n" not in message


def test_the_environment_variable_adds_folders(tmp_path: Path, monkeypatch) -> None:
    first, second = tmp_path / "first", tmp_path / "second"
    new_task("one", suite_dir=first)
    new_task("two", suite_dir=second)
    monkeypatch.setenv(SUITE_PATH_ENV, f"{first}{os.pathsep}{os.pathsep}{second}{os.pathsep}")
    assert user_suite_dirs() == (first.resolve(), second.resolve())
    assert {"one", "two"} <= set(load_suite())
    assert suite_hash() == suite_hash([first, second]) != suite_hash([])
    assert user_suite_dirs([]) == ()  # explicit folders replace the environment's
    with pytest.raises(UnknownNameError):
        get_task("one", [])
    monkeypatch.setenv(SUITE_PATH_ENV, str(tmp_path / "nowhere"))
    with pytest.raises(UsageError, match=rf"from {SUITE_PATH_ENV}\): no such folder"):
        get_task("daily_revenue")


def test_use_suite_dirs_puts_flags_before_the_environment_and_drops_repeats(
    tmp_path: Path, monkeypatch
) -> None:
    flag, env = tmp_path / "flag", tmp_path / "env"
    new_task("from_flag", suite_dir=flag)
    new_task("from_env", suite_dir=env)
    monkeypatch.setenv(SUITE_PATH_ENV, f"{env}{os.pathsep}{flag}")
    assert use_suite_dirs([flag, SUITE_DIR]) == (flag.resolve(), env.resolve())
    assert user_suite_dirs() == (flag.resolve(), env.resolve())
    monkeypatch.delenv(SUITE_PATH_ENV)
    assert get_task("from_env").id == "from_env"  # set once, as the CLI does per command
    with pytest.raises(UsageError, match=r"from --suite-dir\): no such folder"):
        use_suite_dirs([tmp_path / "typo"])


def test_types_are_normalised_on_load(copy_task, edit_spec) -> None:
    folder = copy_task()
    edit_spec(
        folder,
        lambda raw: raw["source"]["columns"].update(amount="decimal(12, 2)", store_id="integer"),
    )
    source = load_task(folder).spec.source
    assert source.columns["amount"] == "DECIMAL(12,2)"
    assert source.columns["store_id"] == "INTEGER"


def test_a_number_as_tolerance_means_an_absolute_tolerance(copy_task, edit_spec) -> None:
    folder = copy_task()

    def change(raw: dict) -> None:
        raw["target"]["columns"]["revenue"] = "DOUBLE"
        raw["target"]["tolerance"] = {"revenue": 0.5}

    edit_spec(folder, change)
    target = load_task(folder).spec.target
    assert target.tolerance["revenue"] == Tolerance(abs=0.5, rel=0.0)
    assert target.tolerance_for("revenue") == Tolerance(abs=0.5, rel=0.0)
    assert target.tolerance_for("orders") is None
    assert target.tolerance_for("store_id") is None


def test_float_column_without_declared_tolerance_gets_the_default() -> None:
    target = TargetSpec(
        name="t", columns={"k": "INTEGER", "x": "DOUBLE", "d": "DECIMAL(18,2)"}, key=["k"]
    )
    assert target.tolerance_for("x") == DEFAULT_FLOAT_TOLERANCE
    assert target.tolerance_for("d") is None
    assert target.tolerance_for("k") is None


# ---------------------------------------------------------------------------------------------
# Broken specs: SpecError names the file, the field, what was expected and what was found


SOURCE_FIELD = r"field 'source(?:s\.0)?"
"""A one-source task names its source field 'source' (as written) or 'sources.0' (as normalised)."""


def _load_error(folder: Path) -> str:
    with pytest.raises(SpecError) as info:
        load_task(folder)
    message = str(info.value)
    assert "\n" not in message.strip(), "a spec error is one line"
    return message


def test_spec_error_is_an_arrivalbench_error() -> None:
    assert issubclass(SpecError, ArrivalBenchError)


def test_unknown_field_is_named_with_its_value(copy_task, edit_spec) -> None:
    folder = copy_task()
    edit_spec(folder, lambda raw: raw.update(colour="red"))
    message = _load_error(folder)
    assert str(folder / "task.yaml") in message
    assert "field 'colour'" in message
    assert "unknown field" in message
    assert "'red'" in message


def test_misspelled_field_suggests_the_known_field(copy_task) -> None:
    folder = copy_task()
    path = folder / "task.yaml"
    path.write_text(path.read_text().replace("difficulty_reason:", "dificulty_reason:"))
    message = _load_error(folder)
    assert "Did you mean 'difficulty_reason'" in message


def test_wrong_mode_says_expected_and_found(copy_task, edit_spec) -> None:
    folder = copy_task()
    edit_spec(folder, lambda raw: raw.update(mode="append"))
    message = _load_error(folder)
    assert str(folder / "task.yaml") in message
    assert "field 'mode'" in message
    assert "'create', 'modify' or 'repair'" in message
    assert "found 'append'" in message


def test_unknown_hazard_name_is_refused(copy_task, edit_spec) -> None:
    folder = copy_task()
    edit_spec(folder, lambda raw: raw["hazards"].append("late_arrivals"))
    message = _load_error(folder)
    assert "field 'hazards." in message
    assert "found 'late_arrivals'" in message
    assert "'late_arrival'" in message


def test_hazard_listed_twice_is_refused(copy_task, edit_spec) -> None:
    folder = copy_task()
    edit_spec(folder, lambda raw: raw["hazards"].append("backfill"))
    assert "hazards listed twice" in _load_error(folder)


def test_order_sensitive_is_required(copy_task, edit_spec) -> None:
    folder = copy_task()
    edit_spec(folder, lambda raw: raw.pop("order_sensitive"))
    message = _load_error(folder)
    assert "field 'order_sensitive' is required but missing" in message


def test_order_sensitive_must_be_a_yaml_boolean(copy_task, edit_spec) -> None:
    folder = copy_task()
    edit_spec(folder, lambda raw: raw.update(order_sensitive="no"))
    message = _load_error(folder)
    assert "field 'order_sensitive'" in message
    assert "found 'no'" in message


def test_every_builtin_task_states_its_ordering_semantics() -> None:
    specs = [t.spec for t in load_suite().values()]
    sensitive = {s.id for s in specs if s.order_sensitive}
    assert {"customer_state", "web_sessions", "daily_closing_balance"} <= sensitive
    assert not {"daily_revenue", "store_max_order", "daily_funnel"} & sensitive
    assert all("out_of_order" in s.hazards for s in specs if s.order_sensitive)


def test_key_column_not_in_target_columns(copy_task, edit_spec) -> None:
    folder = copy_task()
    edit_spec(folder, lambda raw: raw["target"].update(key=["store_id", "week"]))
    message = _load_error(folder)
    assert str(folder / "task.yaml") in message
    assert "field 'target'" in message
    assert "key column 'week' is not a target column" in message
    assert "store_id, day, revenue, orders" in message  # what was expected


@pytest.mark.parametrize("column", ["orders", "revenue", "store_id", "day"])
def test_tolerance_on_a_non_float_column_is_refused(copy_task, edit_spec, column: str) -> None:
    folder = copy_task()
    edit_spec(folder, lambda raw: raw["target"].update(tolerance={column: 0.5}))
    message = _load_error(folder)
    assert "field 'target'" in message
    assert f"tolerance on '{column}'" in message
    assert "float columns only" in message


def test_tolerance_on_an_unknown_column_is_refused(copy_task, edit_spec) -> None:
    folder = copy_task()
    edit_spec(folder, lambda raw: raw["target"].update(tolerance={"profit": 0.5}))
    assert "tolerance for unknown column 'profit'" in _load_error(folder)


def test_unsupported_column_type_lists_the_supported_ones(copy_task, edit_spec) -> None:
    folder = copy_task()
    edit_spec(folder, lambda raw: raw["source"]["columns"].update(store_id="INT4"))
    message = _load_error(folder)
    assert re.search(SOURCE_FIELD + r"\.columns'", message)
    assert "'INT4'" in message
    assert "BIGINT" in message and "DECIMAL(p,s)" in message


def test_source_without_event_id_is_refused(copy_task, edit_spec) -> None:
    folder = copy_task()
    edit_spec(folder, lambda raw: raw["source"]["columns"].pop("event_id"))
    message = _load_error(folder)
    assert re.search(SOURCE_FIELD + "'", message)
    assert "event_id BIGINT" in message


def test_missing_oracle_sql(copy_task) -> None:
    folder = copy_task()
    (folder / "oracle.sql").unlink()
    message = _load_error(folder)
    assert str(folder / "oracle.sql") in message
    assert "missing oracle.sql" in message


def test_missing_gold_sql(copy_task) -> None:
    folder = copy_task()
    (folder / "gold.sql").unlink()
    assert f"{folder / 'gold.sql'}: missing gold.sql" in _load_error(folder)


def test_missing_control_file(copy_task) -> None:
    folder = copy_task()
    (folder / "controls" / "dedup_history_only.sql").unlink()
    message = _load_error(folder)
    assert str(folder / "controls" / "dedup_history_only.sql") in message
    assert "missing control" in message


def test_oracle_sql_not_utf8(copy_task) -> None:
    folder = copy_task()
    (folder / "oracle.sql").write_bytes(b"SELECT '\xff\xfe' AS x")
    message = _load_error(folder)
    assert str(folder / "oracle.sql") in message
    assert "not UTF-8" in message


def test_modify_task_needs_existing_sql(copy_task, edit_spec) -> None:
    folder = copy_task()
    edit_spec(folder, lambda raw: raw.update(mode="modify"))
    message = _load_error(folder)
    assert str(folder / "existing.sql") in message
    assert "existing.sql" in message
    (folder / "existing.sql").write_text("SELECT 1;")
    assert load_task(folder).existing_sql == "SELECT 1;"


def test_id_differs_from_folder_name(copy_task) -> None:
    folder = copy_task("daily_revenue", folder_name="revenue_daily")
    message = _load_error(folder)
    assert str(folder / "task.yaml") in message
    assert "field 'id'" in message
    assert "'daily_revenue'" in message and "'revenue_daily'" in message


def test_invalid_yaml_names_the_line(copy_task) -> None:
    folder = copy_task()
    path = folder / "task.yaml"
    lines = path.read_text().splitlines()
    mode_line = next(i for i, line in enumerate(lines) if line.startswith("mode:"))
    lines[mode_line] = "mode: [create"
    path.write_text("\n".join(lines) + "\n")
    message = _load_error(folder)
    assert str(path) in message
    assert "not valid YAML" in message
    # The parser notices the unclosed bracket on the mode line or the one after it.
    assert any(f"line {n}" in message for n in (mode_line + 1, mode_line + 2))


@pytest.mark.parametrize(
    ("text", "found"), [("- a\n- b\n", "list"), ("", "NoneType"), ("just text\n", "str")]
)
def test_yaml_that_is_not_a_mapping(copy_task, text: str, found: str) -> None:
    folder = copy_task()
    (folder / "task.yaml").write_text(text)
    message = _load_error(folder)
    assert "expected a mapping of task fields" in message
    assert f"found {found}" in message


def test_missing_task_yaml(copy_task) -> None:
    folder = copy_task()
    (folder / "task.yaml").unlink()
    assert "missing task.yaml" in _load_error(folder)


def test_control_failing_an_undeclared_hazard(copy_task, edit_spec) -> None:
    folder = copy_task()

    def change(raw: dict) -> None:
        raw["hazards"] = [h for h in raw["hazards"] if h != "out_of_order"]
        raw["controls"][1]["fails"] = ["late_arrival", "out_of_order"]

    edit_spec(folder, change)
    message = _load_error(folder)
    assert str(folder / "task.yaml") in message
    assert "controls/broken_watermark_drop.sql" in message
    assert "['out_of_order']" in message
    assert "not declared" in message


def test_control_failing_an_undeclared_hazard_names_the_controls_field(
    copy_task, edit_spec
) -> None:
    folder = copy_task()

    def change(raw: dict) -> None:
        raw["hazards"] = [h for h in raw["hazards"] if h != "out_of_order"]
        raw["controls"][1]["fails"] = ["late_arrival", "out_of_order"]

    edit_spec(folder, change)
    message = _load_error(folder)
    assert "field 'controls" in message
    assert "found a mapping" not in message


def test_schema_evolution_without_evolving_column(copy_task, edit_spec) -> None:
    folder = copy_task()
    edit_spec(folder, lambda raw: raw["hazards"].append("schema_evolution"))
    message = _load_error(folder)
    assert "schema_evolution" in message and "evolving_column" in message


def test_evolving_column_must_be_a_source_column(copy_task, edit_spec) -> None:
    folder = copy_task()
    edit_spec(folder, lambda raw: raw["source"].update(evolving_column="quantity"))
    message = _load_error(folder)
    assert re.search(SOURCE_FIELD + "'", message)
    assert "evolving_column 'quantity' is not a source column" in message


def test_entity_key_must_be_a_source_column(copy_task, edit_spec) -> None:
    folder = copy_task("customer_state")
    edit_spec(folder, lambda raw: raw["source"].update(entity_key="account_id"))
    message = _load_error(folder)
    assert "entity_key 'account_id' is not a source column" in message


def test_unknown_generator_kind_suggests_the_closest(copy_task, edit_spec) -> None:
    folder = copy_task()
    edit_spec(folder, lambda raw: raw["source"]["generator"].update(kind="sale"))
    message = _load_error(folder)
    assert str(folder / "task.yaml") in message
    assert "field 'source.generator'" in message
    assert "Unknown generator kind 'sale'" in message
    assert "Did you mean 'sales'?" in message


def test_unknown_generator_param_is_refused(copy_task, edit_spec) -> None:
    folder = copy_task()
    edit_spec(folder, lambda raw: raw["source"]["generator"]["params"].update(colour=1))
    message = _load_error(folder)
    assert "field 'source.generator'" in message
    assert "param 'colour'" in message


def test_out_of_range_generator_param_is_refused(copy_task, edit_spec) -> None:
    folder = copy_task()
    edit_spec(folder, lambda raw: raw["source"]["generator"]["params"].update(events=3))
    message = _load_error(folder)
    assert "param 'events'" in message
    assert "found 3" in message


def test_declared_column_the_generator_does_not_produce(copy_task, edit_spec) -> None:
    folder = copy_task()
    edit_spec(folder, lambda raw: raw["source"]["columns"].update(discount="DOUBLE"))
    message = _load_error(folder)
    assert "field 'source.generator'" in message
    assert "does not produce ['discount']" in message
    assert "store_id" in message  # what it does produce


def test_target_spec_refuses_tolerance_on_integer_column_directly() -> None:
    with pytest.raises(ValidationError, match="float columns only"):
        TargetSpec(name="t", columns={"k": "INTEGER", "n": "BIGINT"}, key=["k"], tolerance={"n": 1})


def test_target_spec_needs_a_key() -> None:
    with pytest.raises(ValidationError):
        TargetSpec(name="t", columns={"k": "INTEGER"}, key=[])


# ---------------------------------------------------------------------------------------------
# Content hash


def test_content_hash_is_the_same_for_identical_copies(copy_task, tmp_path: Path) -> None:
    first = load_task(copy_task())
    other = tmp_path / "elsewhere" / "daily_revenue"
    shutil.copytree(first.folder, other)
    assert load_task(other).content_hash() == first.content_hash()
    assert len(first.content_hash()) == 64


@pytest.mark.parametrize(
    "filename", ["gold.sql", "oracle.sql", "task.yaml", "controls/dedup_history_only.sql"]
)
def test_content_hash_changes_when_a_file_changes(copy_task, filename: str) -> None:
    folder = copy_task()
    task = load_task(folder)
    before = task.content_hash()
    path = folder / filename
    path.write_text(
        path.read_text() + "\n-- edited\n"
        if filename.endswith(".sql")
        else path.read_text() + "\n# edited\n"
    )
    assert task.content_hash() != before
    assert load_task(folder).content_hash() != before


def test_content_hash_changes_when_a_file_is_added_or_renamed(copy_task) -> None:
    folder = copy_task()
    task = load_task(folder)
    before = task.content_hash()
    (folder / "notes.md").write_text("x")
    added = task.content_hash()
    assert added != before
    (folder / "notes.md").rename(folder / "notes2.md")
    assert task.content_hash() not in (before, added)


def test_content_hash_ignores_pycache(copy_task) -> None:
    folder = copy_task()
    task = load_task(folder)
    before = task.content_hash()
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "x.pyc").write_bytes(b"\0\1")
    assert task.content_hash() == before


def test_rule_that_does_not_quote_the_description_is_refused(copy_task, edit_spec) -> None:
    folder = copy_task()
    (folder / "controls" / "rule.sql").write_text((folder / "gold.sql").read_text())
    edit_spec(
        folder,
        lambda raw: raw.update(
            rules=[{"rule": "revenue counts refunds", "control": "controls/rule.sql"}]
        ),
    )
    message = _load_error(folder)
    assert "field 'rules'" in message
    assert "'revenue counts refunds') is not a quote of the description" in message


def test_rule_quotes_the_description_whatever_its_line_breaks(copy_task, edit_spec) -> None:
    folder = copy_task()
    (folder / "controls" / "rule.sql").write_text((folder / "gold.sql").read_text())
    quote = "`revenue` is the sum of the order amounts of that store\n   on that day"
    edit_spec(
        folder, lambda raw: raw.update(rules=[{"rule": quote, "control": "controls/rule.sql"}])
    )
    task = load_task(folder)
    assert [r.control for r in task.spec.rules] == ["controls/rule.sql"]
    assert task.controls["controls/rule.sql"] == task.gold_sql
    assert "controls/rule.sql" not in {c.file for c in task.spec.controls}


def test_rule_control_that_is_also_a_negative_control_is_refused(copy_task, edit_spec) -> None:
    folder = copy_task()
    control = "controls/dedup_history_only.sql"
    edit_spec(
        folder,
        lambda raw: raw.update(rules=[{"rule": "one row per store", "control": control}]),
    )
    message = _load_error(folder)
    assert f"rule 0's control {control} is also under 'controls'" in message
