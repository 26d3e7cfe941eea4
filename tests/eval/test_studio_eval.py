"""The studio's eval page in a real browser (Debian's chromium, headless, Playwright): upload a
JSONL file, run it, read the scores; under the studio's Content-Security-Policy."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.server.live import serve_in_thread

from sluicegate import Agent, Sluicegate
from sluicegate.processors import PIIDetector
from sluicegate.server import ServerSettings, create_app
from sluicegate.testing import MockModel

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM) and not os.environ.get("SLUICEGATE_REQUIRE_SERVICES"),
    reason="chromium is not installed (apt-get install chromium)",
)
ROWS = [
    {"text": "Mail joe.bloggs@example.com now", "spans": [{"start": 5, "end": 27, "label": "EMAIL_ADDRESS"}]},
    {"text": "Ann Lee called", "spans": [{"start": 0, "end": 7, "label": "PERSON"}]},
]


@pytest.fixture
def studio_url() -> Iterator[str]:
    pii = PIIDetector(redaction_method="placeholder")
    agent = Agent(name="support", model=MockModel([]), input_processors=[pii], output_processors=[pii])
    with serve_in_thread(create_app(Sluicegate(agents=[agent]), ServerSettings(studio=True))) as url:
        yield url


@pytest.fixture
def page() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page()
        page.set_default_timeout(15_000)
        page.problems = []
        page.on("console", lambda m: page.problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda error: page.problems.append(f"uncaught: {error}"))
        yield page
        browser.close()


def test_the_eval_page_runs_an_uploaded_dataset(page: Any, studio_url: str, tmp_path: Path) -> None:
    dataset = tmp_path / "data.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    page.goto(studio_url + "/studio#/eval")
    page.locator("#eval-agent option[value=support]").wait_for(state="attached")
    page.click("#eval-run")
    assert page.locator("#eval-status").inner_text() == "Choose a JSONL dataset first."
    page.set_input_files("#eval-file", str(dataset))
    page.select_option("#eval-phase", "output")
    page.click("#eval-run")
    report = page.locator("#eval-report")
    report.wait_for()
    rows = {
        cells[0]: cells for cells in (r.split("\t") for r in report.locator("tbody tr").all_inner_texts())
    }
    assert rows["EMAIL_ADDRESS"][1:3] == ["1", "1.000"] and rows["PERSON"][6].startswith("1.000")
    assert report.locator("svg rect").count() == 2
    assert (
        report.get_by_role("link", name="Download the HTML report").get_attribute("href").startswith("blob:")
    )
    assert "2 texts, phase output" in report.inner_text()

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "x"}\n')
    page.set_input_files("#eval-file", str(bad))
    page.click("#eval-run")
    page.locator("#eval-status", has_text='line 1: needs "spans"').wait_for()
    # Nothing blocked by the policy, nothing thrown (failed loads, the 400 among them, are logged too).
    assert [p for p in page.problems if not p.startswith("Failed to load resource")] == []
