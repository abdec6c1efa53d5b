"""The agent half: prompts and the leak scan, the reply parser, the repair loop, generate and import-scripts."""

from __future__ import annotations

import asyncio
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from arrivalbench.agent.generate import (
    generate,
    import_scripts,
    load_transcripts,
    rerun_no_artifact,
    transcript_path,
)
from arrivalbench.agent.loop import repair_loop
from arrivalbench.agent.models import Model, ReplayModel, Reply, Request
from arrivalbench.agent.parse import parse_response
from arrivalbench.agent.prompts import (
    ARMS,
    WARNED,
    LeakError,
    arm_role,
    arm_sha256,
    build_prompt,
    text,
)
from arrivalbench.errors import UnknownNameError, UsageError
from arrivalbench.leak import scan
from arrivalbench.schedules import SCHEDULE_NAMES
from arrivalbench.spec import get_task, load_suite, load_task
from arrivalbench.store import RunDir, RunStoreError, sha256_text
from arrivalbench.sweep import sweep

GOLD = {t: get_task(t).gold_sql for t in ("daily_revenue", "customer_state")}
# Passes the single-batch test, silently wrong once rows come again: appends every arrival.
NAIVE_DAILY = """```sql
-- one running total per store and day
CREATE TABLE IF NOT EXISTS daily_revenue (store_id INTEGER, day DATE, revenue DECIMAL(18,2), orders BIGINT);
CREATE TABLE IF NOT EXISTS seen AS SELECT * EXCLUDE (_arrival_seq, _batch_id) FROM sales_batch LIMIT 0;
INSERT INTO seen SELECT * EXCLUDE (_arrival_seq, _batch_id) FROM sales_batch;
CREATE OR REPLACE TABLE daily_revenue AS
SELECT store_id, CAST(ts_event AS DATE) AS day, CAST(SUM(amount) AS DECIMAL(18,2)) AS revenue, COUNT(*) AS orders
FROM seen GROUP BY ALL;
```"""
WRONG_DAILY = "Here is my pipeline:\n```sql\nCREATE TABLE IF NOT EXISTS daily_revenue AS SELECT store_id, CAST(ts_event AS DATE) AS day, SUM(amount) AS revenue, COUNT(*) AS orders FROM sales_batch GROUP BY ALL LIMIT 3;\n```\nIt sums revenue."
PROSE = "I would need more details about the schema before writing this pipeline."


def fenced(script: str) -> str:
    return f"Sure.\n\n```sql\n{script}```\n"


# -- prompts and the leak scan ------------------------------------------------------------------


def test_no_prompt_of_a_silent_arm_names_a_hazard() -> None:
    for task in load_suite().values():
        for arm in ARMS:
            prompt = build_prompt(task, arm)
            found = scan(prompt.system) + scan(prompt.user)
            assert (found != []) == (arm in WARNED), (task.id, arm, found)


def test_prompt_carries_the_contract_columns_key_and_test() -> None:
    task = get_task("daily_revenue")
    prompt = build_prompt(task, "unhinted")
    assert "`sales_batch`" in prompt.user
    for needle in (
        "`<source>_batch`",
        "_arrival_seq",
        "_batch_id",
        "CREATE TABLE IF NOT EXISTS",
        "```sql",
    ):
        assert needle in prompt.system
    assert "| `amount` | DECIMAL(12,2) |" in prompt.user
    assert "one row per (`store_id`, `day`)" in prompt.user
    assert "## Test" in prompt.user and task.spec.description.strip() in prompt.user
    assert "Existing pipeline" not in prompt.user
    assert not re.search(r"\bsnapshot\b", prompt.system + prompt.user)


def test_modify_and_repair_prompts_show_the_existing_pipeline() -> None:
    for task in load_suite().values():
        if task.spec.mode in ("modify", "repair"):
            assert (
                task.existing_sql
                and task.existing_sql.strip() in build_prompt(task, "unhinted").user
            )


def test_arms_differ_by_one_paragraph_and_hash() -> None:
    task = get_task("daily_revenue")
    prompts = {arm: build_prompt(task, arm) for arm in ARMS}
    plain = prompts["unhinted"]
    for arm, prompt in prompts.items():
        assert prompt.system == plain.system
        assert prompt.user.startswith(plain.user.rstrip("\n")), arm
    assert "NOTE" in prompts["hint"].user and "NOTE" in prompts["hint_strong"].user
    assert "Stage" in prompts["arch"].user and "Stage" in prompts["arch_guarded"].user
    assert len({p.sha256 for p in prompts.values()}) == len(ARMS) == 5
    assert len({arm_sha256(a) for a in ARMS}) == 5


# Words and phrases that would tell the model to guard against rows arriving together: the
# hazard vocabulary (leak.scan) plus the ways of asking for one row per key from a batch.
WITHIN_BATCH_GUARD = re.compile(
    r"one row per|\bdedup|\bdistinct\b|row_number|\bqualify\b|primary key|\bunique\b|"
    r"on conflict|\bmerge\b|batch itself|within (?:the|a|one) batch|same batch|any_value|"
    r"arg_max|group by|first row|transaction|\bkeyed\b",
    re.IGNORECASE,
)


def test_arch_text_names_no_hazard_and_no_within_batch_dedup() -> None:
    """The arch arm is the paper's: stage into history by event_id, derive the target; it must not
    ask for a guard against rows that arrive together (issue 12: the old text did, so the arm
    could not reproduce the paper's displacement finding)."""
    arch = text("arch.md")
    assert scan(arch) == [] and WITHIN_BATCH_GUARD.findall(arch) == []
    assert "`event_id`" in arch and "history" in arch and "Derive" in arch
    assert "not already" in arch  # the check against stored history stays
    # The pattern is not vacuous: the kept stronger text asks for exactly that guard.
    assert WITHIN_BATCH_GUARD.findall(text("arch_guarded.md"))


