"""Static idioms on hand-written scripts (each feature present and absent), on the suite, and the guard split.

Scripts use the `sales` source (`sales_batch`) and the target `daily_revenue` unless they say otherwise.
"""

from __future__ import annotations

import pytest
from scipy.stats import binom

from arrivalbench.idioms import (
    FEATURES,
    GuardCell,
    GuardSplit,
    Idioms,
    artifact_idioms,
    binomial_upper_tail,
    guard_cells,
    guard_sign_test,
    guard_split,
    idiom_table,
    idioms,
)
from arrivalbench.spec import get_task, load_suite
from arrivalbench.store import Cell, RunDir, sha256_text, verdict_row

HISTORY = "CREATE TABLE IF NOT EXISTS sales_history (event_id BIGINT, ts_event TIMESTAMP, store_id INTEGER, amount DECIMAL(12,2));\n"
REBUILD = """
CREATE OR REPLACE TABLE daily_revenue AS
SELECT store_id, CAST(ts_event AS DATE) AS day, SUM(amount) AS revenue
FROM sales_history GROUP BY ALL;
"""
# The staging step of the paper's Figure 4: correct against history, blind to a copy in the same batch.
FIGURE_4 = (
    HISTORY
    + """
INSERT INTO sales_history
SELECT b.event_id, b.ts_event, b.store_id, b.amount
FROM sales_batch b
WHERE NOT EXISTS (
  SELECT 1 FROM sales_history h
  WHERE h.event_id = b.event_id);
"""
    + REBUILD
)


def read(
    script: str, sources: tuple[str, ...] = ("sales",), target: str | None = "daily_revenue"
) -> Idioms:
    return idioms(script, sources, target)


def stage(select: str) -> str:
    """A script whose only staging statement inserts `select` into history."""
    return HISTORY + f"INSERT INTO sales_history {select};\n" + REBUILD


def on(found: Idioms) -> set[str]:
    return {name for name in FEATURES if getattr(found, name)}


# -- the guard --------------------------------------------------------------------------------------


def test_figure_4_anti_join_without_batch_dedup_has_no_guard():
    found = read(FIGURE_4)
    assert found.parsed
    assert found.history_antijoin and not found.batch_dedup
    assert not found.guard
    assert on(found) == {"history_antijoin", "full_recompute"}


def test_figure_4_with_the_first_copy_kept_is_guarded():
    script = FIGURE_4.replace(
        "WHERE h.event_id = b.event_id);",
        "WHERE h.event_id = b.event_id)\nQUALIFY row_number() OVER (PARTITION BY b.event_id ORDER BY b._arrival_seq) = 1;",
    )
    found = read(script)
    assert found.history_antijoin and found.batch_dedup and found.row_number_dedup and found.guard


@pytest.mark.parametrize(
    "declaration",
    [
        "CREATE TABLE h (event_id BIGINT PRIMARY KEY, amount DECIMAL(12,2))",
        "CREATE TABLE h (event_id BIGINT, day DATE, PRIMARY KEY (event_id, day))",
        "CREATE TABLE h (event_id BIGINT, CONSTRAINT pk PRIMARY KEY (event_id))",
        "CREATE TABLE h (event_id BIGINT UNIQUE)",
        "CREATE TABLE h (event_id BIGINT, day DATE, UNIQUE (event_id, day))",
        "CREATE UNIQUE INDEX h_event ON h (event_id)",
        "ALTER TABLE h ADD PRIMARY KEY (event_id)",
    ],
)
def test_a_key_declaration_is_a_guard(declaration):
    found = read(declaration + ";\nINSERT INTO h SELECT event_id, amount FROM sales_batch;")
    assert found.key_constraint and found.guard


@pytest.mark.parametrize(
    "declaration",
    [
        "CREATE TABLE h (event_id BIGINT NOT NULL, amount DECIMAL(12,2))",
        "CREATE INDEX h_event ON h (event_id)",
    ],
)
def test_a_column_or_index_without_a_key_is_not_a_guard(declaration):
    found = read(declaration + ";\nINSERT INTO h SELECT event_id, amount FROM sales_batch;")
    assert not found.key_constraint and not found.guard


