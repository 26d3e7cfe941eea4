"""The studio in a real browser: Debian's chromium, headless, driven by Playwright.

Processor spans are made here with the agreed tracing attributes (the hooks of the test
processors open them), so the timeline is checked end to end through the chat page.
Set SLUICEGATE_SCREENSHOTS=docs to refresh the screenshots in docs/.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from tests.server.example_app import BlockWord, add
from tests.server.live import serve_in_thread

from sluicegate import Agent, Sluicegate
from sluicegate.errors import TripWire
from sluicegate.memory import Memory
from sluicegate.messages import Message
from sluicegate.processors import Processor
from sluicegate.processors.args import ProcessInputArgs, ProcessOutputResultArgs
from sluicegate.server import ServerSettings, create_app
from sluicegate.server.traces import (
    PROCESSOR_ID,
    PROCESSOR_OUTCOME,
    PROCESSOR_PHASE,
    TRIPWIRE_REASON,
    TRIPWIRE_RETRY,
)
from sluicegate.storage import SQLiteStore
from sluicegate.testing.echo_model import EchoModel

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
pytestmark = pytest.mark.skipif(
    not os.path.exists(CHROMIUM) and not os.environ.get("SLUICEGATE_REQUIRE_SERVICES"),
    reason="chromium is not installed (apt-get install chromium)",
)
tracer = trace.get_tracer("tests.studio")
# With sluicegate's own tracing installed, its spans are the timeline; the hand-made ones below
# stand in for them only while it is absent.
HAS_TRACING = importlib.util.find_spec("sluicegate.tracing") is not None


class Traced(Processor):
    """Wraps a processor's `process_input` in a span with the agreed attributes."""

    def __init__(self, inner: Processor) -> None:
        self.inner = inner
        self.id = inner.id
        self.name = inner.name

    def process_input(self, args: ProcessInputArgs) -> Any:
        if HAS_TRACING:
            return self.inner.process_input(args)
        attributes = {PROCESSOR_ID: self.id, PROCESSOR_PHASE: "input"}
        with tracer.start_as_current_span(f"processor {self.id} input", attributes=attributes) as span:
            before = [m.text for m in args.messages]
            try:
                result = self.inner.process_input(args)
            except TripWire as tripwire:
                span.set_attributes(
                    {
                        PROCESSOR_OUTCOME: "abort",
                        TRIPWIRE_REASON: tripwire.reason,
                        TRIPWIRE_RETRY: tripwire.retry,
                    }
                )
                raise
            changed = result is not None and [m.text for m in result] != before
            span.set_attribute(PROCESSOR_OUTCOME, "modified" if changed else "pass")
            return result


class Redactor(Processor):
    """Replaces the word "secret" with [redacted] in user input."""

    id = "redactor"
    name = "Redactor"

    def process_input(self, args: ProcessInputArgs) -> Any:
        return [
            Message.text_message(m.role, m.text.replace("secret", "[redacted]"), id=m.id)
            if m.role == "user"
            else m
            for m in args.messages
        ]


class Signature(Processor):
    """Adds nothing; marks the output stage in the timeline."""

    id = "signature"
    name = "Signature"

    def process_output_result(self, args: ProcessOutputResultArgs) -> None:
        if HAS_TRACING:
            return None
        with tracer.start_as_current_span(
            "processor signature output_result",
            attributes={PROCESSOR_ID: self.id, PROCESSOR_PHASE: "output_result", PROCESSOR_OUTCOME: "pass"},
        ):
            return None


@pytest.fixture
def studio_url(tmp_path: Path) -> Iterator[str]:
    storage = SQLiteStore(str(tmp_path / "studio.db"))
    agent = Agent(
        name="support",
        description="Answers customers; guarded by a redactor and a word filter.",
        instructions="Be helpful.",
        model=EchoModel(deltas=6, delay=0.01),
        tools=[add],
        input_processors=[Traced(Redactor()), Traced(BlockWord())],
        output_processors=[Signature()],
        memory=Memory(storage=storage),
    )
    plain = Agent(name="plain", model=EchoModel(deltas=3))
    registry = Sluicegate(agents=[agent, plain], processors=[BlockWord(), Redactor()], storage=storage)
    with serve_in_thread(create_app(registry, ServerSettings(studio=True))) as url:
        yield url


# Every Content-Security-Policy violation, reported on the console (Chromium also logs its own
# "Refused to ..." line) so that it is caught across page loads.
REPORT_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (e) =>
  console.error("CSP violation: " + e.violatedDirective + " blocked " + (e.blockedURI || "inline")));
"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One Chromium per module (launching one takes about a second); each test's page has a
    context of its own, so no cookie, storage or cache carries from one test to the next."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(studio_url: str, browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.add_init_script(REPORT_VIOLATIONS)
    page.blocked = []
    page.on("console", lambda m: page.blocked.append(m.text) if _is_blocked(m.type, m.text) else None)
    page.on("pageerror", lambda error: page.blocked.append(f"uncaught: {error}"))
    yield page
    context.close()


def _is_blocked(kind: str, text: str) -> bool:
    words = ("Content Security Policy", "CSP violation", "Trusted Type", "Refused to")
    return kind == "error" and any(word in text for word in words)


