"""The studio's run page for a durable run, in headless Chromium: the Temporal workflow id, a link
to the Web UI built from settings only (`SLUICEGATE_TEMPORAL_UI`), else the CLI command, and span
data that stays text. Apart from the async tests: Playwright's loop runs in the test thread."""

from __future__ import annotations

import asyncio
import os
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from tests.server import test_studio as studio
from tests.server.live import serve_in_thread

from sluicegate import Sluicegate
from sluicegate.server import ServerSettings, create_app
from sluicegate.server.traces import span_from_record, stored_span
from sluicegate.storage import SQLiteStore
from sluicegate.tracing.attributes import DURABLE_NAMESPACE, DURABLE_TASK_QUEUE, DURABLE_WORKFLOW_ID

UI = "http://127.0.0.1:8233"
pytestmark = pytest.mark.skipif(
    not os.path.exists(studio.CHROMIUM) and not os.environ.get("SLUICEGATE_REQUIRE_SERVICES"),
    reason="chromium is not installed (apt-get install chromium)",
)
browser = studio.browser  # one Chromium for the module


HOSTILE_ID = '"><img src=x onerror="window.pwned=1">/../../javascript:alert(1)'


def _store_run(path: Path, workflow_id: str, namespace: str) -> str:
    """A durable run's `invoke_agent` span written to the storage at `path`, as a worker does."""
    trace_id = uuid.uuid4().hex
    start = time.time_ns()  # recent: the store drops spans older than the age bound
    record = {
        "name": "invoke_agent echo",
        "traceId": trace_id,
        "spanId": "00000000000000a1",
        "kind": "INTERNAL",
        "start": start,
        "end": start + 2_000_000,
        "attributes": {
            "sluicegate.agent.id": "echo",
            DURABLE_WORKFLOW_ID: workflow_id,
            DURABLE_NAMESPACE: namespace,
            DURABLE_TASK_QUEUE: "sluicegate",
            "sluicegate.durable.url": "javascript:alert(2)",  # no such key is read: the link is the settings'
        },
    }
    span = span_from_record(record)
    assert span is not None
    stored = stored_span(span)
    assert stored is not None

    async def write() -> None:
        store = SQLiteStore(str(path))
        try:
            await store.save_spans([stored])
        finally:
            await store.close()

    with ThreadPoolExecutor(1) as pool:  # Playwright's loop runs in this thread
        pool.submit(asyncio.run, write()).result()
    return trace_id


@pytest.fixture
def studio_of(tmp_path: Path) -> Iterator[Any]:
    """`studio_of(temporal_ui)`: the base URL of a studio on the storage at `tmp_path/app.db`."""
    servers: list[Any] = []

    def start(temporal_ui: str | None) -> str:
        store = SQLiteStore(str(tmp_path / "app.db"))
        server = serve_in_thread(
            create_app(Sluicegate(storage=store), ServerSettings(studio=True, temporal_ui=temporal_ui))
        )
        servers.append(server)
        return str(server.__enter__())

    yield start
    for server in servers:
        server.__exit__(None, None, None)


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    page.set_default_timeout(10_000)
    yield page
    context.close()


def test_the_run_page_links_the_workflow_to_the_web_ui(page: Any, studio_of: Any, tmp_path: Path) -> None:
    trace_id = _store_run(tmp_path / "app.db", "run-123", "prod")
    base = studio_of(UI)
    page.goto(base + "/studio#/runs")
    row = page.locator("tr", has_text="invoke_agent echo")
    row.wait_for()  # the list renders after its fetch: count only once it is there
    assert row.locator(".badge.durable").count() == 1
    page.goto(base + f"/studio#/runs/{trace_id}")
    line = page.locator(".durable-run")
    line.wait_for()
    assert line.inner_text().startswith("Temporal workflow run-123")
    assert line.locator("a.workflow-link").get_attribute("href") == f"{UI}/namespaces/prod/workflows/run-123"
    assert line.locator(".workflow-command").count() == 0
    page.locator(".span-row[data-kind='agent']").click()  # the run span's inspector names it too
    assert page.locator(".inspector dd.workflow-id").inner_text() == "run-123"


def test_the_run_page_shows_the_cli_command_without_a_web_ui(
    page: Any, studio_of: Any, tmp_path: Path
) -> None:
    trace_id = _store_run(tmp_path / "app.db", "run-456", "default")
    base = studio_of(None)
    page.goto(base + f"/studio#/runs/{trace_id}")
    line = page.locator(".durable-run")
    line.wait_for()
    assert line.locator("a").count() == 0
    assert line.locator(".workflow-command").inner_text() == "temporal workflow show -w run-456"


def test_a_span_attribute_cannot_inject_markup_or_a_link(page: Any, studio_of: Any, tmp_path: Path) -> None:
    trace_id = _store_run(tmp_path / "app.db", HOSTILE_ID, "javascript:alert(1)")
    base = studio_of(UI)
    page.goto(base + f"/studio#/runs/{trace_id}")
    line = page.locator(".durable-run")
    line.wait_for()
    assert line.locator(".workflow-id").inner_text() == HOSTILE_ID  # shown as text
    page.locator(".span-row[data-kind='agent']").click()
    assert page.locator(".inspector dd.workflow-id").inner_text() == HOSTILE_ID
    assert page.locator("img").count() == 0
    assert page.evaluate("window.pwned") is None
    href = line.locator("a.workflow-link").get_attribute("href")
    assert href.startswith(UI + "/namespaces/javascript%3Aalert%281%29/workflows/%22%3E%3Cimg"), href
    assert "/" not in href[len(UI + "/namespaces/") :].split("/workflows/")[1]  # the id stays one segment
    for link in page.locator("a").all():
        assert not (link.get_attribute("href") or "").lower().startswith("javascript:")