@pytest.mark.parametrize(
    "statement",
    [
        "MERGE INTO h USING sales_batch b ON h.event_id = b.event_id WHEN NOT MATCHED THEN INSERT VALUES (b.event_id)",
        "INSERT INTO h SELECT event_id FROM sales_batch ON CONFLICT DO NOTHING",
        "INSERT INTO h SELECT event_id FROM sales_batch ON CONFLICT (event_id) DO UPDATE SET n = h.n + 1",
        "INSERT OR IGNORE INTO h SELECT event_id FROM sales_batch",
        "INSERT OR REPLACE INTO h SELECT event_id FROM sales_batch",
    ],
)
def test_an_upsert_is_a_guard(statement):
    found = read(statement, target="h")
    assert found.merge_upsert and found.guard
    assert not found.key_constraint  # the upsert alone carries it


def test_a_plain_insert_is_not_an_upsert():
    assert not read("INSERT INTO h SELECT event_id FROM sales_batch").merge_upsert


# -- batch deduplication ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "select",
    [
        "SELECT DISTINCT ON (event_id) event_id, ts_event, store_id, amount FROM sales_batch ORDER BY event_id, _arrival_seq",
        "SELECT DISTINCT event_id, ts_event, store_id, amount FROM sales_batch",
        "SELECT DISTINCT * EXCLUDE (_arrival_seq, _batch_id) FROM sales_batch",
        "SELECT event_id, any_value(ts_event), max(store_id), arg_max(amount, _arrival_seq) FROM sales_batch GROUP BY event_id",
        "SELECT event_id, ts_event, store_id, amount FROM sales_batch GROUP BY ALL",
        "SELECT event_id, min(ts_event), min(store_id), min(amount) FROM sales_batch GROUP BY 1",
        "SELECT event_id, ts_event, store_id, amount FROM sales_batch "
        "QUALIFY row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) = 1",
        "SELECT event_id, ts_event, store_id, amount FROM sales_batch "
        "QUALIFY row_number() OVER w <= 1 WINDOW w AS (PARTITION BY event_id ORDER BY _arrival_seq)",
        "SELECT event_id, ts_event, store_id, amount FROM ("
        "  SELECT *, row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) AS copy_no FROM sales_batch"
        ") WHERE copy_no = 1",
        "WITH ranked AS (SELECT *, row_number() OVER (PARTITION BY event_id ORDER BY _arrival_seq) AS rn "
        "FROM sales_batch) SELECT event_id, ts_event, store_id, amount FROM ranked WHERE 1 = rn",
        "WITH one AS (SELECT DISTINCT ON (event_id) * FROM sales_batch) SELECT event_id, ts_event, store_id, amount FROM one",
        "SELECT event_id, ts_event, store_id, amount FROM sales_batch UNION SELECT event_id, ts_event, store_id, amount FROM sales_batch",
        "SELECT event_id, ts_event, store_id, amount FROM sales_batch b WHERE NOT EXISTS ("
        "  SELECT 1 FROM sales_batch c WHERE c.event_id = b.event_id AND c._arrival_seq < b._arrival_seq)",
    ],
)
def test_batch_dedup(select):
    found = read(stage(select))
    assert found.batch_dedup and found.guard


@pytest.mark.parametrize(
    ("select", "why"),
    [
        ("SELECT event_id, ts_event, store_id, amount FROM sales_batch", "no dedup at all"),
        ("SELECT DISTINCT * FROM sales_batch", "every row keeps its own _arrival_seq"),
        (
            "SELECT DISTINCT event_id, ts_event, store_id, amount, _arrival_seq FROM sales_batch",
            "same",
        ),
        (
            "SELECT event_id, max(ts_event), max(store_id), sum(amount) FROM sales_batch GROUP BY event_id",
            "sum counts a copy",
        ),
        ("SELECT store_id, count(*) FROM sales_batch GROUP BY store_id", "count counts a copy"),
        (
            "SELECT event_id, ts_event, store_id, amount FROM sales_batch "
            "QUALIFY row_number() OVER (PARTITION BY _arrival_seq) = 1",
            "partitioned by the arrival sequence",
        ),
        (
            "SELECT event_id, ts_event, store_id, amount FROM sales_batch "
            "QUALIFY row_number() OVER (PARTITION BY store_id ORDER BY amount DESC) <= 3",
            "top three, not first",
        ),
        (
            "SELECT event_id, ts_event, store_id, amount FROM sales_batch "
            "WHERE store_id IN (SELECT DISTINCT store_id FROM sales_batch)",
            "DISTINCT only in a predicate",
        ),
        (
            "SELECT b.event_id, b.ts_event, b.store_id, b.amount FROM sales_batch b "
            "JOIN (SELECT DISTINCT store_id FROM sales_batch) s USING (store_id)",
            "a DISTINCT key set joined back to the raw batch",
        ),
        (
            "SELECT store_id, max(ts_event), max(amount) FROM sales_batch GROUP BY store_id",
            "grouped by store, not by event",
        ),
        (
            "SELECT event_id, ts_event, store_id, amount FROM sales_batch b WHERE NOT EXISTS ("
            "  SELECT 1 FROM sales_batch c WHERE c.event_id = b.event_id AND c.ts_event > b.ts_event)",
            "equal copies both survive a strict newer-than test",
        ),
    ],
)
def test_not_batch_dedup(select, why):
    found = read(stage(select))
    assert not found.batch_dedup, why
    assert not found.guard


