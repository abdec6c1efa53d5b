"""ArrivalBench as an Inspect AI task: `inspect eval arrivalbench/arrivalbench --model PROVIDER/MODEL`.

One Inspect sample is one cell: a suite task, an arm and a sample index. The sample index, not
Inspect's epoch, sets the temperature (0 for sample 0, 1 for the others), so k samples come from
`-T k=N` (default 5, as in the paper) with `--epochs` left at 1 (`arrivalbench import-inspect`
refuses repeated epochs).

- The solver runs the repair loop with the eval's model; the snapshot check of each turn runs
  on a worker thread. The sample's store keeps the final script, the cell's transcript and the
  no-artifact reason; the sample's output is the final script. A model call that fails after
  the provider's retries fails the sample (it is not a cell without a script), so
  `inspect eval-retry LOG` runs exactly those samples again.
- `-T engine=sqlite|postgres` (default duckdb) names the engine: the prompts name its SQL
  dialect, and the snapshot checks and the scorer run the script on it.
- The scorer replays the final script over the task's default schedules and scores a dict
  {schedule: "PASS" | "FAIL" | "ERROR" | "NO_ARTIFACT"}, with the whole grade record, its tag
  under this grader's key (store.claims) and the cell in the score's metadata.
- Its metrics are `summary`'s, computed by the same functions (analysis.stats.outcomes and .rate,
  means over tasks): `gap` first (the primary metric: silent failure among snapshot-passing
  cells), `gap_stderr` (its standard error over tasks), `snapshot_pass`, `error` and `all_in`
  (all-in *failure*), then the share of samples passing each schedule.

`arrivalbench import-inspect LOG_DIR --out RUN` turns the logs into a run directory, keeping the
scorer's verdicts; `arrivalbench grade-run` grades what is missing, like a generated run.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any
from weakref import WeakKeyDictionary

import anyio
import numpy as np
import pyarrow as pa
from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    ChatMessageTool,
    ChatMessageUser,
    ModelOutput,
    get_model,
)
from inspect_ai.model import Model as InspectAIModel
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.tool import ToolCall

from arrivalbench.agent.inspect_model import InspectModel
from arrivalbench.agent.loop import TURNS, CellResult, repair_loop
from arrivalbench.agent.models import MAX_TOKENS, temperature
from arrivalbench.agent.prompts import (
    arm_role,
    arm_sha256,
    build_prompt,
    check_arm,
    check_engine,
)
from arrivalbench.agent.tool_agent import (
    DEFAULT_SCAFFOLD,
    AgentCellResult,
    Budgets,
    agent_arm_sha256,
    agent_loop,
    agent_prompt,
    check_scaffold,
)
from arrivalbench.agent.tools import ToolPool
from arrivalbench.analysis.stats import outcomes, rate, task_rates
from arrivalbench.engines import DEFAULT_ENGINE, Limits
from arrivalbench.errors import ArrivalBenchError, UsageError
from arrivalbench.schedules import SCHEDULE_NAMES, default_schedules
from arrivalbench.seeds import DEFAULT_SEED
from arrivalbench.spec import Task as SuiteTask
from arrivalbench.spec import get_task, load_suite, suite_hash
from arrivalbench.store import Cell, sha256_text
from arrivalbench.store.claims import sign_record

SCRIPT = "arrivalbench:script"
TRANSCRIPT = "arrivalbench:transcript"
NO_ARTIFACT_REASON = "arrivalbench:no_artifact_reason"
NO_ARTIFACT = "NO_ARTIFACT"
METADATA = "arrivalbench"
"""The key of the eval metadata the import reads: arm, k, tasks, turns, seed, hashes."""
RECORD_TAG = "record_hmac"
"""The key, in a score's metadata, of the grader's tag of the record (store.claims)."""
CELL = "cell"
"""The key, in a score's metadata, of the cell the metrics rebuild: task, arm, sample, outcome."""
TASK_VERSION = 2
"""Bumped when what a sample is told, how it is scored or what the metrics mean changes
(2: the paper's prompt texts, the arms' roles, summary's metrics, model errors fail a sample).
The `engine` parameter added no bump: with its default (duckdb) every sample is told and scored
exactly as before, and another engine's samples differ by a parameter Inspect records."""
PRIMARY_METRIC = "gap"


