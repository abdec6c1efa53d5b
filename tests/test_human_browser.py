"""The human page end to end in a real headless Chromium (Debian's, driven by Playwright):
open, read the prompt, type a wrong script, run the test, see the diff, fix it, submit; then
grade-run grades the stored cell. Screenshots of each step go to the test's temporary folder."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from arrivalbench.cli import run as cli_run
from arrivalbench.human.study import Session
from arrivalbench.spec import get_task
from arrivalbench.store import RunDir

WRONG = (
    "CREATE TABLE IF NOT EXISTS daily_revenue AS\n"
    "SELECT store_id, CAST(ts_event AS DATE) AS day, SUM(amount) AS revenue, COUNT(*) AS orders\n"
    "FROM sales_batch GROUP BY ALL LIMIT 3;"
)


def chromium() -> str:
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        if os.environ.get("ARRIVALBENCH_REQUIRE_CHROMIUM"):
            pytest.fail("chromium is required here; install it with: make chromium")
        pytest.skip("chromium is not installed (make chromium installs it)")
    return browser


@pytest.mark.slow
def test_a_person_fixes_a_script_in_the_browser_and_grade_run_grades_it(tmp_path: Path) -> None:
    browser_path = chromium()
    try:
        from playwright import sync_api
    except ImportError:
        if os.environ.get("ARRIVALBENCH_REQUIRE_CHROMIUM"):
            pytest.fail("playwright is required here: pip install -e '.[dev]' installs it")
        pytest.skip("playwright is not installed (the dev extra installs it)")
    shots = tmp_path / "screenshots"
    shots.mkdir()
    instructions = "Work alone. **Thank you** for taking part."
    out = tmp_path / "study"
    sitting = Session(
        out, task_ids=["daily_revenue"], port=0, participant="ana", instructions=instructions
    )
    result: dict[str, object] = {}
    thread = threading.Thread(target=lambda: result.update(run=sitting.run()), daemon=True)
    thread.start()
    try:
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=browser_path, args=["--no-sandbox", "--disable-gpu"]
            )
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(sitting.url)
            page.wait_for_selector("#work:not([hidden])")
            assert "Thank you" in page.inner_text("#instructions")
            prompt = page.inner_text("#user")
            assert get_task("daily_revenue").spec.title in prompt
            assert "daily_revenue" in prompt
            assert page.inner_text("#counter") == "test runs used: 0 of 3"
            page.screenshot(path=str(shots / "1-prompt.png"), full_page=True)

            page.fill("#script", WRONG)
            page.click("#run")
            page.wait_for_selector('.turn[data-turn="1"] .verdict.FAIL', timeout=120_000)
            feedback = page.inner_text('.turn[data-turn="1"] .feedback')
            assert "expected rows are absent" in feedback
            assert page.inner_text("#counter") == "test runs used: 1 of 3"
            assert page.input_value("#script") == WRONG  # the editor keeps the script
            page.screenshot(path=str(shots / "2-diff.png"), full_page=True)

            page.fill("#script", get_task("daily_revenue").gold_sql)
            page.click("#submit")
            page.wait_for_selector("#done:not([hidden])", timeout=120_000)
            assert "daily_revenue: PASS after 2 test run(s)" in page.inner_text("#done")
            page.screenshot(path=str(shots / "3-done.png"), full_page=True)
            browser.close()
    finally:
        sitting.stop()
        thread.join(60)
    assert isinstance(result.get("run"), RunDir)
    for name in ("1-prompt.png", "2-diff.png", "3-done.png"):
        assert (shots / name).read_bytes().startswith(b"\x89PNG")
    with pytest.raises(SystemExit) as exit_:
        cli_run(["grade-run", str(out)])
    assert exit_.value.code == 0
    run = RunDir.open(out)
    verdicts = run.verdicts().to_pylist()
    assert {v["verdict"] for v in verdicts} == {"PASS"}  # the gold script, as the person typed it
    assert {(v["arm"], v["task"], v["sample"]) for v in verdicts} == {
        ("unhinted", "daily_revenue", 0)
    }
    assert run.arm_info()["unhinted"]["role"] == "human"
