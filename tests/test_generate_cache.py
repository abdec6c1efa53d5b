"""The repair loop's snapshot checks go through the verdict cache when generate is given one."""

from __future__ import annotations

import json
from pathlib import Path

from arrivalbench.agent.generate import generate
from arrivalbench.agent.models import ReplayModel
from arrivalbench.cache import VerdictCache
from arrivalbench.sandbox import Sandbox
from arrivalbench.spec import get_task


def _replies(folder: Path) -> Path:
    gold = get_task("daily_revenue").gold_sql
    path = folder / "replies.json"
    path.write_text(json.dumps({"daily_revenue": [f"```sql\n{gold}```"]}))
    return path


def _generate(replies: Path, out: Path, cache: Path | None):
    return generate(
        ReplayModel(replies),
        arms=["unhinted"],
        k=1,
        out=out,
        task_ids=["daily_revenue"],
        log=lambda line: None,
        cache_dir=cache,
    )


def test_a_snapshot_check_seen_before_is_read_from_the_cache_not_run(tmp_path, monkeypatch):
    replies, cache = _replies(tmp_path), tmp_path / "cache"
    first = _generate(replies, tmp_path / "first", cache)
    assert len(list(VerdictCache(cache).root.rglob("*.json"))) >= 1

    def no_replay(self, job):
        raise AssertionError("the cached snapshot check ran again")

    monkeypatch.setattr(Sandbox, "run", no_replay)
    second = _generate(replies, tmp_path / "second", cache)
    [a], [b] = first.cells(), second.cells()
    assert (a.artifact_sha256, a.snapshot_by_turn) == (b.artifact_sha256, b.snapshot_by_turn)
    assert a.snapshot_by_turn == ("PASS",)
    paths = [run.transcript_path("unhinted", "daily_revenue", 0) for run in (first, second)]
    assert paths[0].read_bytes() == paths[1].read_bytes()


def test_without_a_cache_every_snapshot_check_runs(tmp_path, monkeypatch):
    replies = _replies(tmp_path)
    _generate(replies, tmp_path / "first", None)
    ran: list[object] = []
    real = Sandbox.run
    monkeypatch.setattr(Sandbox, "run", lambda self, job: ran.append(job) or real(self, job))
    _generate(replies, tmp_path / "second", None)
    assert len(ran) == 1
