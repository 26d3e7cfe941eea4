"""The run inspector in a real browser (Debian's chromium, headless, driven by Playwright):
clicking a timeline row shows what that span did — a guardrail's redactions and before/after
diff, a hold-back that only regrouped text as "held", a model call's tokens and cost — under
the studio's Content-Security-Policy."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.server.live import serve_in_thread
from tests.server.test_studio import ARGS, CHROMIUM, REPORT_VIOLATIONS, _is_blocked, shot

from sluicegate import Agent, Sluicegate
from sluicegate.processors import PIIDetector
from sluicegate.server import ServerSettings, create_app
from sluicegate.storage import SQLiteStore
from sluicegate.testing.echo_model import EchoModel
from sluicegate.tracing import state as tracing_state

pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM) and not os.environ.get("SLUICEGATE_REQUIRE_SERVICES"),
    reason="chromium is not installed (apt-get install chromium)",
)


@pytest.fixture
def studio_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    # what `sluicegate dev` does (capture_content turns the global tracing state on: undone after)
    monkeypatch.setattr(tracing_state.STATE, "capture_content", False)
    monkeypatch.setattr(tracing_state.STATE, "capture_changes", False)
    agent = Agent(
        name="support",
        model=EchoModel(deltas=6, model_id="gpt-4o-mini", provider="openai"),
        output_processors=[PIIDetector(llm="never")],
    )
    registry = Sluicegate(agents=[agent], storage=SQLiteStore(str(tmp_path / "studio.db")))
    with serve_in_thread(create_app(registry, ServerSettings(studio=True, capture_content=True))) as url:
        yield url


@pytest.fixture
def page(studio_url: str) -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.set_default_timeout(15_000)
        page.add_init_script(REPORT_VIOLATIONS)
        page.blocked = []
        page.on("console", lambda m: page.blocked.append(m.text) if _is_blocked(m.type, m.text) else None)
        page.on("pageerror", lambda error: page.blocked.append(f"uncaught: {error}"))
        yield page
        browser.close()


def run(url: str, text: str) -> str:
    response = httpx.post(f"{url}/api/agents/support/generate", json={"messages": text}, timeout=30)
    assert response.status_code == 200, response.text
    return response.headers["x-sluicegate-trace-id"]


def test_clicking_rows_shows_what_each_span_did(page: Any, studio_url: str, tmp_path: Path) -> None:
    redacted = run(studio_url, "write to bob@example.com today")
    page.goto(f"{studio_url}/studio#/runs/{redacted}")
    row = page.locator('.span-row[data-processor="pii-detector"][data-outcome="modified"]')
    row.wait_for()
    assert "pii-detector · output_stream: modified" in page.locator(".summary").inner_text()
    assert page.locator(".inspector").count() == 0

    row.click()
    inspector = page.locator(".inspector")
    inspector.wait_for()
    assert "output_stream" in inspector.locator("dd").first.inner_text()
    assert inspector.locator('.redactions tr[data-kind="email"] td').nth(1).inner_text() == "1"
    assert "bob@example.com" in inspector.locator(".diff del").inner_text()
    assert "*******.com" in inspector.locator(".diff ins").inner_text()
    assert "today" in inspector.locator(".diff").inner_text()  # unchanged text stays, unmarked
    shot(page, "inspector", tmp_path)

    # a model row: tokens, cost, the prompt sent and the answer
    page.locator('.span-row[data-kind="model"]').click()
    model = page.locator('.inspector[data-kind="model"]')
    model.wait_for()
    assert page.locator(".inspector").count() == 1  # one panel at a time
    assert model.locator(".tokens").inner_text().startswith("input ")
    assert "output 6" in model.locator(".tokens").inner_text()
    assert model.locator(".cost").inner_text().startswith("$")
    assert "write to bob@example.com today" in model.locator(".prompt pre").inner_text()
    # clicking the row again closes it
    page.locator('.span-row[data-kind="model"]').click()
    model.wait_for(state="detached")

    # a hold-back that only regrouped the text is "held", with how much and how long
    held = run(studio_url, "it costs 555 dollars, not 1234 today")
    page.goto(f"{studio_url}/studio#/runs/{held}")
    held_row = page.locator('.span-row[data-processor="pii-detector"][data-outcome="held"]')
    held_row.wait_for()
    assert "pii-detector · output_stream: held" in page.locator(".summary").inner_text()
    held_row.press("Enter")  # the keyboard opens it too
    panel = page.locator(".inspector")
    panel.wait_for()
    assert "characters at most" in panel.locator(".held").inner_text()
    assert panel.locator(".diff").count() == 0 and panel.locator(".redactions").count() == 0
    assert page.blocked == []
