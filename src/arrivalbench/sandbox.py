"""The sandbox for untrusted SQL: statement screening before execution, and a worker process per grader.

Every replay runs in a separate worker process. The worker announces each statement before it
runs it; when a statement outlives its timeout the worker's own watchdog interrupts it, and if the
worker stays silent past a grace period the supervisor kills it. A worker that dies (a segfault,
an out-of-memory kill) costs one ERROR verdict; the next replay gets a fresh worker.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import traceback
from dataclasses import dataclass
from multiprocessing.connection import Connection

from arrivalbench.engines import Engine, Limits, Statement, get_engine
from arrivalbench.logs import log_from_seed
from arrivalbench.replay import ReplayResult, RunError, replay
from arrivalbench.schedules import Schedule
from arrivalbench.spec import Task

KILL_GRACE_SECONDS = 5.0
"""How long past the statement timeout a silent worker is given before it is killed."""
STARTUP_SECONDS = 120.0
"""How long a worker may take to start and prepare a job (imports, log generation) before its first statement."""
WORKER_ADDRESS_SPACE = 8 << 30
"""A backstop under DuckDB's own memory limit: past this the worker's allocations fail, not the host."""


def screen(engine: Engine, statements: list[Statement]) -> RunError | None:
    """Refuse the whole script, before anything runs, if any statement changes the session or reaches outside."""
    for statement in statements:
        reason = engine.refusal(statement)
        if reason:
            return RunError("sandbox_refused", 1, statement.index, reason)
    return None


@dataclass(frozen=True)
class ReplayJob:
    """Everything a worker needs; it regenerates the log itself (deterministic, cached per worker)."""

    task: Task
    schedule: Schedule
    statements: list[Statement]
    limits: Limits
    engine: str = "duckdb"


def _serve(conn: Connection) -> None:
    engine_cache: dict[str, Engine] = {}
    while True:
        try:
            job: ReplayJob | None = conn.recv()
        except EOFError:
            return
        if job is None:
            return
        try:
            engine = engine_cache.setdefault(job.engine, get_engine(job.engine))
            log = log_from_seed(job.task, job.schedule.log_kind, job.schedule.log_seed)
            result = replay(
                engine,
                job.statements,
                job.schedule,
                log,
                job.task.spec.target.name,
                job.limits,
                heartbeat=lambda batch, stmt: conn.send(("beat", batch, stmt)),
            )
            conn.send(("done", result))
        except Exception:
            conn.send(("harness_error", traceback.format_exc()))


class HarnessError(RuntimeError):
    """A defect of the harness itself (not of the pipeline): never turned into a verdict."""


class Sandbox:
    """A supervised worker process that runs replay jobs one at a time. Use as a context manager.

    The worker is a plain `python -m arrivalbench.sandbox` child speaking over a socket pair, so it
    never re-imports the caller's main module (stdin scripts, notebooks, pytest, Ray all work).
    """

    def __init__(self) -> None:
        self._process: subprocess.Popen[bytes] | None = None
        self._conn: Connection | None = None

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> Connection:
        if self._process is None or self._process.poll() is not None:
            self._kill()
            parent, child = socket.socketpair()
            self._process = subprocess.Popen(
                [sys.executable, "-m", "arrivalbench.sandbox", str(child.fileno())],
                pass_fds=(child.fileno(),),
                stdin=subprocess.DEVNULL,
                cwd="/",
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
        conn = self._start()
        conn.send(job)
        batch, stmt = None, None
        while True:
            patience = (
                STARTUP_SECONDS
                if batch is None
                else job.limits.statement_timeout + KILL_GRACE_SECONDS
            )
            try:
                ready = conn.poll(patience)
                message = conn.recv() if ready else None
            except (EOFError, ConnectionError, OSError):
                code = self._process.wait() if self._process else None
                self._kill()
                if (
                    batch is None
                ):  # died before running any pipeline statement: not the pipeline's doing
                    raise HarnessError(
                        f"the replay worker died before the pipeline ran ({_death(code)})"
                    ) from None
                return ReplayResult(
                    None, RunError("engine_crash", batch, stmt, _death(code)), 0.0, 0
                )
            if message is None:
                self._kill()
                if batch is None:
                    raise HarnessError(
                        f"the replay worker did not start a statement within {STARTUP_SECONDS:g} s"
                    )
                error = RunError(
                    "timeout",
                    batch,
                    stmt,
                    f"statement exceeded the {job.limits.statement_timeout:g} s limit and ignored the interrupt; worker killed",
                )
                return ReplayResult(None, error, 0.0, 0)
            kind = message[0]
            if kind == "beat":
                batch, stmt = message[1], message[2]
            elif kind == "done":
                return message[1]
            else:
                self._kill()
                raise HarnessError(f"the replay worker failed (a harness defect):\n{message[1]}")

    def close(self) -> None:
        if self._conn is not None and self._process is not None and self._process.poll() is None:
            try:
                self._conn.send(None)
                self._process.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self._kill()


def _death(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        return f"the engine process was killed by signal {-exitcode}"
    return f"the engine process exited unexpectedly (exit code {exitcode})"


if __name__ == "__main__":
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (WORKER_ADDRESS_SPACE, WORKER_ADDRESS_SPACE))
    _serve(Connection(int(sys.argv[1])))
