"""Each studio view in headless Chromium, against a real server: chat with tool results, thread
history and run overrides; memory listing only the selected agent's threads; the tools page;
processor workflows drawn as graphs; every view at 360 px without horizontal overflow.

Set SLUICEGATE_SCREENSHOTS=docs to refresh the screenshots in docs/ (scripts/screenshots.py).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from tests.server import test_studio as studio
from tests.server.example_app import ToolEcho, add
from tests.server.live import serve_in_thread

from sluicegate import Agent, Sluicegate, tool
from sluicegate.memory import Memory
from sluicegate.messages import Message
from sluicegate.models.base import CallOptions, StreamPart
from sluicegate.models.registry import register_provider
from sluicegate.processors import PIIDetector, Processor, RegexFilter, UnicodeNormalizer
from sluicegate.processors.args import ProcessInputArgs
from sluicegate.server import ServerSettings, create_app
from sluicegate.storage import SQLiteStore
from sluicegate.tools import create_tool
from sluicegate.workflows import create_step, create_workflow

pytestmark = studio.pytestmark
browser = studio.browser  # one Chromium for the module
page = studio.page  # the browser fixture, opened on this module's `studio_url`
shot = studio.shot


class Introspect(ToolEcho):
    """`ToolEcho` whose answer starts with `[<model id> | <system prompt>]`, so a test sees which
    model ran and what instructions it was given."""

    async def _parts(self, options: CallOptions) -> AsyncIterator[StreamPart]:
        system = " ".join(
            str(m.get("content")) for m in options.prompt if m.get("role") == "system" and m.get("content")
        )
        async for part in super()._parts(options):
            yield part
            if part.get("type") == "text-start":
                yield {"type": "text-delta", "id": part["id"], "delta": f"[{self.model_id} | {system}] "}


register_provider(
    "studio-test", lambda model_id: Introspect(deltas=2, provider="studio-test", model_id=model_id)
)


class ContextTag(Processor):
    """Appends the request context's `tier` to the user's message, to show the context arrived."""

    id = "context-tag"

    def process_input(self, args: ProcessInputArgs) -> Any:
        tier = args.request_context.get("tier")
        if tier is None:
            return None
        return [
            Message.text_message(m.role, f"{m.text} (tier {tier})", id=m.id) if m.role == "user" else m
            for m in args.messages
        ]


@tool
async def weather(city: str, unit: str = "celsius", days: int = 1, alerts: bool = False) -> dict[str, Any]:
    """The forecast for a city."""
    if city == "Atlantis":
        raise ValueError("no forecast for Atlantis")
    return {"city": city, "unit": unit, "days": days, "alerts": alerts}


@tool(require_approval=True)
async def wire(amount: int) -> dict[str, int]:
    """Sends money; every call waits for a person's approval."""
    return {"wired": amount}


async def _merge(input: Any, context: Any) -> Any:
    return {"merged": {**input["left"], **input["right"]}}


merge = create_tool(
    id="merge",
    description="Merges two objects.",
    input_schema={
        "type": "object",
        "properties": {"left": {"type": "object"}, "right": {"type": "object"}},
        "required": ["left", "right"],
    },
    execute=_merge,
)

PIPELINE = (
    create_workflow(id="screening", description="Normalise, then redact and detect side by side.")
    .then(UnicodeNormalizer())
    .parallel([create_step(RegexFilter(presets=["secrets"], strategy="redact")), create_step(PIIDetector())])
    .map(lambda data: data["processor:regex-filter"])
    .commit()
)


@pytest.fixture
def studio_url(tmp_path: Path) -> Iterator[str]:
    storage = SQLiteStore(str(tmp_path / "views.db"))
    support = Agent(
        name="support",
        description="Answers with tools; its model shows what it was sent.",
        instructions="Be brief.",
        model=Introspect(deltas=3, provider="studio-test", model_id="main"),
        tools=[add, wire],
        input_processors=[ContextTag(), PIPELINE],
        memory=Memory(storage=storage),
    )
    sales = Agent(name="sales", model=Introspect(deltas=2), memory=Memory(storage=storage))
    registry = Sluicegate(
        agents=[support, sales], processors=[PIIDetector()], tools=[weather, merge], storage=storage
    )
    settings = ServerSettings(studio=True, allow_client_overrides=True)
    with serve_in_thread(create_app(registry, settings)) as url:
        yield url


