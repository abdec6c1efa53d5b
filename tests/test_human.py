"""arrivalbench human: the page drives the model arm's repair loop, and leaves the same transcripts.

The fast tests replace the snapshot check by a stub (a dict of verdicts), which both answerers
share, so what they compare is the loop, the Model adapter and the page; the slow browser test
runs the real check and grades the stored cell.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from arrivalbench.agent.generate import save_transcript
from arrivalbench.agent.loop import repair_loop
from arrivalbench.agent.models import ReplayModel
from arrivalbench.agent.prompts import build_prompt
from arrivalbench.cli import run as cli_run
from arrivalbench.errors import UsageError
from arrivalbench.human.desk import fence
from arrivalbench.human.server import MAX_BODY, render
from arrivalbench.human.study import Session
from arrivalbench.spec import Task, get_task

TASKS = ["daily_revenue", "customer_state"]
RIGHT = "CREATE TABLE daily_revenue AS SELECT 1 AS right_answer;"
WRONG = "CREATE TABLE daily_revenue AS SELECT 1 AS wrong_answer;"
BROKEN = "CREATE TABLE customer_state AS SELECT * FROM nowhere;"
ALSO_WRONG = "-- a second try\nCREATE TABLE customer_state AS SELECT 2 AS wrong_answer;"
# the same scripted answers for both answerers: (action, script) per turn and task
SCRIPT = {
    "daily_revenue": [("run", WRONG), ("run", RIGHT)],  # fixed on turn 2: PASS ends the cell
    "customer_state": [("run", BROKEN), ("submit", ALSO_WRONG)],  # a new script on Submit
}
REPLIES = {task: [fence(script) for _, script in steps] for task, steps in SCRIPT.items()}


async def stub_check(task: Task, script: str) -> dict[str, Any]:
    """A snapshot verdict entry per script, in the shapes the feedback reads."""
    if "right_answer" in script:
        return {"verdict": "PASS"}
    if "nowhere" in script:
        return {
            "verdict": "ERROR",
            "error_class": "sql_error",
            "statement": 1,
            "message": "Catalog Error: Table with name nowhere does not exist!",
        }
    return {
        "verdict": "FAIL",
        "diff": {
            "expected_rows": 2,
            "actual_rows": 1,
            "counts": {"missing": 1},
            "examples": {"missing": [{"store_id": 1, "day": "2026-03-04"}]},
        },
    }


def replayed(tmp_path: Path) -> Path:
    """The model arm: the scripted answers as a replay file, through repair_loop."""
    path = tmp_path / "replies.json"
    path.write_text(json.dumps(REPLIES))
    model = ReplayModel(path)
    model.name = "human"  # the answerer's name is the one field that says who answered
    out = tmp_path / "replayed"

    async def main() -> None:
        for task_id in TASKS:
            task = get_task(task_id)
            result = await repair_loop(
                task, build_prompt(task, "unhinted"), 0, model, stub_check, turns=3
            )
            save_transcript(out, result)

    asyncio.run(main())
    return out


class Client:
    """The page's requests, made with urllib."""

    def __init__(self, url: str) -> None:
        parts = urllib.parse.urlsplit(url)
        self.base = f"{parts.scheme}://{parts.netloc}"
        self.token = urllib.parse.parse_qs(parts.query)["token"][0]

    def request(
        self, path: str, body: bytes | None = None, token: str | None = None
    ) -> tuple[int, Any]:
        headers = {"X-Token": self.token if token is None else token}
        req = urllib.request.Request(self.base + path, data=body, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=30) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"{}")

    def state(self) -> dict[str, Any]:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            status, state = self.request("/api/state")
            assert status == 200
            if state["status"] == "waiting" or state["status"] == "finished":
                return state  # type: ignore[no-any-return]
            time.sleep(0.02)
        raise AssertionError(f"the desk never waited: {state}")

    def act(self, kind: str, script: str) -> dict[str, Any]:
        state = self.state()
        body = {"kind": kind, "script": script, "task": state["task"], "turn": state["turn"]}
        status, after = self.request("/api/action", json.dumps(body).encode())
        assert status == 200, after
        return after  # type: ignore[no-any-return]


def session(out: Path, **options: Any) -> Session:
    return Session(out, task_ids=TASKS, port=0, check=stub_check, **options)


