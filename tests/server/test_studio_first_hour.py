"""What a new user saw in the studio, in headless Chromium: no view shows a literal `null`; an
input guardrail's "What it changed" keeps the system prompt on both sides; a run resumed after
an approval is one row in the runs list; and after a reload, the chat shows the user's message
that started a run still waiting on a person (it is not in the thread's storage yet)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.server import test_studio as studio
from tests.server.live import serve_in_thread

from sluicegate import Agent, Sluicegate
from sluicegate.memory import Memory
from sluicegate.processors import PIIDetector
from sluicegate.server import ServerSettings, create_app
from sluicegate.storage import SQLiteStore
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step
from sluicegate.tools import ToolContext, create_tool
from sluicegate.tracing import state as tracing_state

pytestmark = studio.pytestmark
browser = studio.browser
page = studio.page
INSTRUCTIONS = "You are the bank's careful assistant."
NULL = re.compile(r"\bnull\b")


async def transfer(input: Any, context: ToolContext) -> Any:
    return {"transferred": input["amount"]}


transfer_funds = create_tool(
    id="transfer_funds",
    input_schema={"type": "object"},
    execute=transfer,
    require_approval=True,
)


@pytest.fixture
def studio_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    # what `sluicegate dev` does (capture_content turns the global tracing state on: undone after)
    monkeypatch.setattr(tracing_state.STATE, "capture_content", False)
    monkeypatch.setattr(tracing_state.STATE, "capture_changes", False)
    storage = SQLiteStore(str(tmp_path / "first-hour.db"))
    agent = Agent(
        name="banker",
        instructions=INSTRUCTIONS,
        model=MockModel(
            [
                tool_call_step(("call_a", "transfer_funds", {"amount": 100})),
                text_step("Transferred 100."),
            ]
        ),
        tools=[transfer_funds],
        input_processors=[PIIDetector(llm="never", strategy="redact")],
        memory=Memory(storage=storage),
    )
    registry = Sluicegate(agents=[agent], storage=storage)
    settings = ServerSettings(studio=True, capture_content=True)
    with serve_in_thread(create_app(registry, settings)) as url:
        yield url


def _no_null(page: Any, where: str) -> None:
    page.locator("#view[aria-busy='false']").wait_for(state="attached")
    text = page.locator("body").inner_text()
    assert not NULL.search(text), f"{where} shows a literal null: {text!r}"


def test_waiting_run_resumed_and_inspected_in_chromium(page: Any, studio_url: str) -> None:
    with httpx.stream(
        "POST",
        f"{studio_url}/api/agents/banker/stream",
        json={
            "messages": "Move 100 to savings, mail x@y.com",
            "memory": {"thread": "t-1", "resource": "ada"},
        },
    ) as started:
        assert started.status_code == 200
        started.read()
    listed = httpx.get(f"{studio_url}/api/agents/banker/suspended-runs", params={"resourceId": "ada"}).json()
    (run,) = listed["runs"]
    assert [m["role"] for m in run["messages"]] == ["user"]

    # A reload: the thread has no stored message yet, the waiting run's own message is shown.
    page.add_init_script(
        'localStorage.setItem("sluicegate.chat.banker", JSON.stringify({threadId: "t-1", resourceId: "ada"}))'
    )
    page.goto(studio_url + "/studio#/chat/banker")
    asked = page.locator(".msg.user.waiting-input")
    asked.wait_for()
    assert asked.count() == 1 and "Move 100 to savings" in asked.inner_text()
    assert asked.get_attribute("data-run-id") == run["runId"]
    assert "x@y.com" not in asked.inner_text()  # as the input guardrail left it
    _no_null(page, "the chat")
    page.locator('#suspended-runs .thread-group[data-thread="t-1"] button.open-call').click()
    page.locator(".decision button.approve").click()
    page.locator(".msg.assistant", has_text="Transferred 100.").wait_for()

    # The run and its continuation after the approval are one row.
    page.goto(studio_url + "/studio#/runs")
    page.locator("tbody tr").first.wait_for()
    rows = page.locator("tbody tr")
    assert rows.count() == 1
    assert rows.first.get_attribute("data-run-id") == run["runId"]
    assert rows.first.locator(".badge.resumed").count() == 1
    _no_null(page, "the runs list")

    rows.first.get_by_role("link").first.click()
    row = page.locator('.span-row[data-processor="pii-detector"][data-outcome="modified"]')
    row.wait_for()
    assert page.locator(".same-run-link").count() == 1
    _no_null(page, "a run's timeline")
    row.click()
    diff = page.locator(".inspector .diff")
    diff.wait_for()
    deleted = " ".join(diff.locator("del").all_inner_texts())
    inserted = " ".join(diff.locator("ins").all_inner_texts())
    assert "x@y.com" in deleted and "x@y.com" not in inserted
    assert INSTRUCTIONS.split()[-1] not in deleted  # the system prompt was not deleted...
    assert INSTRUCTIONS in diff.inner_text()  # ...it is on both sides, unmarked
    _no_null(page, "the inspector")

    # The continuation's own page links back to the first trace.
    page.locator(".same-run-link").click()
    page.locator(".same-run-link").wait_for()
    _no_null(page, "the resumed run's timeline")

    for name in ("agents", "memory", "processors", "tools", "eval"):
        page.goto(f"{studio_url}/studio#/{name}")
        page.locator(f'nav a[data-view="{name}"].active').wait_for()
        _no_null(page, f"the {name} view")
    assert page.blocked == []


def test_suspended_runs_list_the_messages_that_started_them(studio_url: str) -> None:
    with httpx.stream(
        "POST",
        f"{studio_url}/api/agents/banker/stream",
        json={"messages": "Move 100", "memory": {"thread": "t-2", "resource": "ada"}},
    ) as started:
        started.read()
    (run,) = httpx.get(f"{studio_url}/api/agents/banker/suspended-runs").json()["runs"]
    (message,) = run["messages"]
    assert message["role"] == "user" and "source" not in message
    assert "Move 100" in json.dumps(message["content"])
