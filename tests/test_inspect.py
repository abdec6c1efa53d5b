"""The Inspect AI adapter, driven offline by Inspect's mockllm: the model wrapper, the task, the import.

Every mock output carries `usage`: without it mockllm counts tokens with tiktoken, which downloads
its encoding.
"""

from __future__ import annotations

import asyncio
import math
import os
import shutil
import subprocess
import sys
from collections import defaultdict
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("inspect_ai")

from inspect_ai import eval as inspect_eval
from inspect_ai import eval_retry as inspect_eval_retry
from inspect_ai.log import EvalLog, write_eval_log
from inspect_ai.model import GenerateConfig, ModelOutput, ModelUsage, get_model, modelapi

from arrivalbench.agent.inspect_import import InspectLogError, import_inspect, import_logs
from arrivalbench.agent.inspect_model import TEMPERATURE_DROPPED, InspectModel
from arrivalbench.agent.inspect_task import NO_ARTIFACT, SCRIPT, TASK_VERSION, TRANSCRIPT
from arrivalbench.agent.models import Message, Request
from arrivalbench.agent.prompts import build_prompt
from arrivalbench.schedules import default_schedules
from arrivalbench.spec import get_task
from arrivalbench.store import RunDir, sha256_text
from arrivalbench.sweep import sweep

pytestmark = pytest.mark.filterwarnings(
    "ignore:The 'initial' parameter is deprecated:DeprecationWarning"
)
SCRIPT_CLI = Path(sys.executable).parent / "arrivalbench"
TASKS = ("daily_revenue", "customer_state")
WRONG = "```sql\nCREATE TABLE daily_revenue AS SELECT 1 AS store_id;\n```"
PROSE = "I would describe the approach in words rather than write the script."


def output(
    text: str,
    stop: str = "stop",
    error: str | None = None,
    usage: tuple[int, int] = (120, 30),
    cached: int | None = None,
) -> ModelOutput:
    out = ModelOutput.from_content("mockllm/model", text, stop_reason=stop, error=error)  # type: ignore[arg-type]
    out.usage = ModelUsage(
        input_tokens=usage[0],
        output_tokens=usage[1],
        total_tokens=sum(usage),
        input_tokens_cache_read=cached,
    )
    return out


def request(temperature: float = 0.0, max_tokens: int = 8000) -> Request:
    return Request(
        task="daily_revenue",
        arm="unhinted",
        sample=0,
        turn=1,
        temperature=temperature,
        max_tokens=max_tokens,
        messages=(Message("system", "be brief"), Message("user", "write it")),
    )


def mock(outputs: Any) -> InspectModel:
    return InspectModel(get_model("mockllm/model", custom_outputs=outputs, memoize=False))


# -- the model wrapper ---------------------------------------------------------------------------


def test_reply_carries_text_usage_and_the_sampling_settings() -> None:
    sent: list[tuple[list[str], GenerateConfig]] = []

    def answer(input, tools, tool_choice, config):
        sent.append(([m.role for m in input], config))
        return output("SELECT 1;", usage=(100, 25), cached=40)

    model = mock(answer)
    reply = asyncio.run(model.complete(request(temperature=1.0, max_tokens=512)))
    assert (reply.text, reply.stop, reply.error, reply.notes) == ("SELECT 1;", "stop", None, ())
    assert (reply.input_tokens, reply.output_tokens) == (140, 25)  # cached input counts as input
    roles, config = sent[0]
    assert roles == ["system", "user"]
    assert (config.temperature, config.max_tokens) == (1.0, 512)
    assert model.name == "mockllm/model"


@pytest.mark.parametrize(
    ("stop", "error", "expected"),
    [
        ("content_filter", "blocked by the provider's filter", "refusal"),
        ("max_tokens", None, "length"),
        ("model_length", None, "length"),
        ("stop", "the provider failed", "error"),
    ],
)
def test_inspect_stop_reasons_map_to_reply_stops(
    stop: str, error: str | None, expected: str
) -> None:
    reply = asyncio.run(
        mock([output("```sql\nCREATE TABLE t AS", stop=stop, error=error)]).complete(request())
    )
    assert reply.stop == expected
    assert reply.error == error
    assert reply.output_tokens == 30


