"""Human in the loop in the studio, in headless Chromium: a tool call waiting for approval shows
up in the chat with its arguments as the output guardrail left them, is approved, declined or
resumed with a click, and the agent's waiting runs are listed per thread until decided.

The app is served for real (uvicorn in a thread) with the server's own decision routes; the
model is scripted, one step per model call, in the order the runs below make them.
Set SLUICEGATE_SCREENSHOTS=docs to refresh docs/studio-approvals.png.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from tests.server import test_studio as studio
from tests.server.live import serve_in_thread

from sluicegate import Agent, Sluicegate
from sluicegate.memory import Memory
from sluicegate.processors import RegexFilter
from sluicegate.server import ServerSettings, create_app
from sluicegate.storage import SQLiteStore
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step
from sluicegate.tools import ToolContext, create_tool

pytestmark = studio.pytestmark
browser = studio.browser  # one Chromium for the module
page = studio.page  # the browser fixture, opened on this module's `studio_url`
shot = studio.shot
SECRET = "sk-proj-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
# Model-written markup: shown as these characters, never parsed (it would set window.pwned).
MARKUP = '<img src=x onerror="window.pwned=1"><b>rent</b>'
ran: list[Any] = []


async def transfer(input: Any, context: ToolContext) -> Any:
    ran.append(input)
    return {"transferred": input["amount"], "to": input["account"]}


async def confirm(input: Any, context: ToolContext) -> Any:
    if context.resume_data is None:
        await context.suspend({"question": f"Close account {input['account']}?"})
        return None
    if not context.resume_data["confirmed"]:
        await context.suspend({"question": "Sure? It cannot be undone."})
        return None
    return {"closed": True}


transfer_funds = create_tool(
    id="transfer_funds",
    description="Move money between accounts",
    input_schema={"type": "object"},
    execute=transfer,
    require_approval=True,
    annotations={"title": "Transfer funds", "destructiveHint": True},  # as an MCP tool carries them
)
close_account = create_tool(
    id="close_account",
    input_schema={"type": "object"},
    execute=confirm,
    resume_schema={
        "type": "object",
        "properties": {"confirmed": {"type": "boolean"}},
        "required": ["confirmed"],
    },
)


def _model() -> MockModel:
    """One step per model call: approve, decline, resume, then a run decided elsewhere."""
    args = {"account": "savings", "amount": 100, "apiKey": SECRET}
    return MockModel(
        [
            tool_call_step(("call_a", "transfer_funds", args)),
            text_step("Transferred 100 to savings."),
            tool_call_step(("call_b", "transfer_funds", args)),
            text_step("I did not move the money."),
            tool_call_step(("call_c", "close_account", {"account": "checking"})),
            text_step("Checking is closed."),
            tool_call_step(("call_d", "transfer_funds", {**args, "memo": MARKUP})),
            text_step("Done elsewhere."),
        ]
    )


@pytest.fixture
def studio_url(tmp_path: Path) -> Iterator[str]:
    ran.clear()
    storage = SQLiteStore(str(tmp_path / "approvals.db"))
    agent = Agent(
        name="banker",
        description="Moves money, with a person approving each transfer.",
        instructions="Help with accounts.",
        model=_model(),
        tools=[transfer_funds, close_account],
        output_processors=[RegexFilter(presets=["secrets"], strategy="redact", phase="output")],
        memory=Memory(storage=storage),
    )
    registry = Sluicegate(agents=[agent], storage=storage)
    with serve_in_thread(create_app(registry, ServerSettings(studio=True))) as url:
        yield url


def _ask(page: Any, thread: str, text: str) -> Any:
    page.fill("#chat-thread", thread)
    page.fill("#chat-resource", "ada")
    page.fill("#chat-input", text)
    page.click("#chat-send")
    waiting = page.locator('.decision[data-state="open"]').last
    waiting.wait_for()
    page.locator("#chat-send:enabled").wait_for()  # the stream has ended
    run_id, call_id = waiting.get_attribute("data-run-id"), waiting.get_attribute("data-tool-call-id")
    return page.locator(f'.decision[data-run-id="{run_id}"][data-tool-call-id="{call_id}"]')


def _listed(page: Any) -> list[str]:
    page.click("#suspended-refresh")  # sets aria-busy before it fetches
    page.locator('#suspended-runs[aria-busy="false"]').wait_for(state="attached")
    runs = page.locator("#suspended-runs .suspended-run")
    return [runs.nth(i).get_attribute("data-run-id") for i in range(runs.count())]


def test_approve_decline_and_resume_in_chromium(page: Any, studio_url: str, tmp_path: Path) -> None:
    page.goto(studio_url + "/studio#/chat/banker")
    page.locator("#suspended-runs").filter(has_text="No run is waiting").wait_for()

    # Approve: the card shows the call as the guardrail left it, never the key the model wrote.
    card = _ask(page, "t-1", "Move 100 to savings")
    assert card.get_attribute("data-tool") == "transfer_funds"
    waiting = page.locator('.tool-call[data-tool-call-id="call_a"]')
    assert waiting.get_attribute("data-state") == "waiting" and "approval" in waiting.inner_text()
    args = json.loads(card.locator("pre.args").inner_text())
    assert args == {"account": "savings", "amount": 100, "apiKey": "[API_KEY]"}
    assert json.loads(card.locator("pre.annotations").inner_text()) == {
        "title": "Transfer funds",
        "destructiveHint": True,
    }
    assert SECRET not in page.locator("body").inner_text()
    run_a = card.get_attribute("data-run-id")
    assert _listed(page) == [run_a]
    group = page.locator('#suspended-runs .thread-group[data-thread="t-1"]')
    assert "transfer_funds" in group.inner_text() and "needs approval" in group.inner_text()
    # Two clicks in the same task: the second finds the card deciding and sends nothing.
    page.evaluate("() => { const b = document.querySelector('.decision .approve'); b.click(); b.click(); }")
    page.locator('.decision[data-state="decided"]').wait_for()
    assert card.locator(".decision-status").inner_text() == "Approved"
    page.locator(".msg.assistant", has_text="Transferred 100 to savings.").wait_for()
    # The result completes the card of its call (shown when the model asked for it).
    result = page.locator('.tool-call[data-state="result"]')
    assert result.count() == 1 and result.get_attribute("data-tool-call-id") == "call_a"
    assert json.loads(result.locator(".tool-output").inner_text()) == {"transferred": 100, "to": "savings"}
    assert card.locator(".decision-error").inner_text() == ""
    assert card.locator("button.approve").is_disabled() and card.locator("button.decline").is_disabled()
    # once, with the model's arguments: the filter redacted the call for display only
    # (tool_arguments="shown"); the card, the page and the store never showed the key
    assert ran == [{**args, "apiKey": SECRET}]
    assert _listed(page) == []

    # Decline with a reason: the tool never runs, the model reads the reason.
    card = _ask(page, "t-1", "Move it again")
    run_b = card.get_attribute("data-run-id")
    assert _listed(page) == [run_b]
    card.locator(".decline-reason").fill("Not this month")
    shot(page, "approvals", tmp_path)
    card.locator("button.decline").click()
    page.locator(".tool-denied").wait_for()
    assert "transfer_funds did not run. Not this month" in page.locator(".tool-denied").inner_text()
    page.locator(".msg.assistant", has_text="I did not move the money.").wait_for()
    page.locator(f'.decision[data-run-id="{run_b}"][data-state="decided"]').wait_for()
    assert len(ran) == 1
    assert _listed(page) == []

    # A tool that asked a question: its payload, resume data checked as JSON before sending.
    card = _ask(page, "t-2", "Close checking")
    assert "close_account" in card.inner_text()
    payload = json.loads(card.locator("pre.suspend-payload").inner_text())
    assert payload == {"question": "Close account checking?"}
    assert [g.get_attribute("data-thread") for g in page.locator(".thread-group").all()] == ["t-2"]
    card.locator(".resume-data").fill("{confirmed: yes")
    card.locator("button.resume").click()
    assert "resume data is not JSON" in card.locator(".decision-error").inner_text()
    assert card.get_attribute("data-state") == "open"
    # The tool's resume schema refuses this (400): the run stays suspended, the card open.
    card.locator(".resume-data").fill('{"confirmed": "yes"}')
    card.locator("button.resume").click()
    card.locator(".decision-error").filter(has_text="resumeData").wait_for()
    assert card.get_attribute("data-state") == "open" and card.locator("button.resume").is_enabled()
    # The tool asks again: the same call gets a new card; the answered one stays decided.
    card.locator(".resume-data").fill('{"confirmed": false}')
    card.locator("button.resume").click()
    again = page.locator('.decision[data-tool-call-id="call_c"][data-state="open"]')
    again.wait_for()
    page.locator('.decision[data-tool-call-id="call_c"][data-state="decided"]').wait_for()
    assert json.loads(again.locator("pre.suspend-payload").inner_text()) == {
        "question": "Sure? It cannot be undone."
    }
    card = card.nth(1)
    card.locator(".resume-data").fill('{"confirmed": true}')
    card.locator("button.resume").click()
    page.locator(".msg.assistant", has_text="Checking is closed.").wait_for()
    closed = page.locator('.tool-call[data-tool-call-id="call_c"][data-state="result"] .tool-output')
    assert json.loads(closed.inner_text()) == {"closed": True}
    assert card.locator(".decision-error").inner_text() == ""

    # Decided elsewhere first: the route's refusal is shown on the card, which stays closed.
    card = _ask(page, "t-2", "Move 100 once more")
    run_d = card.get_attribute("data-run-id")
    assert json.loads(card.locator("pre.args").inner_text())["memo"] == MARKUP
    assert card.locator("pre.args img, pre.args b").count() == 0
    with httpx.stream(
        "POST",
        f"{studio_url}/api/agents/banker/approve-tool-call",
        json={"runId": run_d, "toolCallId": "call_d", "resourceId": "ada"},
    ) as elsewhere:
        assert elsewhere.status_code == 200
        elsewhere.read()
    card.locator("button.approve").click()
    page.locator('.decision[data-state="stale"]').wait_for()
    assert "no suspended run" in card.locator(".decision-error").inner_text()
    assert card.locator("button.approve").is_disabled()
    assert len(ran) == 2  # approved once, elsewhere
    assert page.evaluate("window.pwned") is None and page.blocked == []


def test_open_a_waiting_run_from_the_list(page: Any, studio_url: str) -> None:
    """A run started elsewhere (another tab, a client) is listed under its thread and decided
    from the list; the card it opens posts for the run's own resource."""
    with httpx.stream(
        "POST",
        f"{studio_url}/api/agents/banker/stream",
        json={"messages": "Move 100", "memory": {"thread": "t-9", "resource": "bob"}},
    ) as started:
        started.read()
    page.goto(studio_url + "/studio#/chat/banker")
    group = page.locator('#suspended-runs .thread-group[data-thread="t-9"]')
    group.wait_for()
    group.locator("button.open-call").click()
    card = page.locator('.decision[data-tool-call-id="call_a"]')
    card.wait_for()
    assert json.loads(card.locator("pre.args").inner_text())["apiKey"] == "[API_KEY]"
    assert SECRET not in page.locator("body").inner_text()
    group.locator("button.open-call").click()  # opening it again shows the same card
    assert page.locator(".decision").count() == 1
    # The request never reaches the server: said on the card, which can be tried again.
    page.route("**/approve-tool-call", lambda route: route.abort())
    card.locator("button.approve").click()
    card.locator(".decision-error").filter(has_text="Failed to fetch").wait_for()
    assert card.get_attribute("data-state") == "open" and card.locator("button.approve").is_enabled()
    page.unroute("**/approve-tool-call")
    # A refusal a retry cannot change (an identity hook's 403, answered here by the browser):
    # the card closes, and the list opens a fresh one.
    refusal = {"status": 403, "json": {"error": "resourceId: not yours"}}
    page.route("**/approve-tool-call", lambda route: route.fulfill(**refusal))
    card.locator("button.approve").click()
    page.locator('.decision[data-state="stale"]').filter(has_text="resourceId: not yours").wait_for()
    assert card.locator("button.approve").is_disabled()
    page.unroute("**/approve-tool-call")
    group.locator("button.open-call").click()
    card = page.locator('.decision[data-tool-call-id="call_a"][data-state="open"]')
    card.wait_for()
    card.locator("button.approve").click()
    page.locator(".msg.assistant", has_text="Transferred 100 to savings.").wait_for()
    page.locator("#suspended-runs").filter(has_text="No run is waiting").wait_for()
    assert len(ran) == 1 and page.blocked == []
