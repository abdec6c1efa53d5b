"""The reference corpus (gold, controls, baselines as arms) and the composition the suite is held to."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

from arrivalbench.baselines import BASELINES, baseline_script
from arrivalbench.corpus import corpus_cells, make_corpus
from arrivalbench.errors import ArrivalBenchError
from arrivalbench.spec import get_task, load_suite, suite_hash
from arrivalbench.store import RunDir

SCRIPT = Path(sys.executable).parent / "arrivalbench"
COMMAND = [str(SCRIPT)] if SCRIPT.exists() else [sys.executable, "-m", "arrivalbench.cli"]


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_corpus_cells_of_one_task():
    task = get_task("daily_revenue")
    cells, artifacts = corpus_cells(["daily_revenue"])
    by_arm: dict[str, list] = {}
    for c in cells:
        by_arm.setdefault(c.arm, []).append(c)
    assert set(by_arm) == {"gold", "controls", *BASELINES}
    assert {c.task for c in cells} == {"daily_revenue"}
    assert all(c.stop_reason == "reference" for c in cells)

    (gold,) = by_arm["gold"]
    assert (gold.sample, artifacts[gold.artifact_sha256]) == (0, task.gold_sql)
    controls = sorted(by_arm["controls"], key=lambda c: c.sample)
    assert [c.sample for c in controls] == list(range(len(task.spec.controls))) == [0, 1, 2]
    assert [artifacts[c.artifact_sha256] for c in controls] == [
        task.controls[spec.file] for spec in task.spec.controls
    ]
    for name in BASELINES:
        (baseline,) = by_arm[name]
        assert (baseline.sample, artifacts[baseline.artifact_sha256]) == (
            0,
            baseline_script(task, name),
        )

    assert len({c.key for c in cells}) == len(cells) == 1 + 3 + len(BASELINES)
    assert set(artifacts) == {c.artifact_sha256 for c in cells}
    assert all(sha == sha256(text) for sha, text in artifacts.items())


def test_make_corpus_writes_a_run_for_exactly_the_tasks_used(tmp_path):
    ids = ["store_max_order", "daily_revenue"]
    run = make_corpus(tmp_path / "run", task_ids=ids)
    manifest = json.loads((tmp_path / "run" / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["task_hashes"] == {t: get_task(t).content_hash() for t in ids}
    assert manifest["suite_hash"] == suite_hash()
    assert manifest["arms"] == sorted({"gold", "controls", *BASELINES})
    assert manifest["config"]["corpus"] == "reference"
    assert {"pk_constraint", "pk_dedup"} <= set(manifest["arms"])
    assert manifest["arm_info"] == {
        arm: {"role": "reference", "run": 1} for arm in manifest["arms"]
    }  # every corpus arm is a reference arm, templates included

    expected, artifacts = corpus_cells(ids)
    reopened = RunDir.open(tmp_path / "run")
    assert reopened.cells() == sorted(expected, key=lambda c: c.key)
    assert {c.task for c in reopened.cells()} == set(ids)
    for sha, text in artifacts.items():
        assert reopened.artifact(sha) == text
    assert reopened.verdicts().num_rows == 0  # made, not graded
    assert run.path == tmp_path / "run"


def test_make_corpus_with_a_repeated_task_has_one_cell_per_key(tmp_path):
    try:
        run = make_corpus(tmp_path / "run", task_ids=["daily_revenue", "daily_revenue"])
    except ArrivalBenchError:
        return  # refusing the repeat is as good as ignoring it
    keys = [c.key for c in run.cells()]
    assert len(keys) == len(set(keys))


# --- the suite's composition ----------------------------------------------------------------------


def test_cli_tasks_json_lists_the_forty_built_in_tasks():
    env = {**os.environ, "NO_COLOR": "1"}
    done = subprocess.run(
        [*COMMAND, "tasks", "--json"], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    rows = json.loads(done.stdout)
    assert len(rows) == 40
    assert [row["id"] for row in rows] == list(load_suite())


def test_suite_composition():
    specs = [t.spec for t in load_suite().values()]
    modes = Counter(s.mode for s in specs)
    assert modes["create"] >= 24 and modes["modify"] >= 8 and modes["repair"] >= 8, modes
    bands = Counter(s.difficulty for s in specs)
    assert all(bands[band] >= 10 for band in ("easy", "medium", "hard")), bands
    assert len({s.scenario for s in specs}) >= 12
    assert sum("schema_evolution" in s.hazards for s in specs) == 2
    assert sum(len(s.controls) for s in specs) >= 42
    assert sum(len(s.sources) >= 2 for s in specs) >= 2
