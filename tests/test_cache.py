"""The verdict cache: a hit is what a fresh grading gives, every input of a verdict is in its key,
concurrent writers leave one whole entry, and re-grading never reads it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arrivalbench.cache import VerdictCache, _digest
from arrivalbench.corpus import make_corpus
from arrivalbench.engines import Limits
from arrivalbench.grade import Grader, dumps
from arrivalbench.seeds import private_seed
from arrivalbench.spec import get_task, load_task
from arrivalbench.sweep import sweep, verify

pytestmark = pytest.mark.slow

SCHEDULES = ["snapshot", "in_order_stream", "duplicate_delivery"]
DEDUP_HISTORY_ONLY = "controls/dedup_history_only.sql"


@pytest.fixture(scope="module")
def task():
    return get_task("daily_revenue")


@pytest.fixture
def cache(tmp_path: Path) -> VerdictCache:
    return VerdictCache(tmp_path / "cache")


def entries(cache: VerdictCache) -> list[Path]:
    return sorted((cache.root / "verdicts").glob("*/*"))


def poison(cache: VerdictCache) -> int:
    """Turn every stored verdict into an ERROR no grading would give; the number changed."""
    paths = entries(cache)
    for path in paths:
        stored = json.loads(path.read_text())
        stored["entry"] = {
            "verdict": "ERROR",
            "error_class": "sql_error",
            "batch": 1,
            "statement": 1,
            "message": "poisoned",
            "schedule_sha256": stored["entry"]["schedule_sha256"],
        }
        path.write_text(json.dumps(stored))
    return len(paths)


def test_a_hit_returns_the_bytes_a_fresh_grading_gives(task, cache):
    """Gold (PASS) and a control (FAIL, with a diff) graded fresh, into the cache, and from it."""
    for script in (task.gold_sql, task.controls[DEDUP_HISTORY_ONLY]):
        with Grader() as fresh:
            expected, _ = fresh.grade(task, script, SCHEDULES)
        with Grader(cache=VerdictCache(cache.root)) as filling:
            first, _ = filling.grade(task, script, SCHEDULES)
        with Grader(cache=VerdictCache(cache.root)) as reading:
            again, timings = reading.grade(task, script, SCHEDULES)
        assert (filling.cache.misses, reading.cache.hits) == (3, 3)
        assert dumps(first) == dumps(expected)
        assert dumps(again) == dumps(expected)
        assert all(t["statement_seconds"] == 0.0 for t in timings.values())
    assert any(json.loads(p.read_text())["entry"]["verdict"] == "FAIL" for p in entries(cache))


def test_a_public_oracle_is_computed_once_and_read_back(task, cache, monkeypatch):
    with Grader(cache=cache) as grader:
        grader.grade(task, task.gold_sql, SCHEDULES)
    assert len(list((cache.root / "oracles").glob("*/*.arrow"))) == 2  # visible and hidden log

    def no_oracle(*args, **kwargs):
        raise AssertionError("the oracle was computed again")

    monkeypatch.setattr("arrivalbench.grade.compute_oracle", no_oracle)
    with Grader(cache=cache) as grader:
        record, _ = grader.grade(task, task.gold_sql + "\n-- another artifact\n", SCHEDULES)
    assert {v["verdict"] for v in record["verdicts"].values()} == {"PASS"}


def test_a_private_hidden_oracle_never_reaches_the_disk(task, cache):
    private = private_seed("cd" * 16, "test.seed")
    with Grader(cache=cache, private=private) as grader:
        grader.grade(task, task.gold_sql, SCHEDULES)
    assert len(list((cache.root / "oracles").glob("*/*.arrow"))) == 1  # the visible log only


def test_a_changed_task_engine_version_artifact_or_limit_misses(task, cache, copy_task):
    with Grader(cache=cache) as grader:
        grader.grade(task, task.gold_sql, ["snapshot"])
    assert len(entries(cache)) == 1

    folder = copy_task("daily_revenue")
    (folder / "oracle.sql").write_text(task.oracle_sql + "\n-- the same query, another task\n")
    changed_task = load_task(folder)
    variants = {
        "task": (changed_task, task.gold_sql, Limits(), None),
        "artifact": (task, task.gold_sql + "\n-- one more comment\n", Limits(), None),
        "limit": (task, task.gold_sql, Limits(statement_timeout=9.0), None),
        "engine version": (task, task.gold_sql, Limits(), "0.0.0-other"),
    }
    for what, (graded, script, limits, version) in variants.items():
        with Grader(cache=VerdictCache(cache.root), limits=limits) as grader:
            if version is not None:
                grader.engine.version = version
            grader.grade(graded, script, ["snapshot"])
            assert (grader.cache.hits, grader.cache.misses) == (0, 1), what
    assert len(entries(cache)) == 1 + len(variants)


def test_regression_an_edited_harness_read_the_verdicts_of_its_code_before_the_edit(
    task, cache, monkeypatch
):
    """The key named the harness by its version number only, so an edited checkout (or a patched
    install) of the same version was served the verdicts the old code gave."""
    with Grader(cache=cache) as grader:
        grader.grade(task, task.gold_sql, ["snapshot"])
    monkeypatch.setattr("arrivalbench.cache.harness_code", lambda: "0" * 64)
    with Grader(cache=VerdictCache(cache.root)) as grader:
        grader.grade(task, task.gold_sql, ["snapshot"])
        assert (grader.cache.hits, grader.cache.misses) == (0, 1)


def test_harness_code_follows_the_sources_but_not_the_task_suite(tmp_path):
    from arrivalbench.cache import harness_code

    package = tmp_path / "arrivalbench"
    (package / "suite" / "t").mkdir(parents=True)
    (package / "grade.py").write_text("X = 1\n")
    (package / "suite" / "t" / "oracle.py").write_text("Y = 1\n")
    before = harness_code(package)
    (package / "suite" / "t" / "oracle.py").write_text("Y = 2\n")  # the task hash covers it
    assert harness_code.__wrapped__(package) == before
    (package / "grade.py").write_text("X = 2\n")
    assert harness_code.__wrapped__(package) != before


WRITER = """
import sys
from pathlib import Path
from arrivalbench.cache import VerdictCache, _digest
cache = VerdictCache(Path(sys.argv[1]))
key = {"k": "same"}
for i in range(300):
    cache.put(key, {"verdict": "FAIL", "writer": sys.argv[2], "i": i, "pad": "x" * 20000})
