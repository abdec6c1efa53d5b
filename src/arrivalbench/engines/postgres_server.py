"""The private PostgreSQL server a process tree grades on: started in a temporary folder on a
Unix socket only (as the `postgres` system user when run as root), with its sandbox group, the
template every replay's database is copied from, and a watcher that stops it whenever its owner
dies. `engines.postgres` (the engine) re-exports what its callers import from here.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import pwd
import resource
import shutil
import subprocess
import tempfile
import threading
import time
from typing import Any

from arrivalbench.engines.common import scratch_parent
from arrivalbench.errors import ArrivalBenchError

ENV = "ARRIVALBENCH_POSTGRES"


ADMIN = "arrivalbench_admin"


SANDBOX = "arrivalbench_sandbox"


TEMPLATE = "arrivalbench_template"


BACKEND_ADDRESS_SPACE = 2 * 1024**3 + 256 * 1024**2
"""Every server process's address space (set on the postmaster, inherited by each backend): a
script's values end in PostgreSQL's own "out of memory" ERROR rather than the OOM killer. The
server serves replays of any --memory-limit, so this is a fixed ceiling (twice the default
limit plus shared memory and code); a session's own cap is tighter where the harness may set it."""


SERVER_ROOM_BYTES = 8 << 30
"""What a RAM folder must have free to hold the server's data directory: its WAL and the
databases of the replays running beside each other, each up to a default 1 GB memory limit."""
MAX_LOCKS_PER_TRANSACTION = 256
"""Sizes the server-wide lock table (this times ~220 server processes: ~56,000 entries, ~25 MB
of shared memory), so that the replays running beside each other, each held under
LOCKS_PER_SESSION, leave room for the harness's own CREATE and DROP DATABASE."""


REVOKED_FUNCTIONS = frozenset(
    {
        # change settings a replay was given (work_mem, statement_timeout)
        "set_config",
        # run SQL text the screen never parsed
        "ts_stat",
        "ts_rewrite",
        "query_to_xml",
        "query_to_xmlschema",
        "query_to_xml_and_xmlschema",
        "cursor_to_xml",
        "cursor_to_xmlschema",
        "table_to_xml",
        "table_to_xmlschema",
        "table_to_xml_and_xmlschema",
        "schema_to_xml",
        "schema_to_xmlschema",
        "schema_to_xml_and_xmlschema",
        "database_to_xml",
        "database_to_xmlschema",
        "database_to_xml_and_xmlschema",
        # server-wide state: the shared lock table, the notification queue, other sessions
        "pg_advisory_lock",
        "pg_advisory_lock_shared",
        "pg_advisory_xact_lock",
        "pg_advisory_xact_lock_shared",
        "pg_try_advisory_lock",
        "pg_try_advisory_lock_shared",
        "pg_try_advisory_xact_lock",
        "pg_try_advisory_xact_lock_shared",
        "pg_advisory_unlock",
        "pg_advisory_unlock_shared",
        "pg_advisory_unlock_all",
        "pg_notify",
        "pg_listening_channels",
        "pg_notification_queue_usage",
        "pg_cancel_backend",
        "pg_terminate_backend",
    }
)
"""Built-in functions no replay needs that run SQL text or reach past the replay's own
database: revoked from PUBLIC in the template (the replay roles have no other grant). What
reads or writes the host (pg_read_file, lo_import, pg_ls_dir, ...) is superuser-only already."""


BIN_DIRS = ("/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/local/bin")


class PostgresUnavailable(ArrivalBenchError):
    """No PostgreSQL server binaries, or the server did not start."""


def _binary(name: str) -> str:
    for folder in BIN_DIRS:
        path = os.path.join(folder, name)
        if os.access(path, os.X_OK):
            return path
    found = shutil.which(name)
    if found:
        return found
    raise PostgresUnavailable(
        f"PostgreSQL's {name} was not found (looked in {', '.join(BIN_DIRS)} and PATH); install "
        "it with 'apt-get install -y postgresql' (make test does), or use --engine duckdb."
    )