class EvalGraders:
    """The shared grader pool (agent.loop.GraderPool) as the samples of an eval use it.

    At most one grader per core works at once, however many samples are in flight. Samples take
    a lease while they grade; when the last lease is returned the workers are stopped, so an eval
    leaves no process behind.
    """

    def __init__(self, seed: int, limits: Limits, engine: str = DEFAULT_ENGINE) -> None:
        self.pool = ToolPool(seed, limits, engine)
        self.size = os.cpu_count() or 1
        self.leases = 0
        self.limiter: anyio.CapacityLimiter | None = None

    @asynccontextmanager
    async def lease(self) -> AsyncIterator[EvalGraders]:
        if self.leases == 0:  # a limiter belongs to one event loop: each eval gets its own
            self.limiter = anyio.CapacityLimiter(self.size)
        self.leases += 1
        try:
            yield self
        finally:
            self.leases -= 1
            if self.leases == 0:
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(self.pool.close)

    async def run(self, work: Callable[..., Any], *args: Any) -> Any:
        """A blocking pool method on a worker thread (inside a lease)."""
        assert self.limiter is not None and self.leases > 0, "take a lease first"
        async with self.limiter:
            return await anyio.to_thread.run_sync(work, *args)

    async def snapshot(self, task: SuiteTask, script: str) -> dict[str, Any]:
        """The repair loop's check: the snapshot verdict entry of one script."""
        return await self.run(self.pool.snapshot, task, script)

    async def query(self, task: SuiteTask, sql: str) -> tuple[str, str, str]:
        """The agent scaffold's query tool over the snapshot's delivery."""
        return await self.run(self.pool.query, task, sql)

    async def grade(self, task: SuiteTask, script: str, schedules: list[str]) -> dict[str, Any]:
        return await self.run(self.pool.grade, task, script, schedules)


_POOLS: dict[tuple[int, Limits, str], EvalGraders] = {}


def grader_pool(
    seed: int, limits: Limits | None = None, engine: str = DEFAULT_ENGINE
) -> EvalGraders:
    limits = limits or Limits()
    key = (seed, limits, engine)
    if key not in _POOLS:
        _POOLS[key] = EvalGraders(seed, limits, engine)
    return _POOLS[key]


def task_ids(tasks: str | list[str] | None) -> list[str]:
    """-T tasks=a,b (a comma list) or a list; None means the whole suite."""
    if tasks is None or tasks == "":
        return list(load_suite())
    names = tasks.split(",") if isinstance(tasks, str) else [str(t) for t in tasks]
    ids = list(dict.fromkeys(n.strip() for n in names if n.strip()))
    for task_id in ids:
        get_task(task_id)
    return ids


def samples(
    arm: str,
    k: int,
    ids: list[str],
    engine: str = DEFAULT_ENGINE,
    budgets: Budgets | None = None,
) -> list[Sample]:
    """One sample per (task, sample index); the index sets the temperature. With `budgets`, the
    agent scaffold's prompt."""
    out = []
    for task_id in ids:
        prompt = (
            build_prompt(get_task(task_id), arm, engine)
            if budgets is None
            else agent_prompt(get_task(task_id), arm, engine, budgets)
        )
        for index in range(k):
            out.append(
                Sample(
                    id=f"{task_id}:{index}",
                    input=[
                        ChatMessageSystem(content=prompt.system),
                        ChatMessageUser(content=prompt.user),
                    ],
                    metadata={
                        "task": task_id,
                        "arm": arm,
                        "sample": index,
                        "temperature": temperature(index),
                        "prompt_sha256": prompt.sha256,
                    },
                )
            )
    return out