"""


def test_two_processes_writing_one_key_leave_one_valid_entry(cache):
    writers = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(cache.root), name])
        for name in ("a", "b")
    ]
    assert [w.wait(timeout=120) for w in writers] == [0, 0]
    files = [p for p in (cache.root / "verdicts").rglob("*") if p.is_file()]
    assert len(files) == 1, files  # no temporary file left behind
    entry = cache.get({"k": "same"})
    assert entry is not None
    assert entry["writer"] in ("a", "b") and entry["i"] == 299 and len(entry["pad"]) == 20000


def test_an_unreadable_entry_is_a_miss_not_an_error(cache):
    cache.put({"k": 1}, {"verdict": "PASS"})
    (path,) = entries(cache)
    path.write_text('{"key": {"k": 1}, "entry": {"verd')  # torn
    assert cache.get({"k": 1}) is None
    path.write_text(json.dumps({"key": {"k": 2}, "entry": {"verdict": "PASS"}}))  # another key
    assert cache.get({"k": 1}) is None


def test_machine_dependent_errors_are_not_stored(cache):
    cache.put({"k": "t"}, {"verdict": "ERROR", "error_class": "timeout"})
    cache.put({"k": "c"}, {"verdict": "ERROR", "error_class": "engine_crash"})
    cache.put({"k": "s"}, {"verdict": "ERROR", "error_class": "sql_error"})
    assert [cache.get({"k": k}) is not None for k in "tcs"] == [False, False, True]


def test_eviction_removes_the_least_recently_used_first(tmp_path):
    cache = VerdictCache(tmp_path / "cache", max_bytes=50_000)
    for i in range(10):
        cache.put({"k": i}, {"verdict": "PASS", "pad": "x" * 10_000})
        stamp = 1_000_000 + i
        os.utime(cache._path("verdicts", _digest({"k": i}), ".json"), (stamp, stamp))
    assert cache.get({"k": 0}) is not None  # a hit makes the oldest the newest
    assert cache.evict() > 0
    assert cache.size() <= 50_000 * 0.8
    assert cache.get({"k": 0}) is not None
    assert cache.get({"k": 1}) is None


def test_regrade_verify_never_reads_the_cache(tmp_path, cache):
    run = make_corpus(tmp_path / "run", task_ids=["daily_revenue"])
    sweep(run, workers=1, cache_dir=cache.root)
    assert poison(cache) == run.verdicts().num_rows
    # the poison is served to a sweep that reads the cache...
    other = make_corpus(tmp_path / "other", task_ids=["daily_revenue"])
    sweep(other, workers=1, cache_dir=cache.root)
    assert set(other.verdicts().column("verdict").to_pylist()) == {"ERROR"}
    # ...and never to verify, which re-executes every artifact
    assert verify(run, workers=1) == []


def test_no_cache_bypasses_the_cache(cli, tmp_path, task):
    gold = task.folder / "gold.sql"
    env = {"ARRIVALBENCH_CACHE_DIR": str(tmp_path / "cli-cache")}
    cache = VerdictCache(tmp_path / "cli-cache")
    args = ("grade", "--task", "daily_revenue", "--pipeline", gold, "--json")
    first = cli(*args, "--schedules", "snapshot", env=env)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout)["verdicts"]["snapshot"]["verdict"] == "PASS"
    assert poison(cache) == 1
    cached = cli(*args, "--schedules", "snapshot", env=env)
    assert json.loads(cached.stdout)["verdicts"]["snapshot"]["verdict"] == "ERROR"
    bypassed = cli(*args, "--schedules", "snapshot,single_batch", "--no-cache", env=env)
    assert bypassed.returncode == 0, bypassed.stderr
    verdicts = json.loads(bypassed.stdout)["verdicts"]
    assert {v["verdict"] for v in verdicts.values()} == {"PASS"}
    assert len(entries(cache)) == 1  # --no-cache wrote nothing either


def test_a_bad_cache_bound_is_one_line_before_grading(cli, tmp_path, task):
    env = {"ARRIVALBENCH_CACHE_DIR": str(tmp_path / "c"), "ARRIVALBENCH_CACHE_MAX_MB": "lots"}
    done = cli("grade", "--task", task.id, "--pipeline", task.folder / "gold.sql", env=env)
    assert done.returncode == 2
    assert "ARRIVALBENCH_CACHE_MAX_MB='lots'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr
