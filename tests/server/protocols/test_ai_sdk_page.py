"""A page using `useChat` from `@ai-sdk/react` (clients/ai-sdk/page.jsx, bundled once with
esbuild) in headless Chromium, served from its own origin against a server that allows it by
CORS and requires a bearer token: a streamed answer, an approval it answers, and a tripwire."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.responses import FileResponse, HTMLResponse
from starlette.routing import Route
from tests.server.live import serve_in_thread
from tests.server.protocols.ai_sdk_clients import CLIENTS, need
from tests.server.protocols.chat_app import build, wiped

from sluicegate.server import ServerSettings, create_app

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run"]
TOKEN = "page-token"
pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM) and not os.environ.get("SLUICEGATE_REQUIRE_SERVICES"),
    reason="chromium is not installed (apt-get install chromium)",
)

HTML = (
    '<!doctype html><meta charset="utf-8"><title>chat</title>'
    '<div id="root"></div><script src="/page.js"></script>'
)


@pytest.fixture(scope="module")
def page_url() -> Iterator[str]:
    """The bundled page on one origin, the sluicegate server on another (CORS for the page's)."""
    need("@ai-sdk/react", "esbuild")
    built = subprocess.run(["npm", "run", "--silent", "build"], cwd=CLIENTS, capture_output=True, text=True)
    assert built.returncode == 0, built.stderr
    bundle = CLIENTS / "dist" / "page.js"
    site = Starlette(
        routes=[
            Route("/", lambda request: HTMLResponse(HTML)),
            Route("/page.js", lambda request: FileResponse(bundle, media_type="text/javascript")),
        ]
    )
    with serve_in_thread(site) as origin:
        registry, _ = build()
        settings = ServerSettings(api_token=TOKEN, cors_origins=(origin,))
        with serve_in_thread(create_app(registry, settings)) as api:
            yield f"{origin}/?api={api}&token={TOKEN}"


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any, page_url: str) -> Iterator[Any]:
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.goto(page_url)
    yield page
    context.close()


def _send(page: Any, text: str) -> None:
    page.fill("#input", text)
    page.click("#send")


def test_use_chat_shows_a_streamed_answer(page: Any) -> None:
    _send(page, "hello from the browser")
    page.locator('main[data-status="ready"] .message.assistant .text').wait_for()
    assert page.locator(".message.assistant .text").inner_text() == "Echo: hello from the browser"
    assert page.locator(".error").count() == 0


def test_use_chat_answers_an_approval_and_the_run_goes_on(page: Any) -> None:
    wiped.clear()
    _send(page, '/tool wipe {"path": "/tmp/from-the-page"}')
    page.click(".tool[data-state='approval-requested'] .approve")
    # sendAutomaticallyWhen sends the answer; the same message goes on with the tool's output
    page.locator(".tool[data-state='output-available']").wait_for()
    page.locator('main[data-status="ready"] .message.assistant .text').wait_for()
    assert wiped == ["/tmp/from-the-page"]
    assert page.locator(".message.assistant").count() == 1
    assert (
        'Tool wipe said: {"wiped": "/tmp/from-the-page"}'
        in page.locator(".message.assistant .text").inner_text()
    )


def test_use_chat_shows_a_tripwire_naming_the_processor(page: Any) -> None:
    _send(page, "something forbidden")
    tripwire = page.locator(".message.assistant .tripwire")
    tripwire.wait_for()
    assert tripwire.get_attribute("data-processor") == "block-word"
    assert tripwire.inner_text() == "The word 'forbidden' is not allowed"
    page.locator('main[data-status="ready"]').wait_for()
    assert page.locator(".message.assistant .text").count() == 0
