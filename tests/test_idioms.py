"""Static idioms on hand-written scripts (each feature present and absent) and on the suite.

Scripts use the `sales` source (`sales_batch`) and the target `daily_revenue` unless they say otherwise.
"""

from __future__ import annotations

import pytest

from arrivalbench.analysis.idioms import FEATURES, Idioms, idioms
from arrivalbench.spec import get_task, load_suite

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