def test_listing_the_touched_days_is_not_a_guard():
    touched = "CREATE TEMP TABLE touched AS SELECT DISTINCT store_id, CAST(ts_event AS DATE) AS day FROM sales_batch;"
    found = read(FIGURE_4 + touched)
    assert found.history_antijoin and not found.batch_dedup and not found.guard


def test_a_set_of_pairs_is_guarded_by_its_key_not_by_dedup():
    script = (
        "CREATE TABLE IF NOT EXISTS seen (day DATE, user_id INTEGER, PRIMARY KEY (day, user_id));\n"
        "INSERT INTO seen SELECT DISTINCT CAST(ts_event AS DATE), user_id FROM clicks_batch ON CONFLICT DO NOTHING;"
    )
    found = read(script, sources=("clicks",))
    assert not found.batch_dedup and found.key_constraint and found.guard


def test_dedup_of_history_is_not_batch_dedup():
    script = stage("SELECT event_id, ts_event, store_id, amount FROM sales_batch").replace(
        "FROM sales_history GROUP BY ALL",
        "FROM (SELECT DISTINCT ON (event_id) * FROM sales_history) GROUP BY ALL",
    )
    found = read(script)
    assert found.row_number_dedup and not found.batch_dedup and not found.guard


def test_a_naive_history_rebuilt_from_itself_is_history_not_batch():
    script = """
    CREATE TABLE IF NOT EXISTS h AS SELECT * EXCLUDE (_arrival_seq, _batch_id) FROM sales_batch LIMIT 0;
    CREATE OR REPLACE TABLE h AS SELECT * FROM h UNION ALL BY NAME SELECT * EXCLUDE (_arrival_seq, _batch_id) FROM sales_batch;
    CREATE OR REPLACE TABLE daily_revenue AS SELECT DISTINCT store_id FROM h;
    """
    found = read(script)
    assert not found.batch_dedup and found.full_recompute


def test_dedup_of_a_staged_copy_of_the_batch_is_batch_dedup():
    script = """
    CREATE TEMP TABLE staged AS SELECT * FROM sales_batch;
    INSERT INTO h SELECT DISTINCT ON (event_id) event_id, amount FROM staged ORDER BY event_id, _arrival_seq;
    """
    assert read(script).batch_dedup
    star = script.split("INSERT")[0] + "INSERT INTO h SELECT DISTINCT * FROM staged;"
    assert not read(star).batch_dedup  # the staged copy keeps _arrival_seq


def test_the_batch_is_the_given_sources_or_any_batch_table():
    script = "INSERT INTO h SELECT DISTINCT ON (event_id) * FROM orders_batch;"
    assert not read(script, sources=("sales",)).batch_dedup
    assert read(script, sources=("orders",)).batch_dedup
    assert read(script, sources=()).batch_dedup


# -- history anti-join --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "select",
    [
        "SELECT * FROM sales_batch b WHERE NOT EXISTS (SELECT 1 FROM sales_history h WHERE h.event_id = b.event_id)",
        "SELECT * FROM sales_batch WHERE event_id NOT IN (SELECT event_id FROM sales_history)",
        "SELECT b.* FROM sales_batch b LEFT JOIN sales_history h ON h.event_id = b.event_id WHERE h.event_id IS NULL",
        "SELECT b.* FROM sales_batch b ANTI JOIN sales_history h ON h.event_id = b.event_id",
        "SELECT event_id, amount FROM sales_batch EXCEPT ALL SELECT event_id, amount FROM sales_history",
    ],
)
def test_history_antijoin(select):
    found = read(stage(select))
    assert found.history_antijoin and not found.batch_dedup