def sit(sitting: Session, person: Any) -> Any:
    """Run the sitting while `person(client)` uses its page from a thread; a failure of the
    person's side stops the sitting (so the test fails instead of waiting) and is raised here."""
    failed: list[BaseException] = []

    def target() -> None:
        try:
            person(Client(sitting.url))
        except BaseException as exc:
            failed.append(exc)
            sitting.stop()

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    run = sitting.run()
    thread.join(30)
    if failed:
        raise failed[0]
    return run


def transcripts(out: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(out)): p.read_bytes()
        for p in sorted((out / "transcripts").rglob("*.json"))
    }


def test_the_page_and_the_replay_model_leave_byte_identical_transcripts(tmp_path: Path) -> None:
    expected = transcripts(replayed(tmp_path))
    states = []

    def person(client: Client) -> None:
        for steps in SCRIPT.values():
            for kind, script in steps:
                states.append(client.act(kind, script))

    run = sit(session(tmp_path / "study", participant="ana"), person)
    assert run is not None
    assert transcripts(tmp_path / "study") == expected
    assert len(expected) == 2
    # what the page showed: the loop's own feedback, the turn counter and the verdicts
    first = states[0]
    assert first["task"] == "daily_revenue" and first["turn"] == 2 and first["turns"] == 3
    assert first["history"][0]["verdict"] == "FAIL"
    assert first["history"][0]["feedback"].startswith("Your script ran without error")
    assert first["history"][0]["script"] == WRONG + "\n"
    assert states[1]["task"] == "customer_state"  # PASS ended the first cell
    assert states[1]["finished"] == [{"task": "daily_revenue", "verdict": "PASS", "turns": 2}]
    assert "Catalog Error" in states[2]["history"][0]["feedback"]  # the engine's words
    assert states[-1]["status"] == "finished"
    cells = {c.task: c for c in run.cells()}
    assert cells["daily_revenue"].snapshot_by_turn == ("FAIL", "PASS")
    assert cells["customer_state"].snapshot_by_turn == ("ERROR", "FAIL")
    assert run.arm_info()["unhinted"]["role"] == "human"
    seconds = run.manifest["config"]["human"]["participants"][0]["seconds"]
    assert set(seconds) == set(TASKS) and all(s > 0 for s in seconds.values())


def test_an_interrupted_sitting_resumes_where_it_stopped(tmp_path: Path) -> None:
    expected = transcripts(replayed(tmp_path))
    out = tmp_path / "study"
    first = session(out, participant="ana")

    def until_interrupted(client: Client) -> None:
        client.act("run", WRONG)
        client.act("run", RIGHT)
        client.act("run", BROKEN)  # customer_state turn 1, then Ctrl-C
        client.state()
        first.stop()

    assert sit(first, until_interrupted) is None
    assert not (out / "manifest.json").exists()  # not finished: not a run to grade yet
    again = session(out)  # the one unfinished participant resumes without a name
    assert (again.participant, again.sample) == ("ana", 0)
    shown = []

    def the_rest(client: Client) -> None:
        shown.append(client.state())
        client.act("submit", ALSO_WRONG)

    assert sit(again, the_rest) is not None
    assert shown[0]["task"] == "customer_state" and shown[0]["turn"] == 2  # turn 1 replayed
    assert shown[0]["history"][0]["verdict"] == "ERROR"
    assert transcripts(out) == expected


def test_participants_are_samples_in_the_order_they_start(tmp_path: Path) -> None:
    out = tmp_path / "study"
    for name in ("ana", "ben"):
        run = sit(
            session(out, participant=name),
            lambda c: [c.act("submit", RIGHT), c.act("submit", RIGHT)],
        )
    assert run is not None
    assert sorted((c.task, c.sample) for c in run.cells()) == sorted(
        (t, s) for t in TASKS for s in (0, 1)
    )
    people = run.manifest["config"]["human"]["participants"]
    assert [(p["name"], p["sample"]) for p in people] == [("ana", 0), ("ben", 1)]
    with pytest.raises(UsageError, match="ben: has finished every task"):
        session(out, participant="ben")