def test_an_exception_after_retries_is_an_error_reply_not_a_raise() -> None:
    def fail(input, tools, tool_choice, config):
        raise RuntimeError("upstream is down")

    reply = asyncio.run(mock(fail).complete(request()))
    assert reply.stop == "error"
    assert "upstream is down" in (reply.error or "")
    assert reply.notes == ()


def test_a_rejected_temperature_is_dropped_once_and_noted() -> None:
    temperatures: list[float | None] = []

    def picky(input, tools, tool_choice, config):
        temperatures.append(config.temperature)
        if config.temperature is not None:
            raise ValueError(
                "Unsupported parameter: 'temperature' is not supported with this model."
            )
        return output("SELECT 1;")

    model = mock(picky)
    first = asyncio.run(model.complete(request(temperature=0.0)))
    second = asyncio.run(model.complete(request(temperature=1.0)))
    assert (first.text, first.stop, second.stop) == ("SELECT 1;", "stop", "stop")
    assert first.notes == second.notes == (TEMPERATURE_DROPPED,)
    assert temperatures == [0.0, None, None]  # retried once, then never sent again


def test_an_unknown_provider_is_one_line_usage_error() -> None:
    from arrivalbench.errors import UsageError

    with pytest.raises(
        UsageError, match=r"--model 'nosuch/model': Inspect could not load it"
    ) as info:
        InspectModel("nosuch/model")
    assert "\n" not in str(info.value)


# -- the task, end to end ------------------------------------------------------------------------


class Scripted:
    """Per task: daily_revenue answers a wrong script, then the gold; customer_state answers prose."""

    def __init__(self) -> None:
        self.gold = (get_task("daily_revenue").folder / "gold.sql").read_text(encoding="utf-8")
        self.temperatures: dict[str, list[float | None]] = defaultdict(list)

    def __call__(self, input, tools, tool_choice, config) -> ModelOutput:
        turn = sum(m.role == "assistant" for m in input) + 1
        task = "daily_revenue" if "Daily revenue per store" in input[1].text else "customer_state"
        self.temperatures[task].append(config.temperature)
        if task == "customer_state":
            return output(PROSE, usage=(200 * turn, 20))
        return output(
            WRONG if turn == 1 else f"Fixed:\n\n```sql\n{self.gold}```",
            usage=(100 * turn, 10 * turn),
        )


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory: pytest.TempPathFactory) -> tuple[EvalLog, Path, Scripted]:
    log_dir = tmp_path_factory.mktemp("inspect-logs")
    scripted = Scripted()
    model = get_model("mockllm/model", custom_outputs=scripted, memoize=False)
    # By registry name, as `inspect eval arrivalbench/arrivalbench -T ...` resolves it.
    [log] = inspect_eval(
        "arrivalbench/arrivalbench",
        model=model,
        task_args={"k": 2, "tasks": ",".join(TASKS), "turns": 2},
        log_dir=str(log_dir),
        display="none",
    )
    return log, log_dir, scripted


@pytest.mark.slow
def test_eval_succeeds_and_stores_each_cell(evaluated: tuple[EvalLog, Path, Scripted]) -> None:
    log, _, _ = evaluated
    assert log.status == "success", log.error
    assert log.samples is not None and len(log.samples) == 4
    gold = (get_task("daily_revenue").folder / "gold.sql").read_text(encoding="utf-8")
    for sample in log.samples:
        transcript = sample.store[TRANSCRIPT]
        assert (transcript["task"], transcript["sample"]) == (
            sample.metadata["task"],
            sample.metadata["sample"],
        )
        if sample.metadata["task"] == "daily_revenue":
            assert sample.store[SCRIPT] == gold
            assert sample.output.completion == gold
        else:
            assert sample.store[SCRIPT] is None
            assert sample.store["arrivalbench:no_artifact_reason"] == "no_code"


def test_temperature_follows_the_sample_index(evaluated: tuple[EvalLog, Path, Scripted]) -> None:
    _, _, scripted = evaluated
    for task in TASKS:  # two samples of two turns each: sample 0 at 0.0, sample 1 at 1.0
        assert sorted(scripted.temperatures[task]) == [0.0, 0.0, 1.0, 1.0]