def test_except_without_all_is_also_a_batch_dedup():
    found = read(
        stage(
            "SELECT event_id, amount FROM sales_batch EXCEPT SELECT event_id, amount FROM sales_history"
        )
    )
    assert found.history_antijoin and found.batch_dedup


@pytest.mark.parametrize(
    "select",
    [
        "SELECT * FROM sales_batch b WHERE EXISTS (SELECT 1 FROM sales_history h WHERE h.event_id = b.event_id)",
        "SELECT b.* FROM sales_batch b LEFT JOIN sales_history h ON h.event_id = b.event_id",
        "SELECT b.* FROM sales_batch b LEFT JOIN sales_history h ON h.event_id = b.event_id WHERE h.event_id IS NOT NULL",
        "SELECT * FROM sales_batch b WHERE NOT EXISTS (SELECT 1 FROM sales_batch c WHERE c.event_id = b.event_id AND c.amount > b.amount)",
        "SELECT * FROM sales_history h WHERE NOT EXISTS (SELECT 1 FROM stores s WHERE s.store_id = h.store_id)",
    ],
)
def test_not_history_antijoin(select):
    assert not read(stage(select)).history_antijoin


def test_deleting_stored_rows_from_a_staged_batch_is_an_antijoin():
    script = """
    CREATE TEMP TABLE fresh AS SELECT * FROM sales_batch;
    DELETE FROM fresh WHERE event_id IN (SELECT event_id FROM sales_history);
    INSERT INTO sales_history SELECT event_id, ts_event, store_id, amount FROM fresh;
    """
    assert read(script).history_antijoin


# -- windows and ROW_NUMBER dedup ----------------------------------------------------------------------


def test_window_functions():
    running = REBUILD.replace("SUM(amount) AS", "SUM(amount) OVER (PARTITION BY store_id) AS")
    assert read(running).window_functions
    named = "SELECT lag(ts_event) OVER w FROM h WINDOW w AS (ORDER BY ts_event)"
    assert read(named).window_functions
    assert not read(FIGURE_4).window_functions


def test_row_number_dedup_anywhere_but_only_first_per_key():
    newest = "SELECT * FROM customer_changes QUALIFY row_number() OVER (PARTITION BY customer_id ORDER BY ts_event DESC) = 1"
    found = read(f"CREATE OR REPLACE TABLE daily_revenue AS {newest};")
    assert found.row_number_dedup and found.window_functions and not found.batch_dedup
    for not_dedup in (newest.replace("= 1", "<= 3"), newest.replace("row_number()", "rank()")):
        assert not read(f"CREATE OR REPLACE TABLE daily_revenue AS {not_dedup};").row_number_dedup


# -- sequence features ------------------------------------------------------------------------------


def test_delete_then_insert_into_the_target():
    script = (
        HISTORY
        + "DELETE FROM daily_revenue WHERE day IN (SELECT CAST(ts_event AS DATE) FROM sales_batch);\n"
        + "INSERT INTO daily_revenue SELECT store_id, CAST(ts_event AS DATE), SUM(amount) FROM sales_history GROUP BY ALL;"
    )
    found = read(script)
    assert found.delete_reinsert and not found.full_recompute  # only the touched days are rebuilt
    assert not read(script, target="other").delete_reinsert
    assert read(script, target=None).delete_reinsert
    backwards = script.split("\n")
    assert not read("\n".join([backwards[0], backwards[2], backwards[1]])).delete_reinsert


@pytest.mark.parametrize(
    "clear",
    ["DELETE FROM daily_revenue", "TRUNCATE daily_revenue", "TRUNCATE TABLE main.daily_revenue"],
)
def test_clearing_the_target_and_refilling_it_from_history_is_a_full_recompute(clear):
    found = read(
        HISTORY
        + clear
        + ";\nINSERT INTO daily_revenue SELECT store_id, SUM(amount) FROM sales_history GROUP BY ALL;"
    )
    assert found.delete_reinsert and found.full_recompute


def test_refilling_from_the_batch_alone_is_not_a_full_recompute():
    found = read(
        "DELETE FROM daily_revenue;\nINSERT INTO daily_revenue SELECT store_id, SUM(amount) FROM sales_batch GROUP BY ALL;"
    )
    assert found.delete_reinsert and not found.full_recompute