def conversation(result: CellResult) -> list[ChatMessage]:
    """The cell's turns as chat messages, so Inspect's viewer shows the exchange."""
    messages: list[ChatMessage] = [
        ChatMessageSystem(content=result.system),
        ChatMessageUser(content=result.user),
    ]
    if isinstance(result, AgentCellResult):
        for step in result.turns:
            calls = [
                ToolCall(id=c.id, function=c.function, arguments=c.arguments)
                for c in step.tool_calls  # type: ignore[attr-defined]
            ]
            messages.append(ChatMessageAssistant(content=step.response, tool_calls=calls or None))
            for c in step.tool_calls:  # type: ignore[attr-defined]
                messages.append(
                    ChatMessageTool(content=c.result, tool_call_id=c.id, function=c.function)
                )
            if step.nudge is not None:  # type: ignore[attr-defined]
                messages.append(ChatMessageUser(content=step.nudge))  # type: ignore[attr-defined]
        return messages
    for turn in result.turns:
        messages.append(ChatMessageAssistant(content=turn.response))
        if turn.feedback is not None:
            messages.append(ChatMessageUser(content=turn.feedback))
    return messages


_LOOP_MODELS: WeakKeyDictionary[InspectAIModel, InspectModel] = WeakKeyDictionary()


def loop_model(model: InspectAIModel) -> InspectModel:
    """One wrapper per Inspect model, so a temperature its provider rejected is not sent again by any cell.

    The wrapper raises a model error instead of recording it, so the sample fails and
    `inspect eval-retry` reruns it."""
    if model not in _LOOP_MODELS:
        _LOOP_MODELS[model] = InspectModel(model, raise_errors=True)
    return _LOOP_MODELS[model]


@solver
def repair(
    turns: int = TURNS,
    seed: int = DEFAULT_SEED,
    max_tokens: int = MAX_TOKENS,
    engine: str = DEFAULT_ENGINE,
    budgets: dict[str, Any] | None = None,
) -> Solver:
    """The repair loop with the eval's model: at most `turns` replies, each script checked on the
    snapshot on `engine`; with `budgets`, the agent scaffold (tools query, test, submit)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        cell = state.metadata
        suite_task = get_task(cell["task"])
        model = loop_model(get_model())
        pool = grader_pool(seed, engine=engine)
        result: CellResult
        async with pool.lease():
            if budgets is not None:
                result = await agent_loop(
                    suite_task,
                    agent_prompt(suite_task, cell["arm"], engine, Budgets(**budgets)),
                    cell["sample"],
                    model,
                    pool.snapshot,
                    pool.query,
                    Budgets(**budgets),
                    max_tokens=max_tokens,
                )
            else:
                result = await repair_loop(
                    suite_task,
                    build_prompt(suite_task, cell["arm"], engine),
                    cell["sample"],
                    model,
                    pool.snapshot,
                    turns=turns,
                    max_tokens=max_tokens,
                )
        state.store.set(SCRIPT, result.script)
        state.store.set(TRANSCRIPT, result.transcript())
        state.store.set(NO_ARTIFACT_REASON, result.no_artifact_reason)
        state.messages = conversation(result)
        state.output = ModelOutput.from_content(model=model.name, content=result.script or "")
        return state

    return solve


def _ordered(schedules: dict[str, Any]) -> list[str]:
    return sorted(
        schedules,
        key=lambda s: (SCHEDULE_NAMES.index(s) if s in SCHEDULE_NAMES else len(SCHEDULE_NAMES), s),
    )


@metric(scores="unreduced")
def schedule_pass() -> Metric:
    """Per schedule, the share of samples whose script passed it (NO_ARTIFACT counts as not passing)."""

    def compute(scores: list[SampleScore]) -> dict[str, float]:
        passed: dict[str, list[bool]] = {}
        for sample_score in scores:
            value = sample_score.score.value
            if isinstance(value, dict):
                for schedule, verdict in value.items():
                    passed.setdefault(schedule, []).append(verdict == "PASS")
        return {s: sum(passed[s]) / len(passed[s]) for s in _ordered(passed)}

    return compute


_VERDICT_ROWS = pa.schema(
    [
        ("arm", pa.string()),
        ("task", pa.string()),
        ("sample", pa.int64()),
        ("schedule", pa.string()),
        ("verdict", pa.string()),
        ("error_class", pa.string()),
    ]
)


def cell_outcomes(scores: list[SampleScore]) -> list[Any]:
    """The samples' cells as CellOutcome, joined by analysis.stats.outcomes exactly as for a run."""
    cells: list[Cell] = []
    rows: list[dict[str, Any]] = []
    tasks: dict[str, SuiteTask] = {}
    for sample_score in scores:
        cell = (sample_score.score.metadata or {}).get(CELL)
        if not isinstance(cell, dict):
            continue
        tasks.setdefault(cell["task"], get_task(cell["task"]))
        cells.append(Cell.from_row(cell))
        value = sample_score.score.value
        if cell["artifact_sha256"] is not None and isinstance(value, dict):
            rows += [
                {
                    "arm": cell["arm"],
                    "task": cell["task"],
                    "sample": cell["sample"],
                    "schedule": schedule,
                    "verdict": verdict,
                    "error_class": cell["error_classes"].get(schedule),
                }
                for schedule, verdict in value.items()
            ]
    return outcomes(cells, pa.Table.from_pylist(rows, schema=_VERDICT_ROWS), tasks)