def shot(page: Any, name: str, tmp_path: Path) -> None:
    target = Path("docs") if os.environ.get("SLUICEGATE_SCREENSHOTS") == "docs" else tmp_path
    target.mkdir(exist_ok=True)
    page.screenshot(path=str(target / f"studio-{name}.png"), full_page=True)


def test_studio_in_chromium(page: Any, studio_url: str, tmp_path: Path) -> None:
    response = page.goto(studio_url + "/studio")
    policy = response.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "require-trusted-types-for 'script'" in policy
    assert "unsafe-inline" not in policy and "frame-ancestors 'none'" in policy
    assert response.headers["x-frame-options"] == "DENY"
    assert response.headers["x-content-type-options"] == "nosniff"
    card = page.locator('section[data-agent="support"]')
    card.wait_for()
    assert "redactor" in card.inner_text() and "block-word" in card.inner_text()
    shot(page, "agents", tmp_path)

    # Chat: a streamed answer, then the run's timeline of processor decisions.
    card.get_by_role("link", name="Chat").click()
    page.fill("#chat-thread", "thread-1")
    page.fill("#chat-resource", "ada")
    page.fill("#chat-input", "my secret plan")
    page.click("#chat-send")
    page.locator(".msg.assistant").first.filter(has_text="Echo: my [redacted] plan").wait_for()
    page.locator('.span-row[data-processor="block-word"]').wait_for()
    rows = page.locator(".span-row[data-processor]")
    shown = [rows.nth(i).get_attribute("data-processor") for i in range(rows.count())]
    assert {"redactor", "block-word", "signature"} <= set(shown)
    assert shown.index("redactor") < shown.index("block-word") < shown.index("signature")
    assert page.locator('.span-row[data-processor="redactor"]').get_attribute("data-outcome") == "modified"
    assert page.locator('.span-row[data-processor="block-word"]').get_attribute("data-outcome") == "pass"

    page.fill("#chat-input", "something forbidden")
    page.click("#chat-send")
    page.locator(".tripwire").wait_for()
    assert "block-word" in page.locator(".tripwire").inner_text()
    blocked = page.locator('.span-row[data-processor="block-word"][data-outcome="abort"]')
    blocked.wait_for()
    assert "The word 'forbidden' is not allowed" in blocked.inner_text()
    shot(page, "chat", tmp_path)

    # Runs: both runs are listed and open as timelines.
    page.goto(studio_url + "/studio#/runs")
    page.locator("tbody tr").nth(1).wait_for()
    assert page.locator("tbody tr").count() == 2
    assert "blocked 1" in page.locator("tbody tr").first.inner_text()
    page.locator("tbody tr").first.get_by_role("link").click()
    page.locator('.span-row[data-outcome="abort"]').wait_for()

    # Memory: the thread of the first run and its messages.
    page.goto(studio_url + "/studio#/memory")
    page.fill("#memory-resource", "ada")
    page.get_by_role("button", name="List threads").click()
    page.locator("button.thread").first.click()
    page.locator("#memory-messages .msg.assistant").wait_for()
    assert "Echo: my [redacted] plan" in page.locator("#memory-messages").inner_text()

    # Processors: the catalogue, and "try it" on the word filter.
    page.goto(studio_url + "/studio#/processors")
    filter_card = page.locator('section[data-processor="block-word"]')
    filter_card.locator(".try-text").fill("a forbidden request")
    filter_card.get_by_role("button", name="Try it").click()
    filter_card.locator(".try-result.blocked").wait_for()
    assert "BLOCKED: The word 'forbidden' is not allowed" in filter_card.locator(".try-result").inner_text()
    redactor = page.locator('section[data-processor="redactor"]')
    redactor.locator(".try-text").fill("the secret code")
    redactor.get_by_role("button", name="Try it").click()
    redactor.locator(".try-result.passed").wait_for()
    assert "the [redacted] code" in redactor.locator(".try-result").inner_text()
    shot(page, "processors", tmp_path)
    # The whole tour ran under the studio's policy without tripping it (a timeline bar set by a
    # style attribute, an inline script or an HTML string would have).
    assert page.blocked == []


def test_studio_policy_blocks_injected_script(page: Any, studio_url: str) -> None:
    """The policy is enforced, not just sent: markup written as a string, an inline script and
    an inline style attribute are all refused on the studio page."""
    page.goto(studio_url + "/studio")
    page.locator("section[data-agent]").first.wait_for()
    outcome = page.evaluate(
        """() => {
          const out = {};
          try { document.getElementById("view").innerHTML = "<img src=x>"; out.html = "written"; }
          catch (error) { out.html = error.name; }
          try {
            const script = document.createElement("script");
            script.text = "window.injected = true";
            document.body.append(script);
            out.script = "appended";
          } catch (error) { out.script = error.name; }
          const div = document.createElement("div");
          div.setAttribute("style", "color: red");
          document.body.append(div);
          out.style = div.style.color;
          return out;
        }"""
    )
    assert outcome == {"html": "TypeError", "script": "TypeError", "style": ""}
    assert page.evaluate("window.injected") is None
    assert "CSP violation: require-trusted-types-for blocked trusted-types-sink" in page.blocked
    assert "CSP violation: style-src-attr blocked inline" in page.blocked