def test_insert_or_replace_into_the_target_is_delete_and_reinsert():
    found = read(
        "INSERT OR REPLACE INTO daily_revenue SELECT store_id, SUM(amount) FROM sales_history GROUP BY ALL;"
    )
    assert found.delete_reinsert and found.merge_upsert and not found.full_recompute


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        (REBUILD, True),
        (
            "DROP TABLE IF EXISTS daily_revenue;\nCREATE TABLE daily_revenue AS SELECT * FROM sales_history;",
            True,
        ),
        ("CREATE TABLE IF NOT EXISTS daily_revenue AS SELECT * FROM sales_history;", False),
        (
            "CREATE OR REPLACE TABLE daily_revenue AS SELECT store_id, SUM(amount) FROM sales_batch GROUP BY ALL;",
            False,
        ),
        (
            "CREATE OR REPLACE TABLE daily_revenue AS SELECT * FROM daily_revenue UNION ALL SELECT * FROM sales_batch;",
            False,
        ),
        ("CREATE OR REPLACE TABLE other AS SELECT * FROM sales_history;", False),
    ],
)
def test_full_recompute_by_create_or_replace(script, expected):
    assert read(script).full_recompute is expected


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("BEGIN TRANSACTION;\nDELETE FROM daily_revenue;\nCOMMIT;", True),
        ("BEGIN; DELETE FROM daily_revenue; END;", True),
        ("START TRANSACTION;\nDELETE FROM daily_revenue;\nCOMMIT TRANSACTION;", True),
        ("BEGIN TRANSACTION;\nDELETE FROM daily_revenue;", False),
        ("DELETE FROM daily_revenue;\nCOMMIT;", False),
        ("DELETE FROM daily_revenue;", False),
    ],
)
def test_transaction_needs_begin_then_commit(script, expected):
    assert read(script).transaction is expected


# -- parsing ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "script",
    [
        "this is not SQL at all (((",
        "SELECT 'unterminated FROM sales_batch",
        "INSERT INTO h SELECT * FROM sales_batch WHERE ((( ;",
        "CREATE TYPE mood AS ENUM ('a', 'b');",
        "SELECT * FROM sales_history SAMPLE 10%;",
    ],
)
def test_unparseable_sql_returns_parsed_false_without_raising(script, caplog):
    found = read(script)
    assert not found.parsed
    assert not [r for r in caplog.records if r.name.startswith("sqlglot")]  # no fallback warnings


def test_no_cut_of_a_gold_raises():
    gold = get_task("daily_revenue").gold_sql
    cuts = [gold[:i] for i in range(0, len(gold), 7)] + [gold[i:] for i in range(0, len(gold), 11)]
    cuts += [gold[:i] + "'" + gold[i:] for i in range(0, len(gold), 13)]
    results = [read(cut) for cut in cuts]
    assert any(not r.parsed for r in results) and results[0] == Idioms()


def test_one_unparseable_statement_does_not_lose_the_others():
    script = (
        "CREATE TABLE IF NOT EXISTS h (event_id BIGINT PRIMARY KEY);\n"
        "INSERT INTO h SELECT DISTINCT ON (event_id) event_id FROM sales_batch WHERE ((( ON CONFLICT DO NOTHING;\n"
        "BEGIN; DELETE FROM daily_revenue; INSERT INTO daily_revenue SELECT * FROM h; COMMIT;"
    )
    found = read(script)
    assert not found.parsed
    assert found.key_constraint  # from the tree of the first statement
    assert found.merge_upsert and found.row_number_dedup and found.batch_dedup  # by pattern, second
    assert found.transaction and found.delete_reinsert and found.full_recompute  # trees, after it
    assert not found.history_antijoin and not found.window_functions


def test_fallback_patterns_report_only_what_they_see():
    found = read(
        "INSERT INTO sales_history SELECT * FROM sales_batch b WHERE NOT EXISTS (SELECT 1 FROM sales_history h WHERE ((( ;"
    )
    assert not found.parsed and found.history_antijoin
    assert not (found.batch_dedup or found.key_constraint or found.merge_upsert or found.guard)


def test_semicolons_in_strings_and_comments_do_not_split_statements():
    script = "-- one; two\nINSERT INTO h SELECT DISTINCT ON (event_id) * FROM sales_batch WHERE note <> 'a;b';"
    found = read(script)
    assert found.parsed and found.batch_dedup


