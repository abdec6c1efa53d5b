"""The page's web server: the standard library's threading HTTP server, a token, bounded bodies.

One person at a time uses a study's page, so a framework would add a dependency and nothing
else: http.server serves the three package files of the page and two JSON endpoints
(`GET /api/state`, `POST /api/action`). Every request but the static files carries the random
token printed in the URL (the page sends it back as a header), so neither another user of the
machine nor a web page open in the same browser can drive or read the session; a body is
refused past `MAX_BODY` bytes before it is read. The prompts are Markdown, rendered here by
markdown-it (Rich's own dependency) with raw HTML off, so the page never inserts text a task
controls as markup; feedback (an engine's message, example rows) is shown as the plain text the
model reads.
"""

from __future__ import annotations

import errno
import hmac
import json
import secrets
import threading
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from markdown_it import MarkdownIt

from arrivalbench.agent.parse import parse_response
from arrivalbench.agent.prompts import Prompt
from arrivalbench.errors import UsageError
from arrivalbench.human.desk import Desk, StaleAction

MAX_BODY = 2 * 1024 * 1024
"""The largest request body read (a script of the default 1 MB cap, JSON-escaped, fits)."""
STATIC = {
    "/": ("index.html", "text/html; charset=utf-8"),
    "/static/app.js": ("app.js", "text/javascript; charset=utf-8"),
    "/static/style.css": ("style.css", "text/css; charset=utf-8"),
}
HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "connect-src 'self'; img-src 'self'; form-action 'none'; frame-ancestors 'none'; "
    "base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")


def render(text: str | None) -> str:
    """Markdown as HTML with raw HTML escaped (markdown-it also refuses javascript: links)."""
    return _MARKDOWN.render(text) if text else ""


def static_file(name: str) -> bytes:
    return resources.files("arrivalbench.human").joinpath("static", name).read_bytes()


@dataclass
class Page:
    """Everything the state endpoint reads besides the desk."""

    desk: Desk
    prompts: dict[str, Prompt]
    participant: str
    sample: int
    instructions: str | None
    token: str
    timeout: float  # longest wait for the loop to deal with an action

    def state(self) -> dict[str, Any]:
        desk = self.desk
        with desk.cond:
            prompt = self.prompts.get(desk.task) if desk.task else None
            history = [
                {
                    "turn": h["turn"],
                    "script": parse_response(h["reply"]).script or "",
                    "verdict": h["verdict"],
                    "feedback": h.get("feedback"),
                }
                for h in desk.history
            ]
            return {
                "version": desk.version,
                "status": desk.status,
                "participant": self.participant,
                "sample": self.sample,
                "task": desk.task,
                "task_number": desk.tasks.index(desk.task) + 1 if desk.task else 0,
                "task_count": len(desk.tasks),
                "turn": desk.turn,
                "turns": desk.turns,
                "system": prompt.system if prompt else "",
                "user": prompt.user if prompt else "",
                "system_html": render(prompt.system) if prompt else "",
                "user_html": render(prompt.user) if prompt else "",
                "instructions_html": render(self.instructions),
                "history": history,
                "finished": list(desk.finished),
            }


def _handler(page: Page) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        server_version = "arrivalbench-human"
        sys_version = ""

        def log_message(self, format: str, *args: Any) -> None:
            pass  # the terminal shows the study's progress, not every request

        def _send(self, status: int, body: bytes, kind: str) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            for key, value in HEADERS.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(body)

        def _json(self, status: int, data: dict[str, Any]) -> None:
            self._send(status, json.dumps(data).encode(), "application/json")

        def _allowed(self, given: str | None) -> bool:
            return given is not None and hmac.compare_digest(given.encode(), page.token.encode())

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path in STATIC:
                if url.path == "/" and not self._allowed(
                    (parse_qs(url.query).get("token") or [None])[0]
                ):
                    self._send(
                        HTTPStatus.FORBIDDEN,
                        b"Open the address printed by 'arrivalbench human' (it holds the token).",
                        "text/plain; charset=utf-8",
                    )
                    return
                name, kind = STATIC[url.path]
                self._send(HTTPStatus.OK, static_file(name), kind)
            elif url.path == "/api/state":
                if not self._allowed(self.headers.get("X-Token")):
                    self._json(HTTPStatus.FORBIDDEN, {"error": "wrong or missing token"})
                    return
                self._json(HTTPStatus.OK, page.state())
            else:
                self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})

        def do_POST(self) -> None:
            if urlsplit(self.path).path != "/api/action":
                self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})
                return
            if not self._allowed(self.headers.get("X-Token")):
                self._json(HTTPStatus.FORBIDDEN, {"error": "wrong or missing token"})
                return
            try:
                length = int(self.headers.get("Content-Length", ""))
            except ValueError:
                self._json(HTTPStatus.LENGTH_REQUIRED, {"error": "Content-Length required"})
                return
            if length < 0 or length > MAX_BODY:
                self.close_connection = True
                self._json(
                    HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                    {"error": f"the script is longer than {MAX_BODY} bytes; shorten it"},
                )
                return
            try:
                body = json.loads(self.rfile.read(length))
                kind, script = str(body["kind"]), str(body.get("script", ""))
                task, turn = str(body["task"]), int(body["turn"])
            except (ValueError, KeyError, TypeError):
                self._json(HTTPStatus.BAD_REQUEST, {"error": "expected {kind, script, task, turn}"})
                return
            try:
                page.desk.act(kind, script, task, turn, page.timeout)
            except StaleAction as exc:
                self._json(HTTPStatus.CONFLICT, {"error": str(exc), "state": page.state()})
                return
            self._json(HTTPStatus.OK, page.state())

    return Handler


class Server:
    """The page's server on its own thread; `url` holds the token."""

    def __init__(self, page: Page, host: str, port: int) -> None:
        try:
            self.httpd = ThreadingHTTPServer((host, port), _handler(page))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                raise UsageError(
                    f"--port {port}: already in use on {host}; choose another port "
                    "(--port 0 picks a free one)."
                ) from None
            raise UsageError(
                f"--host {host} --port {port}: cannot listen there ({exc.strerror}); give an "
                "address of this machine and a free port."
            ) from None
        self.httpd.daemon_threads = False  # server_close waits for the last response
        self.page = page
        bound_host, bound_port = self.httpd.server_address[:2]
        shown = f"[{bound_host}]" if ":" in str(bound_host) else bound_host
        self.url = f"http://{shown}:{bound_port}/?token={page.token}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def start(self) -> Server:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def new_token() -> str:
    return secrets.token_urlsafe(24)
