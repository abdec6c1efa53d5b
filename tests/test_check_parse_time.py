"""The estimate and the ticking line around `dbt parse` (check.parse_time); no dbt needed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from arrivalbench.check import parse_time


def _project(root: Path, models: int) -> Path:
    project = root / "shop"
    (project / "models").mkdir(parents=True)
    (project / "target").mkdir()
    (project / "dbt_project.yml").write_text("name: shop\n", encoding="utf-8")
    for i in range(models):
        (project / "models" / f"m{i}.sql").write_text("select 1", encoding="utf-8")
    (project / "target" / "manifest.json").write_text("{}", encoding="utf-8")  # not parsed
    (project / "models" / "notes.txt").write_text("", encoding="utf-8")  # not parsed
    return project


def test_a_project_never_parsed_here_has_no_estimate(tmp_path):
    found = parse_time.estimate(_project(tmp_path, 3), tmp_path / "cache")
    assert (found.files, found.seconds) == (4, None)
    assert found.describe() == "(4 files, first parse here)"
    assert found.remaining(12.0) == "[elapsed 0:12]"


def test_the_last_parse_scaled_by_the_files_is_the_estimate(tmp_path):
    project, cache = _project(tmp_path, 3), tmp_path / "cache"
    parse_time.remember(parse_time.estimate(project, cache), 20.0, cache)
    for i in range(3, 7):  # twice the files: twice the time
        (project / "models" / f"m{i}.sql").write_text("select 1", encoding="utf-8")
    found = parse_time.estimate(project, cache)
    assert (found.files, found.seconds) == (8, 40.0)
    assert found.describe() == "(8 files, about 0:40 as last time)"
    assert found.remaining(15.0) == "[elapsed 0:15, about 0:25 left]"
    assert found.remaining(45.0) == "[elapsed 0:45, past the estimate]"


@pytest.mark.parametrize("content", ["not json", "[1, 2]", '{"%s": {"files": "x"}}'])
def test_a_damaged_times_file_means_no_estimate_not_an_error(tmp_path, content):
    project, cache = _project(tmp_path, 1), tmp_path / "cache"
    cache.mkdir()
    key = str(project.resolve())
    (cache / parse_time.TIMES_FILE).write_text(content.replace("%s", key), encoding="utf-8")
    assert parse_time.estimate(project, cache).seconds is None
    parse_time.remember(parse_time.estimate(project, cache), 3.0, cache)
    assert parse_time.estimate(project, cache).seconds == 3.0


def test_an_unwritable_cache_folder_only_loses_the_estimate(tmp_path):
    project = _project(tmp_path, 1)
    blocker = tmp_path / "a file"
    blocker.write_text("", encoding="utf-8")
    parse_time.remember(parse_time.estimate(project, blocker), 3.0, blocker / "cache")


def test_ticking_says_how_long_while_parsing_then_how_long_it_took(tmp_path):
    project, cache = _project(tmp_path, 2), tmp_path / "cache"
    said: list[str] = []
    with parse_time.ticking(parse_time.estimate(project, cache), said.append, cache, every=0.02):
        time.sleep(0.15)
    assert said[0] == "still parsing the dbt project [elapsed 0:00]"
    assert said[-1].startswith("parsed the dbt project in 0.")
    assert parse_time.estimate(project, cache).seconds == pytest.approx(0.15, abs=0.1)


def test_a_parse_that_fails_is_neither_reported_parsed_nor_remembered(tmp_path):
    project, cache = _project(tmp_path, 2), tmp_path / "cache"
    said: list[str] = []
    found = parse_time.estimate(project, cache)
    with pytest.raises(RuntimeError), parse_time.ticking(found, said.append, cache):
        raise RuntimeError("dbt parse failed")
    assert said == []
    assert parse_time.estimate(project, cache).seconds is None