def test_empty_script_has_no_features():
    assert read("") == Idioms(parsed=True)
    assert read("-- nothing\n;;") == Idioms(parsed=True)


# -- the suite ----------------------------------------------------------------------------------------


SUITE = load_suite()


def suite_idioms(sql: str, task_id: str) -> Idioms:
    spec = SUITE[task_id].spec
    return idioms(sql, [s.name for s in spec.sources], spec.target.name)


@pytest.mark.parametrize("task_id", sorted(SUITE))
def test_every_gold_control_and_existing_pipeline_parses(task_id):
    task = SUITE[task_id]
    scripts = {"gold": task.gold_sql, **task.controls, "existing": task.existing_sql or ""}
    unparsed = [name for name, sql in scripts.items() if not suite_idioms(sql, task_id).parsed]
    assert unparsed == []


def test_the_history_only_controls_are_the_figure_4_idiom():
    """Every single-source control that dedups against history only: anti-join, no batch dedup."""
    seen = 0
    for task in SUITE.values():
        if "controls/dedup_history_only.sql" in task.controls and len(task.spec.sources) == 1:
            found = suite_idioms(task.controls["controls/dedup_history_only.sql"], task.id)
            assert found.history_antijoin and not found.batch_dedup, task.id
            seen += 1
    assert seen >= 10


def test_a_gold_read_with_its_spec():
    found = suite_idioms(get_task("daily_revenue").gold_sql, "daily_revenue")
    assert on(found) == {
        "key_constraint", "batch_dedup", "window_functions", "row_number_dedup",
        "delete_reinsert", "full_recompute", "merge_upsert", "transaction",
    }  # fmt: skip


# -- runs -------------------------------------------------------------------------------------------


def test_artifact_idioms_and_guard_cells_read_a_stored_run(tmp_path):
    gold = get_task("daily_revenue").gold_sql
    control = get_task("daily_revenue").controls["controls/dedup_history_only.sql"]
    cells = [
        Cell("m", "daily_revenue", 0, sha256_text(gold)),
        Cell("m", "daily_revenue", 1, sha256_text(control)),
        Cell("m", "daily_revenue", 2, sha256_text(gold)),
        Cell("m", "daily_revenue", 3, None, no_artifact_reason="refusal"),
    ]
    run = RunDir.create(
        tmp_path / "run", suite_hash="s", task_hashes={}, base_seed=1, engine="duckdb",
        engine_version="x", config={}, cells=cells, artifacts={sha256_text(t): t for t in (gold, control)},
    )  # fmt: skip
    rows = [
        verdict_row(cells[1], s, 1, {"verdict": v})
        for s, v in (("snapshot", "PASS"), ("duplicate_delivery", "FAIL"))
    ]
    run.append(rows, [{} for _ in rows])
    tasks = {"daily_revenue": get_task("daily_revenue")}

    found = artifact_idioms(run, tasks)
    assert set(found) == {sha256_text(gold), sha256_text(control)}
    assert found[sha256_text(gold)].guard and not found[sha256_text(control)].guard

    by_sample = {c.sample: c for c in guard_cells(run, tasks)}
    assert by_sample[1].verdicts == {"snapshot": "PASS", "duplicate_delivery": "FAIL"}
    assert by_sample[0].verdicts == {} and by_sample[3].artifact_sha256 is None
    assert "duplicate_delivery" in by_sample[1].hazards
    (split,) = [s for s in guard_split(by_sample.values(), found) if s.cells]
    assert (split.guarded, split.cells, split.fail) == (False, 1, 1)


# -- the guard split --------------------------------------------------------------------------------

GUARDED, BARE = "g" * 64, "b" * 64
FOUND = {GUARDED: Idioms(key_constraint=True), BARE: Idioms(history_antijoin=True)}
DECLARED = ("duplicate_delivery", "late_arrival")


def outcome(
    arm: str,
    sample: int,
    sha: str | None,
    hazard: str | None,
    snapshot: str = "PASS",
    declared=DECLARED,
) -> GuardCell:
    verdicts = {"snapshot": snapshot, "late_arrival": "PASS"}
    if hazard is not None:
        verdicts["duplicate_delivery"] = hazard
    return GuardCell(arm, "t", sample, sha, verdicts, declared)


