"""The sandbox for untrusted SQL: statement screening before execution, and a worker process per grader.

Every replay runs in a separate worker process. The worker announces each statement before it
runs it; when a statement outlives its timeout the worker's own watchdog interrupts it, and if the
worker stays silent past a grace period the supervisor kills it. A worker that dies (a segfault,
an out-of-memory kill) costs one ERROR verdict; the next replay gets a fresh worker. The
supervisor makes every scratch resource a replay occupies on the host (a folder, a server
database and role) and reclaims it after the worker answers or dies; the worker answers in plain
data (`replies`: JSON and Arrow IPC), which is all the grader ever decodes from it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import socket
import subprocess
import sys
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import ClassVar

from arrivalbench import replies
from arrivalbench.engines import DEFAULT_ENGINE, Database, Engine, Limits, Statement, get_engine
from arrivalbench.logs import log_from_seed
from arrivalbench.replay import (
    Heartbeat,
    ReplayResult,
    ResultCap,
    RunError,
    replay,
)
from arrivalbench.schedules import Schedule
from arrivalbench.scratch import Failed, Scratch
from arrivalbench.spec import Task

KILL_GRACE_SECONDS = 5.0
"""How long past the statement timeout a silent worker is given before it is killed."""
STARTUP_SECONDS = 120.0
"""How long a worker may take to start and prepare a job (imports, log generation, parsing)."""
WORKER_OVERHEAD_BYTES = 768 << 20
"""Each job caps the worker's address space at the engine's memory limit plus this (the
interpreter, DuckDB and Arrow map ~0.5 GB, ~0.18 GB of it resident). What escapes DuckDB's own
limit (long strings, the external-resource registry) then fails an allocation in the worker
instead of growing it. The cap is the same for every job, whatever ran before it."""
WORKER_ENVIRONMENT = {
    "ARROW_DEFAULT_MEMORY_POOL": "system",
    "MALLOC_ARENA_MAX": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "OMP_NUM_THREADS": "1",
}
"""Allocators and thread pools that would otherwise reserve ~2 GB of address space they never
use (jemalloc's retained chunks, a 64 MB malloc arena and a BLAS thread per core), which would
make an address-space cap meaningless."""


def screen(engine: Engine, statements: list[Statement]) -> RunError | None:
    """Refuse the whole script, before anything runs, if any statement changes the session or reaches outside."""
    for statement in statements:
        reason = engine.refusal(statement)
        if reason:
            return RunError("sandbox_refused", 1, statement.index, reason)
    return None


def prepare(engine: Engine, script: str, limits: Limits) -> list[Statement] | ReplayResult:
    """The screened statements of a script, or the ERROR that ends every replay of it.

    Runs in the worker: parsing is the script's to make expensive, so it happens under the
    worker's limits, after the size cap.
    """

    def failed(error: RunError, empty: bool = False) -> ReplayResult:
        return ReplayResult(None, error, 0.0, 0, empty_script=empty)

    size = len(script.encode("utf-8", errors="replace"))
    if size > limits.max_script_bytes:
        message = (
            f"the script has {size:,} bytes, more than the {limits.max_script_bytes:,} allowed"
        )
        return failed(RunError("sandbox_refused", 1, None, message))
    try:
        statements = engine.split(script)
    except engine.errors as exc:  # the engine's parser rejects the script: the artifact is broken
        return failed(RunError("sql_error", 1, None, str(exc)))
    if not statements:
        what = "is empty" if not script.strip() else "contains only comments or semicolons"
        return failed(RunError("sql_error", 1, None, f"the pipeline {what}"), empty=True)
    refused = screen(engine, statements)
    return failed(refused) if refused else statements


@dataclass(frozen=True)
class ReplayJob:
    """Everything a worker needs; it regenerates the log itself (deterministic, cached per worker)."""

    task: Task
    schedule: Schedule
    script: str
    limits: Limits
    engine: str = DEFAULT_ENGINE
    cap: ResultCap | None = None
    observe: bool = False
    """Read the target after every delivery too (ReplayResult.trace), for `explain`."""
    uses_database: ClassVar[bool] = True
    """The worker hands `run` the database of this replay (its spare, or one on the scratch the
    supervisor made); a job kind without it (dbt's) manages its own."""

    def run(
        self,
        engine: Engine,
        statements: list[Statement],
        heartbeat: Heartbeat,
        database: Database | None = None,
    ) -> ReplayResult:
        """The replay of this job in the worker (another job kind, such as arrivalbench.check's,
        brings its own `run`; a job whose `script` is None needs no statements)."""
        log = log_from_seed(self.task, self.schedule.log_kind, self.schedule.log_seed)
        return replay(
            engine,
            statements,
            self.schedule,
            log,
            self.task.spec.target.name,
            self.limits,
            heartbeat=heartbeat,
            cap=self.cap,
            observe=self.observe,
            database=database,
        )


def die_with_parent(parent: int | None = None) -> None:
    """Make this process exit when its parent does (no orphaned workers after a kill or SIGTERM).

    Linux: the kernel sends SIGKILL on the parent's death (PR_SET_PDEATHSIG); elsewhere a thread
    watches the parent's pid.
    """
    parent = os.getppid() if parent is None else parent
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        import threading

        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(1.0)
            os._exit(1)

        threading.Thread(target=watch, daemon=True).start()
    if os.getppid() != parent:  # the parent died before the signal was armed
        os._exit(1)


def _mapped_bytes() -> int:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _limit_memory(limits: Limits) -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    soft = limits.memory_bytes + WORKER_OVERHEAD_BYTES
    if hard != resource.RLIM_INFINITY:
        soft = min(soft, hard)
    resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


LEAKED_LOCKS_WARNING = "ignore:resource_tracker:UserWarning"
"""The warning filter a worker starts with: "resource_tracker: There appear to be 2 leaked
semaphore objects to clean up at shutdown", printed as a worker that ran dbt exits."""

RETIRE_MAPPED_BYTES = 1 << 30
"""A worker retires after a job that left it mapping more than this (an idle worker maps ~0.5 GB),
or that ran out of memory: allocators keep what a greedy job took, and the next job, whatever
artifact it grades, must start with the same room as the first."""


def _engine_for(engines: dict[str, Engine], name: str) -> Engine:
    """The one engine object of `name` in `engines` (a worker's or a supervisor's), made the
    first time it is asked for (PostgreSQL's asks the server binary its version)."""
    if name not in engines:
        engines[name] = get_engine(name)
    return engines[name]


def _serve(conn: Connection) -> None:
    """Run jobs until the parent sends None or goes away. A job comes with its scratch (what the
    supervisor made for its database on the host: a folder, a server database and role; None
    for an instance in this process's memory) and is answered in `replies`' plain data."""
    engines: dict[str, Engine] = {}
    prepared: tuple[str, str, Limits, list[Statement] | ReplayResult] | None = None
    spare: tuple[str, Limits, Database] | None = None
    """A new in-memory instance opened after the last job, for the next one with the same engine
    and limits and no scratch: opening one costs ~10 ms of the engine's own time, done while
    the grader compares. A database on the host is the supervisor's to make, per job."""
    used: Database | None = None
    while True:
        try:
            message: tuple[ReplayJob, object] | None = conn.recv()  # trusted: from the grader
        except EOFError:
            return
        if message is None:
            return
        job, scratch = message  # or another job kind with the same fields and run
        try:
            _limit_memory(job.limits)
            engine = _engine_for(engines, job.engine)
            if job.script is None:
                statements: list[Statement] | ReplayResult = []
            else:
                if prepared is None or prepared[:3] != (job.engine, job.script, job.limits):
                    prepared = (
                        job.engine,
                        job.script,
                        job.limits,
                        prepare(engine, job.script, job.limits),
                    )
                statements = prepared[3]
            if isinstance(statements, ReplayResult):
                conn.send_bytes(replies.done(statements, False, False))
                continue

            def beat(batch: int, stmt: int | None) -> None:
                conn.send_bytes(replies.beat(batch, stmt))

            ran_on_spare = False
            if not getattr(job, "uses_database", False):  # e.g. dbt's jobs: their own database
                result = job.run(engine, statements, beat)
            else:
                if scratch is None and spare is not None and spare[:2] == (job.engine, job.limits):
                    used, ran_on_spare = spare[2], True
                else:
                    if spare is not None:
                        spare[2].close()
                    used = engine.open(job.limits, scratch)
                spare = None  # never handed to a second replay
                result = job.run(engine, statements, beat, database=used)
            crashed = result.error is not None and result.error.error_class == "engine_crash"
            retire = crashed or _mapped_bytes() > RETIRE_MAPPED_BYTES
            conn.send_bytes(replies.done(result, retire, ran_on_spare))
            if retire:
                return
            if used is not None:
                used.close()
                used = None
                if scratch is None:
                    spare = (job.engine, job.limits, engine.open(job.limits))
        except MemoryError:  # an allocation past the worker's cap: the script's memory, not ours
            conn.send_bytes(
                replies.failure("out_of_memory", "the replay exhausted the worker's memory")
            )
            return
        except Exception:
            conn.send_bytes(replies.failure("harness_error", traceback.format_exc()))
        finally:
            if used is not None:  # the job ended in an exception: its instance goes with it
                with contextlib.suppress(Exception):
                    used.close()
                used = None


class HarnessError(RuntimeError):
    """A defect of the harness itself (not of the pipeline): never turned into a verdict."""


def worker_environment(parent: Mapping[str, str]) -> dict[str, str]:
    """The worker's environment: the parent's, WORKER_ENVIRONMENT over it, and PYTHONPATH's
    relative entries made absolute. The worker starts in `/`, where a relative entry (as in
    `PYTHONPATH=src` from a checkout) names nothing, so the worker imported whatever other copy
    of arrivalbench was installed, and ran that copy's code for this copy's jobs."""
    environment = {**parent, **WORKER_ENVIRONMENT}
    if environment.get("PYTHONPATH"):
        entries = environment["PYTHONPATH"].split(os.pathsep)
        environment["PYTHONPATH"] = os.pathsep.join(os.path.abspath(e) if e else e for e in entries)
    return environment


class Sandbox:
    """A supervised worker process that runs replay jobs one at a time. Use as a context manager.

    The worker is a plain `python -m arrivalbench.sandbox` child speaking over a socket pair, so it
    never re-imports the caller's main module (stdin scripts, notebooks, pytest, Ray all work). It
    dies with its parent. A worker that dies or stays silent before a job's first statement is
    replaced and the job sent once more to a fresh worker; if that fails too, the job is the
    artifact's ERROR (its script is what the worker was handed), never an exception that stops
    a grade or a sweep.

    The supervisor owns every scratch resource on the host: it makes each replay's folder (or
    server database and role) before sending the job, and reclaims it once the worker has
    answered or died, whatever killed it. Making or reclaiming one is retried once; a second
    failure is that job's ERROR. The worker's replies are plain data (`replies`), never pickles.
    """

    def __init__(self, startup_seconds: float = STARTUP_SECONDS) -> None:
        self.startup_seconds = startup_seconds
        """How long a job may take before its first heartbeat (`check` raises it for dbt)."""
        self._process: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None
        self._environment: dict[str, str] = {}
        self._engines: dict[str, Engine] = {}
        self._leftovers: list[tuple[Engine, object]] = []
        """Scratch whose reclaim failed twice: tried again after every job and at close."""
        self._scratch = Scratch()
        """Makes each replay's scratch, the next one while this one runs."""
        self.spares_used = 0
        """Replays that ran on an instance the worker opened ahead (the worker's spare)."""

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> Connection:
        environment = worker_environment(os.environ)
        if (
            self._process is None
            or self._process.poll() is not None
            or environment != self._environment
        ):  # a worker runs in the environment of now (a server started since names its socket)
            self._kill()
            self._environment = environment
            parent, child = socket.socketpair()
            self._process = subprocess.Popen(
                [
                    sys.executable,
                    # dbt makes multiprocessing locks it never frees; when a worker that ran dbt
                    # exits, its resource tracker (which takes this flag) warned on the terminal
                    "-W",
                    LEAKED_LOCKS_WARNING,
                    "-m",
                    "arrivalbench.sandbox",
                    str(child.fileno()),
                    str(os.getpid()),
                ],
                pass_fds=(child.fileno(),),
                stdin=subprocess.DEVNULL,
                cwd="/",
                env=environment,
            )
            child.close()
            self._conn = Connection(parent.detach())
        assert self._conn is not None
        return self._conn

    def _kill(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
        if self._process is not None:
            self._process.wait()
        if self._conn is not None:
            self._conn.close()
        self._process, self._conn = None, None

    def run(self, job: ReplayJob) -> ReplayResult:
        failure = self._attempt(job)
        if not isinstance(failure, _NotStarted):
            return failure
        again = self._attempt(job)  # a fresh worker: the first may have died of an earlier job
        if not isinstance(again, _NotStarted):
            return again
        return ReplayResult(None, RunError(again.error_class, 1, None, again.message), 0.0, 0)

    def _engine(self, name: str) -> Engine:
        return _engine_for(self._engines, name)

    def _attempt(self, job: ReplayJob) -> ReplayResult | _NotStarted:
        """One try in a worker, on scratch made for it alone and reclaimed after it."""
        if not getattr(job, "uses_database", False):
            return self._exchange(job, None)
        engine = self._engine(job.engine)
        made = self._scratch.take(engine, job.limits)
        if isinstance(made, Failed):
            message = f"the replay's database could not be made: {made.message}"
            return ReplayResult(None, RunError("engine_crash", None, None, message), 0.0, 0)
        scratch = made.value
        outcome: ReplayResult | _NotStarted | None = None
        try:
            outcome = self._exchange(job, scratch)
        finally:
            if scratch is not None:
                if outcome is None:  # an exception: the worker may still hold the scratch
                    self._kill()
                reclaimed = self._scratch.reclaim(engine, scratch)
                if isinstance(reclaimed, Failed):
                    self._leftovers.append((engine, scratch))
                    if isinstance(outcome, ReplayResult) and outcome.error is None:
                        message = f"the replay's database could not be dropped: {reclaimed.message}"
                        outcome = ReplayResult(
                            None, RunError("engine_crash", None, None, message), 0.0, 0
                        )
                self._reclaim_leftovers()
        assert outcome is not None
        return outcome

    def _reclaim_leftovers(self) -> None:
        self._leftovers = [
            (engine, scratch)
            for engine, scratch in self._leftovers
            if not self._scratch.drop(engine, scratch)
        ]

    def _exchange(self, job: ReplayJob, scratch: object) -> ReplayResult | _NotStarted:
        conn = self._start()
        try:
            conn.send((job, scratch))
        except OSError:
            self._kill()
            return _NotStarted("engine_crash", "the replay worker could not be reached")
        limits = job.limits
        batch: int | None = None
        stmt: int | None = None
        started: float | None = None
        while True:
            if started is None:
                patience = self.startup_seconds
            else:
                budget_left = started + limits.replay_timeout - time.monotonic()
                patience = max(0.0, min(limits.statement_timeout, budget_left)) + KILL_GRACE_SECONDS
            try:
                ready = conn.poll(patience)
                data = conn.recv_bytes() if ready else None
            except (EOFError, ConnectionError, OSError):
                code = self._process.wait() if self._process else None
                self._kill()
                if started is None:
                    return _NotStarted("engine_crash", _death(code))
                return ReplayResult(
                    None, RunError("engine_crash", batch, stmt, _death(code)), 0.0, 0
                )
            if data is None:
                self._kill()
                if started is None:
                    return _NotStarted(
                        "timeout",
                        f"the replay did not start within {self.startup_seconds:g} s; worker killed",
                    )
                error = RunError(
                    "timeout",
                    batch,
                    stmt,
                    f"the statement outlived its {limits.statement_timeout:g} s limit (or the replay "
                    f"its {limits.replay_timeout:g} s budget) and ignored the interrupt; worker killed",
                )
                return ReplayResult(None, error, 0.0, 0)
            try:
                reply = replies.decode(data)
            except replies.ProtocolError as exc:
                self._kill()
                message = f"the replay worker sent a malformed reply ({exc}); worker killed"
                return ReplayResult(None, RunError("engine_crash", batch, stmt, message), 0.0, 0)
            if reply.kind == "beat":
                batch, stmt = reply.batch, reply.statement
                started = started or time.monotonic()
            elif reply.kind == "done":
                if reply.retire:  # the worker retires after this job
                    self._kill()
                self.spares_used += reply.spare
                assert reply.result is not None
                return reply.result
            elif reply.kind == "out_of_memory":
                self._kill()
                return ReplayResult(
                    None, RunError("engine_crash", batch, stmt, reply.message), 0.0, 0
                )
            else:
                self._kill()
                raise HarnessError(f"the replay worker failed (a harness defect):\n{reply.message}")

    def abort(self) -> None:
        """Kill the worker at once (an interrupt: its job is not waited for), then close."""
        self._kill()
        self.close()

    def close(self) -> None:
        if self._conn is not None and self._process is not None and self._process.poll() is None:
            try:
                self._conn.send(None)
                self._process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill()
        self._reclaim_leftovers()
        self._leftovers += self._scratch.close()


@dataclass(frozen=True)
class _NotStarted:
    """A job the worker never began: it died or stayed silent before the first statement."""

    error_class: str
    message: str


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        return f"the engine process was killed by signal {-exitcode}"
    return f"the engine process exited unexpectedly (exit code {exitcode})"


class _NoPandas:
    """Refuses `import pandas` in a worker. pyarrow imports pandas, when it is installed, at the
    first `pa.array` of a process (to ask whether the input is a Series): ~0.6 s idle and over a
    second on a loaded machine, paid by every worker a grader starts, for nothing, since no
    replay uses pandas. A worker that did would fail loudly, as a harness defect."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(f"{name} is not imported in a replay worker", name=name)


def main(argv: list[str]) -> None:
    """The worker's entry point: `python -m arrivalbench.sandbox FD PARENT_PID`."""
    if "pandas" not in sys.modules:
        sys.meta_path.insert(0, _NoPandas())
    die_with_parent(int(argv[2]))
    # Ctrl-C reaches the whole process group: the supervisor unwinds and ends the worker; the
    # worker itself printing a KeyboardInterrupt traceback from the middle of a job helps nobody.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _serve(Connection(int(argv[1])))


if __name__ == "__main__":
    # Run as a script, this file is `__main__`, while the jobs it unpickles name classes of
    # `arrivalbench.sandbox`, a second copy of it: serve from that copy, so `ReplayJob` here
    # is the class the jobs are.
    from arrivalbench import sandbox

    sandbox.main(sys.argv)