def _rate(name: str) -> Metric:
    """summary's rate of one metric over the eval's one arm (NaN when no task is usable)."""

    # Inspect passes SampleScores (not bare Scores) to a function annotated with them.
    def compute(scores: list[SampleScore]) -> float:
        values = [v for v in rate(cell_outcomes(scores), name).values() if v is not None]
        return values[0] if len(values) == 1 else float("nan")

    return compute


@metric(name="gap", scores="unreduced")
def gap() -> Metric:
    """The primary metric: among snapshot-passing cells with no ERROR on a declared hazard, the
    share with a FAIL on one (mean over tasks), as `arrivalbench summary` reports it."""
    return _rate("gap")


@metric(name="gap_stderr", scores="unreduced")
def gap_stderr() -> Metric:
    """The gap's standard error over tasks (the unit the bootstrap resamples); NaN under two tasks."""

    def compute(scores: list[SampleScore]) -> float:
        per_task = [list(t.values()) for t in task_rates(cell_outcomes(scores), "gap").values()]
        values = per_task[0] if len(per_task) == 1 else []
        if len(values) < 2:
            return float("nan")
        return float(np.std(values, ddof=1) / np.sqrt(len(values)))

    return compute


@metric(name="snapshot_pass", scores="unreduced")
def snapshot_pass() -> Metric:
    """The share of cells whose final script passes the snapshot: what a one-run grader reports."""
    return _rate("snapshot_pass")


@metric(name="error", scores="unreduced")
def error() -> Metric:
    """The share of cells with no script, or an ERROR on the snapshot or a declared hazard."""
    return _rate("error")


@metric(name="all_in", scores="unreduced")
def all_in() -> Metric:
    """All-in failure: no script, snapshot not passed, or a FAIL or ERROR on a declared hazard."""
    return _rate("all_in")


@scorer(metrics=[gap(), gap_stderr(), snapshot_pass(), error(), all_in(), schedule_pass()])
def replay(seed: int = DEFAULT_SEED, engine: str = DEFAULT_ENGINE) -> Scorer:
    """Replay the final script over the task's default schedules on `engine`: a verdict string
    per schedule."""

    async def score(state: TaskState, target: Target) -> Score:
        suite_task = get_task(state.metadata["task"])
        schedules = default_schedules(suite_task)
        script = state.store.get(SCRIPT)
        transcript = state.store.get(TRANSCRIPT) or {}
        cell = {
            "task": suite_task.id,
            "arm": state.metadata["arm"],
            "sample": state.metadata["sample"],
            "artifact_sha256": None if script is None else sha256_text(script),
            "no_artifact_reason": None,
            "snapshot_by_turn": list(transcript.get("snapshot_by_turn", [])),
            "error_classes": {},
        }
        if script is None:
            finished = state.store.get(TRANSCRIPT) is not None
            reason = state.store.get(NO_ARTIFACT_REASON) if finished else "unfinished"
            return Score(
                value=dict.fromkeys(schedules, NO_ARTIFACT),
                explanation=f"no script ({reason})",
                metadata={
                    "no_artifact_reason": reason,
                    CELL: {**cell, "no_artifact_reason": reason},
                },
            )
        pool = grader_pool(seed, engine=engine)
        async with pool.lease():
            record = await pool.grade(suite_task, script, schedules)
        verdicts = {name: entry["verdict"] for name, entry in record["verdicts"].items()}
        cell["error_classes"] = {
            name: entry.get("error_class") or "unknown"
            for name, entry in record["verdicts"].items()
            if entry["verdict"] == "ERROR"
        }
        shown = ", ".join(f"{name} {verdict}" for name, verdict in verdicts.items())
        return Score(
            value=verdicts,
            answer=script,
            explanation=shown,
            metadata={"record": record, RECORD_TAG: sign_record(record), CELL: cell},
        )

    return score