def synthetic() -> list[GuardCell]:
    """Arm a: 6 guarded (2 ERROR, 4 PASS), 4 bare (3 FAIL, 1 PASS), plus five cells that must not count."""
    cells = [outcome("a", i, GUARDED, "ERROR" if i < 2 else "PASS") for i in range(6)]
    cells += [outcome("a", 10 + i, BARE, "FAIL" if i < 3 else "PASS") for i in range(4)]
    cells += [
        outcome("a", 20, BARE, "FAIL", snapshot="FAIL"),  # does not pass the snapshot
        outcome("a", 21, None, None, snapshot="ERROR"),  # no artifact
        outcome("a", 22, BARE, "FAIL", declared=("late_arrival",)),  # hazard not declared
        outcome("a", 23, BARE, None),  # never graded on the hazard
        outcome("b", 0, "x" * 64, "FAIL", snapshot="FAIL"),  # unknown artifact, but filtered first
    ]
    cells.append(outcome("c", 0, BARE, "FAIL"))
    return cells


def test_guard_split_counts_and_rule_of_three():
    splits = {(s.arm, s.guarded): s for s in guard_split(synthetic(), FOUND)}
    assert set(splits) == {("a", True), ("a", False), ("c", True), ("c", False)}
    guarded, bare = splits[("a", True)], splits[("a", False)]
    assert (guarded.cells, guarded.fail, guarded.error) == (6, 0, 2)
    assert (bare.cells, bare.fail, bare.error) == (4, 3, 0)
    assert guarded.fail_rate == 0.0 and guarded.fail_bound == pytest.approx(0.5)  # 3/6
    assert guarded.error_rate == pytest.approx(1 / 3) and guarded.error_bound is None
    assert bare.fail_rate == 0.75 and bare.fail_bound is None
    assert bare.error_bound == pytest.approx(0.75)
    empty = splits[("c", True)]
    assert empty.cells == 0 and empty.fail_rate is None and empty.fail_bound is None


def test_guard_split_names_an_artifact_without_idioms():
    with pytest.raises(ValueError, match=r"no idioms for artifact b{64} of a/t/10"):
        guard_split([outcome("a", 10, BARE, "FAIL")], {})


def arm(name: str, guarded_fail: int, bare_fail: int, cells: int = 10) -> list[GuardSplit]:
    return [
        GuardSplit(name, True, cells, guarded_fail, 0),
        GuardSplit(name, False, cells, bare_fail, 0),
    ]


def test_guard_sign_test_reproduces_twelve_of_thirteen():
    splits = [s for i in range(12) for s in arm(f"m{i:02}", 0, 5)]
    splits += arm("tie", 4, 4)
    splits += arm("small", 9, 0, cells=9)  # a reversal, but below min_cells
    result = guard_sign_test(splits)
    assert (result.wins, result.ties, result.losses, result.trials) == (12, 1, 0, 13)
    assert "small" not in result.arms and len(result.arms) == 13
    assert result.p == pytest.approx(14 / 8192)
    assert result.p == pytest.approx(1.7e-3, abs=1e-4)
    dropped = guard_sign_test(splits, drop_ties=True)
    assert (dropped.trials, dropped.p) == (12, pytest.approx(1 / 4096))
    assert guard_sign_test(splits, min_cells=9).losses == 1


def test_guard_sign_test_on_nothing():
    result = guard_sign_test([])
    assert (result.trials, result.p) == (0, 1.0)


@pytest.mark.parametrize(("k", "n"), [(0, 0), (12, 13), (7, 13), (13, 13), (30, 40)])
def test_binomial_upper_tail_matches_scipy(k, n):
    assert binomial_upper_tail(k, n) == pytest.approx(binom.sf(k - 1, n, 0.5), rel=1e-12)


def test_idiom_table_shares_per_arm():
    cells = [
        Cell("a", "t", 0, GUARDED),
        Cell("a", "t", 1, BARE),
        Cell("a", "t", 2, BARE),
        Cell("a", "t", 3),
    ]
    cells.append(Cell("b", "t", 0, GUARDED))
    (a, b) = idiom_table(cells, FOUND)
    assert (a.arm, a.cells, b.arm, b.cells) == ("a", 3, "b", 1)
    assert a.shares["guard"] == pytest.approx(1 / 3)
    assert a.shares["history_antijoin"] == pytest.approx(2 / 3)
    assert a.shares["parsed"] == 1.0 and b.shares["key_constraint"] == 1.0
    assert set(a.shares) == {*FEATURES, "guard", "parsed"}