def test_hint_is_one_paragraph_at_the_papers_strength() -> None:
    assert "\n\n" not in text("hint.md").strip()
    hint, strong = (" ".join(text(name).split()) for name in ("hint.md", "hint_strong.md"))
    assert len(hint.split()) < 100
    words = {leak.term.lower() for leak in scan(hint)}
    assert {"arrive late", "out of order", "crash", "retried", "backfilled"} <= words
    assert "more than once" in hint and "recomputation over the complete event log" in hint
    # The stronger text spells out where copies land; that stays in hint_strong only.
    assert "in one batch or in two" in strong
    assert "in one batch or in two" not in hint


def test_system_text_states_event_time_and_arrival_metadata() -> None:
    system = build_prompt(get_task("daily_revenue"), "unhinted").system
    assert re.search(r"`ts_event` is event time\b.*logical", system, re.DOTALL)
    assert re.search(
        r"`_arrival_seq` and `_batch_id` are arrival metadata.*physical", system, re.DOTALL
    )


def test_test_paragraph_says_complete_log_in_one_batch_run_once() -> None:
    user = build_prompt(get_task("daily_revenue"), "unhinted").user
    test = " ".join(user[user.index("## Test") :].split())
    assert "complete event log" in test and "one single batch" in test
    assert "executing your script once" in test and "sample of the source rows" not in test


def test_every_prompt_arm_has_a_role() -> None:
    assert {arm: arm_role(arm) for arm in ARMS} == {
        "unhinted": "model",
        "hint": "intervention",
        "arch": "intervention",
        "hint_strong": "intervention",
        "arch_guarded": "intervention",
    }


def test_leak_scan_catches_a_planted_hazard_word(copy_task: Any, edit_spec: Any) -> None:
    folder = copy_task("daily_revenue")
    edit_spec(
        folder, lambda raw: raw.update(description=raw["description"] + "Orders may arrive late.\n")
    )
    task = load_task(folder)
    for arm in ("unhinted", "arch"):
        with pytest.raises(LeakError, match=r"hazard term 'arrive late' on line 7.*reword"):
            build_prompt(task, arm)
    assert "late" in build_prompt(task, "hint").user  # the warned arm may say it


def test_leak_in_feedback_aborts_the_cell_loudly() -> None:
    task = get_task("daily_revenue")

    async def check(task: Any, script: str) -> dict[str, Any]:
        return {
            "verdict": "FAIL",
            "diff": {
                "counts": {"missing": 1},
                "expected_rows": 1,
                "actual_rows": 0,
                "examples": {"missing": [{"note": "replayed"}]},
            },
        }

    model = Scripted({("unhinted", "daily_revenue"): [fenced(GOLD["daily_revenue"])] * 3})
    result = asyncio.run(repair_loop(task, build_prompt(task, "unhinted"), 0, model, check))
    assert result.leak and "replayed" in result.leak
    assert (
        result.script is None
        and result.no_artifact_reason == "leak"
        and result.stop_reason == "leak"
    )
    assert len(result.turns) == 1 and result.turns[0].feedback is None  # never sent


def test_engine_message_is_passed_verbatim_and_exempt_from_the_scan() -> None:
    task = get_task("daily_revenue")
    message = 'Constraint Error: Duplicate key "event_id: 7" violates primary key constraint.'

    async def check(task: Any, script: str) -> dict[str, Any]:
        return {
            "verdict": "ERROR",
            "error_class": "sql_error",
            "statement": 3,
            "batch": 1,
            "message": message,
        }

    model = Scripted({("unhinted", "daily_revenue"): [fenced("SELECT 1;\n")] * 2})
    result = asyncio.run(
        repair_loop(task, build_prompt(task, "unhinted"), 0, model, check, turns=2)
    )
    assert result.leak is None
    assert message in result.turns[0].feedback and "statement 3" in result.turns[0].feedback


# -- the parser -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "script", "rule"),
    [
        ("```sql\nCREATE TABLE t (x INT);\n```", "CREATE TABLE t (x INT);\n", "fenced"),
        (
            "Text first.\n```SQL\n-- keeps history\n/* two */\nINSERT INTO t SELECT 1;\n```\nbye",
            "-- keeps history\n/* two */\nINSERT INTO t SELECT 1;\n",
            "fenced",
        ),
        (
            "Draft:\n```sql\nSELECT 1;\n```\nFinal:\n```duckdb\nCREATE TABLE t AS SELECT 2;\n```",
            "CREATE TABLE t AS SELECT 2;\n",
            "fenced_last_of_2",
        ),
        (
            "```python\nprint(1)\n```\n```\nCREATE TABLE t (x INT);\n```",
            "CREATE TABLE t (x INT);\n",
            "fenced",
        ),
        ("~~~sql\nCREATE TABLE t (x INT);\n~~~", "CREATE TABLE t (x INT);\n", "fenced"),
        (
            "-- bare script\nCREATE TABLE t (x INT);\nINSERT INTO t VALUES (1);",
            "-- bare script\nCREATE TABLE t (x INT);\nINSERT INTO t VALUES (1);\n",
            "bare",
        ),
        (
            "```sql\nCREATE TABLE t (x INT);\nINSERT INTO t SEL",
            "CREATE TABLE t (x INT);\nINSERT INTO t SEL\n",
            "unclosed_fence",
        ),
        (PROSE, None, "no_code"),
        ("```python\nprint('no sql')\n```", None, "no_code"),
        ("```\nThis explains the idea in words.\n```", None, "no_code"),
        ("```sql\n-- nothing yet\n;\n```", None, "no_code"),
        ("", None, "empty"),
        ("   \n", None, "empty"),
    ],
)
def test_parse_response(reply: str, script: str | None, rule: str) -> None:
    parsed = parse_response(reply)
    assert (parsed.script, parsed.rule) == (script, rule)


