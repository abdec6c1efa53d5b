"""Grade one artifact of one task through its schedules: PASS, FAIL or ERROR per schedule.

The verdict record is a pure function of (task, schedule, seed, artifact, harness version) and is
serialised with sorted keys, so grading twice gives identical bytes. Timings are returned beside
the record, never inside it. When a graded schedule came from a private seed, the record adds
that secret's `seed_commitment`; `seed` stays the public base seed, and nothing in the record
rebuilds a hidden log.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import pyarrow as pa

from arrivalbench import __version__
from arrivalbench.cache import VerdictCache, oracle_key, verdict_key
from arrivalbench.compare import compare
from arrivalbench.engines import DEFAULT_ENGINE, Limits, get_engine, oracle_engine
from arrivalbench.errors import PipelineInputError
from arrivalbench.logs import Log
from arrivalbench.oracle import compute_oracle, oracle_over
from arrivalbench.replay import ReplayResult, ResultCap
from arrivalbench.sandbox import ReplayJob, Sandbox
from arrivalbench.schedules import Schedule, build_schedule, schedule_to_json
from arrivalbench.seeds import DEFAULT_SEED, PrivateSeed
from arrivalbench.spec import SuiteDirs, Task, suite_hash
from arrivalbench.verdict import RECORD_FORMAT, Record, Verdict, judge
from arrivalbench.verdict import dumps as dumps  # its old home; the function lives in verdict.py

ERROR_CLASSES = (
    "sql_error",
    "timeout",
    "sandbox_refused",
    "engine_crash",
    "missing_target",
    "result_too_large",
)
RESULT_ROWS_FACTOR = 100
RESULT_ROWS_FLOOR = 10_000
RESULT_BYTES_FLOOR = 64 << 20
"""A target may hold up to 100 times the expected table's rows (at least 10,000) and bytes (at
least 64 MiB), and at most 64 columns more than it with 64 KiB of names, before reading it
back is refused: a FAIL needs no more than that to be a FAIL."""


RESULT_EXTRA_COLUMNS = 64


def result_cap(expected: pa.Table) -> ResultCap:
    return ResultCap(
        rows=max(RESULT_ROWS_FACTOR * expected.num_rows, RESULT_ROWS_FLOOR),
        bytes=max(RESULT_ROWS_FACTOR * expected.nbytes, RESULT_BYTES_FLOOR),
        columns=expected.num_columns + RESULT_EXTRA_COLUMNS,
    )


def artifact_sha256(script: str) -> str:
    return hashlib.sha256(script.encode("utf-8")).hexdigest()


def schedule_sha256(schedule: Schedule, log: Log) -> str:
    text = json.dumps(schedule_to_json(schedule, log), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Grader:
    """Grades artifacts; holds the sandbox worker and caches oracles and schedules between calls."""

    seed: int = DEFAULT_SEED
    limits: Limits = field(default_factory=Limits)
    engine_name: str = DEFAULT_ENGINE
    private: PrivateSeed | None = None
    """The secret the hidden logs descend from; None: they descend from `seed` (a public run)."""
    cache: VerdictCache | None = None
    """Where verdicts and public oracles are looked up before grading (None: grade everything)."""
    suite_dirs: SuiteDirs = None
    """The user's suite folders the graded tasks come from (their content is part of a cache key)."""
    _sandbox: Sandbox = field(default_factory=Sandbox, init=False, repr=False)
    _oracles: dict[tuple[str, str, int], pa.Table] = field(
        default_factory=dict, init=False, repr=False
    )
    _schedules: dict[tuple[str, str, int, str | None], tuple[Schedule, Log]] = field(
        default_factory=dict, init=False, repr=False
    )

    _hashes: dict[tuple[str, str], str] = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self) -> None:
        self.engine = get_engine(self.engine_name)
        self.oracle_engine = oracle_engine()

    def _task_hash(self, task: Task) -> str:
        """The task's files on disk and its spec and oracle as loaded (a task changed in memory,
        as the benchmarks' scaled tasks are, is another task)."""
        key = (str(task.folder), task.identity)
        if key not in self._hashes:
            both = f"{task.content_hash()}\0{task.identity}"
            self._hashes[key] = hashlib.sha256(both.encode()).hexdigest()
        return self._hashes[key]

    def _suite_hash(self) -> str:
        if ("", "suite") not in self._hashes:
            self._hashes["", "suite"] = suite_hash(self.suite_dirs)
        return self._hashes["", "suite"]

    def __enter__(self) -> Grader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._sandbox.close()

    def run_job(self, job: Any) -> ReplayResult:
        """Run one sandbox job (a ReplayJob or another kind, e.g. the agent's query) on this
        grader's worker."""
        return self._sandbox.run(job)

    def schedule(self, task: Task, name: str) -> tuple[Schedule, Log]:
        key = (task.identity, name, self.seed, self.private and self.private.commitment)
        if key not in self._schedules:
            self._schedules[key] = build_schedule(task, name, self.seed, self.private)
        return self._schedules[key]

    def oracle(self, task: Task, log: Log, schedule: Schedule | None = None) -> pa.Table:
        """The expected target: over the whole log, or over the distinct events a partial
        schedule (a shrunk counterexample) delivers. A whole log's is computed once per process,
        and once per machine for a public log when there is a cache (an oracle of a private log
        never goes to disk)."""
        if schedule is not None and schedule.partial:
            rows = sorted({row for d in schedule.deliveries for row in d.rows})
            return oracle_over(
                task, log.subset_tables(rows), self.oracle_engine, "the delivered events"
            )
        key = (task.identity, log.kind, log.seed)
        if key not in self._oracles:
            shared = self.cache is not None and not (self.private and log.kind == "hidden")
            stored = None
            if shared:
                assert self.cache is not None
                disk_key = oracle_key(
                    engine=self.oracle_engine,
                    task_hash=self._task_hash(task),
                    log_kind=log.kind,
                    log_seed=log.seed,
                )
                stored = self.cache.get_oracle(disk_key)
            if stored is None:
                stored = compute_oracle(task, log, self.oracle_engine)
                if shared:
                    assert self.cache is not None
                    self.cache.put_oracle(disk_key, stored)
            self._oracles[key] = stored
        return self._oracles[key]

    def grade(
        self, task: Task, script: str, schedules: Iterable[str], **options: Any
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """(record as JSON, timings): `judge_all`'s, for the callers that still read the record
        as a dict (the CLI's commands)."""
        record, timings = self.judge_all(task, script, schedules, **options)
        return record.to_json(), timings

    def judge_all(
        self,
        task: Task,
        script: str,
        schedules: Iterable[str],
        where: str = "pipeline",
        prebuilt: dict[str, tuple[Schedule, Log]] | None = None,
        on_verdict: Callable[[str, Verdict], None] | None = None,
        empty_is_error: bool = False,
    ) -> tuple[Record, dict[str, Any]]:
        """(record, timings) for one artifact over the named schedules.

        The script is parsed, screened and run only in the sandbox worker, under its limits; this
        process sees the script's text, its (bounded) error messages and its target only once
        the worker has checked the target's size against the expected table's.
        """
        task.check_seed(self.seed, private=self.private is not None)
        verdicts: dict[str, Verdict] = {}
        timings: dict[str, Any] = {}
        commitments: set[str] = set()
        for name in schedules:
            started = time.perf_counter()
            schedule, log = (prebuilt or {}).get(name) or self.schedule(task, name)
            if schedule.seed_commitment is not None:
                commitments.add(schedule.seed_commitment)
            expected = self.oracle(task, log, schedule)
            cap = result_cap(expected)
            schedule_hash = schedule_sha256(schedule, log)
            key = None
            cached = None
            if self.cache is not None:
                key = verdict_key(
                    engine=self.engine,
                    task_hash=self._task_hash(task),
                    schedule_sha256=schedule_hash,
                    artifact_sha256=artifact_sha256(script),
                    limits=self.limits,
                    seed=self.seed,
                    cap=cap,
                    suite_hash=self._suite_hash(),
                    record_format=RECORD_FORMAT,
                )
                cached = self.cache.get(key)
            if cached is not None:
                verdict, statement_seconds = Verdict.from_json(cached), 0.0
            else:
                verdict, statement_seconds, empty = self._run(
                    task, script, schedule, expected, cap, where, empty_is_error
                )
                verdict = verdict.replayed(schedule_hash)
                if key is not None and not empty:
                    assert self.cache is not None
                    self.cache.put(key, verdict.to_json())
            verdicts[name] = verdict
            timings[name] = {
                "wall_seconds": round(time.perf_counter() - started, 6),
                "statement_seconds": round(statement_seconds, 6),
            }
            if on_verdict:
                on_verdict(name, verdict)
        record = Record(
            task=task.id,
            artifact_sha256=artifact_sha256(script),
            engine=self.engine.name,
            engine_version=self.engine.version,
            harness_version=__version__,
            seed=self.seed,
            verdicts=verdicts,
            seed_commitment=min(commitments) if commitments else None,
        )
        return record, timings

    def _run(
        self,
        task: Task,
        script: str,
        schedule: Schedule,
        expected: pa.Table,
        cap: ResultCap,
        where: str,
        empty_is_error: bool,
    ) -> tuple[Verdict, float, bool]:
        """(verdict, statement seconds, the script was empty) of one replay in the worker."""
        job = ReplayJob(
            task=task,
            schedule=schedule,
            script=script,
            limits=self.limits,
            engine=self.engine_name,
            cap=cap,
        )
        result = self._sandbox.run(job)
        if result.empty_script and not empty_is_error:
            assert result.error is not None
            raise PipelineInputError(
                f"{where}: {result.error.message}; give a file with at least one SQL statement."
            )
        verdict = judge(
            result, expected, partial(compare, target=task.spec.target, with_severity=True)
        )
        return verdict, result.statement_seconds, result.empty_script


def replay_command(
    task_id: str,
    schedule: str,
    seed: int,
    pipeline: str = "PIPELINE.sql",
    limits: Limits | None = None,
    *,
    schedule_file: str | None = None,
    seed_file: str | None = None,
    suite_dir: str | None = None,
    engine: str = DEFAULT_ENGINE,
) -> str:
    """The exact command that replays one verdict, limits and engine included when they are not
    the defaults.

    A verdict graded from a schedule file replays from that file; one from a private seed needs
    its seed file (a path: the secret never goes on a command line); a task that is not built in
    needs the --suite-dir that holds it.
    """
    import shlex

    where = f" --suite-dir {shlex.quote(suite_dir)}" if suite_dir is not None else ""
    command = f"arrivalbench grade{where} --task {task_id} --pipeline {pipeline}"
    if schedule_file is not None:
        command += f" --schedule-file {schedule_file}"
    else:
        command += f" --schedules {schedule} --seed {seed}"
    if seed_file is not None:
        command += f" --seed-file {seed_file}"
    if limits is not None:
        from arrivalbench.store import limits_flags

        command += limits_flags(limits)
    if engine != DEFAULT_ENGINE:
        command += f" --engine {engine}"
    return command