class Server:
    """A PostgreSQL server in a private temporary folder, on a Unix socket only."""

    def __init__(self) -> None:
        # The replays running at once each hold a database of up to their memory limit (1 GB by
        # default): in RAM only where several of those fit (common.scratch_parent).
        self.folder = tempfile.mkdtemp(
            prefix="arrivalbench-pg-", dir=scratch_parent(SERVER_ROOM_BYTES)
        )
        self.data = os.path.join(self.folder, "data")
        self.socket = self.folder
        self._as: list[str] = []
        if os.geteuid() == 0:  # the server refuses root: run it as the postgres system user
            try:
                user = pwd.getpwnam("postgres")
            except KeyError:
                raise PostgresUnavailable(
                    "running as root, and there is no 'postgres' system user to run the server "
                    "as; install the postgresql package (it creates one)"
                ) from None
            os.chown(self.folder, user.pw_uid, user.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]
        os.chmod(self.folder, 0o700)
        self._watcher, self._owner_end = self._watch()
        initdb = [_binary("initdb"), "-D", self.data, "-U", ADMIN, "--auth=trust"]
        self._run([*initdb, "--no-sync", "-E", "UTF8", "--locale=C"])
        options = (
            f"-k {self.socket} -c listen_addresses='' -c fsync=off -c full_page_writes=off "
            "-c synchronous_commit=off -c max_connections=200 -c shared_buffers=32MB "
            f"-c log_min_messages=fatal -c max_locks_per_transaction={MAX_LOCKS_PER_TRANSACTION}"
        )
        log = os.path.join(self.data, "server.log")
        self._run(
            [_binary("pg_ctl"), "-D", self.data, "-o", options, "-w", "-s", "-l", log, "start"]
        )
        self._prepare()

    def _watch(self) -> tuple[subprocess.Popen[bytes], int]:
        """A small shell that stops the server when this process dies, however it dies.

        `pg_ctl start` leaves the postmaster a daemon (parent PID 1), so nothing stops it when
        its owner is killed with SIGKILL; the watcher reads a pipe whose only writer is this
        process (the kernel closes it at any death) and then runs `pg_ctl stop -m immediate`
        and removes the folder. It runs in a session of its own, so a terminal's Ctrl-C to the
        owner's process group reaches the owner, which stops the server itself, not the watcher.
        """
        read, write = os.pipe()  # not inheritable: no worker or server holds the write end
        stop = [*self._as, _binary("pg_ctl"), "-D", self.data, "-m", "immediate", "-w", "-s"]
        script = 'cat >/dev/null; "$@" stop >/dev/null 2>&1; rm -rf -- "$0"'
        try:
            watcher = subprocess.Popen(
                ["sh", "-c", script, self.folder, *stop],
                stdin=read,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                cwd="/",
                start_new_session=True,
            )
        finally:
            os.close(read)
        return watcher, write

    def _run(self, command: list[str]) -> None:
        done = subprocess.run(
            self._as + command,
            capture_output=True,
            text=True,
            cwd=self.folder,
            check=False,
            preexec_fn=_cap_address_space,
        )
        if done.returncode != 0:
            raise PostgresUnavailable(
                f"{os.path.basename(command[0])} failed ({done.returncode}): "
                f"{(done.stderr or done.stdout).strip()[:500]}"
            )

    def _prepare(self) -> None:
        with admin_connection(self.socket) as con:
            con.execute(f"CREATE ROLE {SANDBOX} NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE")
            con.execute(f"CREATE DATABASE {TEMPLATE} TEMPLATE template0 IS_TEMPLATE true")
        with admin_connection(self.socket, TEMPLATE) as con:
            con.execute(f"GRANT USAGE, CREATE ON SCHEMA public TO {SANDBOX}")
            revoke_unneeded_functions(con)

    def stop(self) -> None:
        try:
            self._run([_binary("pg_ctl"), "-D", self.data, "-m", "immediate", "-w", "-s", "stop"])
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
            os.close(self._owner_end)  # the watcher finds nothing left to stop
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._watcher.wait(timeout=10)


def revoke_unneeded_functions(con: Any) -> None:
    """REVOKE EXECUTE FROM PUBLIC, in the template every replay's database is copied from, on
    every built-in function of REVOKED_FUNCTIONS (all its overloads): the privilege, not the
    screen, is what stops a call however it is spelt or wherever it hides (inside ts_stat's
    query text, a view, a default expression)."""
    found = con.execute(
        "SELECT p.oid::regprocedure::text, p.proname FROM pg_proc p "
        "JOIN pg_namespace n ON n.oid = p.pronamespace "
        "WHERE n.nspname = 'pg_catalog' AND p.proname = ANY(%s)",
        [sorted(REVOKED_FUNCTIONS)],
    ).fetchall()
    for signature, _ in found:
        con.execute(f"REVOKE EXECUTE ON FUNCTION {signature} FROM PUBLIC")


def _cap_address_space() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (BACKEND_ADDRESS_SPACE, BACKEND_ADDRESS_SPACE))


_SERVER: Server | None = None


_LOCK = threading.Lock()


def server_socket() -> str:
    """The socket folder of the server this process tree uses, starting one if there is none."""
    global _SERVER
    with _LOCK:
        given = os.environ.get(ENV)
        if given:
            return given
        _SERVER = Server()
        os.environ[ENV] = _SERVER.socket
        atexit.register(_stop_server, _SERVER)
        return _SERVER.socket


def _stop_server(server: Server) -> None:
    if os.environ.get(ENV) == server.socket:
        del os.environ[ENV]
    server.stop()


def admin_connection(socket: str, dbname: str = "postgres") -> Any:
    import psycopg

    return psycopg.connect(host=socket, user=ADMIN, dbname=dbname, autocommit=True)


@functools.cache
def _server_version() -> str:
    try:
        out = subprocess.run(
            [_binary("postgres"), "--version"], capture_output=True, text=True, check=False
        ).stdout
    except (PostgresUnavailable, OSError):
        return "unavailable"
    words = out.split()  # "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)"
    return words[2] if len(words) > 2 else "unknown"


def wait_ready(socket: str, seconds: float = 10.0) -> None:
    """Until the server at `socket` accepts connections."""
    import psycopg

    deadline = time.monotonic() + seconds
    while True:
        try:
            with admin_connection(socket):
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