def _send(page: Any, text: str) -> None:
    before = page.locator(".msg.assistant").count()
    page.fill("#chat-input", text)
    page.click("#chat-send")
    page.locator(".msg.assistant").nth(before).wait_for()
    page.locator("#chat-send:enabled").wait_for()  # the stream has ended


def _no_overflow(page: Any) -> None:
    widths = page.evaluate("() => [document.scrollingElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], f"the page is {widths[0]} px wide in a {widths[1]} px window"


def test_chat_tool_results_history_and_labels(page: Any, studio_url: str, tmp_path: Path) -> None:
    page.goto(studio_url + "/studio#/chat/support")
    # Labelled fields: each is found by its label's text.
    page.get_by_label("Thread id").fill("trip-1")
    page.get_by_label("Resource id (whose threads)").fill("ada")
    _send(page, '/tool add {"a": 2, "b": 3}')
    card = page.locator('.msg.assistant .tool-call[data-tool="add"]')
    card.locator(".tool-output").wait_for()
    assert json.loads(card.locator(".tool-args").inner_text()) == {"a": 2, "b": 3}
    assert json.loads(card.locator(".tool-output").inner_text()) == {"sum": 5}
    assert card.get_attribute("data-state") == "result"
    page.locator(".msg.assistant", has_text='Tool add said: {"sum": 5}').wait_for()

    # Another thread, then back to the first through the thread list: its history is reloaded.
    page.click("#chat-new-thread")
    page.locator("#chat-log .msg").first.wait_for(state="detached")
    _send(page, "hello there")
    assert page.locator("#chat-log .tool-call").count() == 0
    page.locator('#chat-threads option[value="trip-1"]').wait_for(state="attached")
    page.select_option("#chat-threads", "trip-1")
    page.locator('#chat-log .tool-call[data-state="result"]').wait_for()
    assert "hello there" not in page.locator("#chat-log").inner_text()
    assert json.loads(page.locator("#chat-log .tool-output").inner_text()) == {"sum": 5}

    # A reload keeps the thread and shows its history again, the tool result included.
    page.reload()
    page.locator('#chat-log .tool-call[data-state="result"]').wait_for()
    assert page.input_value("#chat-thread") == "trip-1" and page.input_value("#chat-resource") == "ada"
    log = page.locator("#chat-log").inner_text()
    assert '/tool add {"a": 2, "b": 3}' in log and 'Tool add said: {"sum": 5}' in log
    shot(page, "chat-history", tmp_path)
    assert page.blocked == []


def test_chat_run_overrides(page: Any, studio_url: str, tmp_path: Path) -> None:
    page.goto(studio_url + "/studio#/chat/support")
    page.get_by_label("Thread id").fill("over-1")
    _send(page, "plain")
    assert "[main | Be brief.] Echo: plain" in page.locator(".msg.assistant").last.inner_text()

    page.click("#chat-overrides summary")
    # A request context that is not a JSON object is refused before anything is sent.
    page.get_by_label("Request context (a JSON object)").fill('["gold"]')
    page.fill("#chat-input", "not sent")
    page.click("#chat-send")
    error = page.locator("#overrides-error")
    assert "Request context must be a JSON object" in error.inner_text() and "an array" in error.inner_text()
    assert page.get_attribute("#override-context", "aria-invalid") == "true"
    page.get_by_label("Request context (a JSON object)").fill("{tier: gold}")
    page.click("#chat-send")
    assert "Request context is not valid JSON" in error.inner_text()
    assert page.locator(".msg.user").count() == 1 and page.input_value("#chat-input") == "not sent"

    page.get_by_label("Model", exact=True).fill("studio-test/alt")
    page.get_by_label("Instructions").fill("Talk like a pirate.")
    page.get_by_label("Request context (a JSON object)").fill('{"tier": "gold"}')
    assert page.locator("#overrides-count").inner_text() == "3 active"
    _send(page, "hello")
    answer = page.locator(".msg.assistant").last.inner_text()
    assert "[alt | Talk like a pirate.] Echo: hello (tier gold)" in answer
    shot(page, "overrides", tmp_path)

    # A model the server cannot resolve: its 400 names the field, shown by the panel.
    page.get_by_label("Model", exact=True).fill("nowhere/none")
    page.fill("#chat-input", "again")
    page.click("#chat-send")
    page.locator("#overrides-error", has_text="nowhere").wait_for()
    assert page.blocked == []


def test_memory_lists_the_agents_own_threads_with_tool_calls(
    page: Any, studio_url: str, tmp_path: Path
) -> None:
    page.goto(studio_url + "/studio#/chat/support")
    page.get_by_label("Thread id").fill("support-thread")
    page.get_by_label("Resource id (whose threads)").fill("ada")
    _send(page, '/tool add {"a": 20, "b": 22}')
    page.locator(".msg.assistant", has_text="Tool add said").wait_for()
    page.goto(studio_url + "/studio#/chat/sales")
    # A hash change re-renders once the agent is fetched: fill the sales view's field, not the
    # support view's still on the page (a busy machine lost the thread id to that race).
    page.get_by_role("heading", name="Chat with sales").wait_for()
    page.get_by_label("Thread id").fill("sales-thread")
    page.get_by_label("Resource id (whose threads)").fill("ada")
    _send(page, "a sales question")

    page.goto(studio_url + "/studio#/memory")
    # The chat view's "Resource id (whose threads)" field stays on the page until the memory
    # view renders: wait for the memory view, and name its field exactly.
    page.locator("#memory-agent").wait_for()
    page.get_by_label("Resource id", exact=True).fill("ada")
    page.get_by_role("button", name="List threads").click()
    page.locator('button.thread[data-thread="support-thread"]').wait_for()
    assert [b.get_attribute("data-thread") for b in page.locator("button.thread").all()] == ["support-thread"]
    page.select_option("#memory-agent", "sales")
    page.locator('button.thread[data-thread="sales-thread"]').wait_for()
    assert page.locator("button.thread").count() == 1

    page.select_option("#memory-agent", "support")
    page.locator('button.thread[data-thread="support-thread"]').click()
    card = page.locator('#memory-messages .tool-call[data-tool="add"]')
    card.wait_for()
    assert card.get_attribute("data-state") == "result"
    assert json.loads(card.locator(".tool-args").inner_text()) == {"a": 20, "b": 22}
    assert json.loads(card.locator(".tool-output").inner_text()) == {"sum": 42}
    # No empty bubble: every message shows text or a tool call.
    for bubble in page.locator("#memory-messages .msg").all():
        assert bubble.locator(".text, .tool-call").count() > 0
    shot(page, "memory", tmp_path)
    # The thread continues in the chat, its history loaded there.
    page.get_by_role("link", name="continue in chat").click()
    page.locator('#chat-log .tool-call[data-state="result"]').wait_for()
    assert (
        page.input_value("#chat-thread") == "support-thread" and page.input_value("#chat-resource") == "ada"
    )
    assert page.blocked == []


def test_tools_page_lists_describes_and_runs(page: Any, studio_url: str, tmp_path: Path) -> None:
    page.goto(studio_url + "/studio#/tools")
    app = page.locator('.tool-group[data-scope="app"]')
    card = app.locator('.tool-card[data-tool="weather"]')
    card.wait_for()
    assert "The forecast for a city." in card.inner_text()
    card.locator("details.schema summary").click()
    schema = json.loads(card.locator("details.schema pre").inner_text())
    assert schema["required"] == ["city"] and schema["properties"]["days"]["type"] == "integer"
    # A form from the schema: a required text field, an integer, a checkbox.
    card.get_by_label("city").fill("Lisbon")
    card.get_by_label("days").fill("3")
    card.get_by_label("alerts").check()
    card.get_by_role("button", name="Run").click()
    card.locator(".tool-run-result.ok").wait_for()
    result = json.loads(card.locator(".tool-run-result").inner_text())
    assert result == {"city": "Lisbon", "unit": "celsius", "days": 3, "alerts": True}
    # Checked in the page before sending; the tool's own failure comes back as the server says it.
    card.get_by_label("days").fill("2.5")
    card.get_by_role("button", name="Run").click()
    assert card.locator(".tool-run-result.failed").inner_text() == 'days must be an integer, got "2.5"'
    card.get_by_label("days").fill("")
    card.get_by_label("city").fill("")
    card.get_by_role("button", name="Run").click()
    assert card.locator(".tool-run-result.failed").inner_text() == "city is required"
    card.get_by_label("city").fill("Atlantis")
    card.get_by_role("button", name="Run").click()
    card.locator(".tool-run-result.failed").filter(has_text="no forecast for Atlantis").wait_for()

    # A schema a form cannot hold gets a JSON editor; the server's 400 names the field.
    merge_card = app.locator('.tool-card[data-tool="merge"]')
    editor = merge_card.get_by_label("Arguments (JSON)")
    editor.fill('{"left": {"a": 1}}')
    merge_card.get_by_role("button", name="Run").click()
    merge_card.locator(".tool-run-result.failed").filter(has_text="right").wait_for()
    editor.fill('{"left": {"a": 1}, "right": {"b": 2}}')
    merge_card.get_by_role("button", name="Run").click()
    merge_card.locator(".tool-run-result.ok").wait_for()
    assert json.loads(merge_card.locator(".tool-run-result").inner_text()) == {"merged": {"a": 1, "b": 2}}

    # An agent's own tool runs through the agent's route.
    own = page.locator('.tool-group[data-scope="support"] .tool-card[data-tool="add"]')
    own.get_by_label("a", exact=True).fill("40")
    own.get_by_label("b", exact=True).fill("2")
    own.get_by_role("button", name="Run").click()
    own.locator(".tool-run-result.ok").wait_for()
    assert json.loads(own.locator(".tool-run-result").inner_text()) == {"sum": 42}
    shot(page, "tools", tmp_path)
    assert page.blocked == []


def test_tools_page_says_why_a_tool_that_requires_approval_is_not_run(page: Any, studio_url: str) -> None:
    page.goto(studio_url + "/studio#/tools")
    card = page.locator('.tool-group[data-scope="support"] .tool-card[data-tool="wire"]')
    card.wait_for()
    assert card.get_attribute("data-approval") == "required"
    notice = card.locator(".tool-approval").inner_text()
    assert "Requires approval" in notice and "--allow-unapproved-tool-execution" in notice
    # Tools that need no approval carry no notice.
    assert page.locator('.tool-card[data-tool="add"] .tool-approval').count() == 0
    card.get_by_label("amount").fill("100")
    card.get_by_role("button", name="Run").click()
    failed = card.locator(".tool-run-result.failed")
    failed.wait_for()
    assert "tool 'wire' requires approval" in failed.inner_text()
    assert page.blocked == []


def test_processor_workflows_drawn_as_graphs(page: Any, studio_url: str, tmp_path: Path) -> None:
    page.goto(studio_url + "/studio#/processors")
    card = page.locator('section[data-processor="screening"]')
    graph = card.locator("svg.workflow-graph")
    graph.wait_for()
    nodes = graph.locator("g.wf-node")
    shown = [(n.get_attribute("data-stage-type"), n.get_attribute("data-step")) for n in nodes.all()]
    assert shown == [
        ("io", "input"),
        ("then", "unicode-normalizer"),
        ("parallel", "regex-filter"),
        ("parallel", "pii-detector"),
        ("map", "map"),
        ("io", "output"),
    ]
    # Edges join each stage to the next: 1 + 2 (fan out) + 2 (fan in) + 1.
    assert graph.locator("path.wf-edge").count() == 6
    # Side by side: the parallel steps share a row.
    boxes = [graph.locator(f'g.wf-node[data-step="{s}"] rect') for s in ("regex-filter", "pii-detector")]
    assert boxes[0].get_attribute("y") == boxes[1].get_attribute("y")
    assert "Normalise, then redact" in card.locator(".description").inner_text()
    # A detector without a model does not claim an LLM decides.
    pii = page.locator('section[data-processor="pii-detector"] .description').inner_text()
    assert "LLM" not in pii and "offline" in pii
    assert page.locator('section[data-processor="context-tag"] svg').count() == 0
    card.scroll_into_view_if_needed()
    shot(page, "workflow", tmp_path)
    assert page.blocked == []


@pytest.mark.parametrize("route", ["agents", "chat/support", "runs", "memory", "processors", "tools"])
def test_every_view_fits_360_px(page: Any, studio_url: str, route: str, tmp_path: Path) -> None:
    page.set_viewport_size({"width": 360, "height": 740})
    if route in ("chat/support", "runs"):  # with a run in it: messages, a tool card, a timeline
        page.goto(studio_url + "/studio#/chat/support")
        page.get_by_label("Thread id").fill("narrow-thread-with-a-rather-long-identifier")
        _send(page, '/tool add {"a": 1, "b": 1234567890123456789}')
        page.locator(".span-row").first.wait_for()
        page.locator("#chat-overrides summary").click()
    if route != "chat/support":
        page.goto(studio_url + "/studio#/" + route)
    page.locator('#view[aria-busy="false"]').wait_for(state="attached")
    page.locator("#view > h1").wait_for()
    if route == "memory":
        page.locator("#memory-threads").wait_for(state="attached")
    _no_overflow(page)
    if route == "chat/support":
        shot(page, "narrow", tmp_path)


def test_views_add_their_own_nav_entry(page: Any, studio_url: str) -> None:
    """A view file needs only `Studio.registerView`: its link joins the nav before the static ones
    and its route renders."""
    page.goto(studio_url + "/studio")
    page.locator("section[data-agent]").first.wait_for()
    links = [a.inner_text() for a in page.locator("nav a").all()]
    assert links == ["Agents", "Runs", "Memory", "Processors", "Tools", "Eval", "API"]
    page.evaluate(
        """() => Studio.registerView("extra", "Extra", async (arg) => {
             Studio.view.replaceChildren(Studio.h("h1", {}, "Extra " + arg));
           })"""
    )
    assert [a.inner_text() for a in page.locator("nav a").all()][-2:] == ["Extra", "API"]
    page.goto(studio_url + "/studio#/extra/42")
    page.locator("#view > h1", has_text="Extra 42").wait_for(state="attached")
    # A chat is reached from Agents, which stays marked as the current entry.
    page.goto(studio_url + "/studio#/chat/support")
    page.locator("#chat-input").wait_for()
    assert page.locator("nav a.active").inner_text() == "Agents"


def test_timeline_rows_open_the_inspector(page: Any, studio_url: str) -> None:
    """A click (or Enter) on a timeline row calls `openInspector(traceId, spanId)` when the run
    inspector is loaded; without it the rows are plain."""
    page.goto(studio_url + "/studio#/chat/support")
    page.get_by_label("Thread id").fill("inspect-1")
    _send(page, "hello")
    row = page.locator('.span-row[data-processor="context-tag"]')
    row.wait_for()
    row.click()  # no inspector loaded: nothing happens, nothing breaks
    page.evaluate(
        "() => { window.opened = []; window.openInspector = (t, s) => window.opened.push([t, s]); }"
    )
    row.click()
    row.focus()
    page.keyboard.press("Enter")
    trace_id = page.locator("#timeline p.muted").first.inner_text().split(" ")[1]
    span_id = row.get_attribute("data-span-id")
    assert len(span_id) == 16
    assert page.evaluate("window.opened") == [[trace_id, span_id], [trace_id, span_id]]
    assert page.blocked == []


def test_a_view_defined_before_the_router_gets_its_entry(page: Any, studio_url: str) -> None:
    """The eval page's script exposes `window.sluicegateEvalView(view)` before the router starts;
    the router gives it a nav entry (once) and the `#/eval` route."""
    page.goto(studio_url + "/studio#/eval")
    page.locator("#view h2", has_text="Evaluate a processor chain").wait_for()
    page.locator("#eval-file").wait_for(state="attached")
    assert page.locator('nav a[data-view="eval"]').count() == 1
    assert page.locator("nav a.active").inner_text() == "Eval"


def test_a_call_waiting_for_approval_after_a_reload(page: Any, studio_url: str) -> None:
    """After a reload the waiting run is listed (its messages are stored only when it ends);
    once approved, the call and its result are shown, and the thread holds them."""
    page.goto(studio_url + "/studio#/chat/support")
    page.get_by_label("Thread id").fill("wire-1")
    _send(page, '/tool wire {"amount": 5}')
    page.locator('.decision[data-tool="wire"][data-state="open"]').wait_for()
    page.reload()
    page.locator("#suspended-runs .open-call").click()
    page.locator('.decision[data-tool="wire"] button.approve').click()
    page.locator('.decision[data-tool="wire"][data-state="decided"]').wait_for()
    result = page.locator('#chat-log .tool-call[data-tool="wire"][data-state="result"]')
    result.wait_for()
    assert page.locator('#chat-log .tool-call[data-tool="wire"]').count() == 1
    assert json.loads(result.locator(".tool-output").inner_text()) == {"wired": 5}
    page.reload()
    result.wait_for()
    assert '/tool wire {"amount": 5}' in page.locator("#chat-log .msg.user").first.inner_text()
    assert json.loads(result.locator(".tool-args").inner_text()) == {"amount": 5}
    assert json.loads(result.locator(".tool-output").inner_text()) == {"wired": 5}
    assert page.blocked == []