def _task_argument_error(exc: Exception) -> Exception:
    """A bad task argument as the error Inspect's command line prints as its one message (no
    traceback, no exception group), without Rich markup."""
    from inspect_ai._util.error import PrerequisiteError

    from arrivalbench.terminal import text

    return PrerequisiteError(text(f"arrivalbench: {exc}"))


@task
def arrivalbench(
    arm: str = "unhinted",
    k: int = 5,
    tasks: str | list[str] | None = None,
    turns: int = TURNS,
    seed: int = DEFAULT_SEED,
    max_tokens: int = MAX_TOKENS,
    run: int = 1,
    engine: str = DEFAULT_ENGINE,
    scaffold: str = DEFAULT_SCAFFOLD,
    max_tool_calls: int = 20,
    max_tests: int = 3,
    token_budget: int | None = None,
    cell_timeout: float = 1800.0,
) -> Task:
    """ArrivalBench cells of one arm: every task (or `tasks`, a comma list) with samples 0..k-1.

    `run` is the replicate index the import records for the arm (2 for an independent re-run);
    `engine` (duckdb, sqlite or postgres) is the SQL dialect the prompts name and the engine the
    scripts are checked and scored on. `scaffold=agent` runs the tool-using agent under the
    budgets `max_tool_calls`, `max_tests`, `token_budget` and `cell_timeout` (seconds). A bad
    `-T` value is one line, not a traceback.
    """
    try:
        check_arm(arm)
        check_engine(engine)
        check_scaffold(scaffold)
        agent = scaffold != DEFAULT_SCAFFOLD
        budgets = (
            Budgets(
                int(max_tool_calls),
                int(max_tests),
                None if token_budget in (None, "") else int(token_budget),
                float(cell_timeout),
            )
            if agent
            else None
        )
        k, turns, seed = int(k), int(turns), int(seed)
        max_tokens, run = int(max_tokens), int(run)
        if k < 1 or turns < 1 or max_tokens < 1 or run < 1:
            raise UsageError(
                f"-T k={k} -T turns={turns} -T max_tokens={max_tokens} -T run={run}: "
                "each must be at least 1."
            )
        ids = task_ids(tasks)
    except (ArrivalBenchError, ValueError) as exc:
        raise _task_argument_error(exc) from None
    info = {
        "arm": arm,
        "k": k,
        "tasks": ids,
        "turns": turns,
        "seed": seed,
        "max_tokens": max_tokens,
        "suite_hash": suite_hash(),
        "prompt_sha256": (agent_arm_sha256 if agent else arm_sha256)(arm, engine),
        "role": arm_role(arm),
        "run": run,
        "engine": engine,
    }
    if budgets is not None:  # absent for the loop: its metadata is what earlier versions wrote
        info.update(scaffold=scaffold, budgets=budgets.config())
    name = f"arrivalbench-{arm}" if engine == DEFAULT_ENGINE else f"arrivalbench-{arm}-{engine}"
    if agent:
        name += "-agent"
    return Task(
        dataset=MemoryDataset(samples(arm, k, ids, engine, budgets), name=name),
        solver=repair(
            turns=turns,
            seed=seed,
            max_tokens=max_tokens,
            engine=engine,
            budgets=None if budgets is None else budgets.config(),
        ),
        scorer=replay(seed=seed, engine=engine),
        metadata={METADATA: info},
        version=TASK_VERSION,
    )