# -- the repair loop ------------------------------------------------------------------------------


class Scripted:
    """A model answering from per-(arm, task) lists of replies, counting calls."""

    def __init__(self, replies: dict[tuple[str, str], list[Any]]) -> None:
        self.name = "scripted"
        self.replies = replies
        self.requests: list[Request] = []

    async def complete(self, request: Request) -> Reply:
        self.requests.append(request)
        replies = self.replies[(request.arm, request.task)]
        if request.turn > len(replies):
            return Reply(text="", stop="exhausted")
        raw = replies[request.turn - 1]
        return (
            raw
            if isinstance(raw, Reply)
            else Reply(text=raw, input_tokens=100, output_tokens=len(raw) // 4)
        )


def test_loop_feeds_back_and_keeps_the_latest_script() -> None:
    task = get_task("daily_revenue")
    verdicts = iter(["FAIL", "ERROR"])

    async def check(task: Any, script: str) -> dict[str, Any]:
        verdict = next(verdicts)
        if verdict == "ERROR":
            return {
                "verdict": "ERROR",
                "error_class": "timeout",
                "statement": 2,
                "message": "INTERRUPT",
            }
        return {
            "verdict": "FAIL",
            "diff": {
                "counts": {"changed": 1},
                "expected_rows": 5,
                "actual_rows": 5,
                "changed_columns": {"revenue": 1},
                "examples": {
                    "changed": [
                        {
                            "key": {"store_id": 1, "day": "2026-03-04"},
                            "columns": {"revenue": {"expected": "1.00", "actual": "2.00"}},
                        }
                    ]
                },
            },
        }

    model = Scripted(
        {("unhinted", "daily_revenue"): [fenced("SELECT 1;\n"), fenced("SELECT 2;\n"), PROSE]}
    )
    result = asyncio.run(repair_loop(task, build_prompt(task, "unhinted"), 1, model, check))
    assert result.snapshot_by_turn == ("FAIL", "ERROR", "NO_SCRIPT")
    assert (
        result.script == "SELECT 2;\n" and result.no_artifact_reason is None
    )  # the latest script stands
    assert result.temperature == 1.0 and [r.temperature for r in model.requests] == [1.0] * 3
    first, second, third = result.turns
    assert (
        "revenue expected '1.00', found '2.00'" in first.feedback
        and "(columns: revenue)" in first.feedback
    )
    assert "ran out of time" in second.feedback and "INTERRUPT" in second.feedback
    assert third.feedback is None  # nothing is sent after the last turn
    # each turn's request carries the whole conversation so far
    assert [len(r.messages) for r in model.requests] == [2, 4, 6]
    assert model.requests[1].messages[-1].content == first.feedback
    assert result.tokens == sum(100 + len(t.response) // 4 for t in result.turns)
    for turn in result.turns[:2]:
        words = {w.lower() for w in re.findall(r"\w+", turn.feedback)}
        assert not words & set(SCHEDULE_NAMES) and not scan(turn.feedback)


@pytest.mark.parametrize(
    ("reply", "reason", "stop"),
    [
        (Reply(text="I can't help with that.", stop="refusal"), "refusal", "refusal"),
        (Reply(text="Let me think step by step about", stop="length"), "truncated", "length"),
        (Reply(text=""), "empty", "empty"),
        (
            Reply(text="", stop="error", error="RateLimitError: 429 after 5 retries"),
            "model_error",
            "error",
        ),
        (Reply(text=PROSE), "no_code", "stop"),
    ],
)
def test_cells_without_a_script_say_why(reply: Reply, reason: str, stop: str) -> None:
    task = get_task("daily_revenue")

    async def check(task: Any, script: str) -> dict[str, Any]:
        raise AssertionError("no script, no check")

    model = Scripted({("hint", "daily_revenue"): [reply] * 3})
    result = asyncio.run(repair_loop(task, build_prompt(task, "hint"), 0, model, check))
    assert (
        result.script is None and result.no_artifact_reason == reason and result.stop_reason == stop
    )
    assert result.turns[0].response == reply.text
    assert len(result.turns) == (1 if stop == "error" else 3)  # a spent provider is not asked again


# -- generate -> grade-run, end to end ------------------------------------------------------------


class PerArm:
    """One replay file per arm, as recorded runs of three different prompts would be."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.name = "replay-per-arm"
        self.models: dict[str, Model] = {arm: ReplayModel(path) for arm, path in files.items()}

    async def complete(self, request: Request) -> Reply:
        return await self.models[request.arm].complete(request)


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> RunDir:
    folder = tmp_path_factory.mktemp("generated")
    replies = {
        # fixed on turn 2 / never parses
        "unhinted": {
            "daily_revenue": [WRONG_DAILY, fenced(GOLD["daily_revenue"])],
            "customer_state": [PROSE] * 3,
        },
        # silently wrong / right at once
        "hint": {
            "daily_revenue": [NAIVE_DAILY],
            "customer_state": [fenced(GOLD["customer_state"])],
        },
        # refused / an engine error fixed on turn 2
        "arch": {
            "daily_revenue": [{"text": "I can't help with that.", "stop": "refusal"}],
            "customer_state": [
                "```sql\nSELECT * FROM customer_history;\n```",
                fenced(GOLD["customer_state"]),
            ],
        },
    }
    files = {}
    for arm, data in replies.items():
        files[arm] = folder / f"{arm}.json"
        files[arm].write_text(json.dumps(data))
    run = generate(
        PerArm(files),
        arms=list(replies),
        k=2,
        out=folder / "run",
        task_ids=["daily_revenue", "customer_state"],
        turns=3,
        log=lambda line: None,
    )
    sweep(run, workers=1)
    return run


@pytest.mark.slow
def test_generate_records_every_cell_field(generated: RunDir) -> None:
    cells = {c.key: c for c in generated.cells()}
    assert len(cells) == 12
    prompts = {(arm, t): build_prompt(get_task(t), arm).sha256 for arm in ARMS for t in GOLD}
    assert {c.served_model for c in cells.values()} == {None}  # a replay reports no served model
    gold = {t: sha256_text(parse_response(fenced(s)).script) for t, s in GOLD.items()}
    expected = {
        ("unhinted", "daily_revenue"): (gold["daily_revenue"], None, ("FAIL", "PASS"), "stop"),
        ("unhinted", "customer_state"): (None, "no_code", ("NO_SCRIPT",) * 3, "stop"),
        ("hint", "daily_revenue"): (
            sha256_text(parse_response(NAIVE_DAILY).script),
            None,
            ("PASS",),
            "stop",
        ),
        ("hint", "customer_state"): (gold["customer_state"], None, ("PASS",), "stop"),
        ("arch", "daily_revenue"): (None, "refusal", ("NO_SCRIPT",), "refusal"),
        ("arch", "customer_state"): (gold["customer_state"], None, ("ERROR", "PASS"), "stop"),
    }
    for (arm, task), (sha, reason, by_turn, stop) in expected.items():
        for sample in (0, 1):
            cell = cells[(arm, task, sample)]
            assert (
                cell.artifact_sha256,
                cell.no_artifact_reason,
                cell.snapshot_by_turn,
                cell.stop_reason,
            ) == (sha, reason, by_turn, stop), (arm, task, sample)
            assert cell.prompt_sha256 == prompts[(arm, task)]
            assert cell.tokens is None  # replays spend no tokens
    manifest = generated.manifest
    assert manifest["arm_info"]["hint"] == {
        "model": "replay-per-arm",
        "prompt_arm": "hint",
        "prompt_sha256": arm_sha256("hint"),
        "turns": 3,
        "role": "intervention",
        "run": 1,
    }
    assert manifest["arm_info"]["unhinted"]["role"] == "model"
    assert manifest["config"]["generation"]["k"] == 2


def test_transcripts_keep_raw_replies_and_feedback(generated: RunDir) -> None:
    by_key = {(r.arm, r.task, r.sample): r for r in load_transcripts(generated.path)}
    never = by_key[("unhinted", "customer_state", 0)]
    assert [t.response for t in never.turns] == [PROSE] * 3 and never.script is None
    fixed = by_key[("arch", "customer_state", 1)]
    assert fixed.temperature == 1.0 and by_key[("arch", "customer_state", 0)].temperature == 0.0
    assert (
        "customer_history" in fixed.turns[0].feedback
        and "does not exist" in fixed.turns[0].feedback
    )
    wrong = by_key[("unhinted", "daily_revenue", 0)]
    assert "47 expected rows are absent" in wrong.turns[0].feedback
    assert wrong.turns[0].response == WRONG_DAILY
    path = generated.path / "transcripts" / "unhinted" / "customer_state" / "0.json"
    assert json.loads(path.read_text())["turns"][0]["response"] == PROSE


def test_generated_run_grades_pass_fail_and_nothing(generated: RunDir) -> None:
    rows = generated.verdicts().to_pylist()
    verdicts: dict[tuple[str, str, int], dict[str, str]] = {}
    for row in rows:
        verdicts.setdefault((row["arm"], row["task"], row["sample"]), {})[row["schedule"]] = row[
            "verdict"
        ]
    assert set(verdicts[("unhinted", "daily_revenue", 0)].values()) == {"PASS"}  # fixed on turn 2
    silent = verdicts[("hint", "daily_revenue", 0)]
    assert silent["snapshot"] == "PASS" and silent["duplicate_delivery"] == "FAIL"  # silently wrong
    assert "ERROR" not in silent.values()
    assert ("unhinted", "customer_state", 0) not in verdicts  # never parsed: nothing to grade
    assert ("arch", "daily_revenue", 1) not in verdicts


def test_generate_resumes_without_redoing_done_cells(tmp_path: Path) -> None:
    class Crashing(Scripted):
        async def complete(self, request: Request) -> Reply:
            if request.task == "customer_state":
                raise KeyboardInterrupt  # the operator stops the run
            return await super().complete(request)

    replies = {("unhinted", t): [fenced(s)] for t, s in GOLD.items()}
    with pytest.raises(KeyboardInterrupt):
        generate(
            Crashing(replies),
            arms=["unhinted"],
            k=1,
            out=tmp_path / "run",
            concurrency=1,
            task_ids=list(GOLD),
            log=lambda line: None,
        )
    assert not (tmp_path / "run" / "manifest.json").exists()
    assert (tmp_path / "run" / "transcripts" / "unhinted" / "daily_revenue" / "0.json").exists()
    again = Scripted(replies)
    lines: list[str] = []
    run = generate(
        again, arms=["unhinted"], k=1, out=tmp_path / "run", task_ids=list(GOLD), log=lines.append
    )
    assert [r.task for r in again.requests] == ["customer_state"]
    assert lines[0] == "resuming: 1 cells already generated, 1 to go"
    assert len(run.cells()) == 2 and all(c.artifact_sha256 for c in run.cells())
    with pytest.raises(RunStoreError, match="this run is complete"):
        generate(
            Scripted(replies),
            arms=["unhinted"],
            k=1,
            out=tmp_path / "run",
            task_ids=list(GOLD),
            log=lambda line: None,
        )


def test_resume_with_other_settings_is_refused(tmp_path: Path) -> None:
    replies = {("unhinted", t): [fenced(s)] for t, s in GOLD.items()}
    generate(
        Scripted(replies),
        arms=["unhinted"],
        k=1,
        out=tmp_path / "run",
        task_ids=["daily_revenue"],
        log=lambda line: None,
    )
    (tmp_path / "run" / "manifest.json").unlink()  # as if stopped before the end
    with pytest.raises(
        UsageError, match=r"other k, tasks is here; resume it with the same options"
    ):
        generate(
            Scripted(replies),
            arms=["unhinted"],
            k=3,
            out=tmp_path / "run",
            task_ids=list(GOLD),
            log=lambda line: None,
        )


# -- the command line ---------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_generate_with_a_replay_file(cli, tmp_path: Path) -> None:
    replay = tmp_path / "replies.json"
    replay.write_text(json.dumps({"daily_revenue": [fenced(GOLD["daily_revenue"])]}))
    result = cli(
        *[
            "generate",
            "--model",
            f"replay:{replay}",
            "--arm",
            "hint",
            "-k",
            "2",
            "--out",
            str(tmp_path / "run"),
        ],
    )
    assert result.exit_code == 0, result.output
    cells = pq.read_table(tmp_path / "run" / "cells.parquet").to_pylist()
    assert [(c["arm"], c["task"], c["sample"]) for c in cells] == [
        ("hint", "daily_revenue", 0),
        ("hint", "daily_revenue", 1),
    ]
    assert "grade-run" in result.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--model", "replay:/nonexistent.json"], "cannot read the replay file"),
        (["--model", "gpt-4o"], "provider/model"),
        (["--model", "replay:{replay}", "--arm", "hnt"], "Did you mean 'hint'"),
        (
            ["--model", "replay:{replay}", "--tasks", "customer_state"],
            "no replies for task(s) customer_state",
        ),
        (["--model", "replay:{bad}"], "not valid JSON"),
        (["--model", "replay:{replay}", "-k", "0"], "must be at least 1"),
    ],
)
def test_cli_generate_bad_input_is_one_line_exit_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    import subprocess
    import sys

    replay, bad = tmp_path / "r.json", tmp_path / "bad.json"
    replay.write_text(json.dumps({"daily_revenue": ["x"]}))
    bad.write_text("{not json")
    args = [a.format(replay=replay, bad=bad) for a in args]
    proc = subprocess.run(
        [sys.executable, "-m", "arrivalbench.cli", "generate", *args, "--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2, proc.stderr
    assert (
        message in proc.stderr
        and len(proc.stderr.strip().splitlines()) == 1
        and "Traceback" not in proc.stderr
    )


def test_import_scripts_makes_a_human_arm(tmp_path: Path) -> None:
    folder = tmp_path / "human"
    folder.mkdir()
    (folder / "daily_revenue.sql").write_text(GOLD["daily_revenue"])
    (folder / "daily_revenue.1.sql").write_text(parse_response(NAIVE_DAILY).script)
    (folder / "customer_state").mkdir()
    (folder / "customer_state" / "3.sql").write_text(GOLD["customer_state"])
    run = import_scripts(folder, arm="human", out=tmp_path / "run")
    cells = {c.key: c for c in run.cells()}
    assert sorted(cells) == [
        ("human", "customer_state", 3),
        ("human", "daily_revenue", 0),
        ("human", "daily_revenue", 1),
    ]
    assert (
        run.artifact(cells[("human", "daily_revenue", 0)].artifact_sha256) == GOLD["daily_revenue"]
    )
    assert run.manifest["arm_info"]["human"]["model"] == "human"
    (folder / "not_a_task.sql").write_text("SELECT 1;")
    with pytest.raises(UsageError, match=r"not_a_task\.sql: name it"):
        import_scripts(folder, arm="human", out=tmp_path / "run2")


def test_comment_only_artifact_is_an_error_not_a_crashed_sweep(tmp_path: Path) -> None:
    """Regression: a stored script of comments alone stopped grade-run with exit 2 (PipelineInputError)."""
    folder = tmp_path / "human"
    folder.mkdir()
    (folder / "daily_revenue.sql").write_text("-- to do\n;\n")
    run = import_scripts(folder, arm="human", out=tmp_path / "run")
    sweep(run, workers=1)
    rows = run.verdicts().to_pylist()
    assert (
        rows
        and {r["verdict"] for r in rows} == {"ERROR"}
        and {r["error_class"] for r in rows} == {"sql_error"}
    )
    assert "only comments or semicolons" in json.loads(rows[0]["record"])["message"]


def test_the_example_replay_file_in_the_readme_runs(tmp_path: Path) -> None:
    example = Path(__file__).parent.parent / "examples" / "replay.json"
    run = generate(
        ReplayModel(example), arms=["unhinted"], k=1, out=tmp_path / "run", log=lambda line: None
    )
    by_task = {c.task: c.snapshot_by_turn for c in run.cells()}
    assert by_task == {"customer_state": ("PASS",), "daily_revenue": ("FAIL", "PASS")}


def test_out_that_is_a_file_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    """Regression: `generate --out FILE` raised FileExistsError from mkdir."""
    import subprocess
    import sys

    (tmp_path / "taken").write_text("not a run")
    example = Path(__file__).parent.parent / "examples" / "replay.json"
    for command in (
        ["generate", "--model", f"replay:{example}"],
        ["import-scripts", str(tmp_path), "--arm", "h"],
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "arrivalbench.cli", *command, "--out", str(tmp_path / "taken")],
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 2 and "exists and is not a folder" in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1


def test_served_model_and_output_cap_are_recorded_per_cell(tmp_path: Path) -> None:
    replies = {
        ("unhinted", "daily_revenue"): [
            Reply(text=fenced(GOLD["daily_revenue"]), served_model="vendor/model-2026-11-30")
        ]
    }
    run = generate(
        Scripted(replies),
        arms=["unhinted"],
        k=1,
        out=tmp_path / "run",
        task_ids=["daily_revenue"],
        max_tokens=1234,
        run=2,
        log=lambda line: None,
    )
    (cell,) = run.cells()
    assert cell.served_model == "vendor/model-2026-11-30"
    (result,) = load_transcripts(run.path)
    assert result.max_tokens == 1234 and result.turns[0].served_model == cell.served_model
    info = run.manifest["arm_info"]["unhinted"]
    assert (info["role"], info["run"]) == ("model", 2)
    assert run.manifest["config"]["generation"]["max_tokens"] == 1234


@pytest.mark.slow
def test_cli_rerun_no_artifact_asks_again_with_a_higher_cap(cli, tmp_path: Path) -> None:
    replay, out = tmp_path / "replies.json", tmp_path / "run"
    cut = {"text": "First, let us consider what the table", "stop": "length"}
    replay.write_text(json.dumps({"daily_revenue": [cut], "customer_state": [cut]}))
    base = ["generate", "--model", f"replay:{replay}", "--out", str(out)]
    result = cli(*[*base, "-k", "1", "--max-tokens", "100"])
    assert result.exit_code == 0, result.output
    assert {c.no_artifact_reason for c in RunDir.open(out).cells()} == {"truncated"}
    first = (out / "transcripts" / "unhinted" / "daily_revenue" / "0.json").read_text()
    # The same model, now given room: one task answers, the other is cut off again.
    replay.write_text(
        json.dumps({"daily_revenue": [fenced(GOLD["daily_revenue"])], "customer_state": [cut]})
    )
    result = cli(*[*base, "--rerun-no-artifact", "truncated", "--max-tokens", "16000"])
    assert result.exit_code == 0, result.output
    assert "re-ran 2 cells" in result.stdout and "1 cells now without a script" in result.stdout
    run = RunDir.open(out)
    cells = {c.task: c for c in run.cells()}
    assert cells["daily_revenue"].artifact_sha256 == sha256_text(GOLD["daily_revenue"])
    assert cells["customer_state"].no_artifact_reason == "truncated"
    kept = out / "transcripts-superseded" / "unhinted" / "daily_revenue" / "0.1.json"
    assert kept.read_text() == first  # the earlier attempt is kept, not overwritten
    (again,) = [r for r in load_transcripts(out) if r.task == "daily_revenue"]
    assert again.max_tokens == 16000
    assert run.manifest["config"]["reruns"] == [
        {
            "no_artifact_reason": "truncated",
            "max_tokens": 16000,
            "cells": [["unhinted", "customer_state", 0], ["unhinted", "daily_revenue", 0]],
        }
    ]
    sweep(run, workers=1)  # the new script is graded like any other
    assert {r["task"] for r in run.verdicts().to_pylist()} == {"daily_revenue"}


def test_regression_rerun_no_artifact_checked_under_default_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A re-asked cell's snapshot checks ran under the default limits, not the run's own (which
    generate records and grade-run grades with): the model saw other feedback than the first time."""
    from arrivalbench.agent import generate as generating
    from arrivalbench.engines import Limits

    replay = tmp_path / "replies.json"
    replay.write_text(json.dumps({"daily_revenue": [{"text": "no", "stop": "length"}]}))
    limits = Limits(statement_timeout=7.0, memory_limit="768MB")
    model = ReplayModel(replay)
    generate(
        model, arms=["unhinted"], k=1, out=tmp_path / "run", limits=limits, log=lambda line: None
    )
    seen = []
    real = generating.GraderPool
    monkeypatch.setattr(
        generating,
        "GraderPool",
        lambda seed, lim, engine, *rest: seen.append(lim) or real(seed, lim, engine, *rest),
    )
    rerun_no_artifact(model, out=tmp_path / "run", reason="truncated", max_tokens=9000)
    assert seen == [limits]


def test_rerun_no_artifact_with_no_such_cell_lists_the_reasons(tmp_path: Path) -> None:
    replay = tmp_path / "replies.json"
    replay.write_text(json.dumps({"daily_revenue": [{"text": "no", "stop": "refusal"}]}))
    model = ReplayModel(replay)
    generate(model, arms=["unhinted"], k=1, out=tmp_path / "run", log=lambda line: None)
    with pytest.raises(UsageError, match=r"no cell .* reasons present: refusal \(1\)"):
        rerun_no_artifact(model, out=tmp_path / "run", reason="truncated", max_tokens=9000)
    with pytest.raises(UsageError, match=r"no cell .* reasons present: refusal \(1\)"):
        rerun_no_artifact(
            model,
            out=tmp_path / "run",
            reason="refusal",
            max_tokens=9000,
            task_ids=["customer_state"],  # a task whose cells are not the refused one
        )
    other = ReplayModel(tmp_path / "replies.json")
    other.name = "replay:elsewhere"
    with pytest.raises(UsageError, match="generated with 'replay:"):
        rerun_no_artifact(other, out=tmp_path / "run", reason="refusal", max_tokens=9000)


def test_import_scripts_records_the_role(tmp_path: Path) -> None:
    folder = tmp_path / "scripts"
    folder.mkdir()
    (folder / "daily_revenue.sql").write_text(GOLD["daily_revenue"])
    run = import_scripts(folder, arm="humans", out=tmp_path / "run")
    assert run.manifest["arm_info"]["humans"]["role"] == "human"
    run = import_scripts(folder, arm="by_hand", out=tmp_path / "run2", role="reference")
    assert (
        run.manifest["arm_info"]["by_hand"]["role"],
        run.manifest["arm_info"]["by_hand"]["run"],
    ) == ("reference", 1)
    with pytest.raises(UnknownNameError, match=r"Unknown role 'people'"):
        import_scripts(folder, arm="x", out=tmp_path / "run3", role="people")


# -- engines: the prompts name the dialect, the snapshot check and the run use the engine ---------

DUCKDB_ARM_SHA256 = {
    "unhinted": "2d6f3d4ca8ebd0f538115abd1091f4284da96cb5c847757ce1a3860561d597a4",
    "hint": "68b3a24456c137d0d09c6b45441ff5bd3d5577eeaa289174c96b9e0b7dc7f594",
    "arch": "74ec957347a38595e57f694cf82f1546669bce20913f41b54c636d5c3dcbbae3",
    "hint_strong": "1e9c190bae45d581445134be9e59ef78e65c9e8d0d501b88bdd2397085b0b008",
    "arch_guarded": "967d53868381ca196f9b0946692234087b11c83aba158c159945233b838a5796",
}
"""Every arm's template hash before engines were named (ca050ad): stored runs and their
generation plans hold these, so DuckDB's texts must stay byte for byte what they were."""


def test_duckdb_prompt_texts_are_byte_identical_to_the_runs_before_engines() -> None:
    assert {arm: arm_sha256(arm) for arm in ARMS} == DUCKDB_ARM_SHA256
    assert {arm: arm_sha256(arm, "duckdb") for arm in ARMS} == DUCKDB_ARM_SHA256
    task = get_task("balance_repair")
    assert build_prompt(task, "unhinted", "duckdb") == build_prompt(task, "unhinted")
    assert build_prompt(task, "unhinted").system == text("system.md")
    for engine in ("sqlite", "postgres"):  # another engine is another version of every arm
        assert not {arm_sha256(arm, engine) for arm in ARMS} & set(DUCKDB_ARM_SHA256.values())


@pytest.mark.parametrize(
    ("engine", "facts"),
    [
        ("duckdb", ["one DuckDB SQL script", "CREATE OR REPLACE"]),
        (
            "sqlite",
            [
                "one SQLite SQL script",
                "SQLite has no CREATE OR REPLACE",
                "SQLite has no exact DECIMAL",
                "'2024-03-01 14:05:09'",
                "ON CONFLICT",
                "ATTACH, DETACH",
            ],
        ),
        (
            "postgres",
            [
                "one PostgreSQL SQL script",
                "no CREATE OR REPLACE TABLE",
                "NUMERIC(p,s)",
                "ON CONFLICT",
                "There is no INSERT OR REPLACE",
                "COPY, SET and RESET",
            ],
        ),
    ],
)
def test_system_text_names_the_engines_dialect_and_its_facts(engine: str, facts: list[str]) -> None:
    system = build_prompt(get_task("daily_revenue"), "unhinted", engine).system
    for fact in facts:
        assert fact in system, (engine, fact)
    others = {"duckdb": "DuckDB", "sqlite": "SQLite", "postgres": "PostgreSQL"}
    for other, word in others.items():
        assert (word in system) == (other == engine), (engine, word)


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_existing_pipeline_is_shown_in_the_engines_sql(engine: str) -> None:
    from arrivalbench.dialects import script_for

    task = get_task("balance_repair")
    assert task.existing_sql
    shown = script_for(task, "existing.sql", task.existing_sql, engine).strip()
    assert shown != task.existing_sql.strip()
    user = build_prompt(task, "unhinted", engine).user
    assert shown in user and task.existing_sql.strip() not in user


def _sqlite_replies(tmp_path: Path) -> Path:
    """daily_revenue: DuckDB's gold first (SQLite cannot run it), then the gold in SQLite's SQL."""
    from arrivalbench.dialects import script_for

    task = get_task("daily_revenue")
    sqlite_gold = script_for(task, "gold.sql", task.gold_sql, "sqlite")
    replay = tmp_path / "replies.json"
    replay.write_text(
        json.dumps({"daily_revenue": [fenced(task.gold_sql), fenced(sqlite_gold)]}),
        encoding="utf-8",
    )
    return replay


@pytest.mark.slow
def test_cli_generate_on_sqlite_checks_there_records_the_engine_and_grades_on_it(
    cli,
    tmp_path: Path,
) -> None:
    out = tmp_path / "run"
    done = cli(
        "generate", "--model", f"replay:{_sqlite_replies(tmp_path)}", "--engine", "sqlite",
        "-k", "1", "--out", out,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    [cell] = load_transcripts(out)
    assert "one SQLite SQL script" in cell.system
    # The in-loop test ran on SQLite: DuckDB's gold does not run there, SQLite's does.
    assert cell.snapshot_by_turn == ("ERROR", "PASS")
    assert "syntax error" in (cell.turns[0].feedback or "")
    run = RunDir.open(out)
    assert (run.manifest["engine"], run.manifest["engine_version"]) == (
        "sqlite",
        sqlite3.sqlite_version,
    )
    assert run.manifest["config"]["generation"]["engine"] == "sqlite"
    assert run.manifest["arm_info"]["unhinted"]["prompt_sha256"] == arm_sha256("unhinted", "sqlite")

    for command in (["grade-run"], ["regrade", "--verify"]):
        refused = cli(*command, out, "--engine", "duckdb")
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        [line] = refused.stderr.strip().splitlines()
        assert "was made for sqlite (its manifest says so)" in line and "drop --engine" in line
    assert not (out / "verdicts.parquet").exists()  # refused before anything was graded
    rerun = cli(
        "generate", "--model", f"replay:{tmp_path / 'replies.json'}", "--out", out,
        "--rerun-no-artifact", "truncated", "--engine", "postgres",
    )  # fmt: skip
    assert rerun.returncode == 2
    assert "was generated for sqlite (its manifest says so)" in rerun.stderr

    graded = cli("grade-run", out, "--engine", "sqlite")
    assert graded.returncode == 0, graded.stderr
    # SQLite's gold does not even parse on DuckDB: PASS everywhere means it ran on SQLite.
    verdicts = RunDir.open(out).verdicts().to_pylist()
    assert len(verdicts) > 1 and {r["verdict"] for r in verdicts} == {"PASS"}


def test_resuming_a_generation_on_another_engine_is_refused(tmp_path: Path) -> None:
    model = ReplayModel(_sqlite_replies(tmp_path))
    out = tmp_path / "run"
    generate(model, arms=["unhinted"], k=1, out=out, task_ids=["daily_revenue"], engine="sqlite")
    for name in ("manifest.json", "cells.parquet"):  # as if stopped before the run was written
        (out / name).unlink()
    transcript = transcript_path(out, "unhinted", "daily_revenue", 0)
    before = transcript.read_bytes()
    with pytest.raises(UsageError, match="interrupted generation on sqlite is here; resume it "):
        generate(model, arms=["unhinted"], k=1, out=out, task_ids=["daily_revenue"])
    assert transcript.read_bytes() == before  # nothing asked again, nothing rewritten
    again = generate(
        model, arms=["unhinted"], k=1, out=out, task_ids=["daily_revenue"], engine="sqlite"
    )
    assert again.manifest["engine"] == "sqlite"


@pytest.mark.slow
def test_generate_on_postgres_checks_on_the_server_and_records_it(
    tmp_path: Path, postgres_engine: Any
) -> None:
    from arrivalbench.dialects import script_for

    task = get_task("customer_state")
    gold = script_for(task, "gold.sql", task.gold_sql, "postgres")
    replay = tmp_path / "replies.json"
    replay.write_text(json.dumps({"customer_state": [fenced(gold)]}), encoding="utf-8")
    run = generate(
        ReplayModel(replay),
        arms=["unhinted"],
        k=1,
        out=tmp_path / "run",
        task_ids=["customer_state"],
        log=lambda line: None,
        engine="postgres",
    )
    [cell] = load_transcripts(run.path)
    assert "one PostgreSQL SQL script" in cell.system
    assert cell.snapshot_by_turn == ("PASS",)
    assert run.manifest["engine"] == "postgres"
    assert run.manifest["engine_version"] == postgres_engine.version


def test_cli_import_scripts_on_sqlite_records_the_engine_and_grades_on_it(
    cli, tmp_path: Path
) -> None:
    from arrivalbench.dialects import script_for

    task = get_task("daily_revenue")
    folder = tmp_path / "human"
    folder.mkdir()
    (folder / "daily_revenue.sql").write_text(
        script_for(task, "gold.sql", task.gold_sql, "sqlite"), encoding="utf-8"
    )
    out = tmp_path / "run"
    done = cli("import-scripts", folder, "--arm", "human", "--engine", "sqlite", "--out", out)
    assert done.returncode == 0, done.stderr
    assert RunDir.open(out).manifest["engine"] == "sqlite"
    graded = cli("grade-run", out)
    assert graded.returncode == 0, graded.stderr
    # SQLite's gold does not parse on DuckDB: PASS everywhere means it ran on SQLite.
    assert {r["verdict"] for r in RunDir.open(out).verdicts().to_pylist()} == {"PASS"}


def test_regression_import_scripts_sample_of_a_non_ascii_digit_is_one_line(tmp_path: Path) -> None:
    """Regression: `daily_revenue.².sql` passed str.isdigit and crashed int() with a ValueError."""
    from arrivalbench.errors import ArrivalBenchError

    folder = tmp_path / "scripts"
    folder.mkdir()
    (folder / "daily_revenue.².sql").write_text("SELECT 1;\n", encoding="utf-8")
    with pytest.raises(ArrivalBenchError, match="a sample index is a whole number") as e:
        import_scripts(folder, arm="human", out=tmp_path / "run")
    assert "\n" not in str(e.value) and not (tmp_path / "run").exists()


def test_regression_import_scripts_refuses_a_symlinked_host_file(tmp_path: Path) -> None:
    """Regression: import-scripts turned a symlink to a host file into an artifact of the run."""
    from arrivalbench.errors import ArrivalBenchError

    folder = tmp_path / "scripts"
    folder.mkdir()
    host = tmp_path / "host.sql"
    host.write_text("SELECT 'host';\n", encoding="utf-8")
    (folder / "daily_revenue.sql").symlink_to(host)
    with pytest.raises(ArrivalBenchError, match="a symlink"):
        import_scripts(folder, arm="human", out=tmp_path / "run")
    assert not (tmp_path / "run").exists()