def test_scores_are_verdict_strings_with_categorical_metrics(
    evaluated: tuple[EvalLog, Path, Scripted],
) -> None:
    log, _, _ = evaluated
    assert log.samples is not None
    for sample in log.samples:
        task = get_task(sample.metadata["task"])
        score = sample.scores["replay"]  # type: ignore[index]
        assert list(score.value) == default_schedules(task)  # type: ignore[arg-type]
        expected = "PASS" if task.id == "daily_revenue" else NO_ARTIFACT
        assert set(score.value.values()) == {expected}  # type: ignore[union-attr]
        if task.id == "daily_revenue":
            assert score.metadata["record"]["verdicts"]["backfill"]["verdict"] == "PASS"  # type: ignore[index]
    assert log.results is not None
    [eval_score] = log.results.scores
    metrics = {name: m.value for name, m in eval_score.metrics.items()}
    # summary's metrics, first the gap: the gold passes everything, the prose has no script
    assert list(metrics)[:5] == ["gap", "gap_stderr", "snapshot_pass", "error", "all_in"]
    assert metrics["gap"] == 0.0  # one usable task (daily_revenue), silently wrong in none
    assert math.isnan(metrics["gap_stderr"])  # one task: no spread to measure
    assert metrics["snapshot_pass"] == 0.5  # mean over two tasks of 1.0 and 0.0
    assert metrics["error"] == 0.5  # a cell without a script counts as an error
    assert metrics["all_in"] == 0.5  # all-in *failure*, as in summary
    assert metrics["snapshot"] == metrics["backfill"] == 0.5  # per-schedule pass shares follow
    assert log.eval.task_version == TASK_VERSION


def test_inspect_metrics_equal_summary_of_the_imported_run(
    evaluated: tuple[EvalLog, Path, Scripted], tmp_path: Path
) -> None:
    """The log's numbers and `summary`'s are one computation: import, grade, compare."""
    from arrivalbench.analysis.stats import rate, run_outcomes

    log, log_dir, _ = evaluated
    run = import_inspect(log_dir, tmp_path / "run")
    sweep(RunDir.open(run.path), workers=1)
    cells = run_outcomes(RunDir.open(run.path))
    assert log.results is not None
    metrics = {name: m.value for name, m in log.results.scores[0].metrics.items()}
    for name in ("gap", "snapshot_pass", "error", "all_in"):
        assert rate(cells, name) == {"unhinted": metrics[name]}, name


def test_import_builds_a_run_that_grades(
    evaluated: tuple[EvalLog, Path, Scripted], tmp_path: Path
) -> None:
    _, log_dir, _ = evaluated
    run = import_inspect(log_dir, tmp_path / "run")
    gold = (get_task("daily_revenue").folder / "gold.sql").read_text(encoding="utf-8")
    cells = {(c.task, c.sample): c for c in run.cells()}
    assert set(cells) == {(t, s) for t in TASKS for s in (0, 1)}
    for sample in (0, 1):
        fixed, prose = cells["daily_revenue", sample], cells["customer_state", sample]
        assert fixed.arm == prose.arm == "unhinted"
        assert fixed.artifact_sha256 == sha256_text(gold)
        assert fixed.snapshot_by_turn == ("FAIL", "PASS")
        assert fixed.tokens == (100 + 10) + (200 + 20)
        assert (fixed.stop_reason, fixed.no_artifact_reason) == ("stop", None)
        assert fixed.prompt_sha256 == build_prompt(get_task("daily_revenue"), "unhinted").sha256
        assert fixed.served_model == "mockllm/model"  # the id the provider reported serving
        assert (prose.artifact_sha256, prose.no_artifact_reason) == (None, "no_code")
        assert prose.snapshot_by_turn == ("NO_SCRIPT", "NO_SCRIPT")
        assert prose.tokens == (200 + 20) + (400 + 20)
    assert run.artifact(sha256_text(gold)) == gold
    assert (run.path / "transcripts" / "unhinted" / "customer_state" / "1.json").is_file()
    manifest = run.manifest
    assert manifest["arm_info"]["unhinted"]["model"] == "mockllm/model"
    assert manifest["arm_info"]["unhinted"]["turns"] == 2
    assert (manifest["arm_info"]["unhinted"]["role"], manifest["arm_info"]["unhinted"]["run"]) == (
        "model",
        1,
    )

    # The scorer's verdicts are kept: the two cells with a script are graded already.
    schedules = default_schedules(get_task("daily_revenue"))
    rows = run.verdicts().to_pylist()
    assert {(r["task"], r["sample"], r["schedule"]) for r in rows} == {
        ("daily_revenue", s, schedule) for s in (0, 1) for schedule in schedules
    }
    assert {r["verdict"] for r in rows} == {"PASS"}
    report = sweep(RunDir.open(run.path), workers=1)
    assert report.units == 0  # nothing left to grade