def test_the_api_wants_the_token_and_bounds_the_body(tmp_path: Path) -> None:
    sitting = session(tmp_path / "study")
    results: dict[str, Any] = {}

    def probe(client: Client) -> None:
        state = client.state()
        results["no token"] = client.request("/api/state", token="")[0]
        results["wrong token"] = client.request("/api/state", token="x" * 32)[0]
        results["page without token"] = urllib.request.urlopen(
            urllib.request.Request(client.base + "/static/app.js")
        ).status
        try:
            urllib.request.urlopen(client.base + "/")
        except urllib.error.HTTPError as exc:
            results["index without token"] = exc.code
        connection = http.client.HTTPConnection(urllib.parse.urlsplit(client.base).netloc)
        connection.putrequest("POST", "/api/action")
        connection.putheader("X-Token", client.token)
        connection.putheader("Content-Length", str(MAX_BODY + 1))  # refused before reading
        connection.endheaders()
        results["too large"] = connection.getresponse().status
        connection.close()
        stale = {"kind": "run", "script": RIGHT, "task": state["task"], "turn": 3}
        results["stale"] = client.request("/api/action", json.dumps(stale).encode())[0]
        results["bad kind"] = client.request(
            "/api/action", json.dumps({**stale, "kind": "delete", "turn": 1}).encode()
        )[0]
        sitting.stop()

    assert sit(sitting, probe) is None
    assert results == {
        "no token": 403,
        "wrong token": 403,
        "page without token": 200,  # the page's own files are public package data
        "index without token": 403,
        "too large": 413,
        "stale": 409,
        "bad kind": 409,
    }


def test_markdown_is_rendered_with_raw_html_escaped() -> None:
    html = render(
        "# Title\n\n<script>alert(1)</script>\n\n[x](javascript:alert(1))\n\n| a |\n| - |\n| 1 |"
    )
    assert "<h1>Title</h1>" in html and "<table>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'href="javascript:' not in html


def test_fence_outgrows_the_backticks_in_a_script() -> None:
    from arrivalbench.agent.parse import parse_response

    script = "SELECT 1;\n```\nSELECT 2;\n"
    assert parse_response(fence(script)).script == script


def one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    with pytest.raises(SystemExit) as exit_:
        cli_run(argv)
    assert exit_.value.code == 2
    message = capsys.readouterr().err.strip()
    assert len(message.splitlines()) == 1 and "Traceback" not in message
    return message


def test_a_port_in_use_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        message = one_line_error(
            capsys,
            [
                "human",
                "--out",
                str(tmp_path / "s"),
                "--tasks",
                "daily_revenue",
                "--port",
                str(port),
            ],
        )
    assert f"--port {port}: already in use" in message
    assert not (tmp_path / "s").exists()  # refused before anything was written


def test_an_unknown_task_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    message = one_line_error(
        capsys, ["human", "--out", str(tmp_path / "s"), "--tasks", "daily_revenu", "--port", "0"]
    )
    assert "daily_revenu" in message and "daily_revenue" in message  # did you mean


def test_a_run_directory_of_another_kind_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    generated = tmp_path / "generated"
    generated.mkdir()
    (generated / "generation.json").write_text("{}")
    message = one_line_error(
        capsys, ["human", "--out", str(generated), "--tasks", "daily_revenue", "--port", "0"]
    )
    assert "not a human study" in message and "generate" in message


def test_a_study_with_other_settings_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sitting = session(tmp_path / "study")
    sit(sitting, lambda client: (client.state(), sitting.stop()))
    message = one_line_error(
        capsys,
        ["human", "--out", str(tmp_path / "study"), "--tasks", "daily_revenue", "--port", "0"],
    )
    assert "other tasks" in message


@pytest.mark.slow
def test_the_command_warns_off_loopback_and_saves_on_sigterm(tmp_path: Path) -> None:
    """The real command: --host prints a warning and a tokened URL; SIGTERM (as Ctrl-C) saves the
    study file and says how to resume, exit code 130."""
    import os
    import signal
    import subprocess
    import sys

    out = tmp_path / "study"
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1] / "src")}
    command = [sys.executable, "-m", "arrivalbench", "human", "--out", str(out)]
    command += ["--tasks", "daily_revenue", "--port", "0", "--host", "127.0.0.1"]
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        url = process.stdout.readline().strip()  # type: ignore[union-attr]
        assert url.startswith("http://127.0.0.1:") and "?token=" in url
        client = Client(url)
        assert client.state()["task"] == "daily_revenue"
        assert client.request("/api/state", token="")[0] == 403
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130
    assert "warning: --host 127.0.0.1: the page listens there, not on loopback only" in stderr
    assert "the same command resumes it" in stderr and "Traceback" not in stderr
    study = json.loads((out / "human.json").read_text())
    assert [p["name"] for p in study["participants"]] == ["p0"]
    assert study["participants"][0]["tasks"]["daily_revenue"]["seconds"] > 0