@pytest.mark.slow
def test_kept_verdicts_are_what_grade_run_writes(
    evaluated: tuple[EvalLog, Path, Scripted], tmp_path: Path
) -> None:
    """Byte for byte: `import-inspect --verify` re-grades every cell into a scratch copy."""
    _, log_dir, _ = evaluated
    command = (
        [str(SCRIPT_CLI)] if SCRIPT_CLI.exists() else [sys.executable, "-m", "arrivalbench.cli"]
    )
    done = subprocess.run(
        [*command, "import-inspect", str(log_dir), "--out", str(tmp_path / "run"), "--verify"],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "300"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    rows = 2 * len(default_schedules(get_task("daily_revenue")))
    assert f"{rows} verdicts kept from the scorer" in done.stdout
    assert f"all {rows} kept verdicts reproduced byte for byte" in done.stdout


def test_a_private_import_keeps_no_scorer_verdict(
    evaluated: tuple[EvalLog, Path, Scripted], tmp_path: Path
) -> None:
    """The scorer graded the public hidden logs; a private run's come from its secret."""
    _, log_dir, _ = evaluated
    run = import_inspect(log_dir, tmp_path / "run", seed_commitment="ab" * 32)
    assert run.verdicts().num_rows == 0


def test_import_refuses_an_unfinished_log(
    evaluated: tuple[EvalLog, Path, Scripted], tmp_path: Path
) -> None:
    log, _, _ = evaluated
    broken = tmp_path / "logs" / "broken.eval"
    broken.parent.mkdir()
    write_eval_log(log.model_copy(update={"status": "error"}), str(broken))
    with pytest.raises(InspectLogError, match=r"broken\.eval: status 'error', not 'success'"):
        import_inspect(broken.parent, tmp_path / "run")
    assert not (tmp_path / "run" / "manifest.json").exists()


def test_import_refuses_a_cell_in_two_logs(
    evaluated: tuple[EvalLog, Path, Scripted], tmp_path: Path
) -> None:
    _, log_dir, _ = evaluated
    [original] = [p for p in log_dir.iterdir() if p.suffix == ".eval"]
    twice = tmp_path / "twice"
    twice.mkdir()
    shutil.copy(original, twice / "a.eval")
    shutil.copy(original, twice / "b.eval")
    with pytest.raises(InspectLogError, match=r"cell unhinted/\w+/\d is also in"):
        import_inspect(twice, tmp_path / "run")


@pytest.mark.slow
def test_cli_import_inspect_errors_in_one_line(tmp_path: Path) -> None:
    command = (
        [str(SCRIPT_CLI)] if SCRIPT_CLI.exists() else [sys.executable, "-m", "arrivalbench.cli"]
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    done = subprocess.run(
        [*command, "import-inspect", str(empty), "--out", str(tmp_path / "run")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "300"},
    )
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0
    assert "no Inspect logs" in done.stderr


# -- model errors fail the sample, and eval-retry finishes it ------------------------------------


class Flaky:
    """Gold for daily_revenue, but the very first call fails as an API outage would."""

    def __init__(self) -> None:
        self.calls = 0
        self.caps: set[int | None] = set()
        self.gold = (get_task("daily_revenue").folder / "gold.sql").read_text(encoding="utf-8")

    def __call__(self, input, tools, tool_choice, config) -> ModelOutput:
        self.calls += 1
        self.caps.add(config.max_tokens)
        if self.calls == 1:
            raise RuntimeError("503 upstream unavailable")
        return output(f"```sql\n{self.gold}```")


FLAKY = Flaky()


@modelapi(name="flaky")
def flaky_api() -> type:
    from inspect_ai.model._providers.mockllm import MockLLM

    class FlakyLLM(MockLLM):
        def __init__(self, model_name: str, **kwargs: Any) -> None:
            super().__init__(model_name, custom_outputs=FLAKY, **kwargs)

    return FlakyLLM


@pytest.mark.slow
def test_a_model_error_fails_the_sample_and_eval_retry_completes_it(tmp_path: Path) -> None:
    """Regression: a model error became a cell without a script in a log marked success, so
    `inspect eval-retry` had nothing to rerun and the import kept a `model_error` cell."""
    FLAKY.calls = 0
    args = {"k": 2, "tasks": "daily_revenue", "turns": 1, "max_tokens": 1234, "run": 2}
    [log] = inspect_eval(
        "arrivalbench/arrivalbench",
        model="flaky/model",
        task_args=args,
        log_dir=str(tmp_path / "logs"),
        display="none",
        max_retries=0,
    )
    assert log.status == "error"  # not a success with a cell quietly missing its script
    assert log.samples is not None
    errors = [s.error.message for s in log.samples if s.error is not None]
    assert any("503 upstream unavailable" in e for e in errors), errors
    with pytest.raises(InspectLogError, match=r"not .success.; finish it with .inspect eval-retry"):
        import_inspect(tmp_path / "logs", tmp_path / "early")
    [retried] = inspect_eval_retry(log, log_dir=str(tmp_path / "retried"), display="none")
    assert retried.status == "success", retried.error
    assert retried.samples is not None and all(s.error is None for s in retried.samples)
    run = import_inspect(tmp_path / "retried", tmp_path / "run")
    assert {c.no_artifact_reason for c in run.cells()} == {None}
    assert len(run.cells()) == 2
    assert FLAKY.caps == {1234}  # -T max_tokens reaches every call
    assert run.manifest["arm_info"]["unhinted"]["run"] == 2  # -T run is the arm's replicate


# -- registration and the import path ------------------------------------------------------------


def test_entry_point_names_the_package() -> None:
    [point] = [ep for ep in entry_points(group="inspect_ai") if ep.name == "arrivalbench"]
    assert point.value == "arrivalbench.agent._registry"
    assert point.load().arrivalbench.__name__ == "arrivalbench"


def test_core_modules_do_not_import_inspect() -> None:
    code = (
        "import sys, arrivalbench, arrivalbench.cli, arrivalbench.agent.generate, arrivalbench.agent.loop; "
        "print('inspect_ai' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_eval_yaml_lists_the_registered_task_at_its_version() -> None:
    """The inspect_evals-style listing must name the real task, its version and sample count."""
    import inspect as pyinspect

    import yaml

    from arrivalbench.agent import inspect_task
    from arrivalbench.spec import load_suite

    listing = yaml.safe_load(
        (Path(inspect_task.__file__).parent / "eval.yaml").read_text(encoding="utf-8")
    )
    assert {"title", "description", "group", "contributors", "version", "tasks"} <= set(listing)
    assert listing["version"].split("-")[0] == str(TASK_VERSION)
    [entry] = listing["tasks"]
    [point] = [ep for ep in entry_points(group="inspect_ai") if ep.name == "arrivalbench"]
    assert hasattr(point.load(), entry["name"])
    k = pyinspect.signature(inspect_task.arrivalbench).parameters["k"].default
    assert entry["dataset_samples"] == len(load_suite()) * k == 200


def test_the_inspect_extra_is_a_range_inspect_evals_can_share() -> None:
    """Regression: the extra pinned inspect-ai==0.3.285, so it could not be installed beside
    inspect_evals (which asks inspect_ai >= 0.3.245 and moves with Inspect)."""
    import tomllib

    project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    extras = project["project"]["optional-dependencies"]
    for extra in ("inspect", "dev"):
        [pin] = [d for d in extras[extra] if d.startswith("inspect-ai")]
        assert pin == "inspect-ai>=0.3.285,<0.4", (extra, pin)


def test_metrics_over_two_tasks_follow_summary_definitions() -> None:
    """One silently wrong task and one right one: gap 0.5 with stderr 0.5 over tasks; a crash on
    a hazard leaves the gap's denominator but counts as error and all-in failure."""
    from inspect_ai.scorer import SampleScore, Score

    from arrivalbench.agent.inspect_task import CELL, all_in, error, gap, gap_stderr, snapshot_pass

    def scored(task: str, sample: int, verdicts: dict[str, str]) -> SampleScore:
        cell = {
            "task": task,
            "arm": "unhinted",
            "sample": sample,
            "artifact_sha256": "ab" * 32,
            "no_artifact_reason": None,
            "snapshot_by_turn": ["PASS"],
            "error_classes": {s: "sql_error" for s, v in verdicts.items() if v == "ERROR"},
        }
        return SampleScore(score=Score(value=verdicts, metadata={CELL: cell}), sample_id=sample)

    def verdicts(task: str, **changed: str) -> dict[str, str]:
        return {s: changed.get(s, "PASS") for s in default_schedules(get_task(task))}

    scores = [
        scored("daily_revenue", 0, verdicts("daily_revenue", duplicate_delivery="FAIL")),
        scored("daily_revenue", 1, verdicts("daily_revenue", backfill="FAIL")),
        scored("customer_state", 0, verdicts("customer_state")),
        scored("customer_state", 1, verdicts("customer_state", crash_retry="ERROR")),
    ]
    assert gap()(scores) == 0.5  # task rates 1.0 and 0.0; the crashed cell is not usable
    assert gap_stderr()(scores) == pytest.approx(0.5)  # sd 0.7071 over sqrt(2) tasks
    assert snapshot_pass()(scores) == 1.0
    assert error()(scores) == 0.25  # task rates 0.0 and 0.5
    assert all_in()(scores) == 0.75  # task rates 1.0 and 0.5


# -- on another engine ---------------------------------------------------------------------------


@pytest.mark.slow
def test_engine_parameter_names_the_dialect_checks_scores_and_imports_on_it(
    tmp_path: Path,
) -> None:
    """-T engine=sqlite: the sample is told SQLite, DuckDB's gold fails the in-loop test there
    and SQLite's passes; the scorer grades on SQLite; the import records the engine and keeps
    the scorer's verdicts."""
    from arrivalbench.agent.prompts import arm_sha256
    from arrivalbench.dialects import script_for

    task = get_task("daily_revenue")
    sqlite_gold = script_for(task, "gold.sql", task.gold_sql, "sqlite")
    told: list[str] = []

    def answer(input, tools, tool_choice, config) -> ModelOutput:
        told.append(input[0].text)
        turn = sum(m.role == "assistant" for m in input) + 1
        script = task.gold_sql if turn == 1 else sqlite_gold
        return output(f"```sql\n{script}```")

    [log] = inspect_eval(
        "arrivalbench/arrivalbench",
        model=get_model("mockllm/model", custom_outputs=answer, memoize=False),
        task_args={"k": 1, "tasks": "daily_revenue", "turns": 2, "engine": "sqlite"},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    assert told and all("one SQLite SQL script" in t for t in told)
    [sample] = log.samples or []
    assert sample.store[TRANSCRIPT]["snapshot_by_turn"] == ["ERROR", "PASS"]
    score = sample.scores["replay"]  # type: ignore[index]
    assert score.metadata["record"]["engine"] == "sqlite"  # type: ignore[index]
    assert set(score.value.values()) == {"PASS"}  # type: ignore[union-attr]
    assert log.eval.metadata["arrivalbench"]["engine"] == "sqlite"  # type: ignore[index]

    run = import_inspect(tmp_path / "logs", tmp_path / "run")
    assert run.manifest["engine"] == "sqlite"
    assert run.manifest["arm_info"]["unhinted"]["prompt_sha256"] == arm_sha256("unhinted", "sqlite")
    kept = run.verdicts().to_pylist()
    assert {r["schedule"] for r in kept} == set(default_schedules(task))
    assert {r["verdict"] for r in kept} == {"PASS"}


def _claimed_cell(tmp_path: Path, arm: str = "m") -> tuple[Any, dict[str, Any]]:
    """A one-cell CellResult and the record a scorer would claim for it (8 PASS)."""
    from arrivalbench import __version__
    from arrivalbench.agent.loop import CellResult
    from arrivalbench.engines import get_engine
    from arrivalbench.seeds import DEFAULT_SEED

    result = CellResult(
        task="daily_revenue", arm=arm, sample=0, model="x", temperature=0.0,
        prompt_sha256=None, system="", user="", script="SELECT 1;\n",
    )  # fmt: skip
    from arrivalbench.verdict import RECORD_FORMAT

    record = {
        "format": RECORD_FORMAT,
        "task": "daily_revenue",
        "artifact_sha256": result.artifact_sha256,
        "engine": "duckdb",
        "engine_version": get_engine("duckdb").version,
        "harness_version": __version__,
        "seed": DEFAULT_SEED,
        "verdicts": {s: {"verdict": "PASS"} for s in default_schedules(get_task("daily_revenue"))},
    }
    return result, record


@pytest.mark.parametrize(
    ("tag", "reason"),
    [
        (None, "no authentication tag"),
        ("0" * 64, "a tag this grader's key did not make"),
        ("signed-then-altered", "a tag this grader's key did not make"),
        ("signed", None),
    ],
)
def test_regression_a_forged_scorer_record_is_graded_again(
    tmp_path: Path, tag: str | None, reason: str | None
) -> None:
    """Regression: import-inspect kept a forged scorer record (the watermark control as 8 x PASS)
    on a development run; a record is now kept only with this grader's HMAC tag."""
    from arrivalbench.agent.generate import write_run
    from arrivalbench.agent.inspect_import import keep_verdicts
    from arrivalbench.engines import Limits
    from arrivalbench.seeds import DEFAULT_SEED
    from arrivalbench.store.claims import sign_record

    result, record = _claimed_cell(tmp_path)
    if tag == "signed":
        tag = sign_record(record)
    elif tag == "signed-then-altered":
        tag = sign_record({**record, "verdicts": {"snapshot": {"verdict": "FAIL"}}})
    run = write_run(
        tmp_path / "run", [result], model="x", seed=DEFAULT_SEED, limits=Limits(), turns=1
    )
    kept = keep_verdicts(run, [result], {("m", "daily_revenue", 0): (record, tag)}, DEFAULT_SEED)
    if reason is None:
        assert (kept.cells, kept.rows, sum(kept.regrade.values())) == (1, 8, 0)
        assert run.verdicts().num_rows == 8
    else:
        assert (kept.cells, kept.rows, run.verdicts().num_rows) == (0, 0, 0)
        assert list(kept.regrade) == [next(r for r in kept.regrade if r.startswith(reason))]
        assert "1 cells to grade again" in kept.summary() and reason in kept.summary()


def test_a_scorer_record_of_an_older_record_format_is_graded_again(tmp_path: Path) -> None:
    """A record of format 1 has no severity in its FAILs: grade-run grades the cell again rather
    than keep a verdict row the current harness would not write."""
    from arrivalbench.agent.generate import write_run
    from arrivalbench.agent.inspect_import import keep_verdicts
    from arrivalbench.engines import Limits
    from arrivalbench.seeds import DEFAULT_SEED
    from arrivalbench.store.claims import sign_record

    result, record = _claimed_cell(tmp_path)
    record = {**record, "format": 1}
    run = write_run(
        tmp_path / "run", [result], model="x", seed=DEFAULT_SEED, limits=Limits(), turns=1
    )
    claims = {("m", "daily_revenue", 0): (record, sign_record(record))}
    kept = keep_verdicts(run, [result], claims, DEFAULT_SEED)
    assert (kept.rows, dict(kept.regrade)) == (0, {"another record format": 1})


@pytest.mark.parametrize("arm", ["/abs/path", "../../x"])
def test_regression_an_inspect_arm_name_cannot_leave_out(tmp_path: Path, arm: str) -> None:
    """Regression: a sample whose transcript named arm /abs/path or ../../x made import-inspect
    write its transcript outside --out."""
    from types import SimpleNamespace

    from arrivalbench.agent.inspect_import import _cells

    result, _ = _claimed_cell(tmp_path, arm=arm)
    sample = SimpleNamespace(
        id=1,
        epoch=1,
        store={TRANSCRIPT: result.transcript()},
        metadata={"task": "daily_revenue", "arm": arm, "sample": 0},
        scores={},
        error=None,
        limit=None,
    )
    log = SimpleNamespace(samples=[sample])
    with pytest.raises(InspectLogError, match="an arm name is") as e:
        _cells(tmp_path / "log.eval", log)  # type: ignore[arg-type]
    assert "\n" not in str(e.value)


def test_regression_a_task_argument_typo_was_a_249_line_exception_group() -> None:
    """Regression (issue 26): `-T arm=hints` ended in a 249-line exception group; the task now
    raises the error Inspect's command line prints as one line, without a traceback."""
    from inspect_ai._util.error import PrerequisiteError

    from arrivalbench.agent.inspect_task import arrivalbench

    with pytest.raises(PrerequisiteError) as raised:
        arrivalbench(arm="hints")
    message = str(raised.value.message)
    assert message == "arrivalbench: Unknown arm 'hints'. Did you mean 'hint'?"
    with pytest.raises(PrerequisiteError) as raised:
        arrivalbench(k="zero")
    assert "\n" not in str(raised.value.message) and "zero" in str(raised.value.message)


def test_regression_provider_errors_kept_rich_markup_other_than_bold() -> None:
    """Regression (issue 26): a provider error printed `[blue]...[/blue]` as text."""
    from arrivalbench.agent.inspect_model import _one_line, _provider_message, without_markup

    assert without_markup("[blue]OPENAI_API_KEY[/blue] unset; got [1, 2]") == (
        "OPENAI_API_KEY unset; got [1, 2]"
    )
    assert without_markup("a stray [/blue] tag") == "a stray  tag"
    error = Exception("ERROR: [bold]Missing[/bold]\n  key [blue]X[/blue]")
    assert _one_line(error) == "Missing key X"
    assert _provider_message(error) == "ERROR: Missing\n  key X"


def test_import_reads_several_folders_and_files_a_file_named_twice_once(
    evaluated: tuple[EvalLog, Path, Scripted], tmp_path: Path
) -> None:
    """import-inspect takes several log folders or files (issue 26: an arm pair for the
    intervention table needed copying logs into one folder by hand)."""
    from arrivalbench.agent.inspect_import import log_files_of

    _, log_dir, _ = evaluated
    [original] = [p for p in log_dir.iterdir() if p.suffix == ".eval"]
    other = tmp_path / "other"
    other.mkdir()
    shutil.copy(original, other / "copy.eval")
    assert log_files_of([log_dir, original]) == [original]
    assert log_files_of([log_dir, other]) == [original, other / "copy.eval"]
    run = import_logs([log_dir, original], tmp_path / "run")[0]
    assert len(run.cells()) == 4
    with pytest.raises(InspectLogError, match=r"cell unhinted/\w+/\d is also in"):
        import_logs([log_dir, other], tmp_path / "run2")


def test_mockllm_counts_tokens_without_tiktoken() -> None:
    """The mock model's usage is counted from characters, never from tiktoken's o200k_base (a
    download): four characters a token."""
    import asyncio

    from arrivalbench.agent.inspect_model import InspectModel

    model = get_model("mockllm/model", memoize=False)
    InspectModel(model)
    assert asyncio.run(model.api.count_text_tokens("x" * 9)) == 3


@pytest.mark.slow
def test_regression_mockllm_eval_ended_task_interrupted_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression (issue 26): `inspect eval arrivalbench/arrivalbench --model mockllm/model`
    tried to download tiktoken's o200k_base and ended "Task interrupted" (exit 0) offline. Here
    every socket connection fails and tiktoken's cache is an empty folder."""
    import socket

    def refuse(*args: object, **kwargs: object) -> None:
        raise OSError("network blocked by the test")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "tiktoken"))
    [log] = inspect_eval(
        "arrivalbench/arrivalbench",
        model=get_model("mockllm/model", memoize=False),
        task_args={"k": 1, "tasks": "daily_revenue", "turns": 1},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    assert log.samples is not None and len(log.samples) == 1
    assert log.stats.model_usage["mockllm/model"].input_tokens > 0
