"""A server's question mid-call (elicitation) suspends the run; `resume_stream` answers it.

Both ways a server asks: the 2026 protocol's input requests (the default with the SDK's own
server: the round travels with the run and the call is made again with the answers) and the
2025 protocols' `elicitation/create` mid-call (`protocol="legacy"`: the call is held open in
this process until the answer)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import pytest_asyncio
from tests.mcp.helpers import fixture_server
from tests.mcp.test_mcp_http import serve

from sluicegate import Agent
from sluicegate.mcp import MCPClient, MCPElicitationInputError
from sluicegate.storage import InMemorySuspendedRunStore
from sluicegate.testing import MockModel, text_step, tool_call_step
from sluicegate.tools import ToolContext

pytestmark = [pytest.mark.integration, pytest.mark.asyncio(loop_scope="module")]


@pytest_asyncio.fixture(scope="module", loop_scope="module", params=["auto", "legacy"])
async def mcp(request: pytest.FixtureRequest) -> AsyncIterator[MCPClient]:
    async with MCPClient(servers={"fx": fixture_server(protocol=request.param)}, timeout=20) as client:
        yield client


def held(mcp: MCPClient) -> int:
    """Questions this process holds while a run waits: one per waiting run on the 2025
    protocols, none on the 2026 protocol (the round is in the run's payload)."""
    return 1 if mcp.servers["fx"].protocol == "legacy" else 0


def booking_agent(tools: dict[str, Any], tool: str = "fx_book", **kwargs: Any) -> Agent:
    model = MockModel([tool_call_step(("c1", tool, {"flight": "SK123"})), text_step("done")])
    return Agent(name="travel", model=model, tools=tools, **kwargs)


async def suspend(agent: Agent) -> tuple[str, Any]:
    output = await agent.stream("book me on SK123")
    chunks = [c async for c in output.full_stream]
    suspended = [c for c in chunks if c.type == "tool-call-suspended"]
    assert len(suspended) == 1, [c.type for c in chunks]
    return output.run_id, suspended[0].payload


def answer_text(result: Any) -> str:
    """The fixture tool's text: its structured result (`{"result": ...}`)."""
    return str(result.payload.result["result"])


async def resumed_result(agent: Agent, run_id: str, answer: Any) -> list[Any]:
    output = await agent.resume_stream(answer, run_id=run_id)
    return [c async for c in output.full_stream]


async def test_a_question_suspends_the_run_with_the_message_and_schema(mcp: MCPClient) -> None:
    agent = booking_agent(await mcp.list_tools())
    run_id, payload = await suspend(agent)
    question = payload.suspend_payload
    assert question["type"] == "mcp-elicitation" and question["server"] == "fx"
    assert question["message"] == "How many seats on SK123?"
    assert question["requestedSchema"]["properties"]["seats"]["type"] == "integer"
    assert ("round" in question) is (held(mcp) == 0)
    assert mcp.open_questions == held(mcp)
    chunks = await resumed_result(
        agent, run_id, {"action": "accept", "content": {"seats": 2, "window": True}}
    )
    result = next(c for c in chunks if c.type == "tool-result")
    assert answer_text(result) == "booked 2 seats on SK123, window=True"
    assert mcp.open_questions == 0


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_and_cancel_reach_the_server(mcp: MCPClient, action: str) -> None:
    agent = booking_agent(await mcp.list_tools())
    run_id, _ = await suspend(agent)
    chunks = await resumed_result(agent, run_id, {"action": action})
    result = next(c for c in chunks if c.type == "tool-result")
    assert answer_text(result) == f"not booked: {action}"


@pytest.mark.parametrize(
    ("answer", "named"),
    [
        ({"action": "accept", "content": {"seats": "two"}}, "seats"),
        ({"action": "accept", "content": {"seats": 40}}, "seats"),
        ({"action": "accept"}, "content"),
        ({"action": "maybe"}, "action"),
        ({"action": "decline", "content": {"seats": 1}}, "content"),
        ("2 seats", "action"),
    ],
)
async def test_an_answer_the_schema_refuses_is_a_typed_error_and_the_run_still_waits(
    mcp: MCPClient, answer: Any, named: str
) -> None:
    agent = booking_agent(await mcp.list_tools())
    run_id, _ = await suspend(agent)
    with pytest.raises(MCPElicitationInputError, match=named):
        await agent.resume_stream(answer, run_id=run_id)
    chunks = await resumed_result(agent, run_id, {"action": "accept", "content": {"seats": 1}})
    assert any(c.type == "tool-result" for c in chunks)


async def test_a_second_question_in_the_same_call_suspends_again(mcp: MCPClient) -> None:
    agent = booking_agent(await mcp.list_tools(), tool="fx_book_with_meal")
    run_id, _ = await suspend(agent)
    output = await agent.resume_stream({"action": "accept", "content": {"seats": 1}}, run_id=run_id)
    chunks = [c async for c in output.full_stream]
    again = next(c for c in chunks if c.type == "tool-call-suspended")
    assert again.payload.suspend_payload["message"] == "Which meal?"
    chunks = await resumed_result(agent, output.run_id, {"action": "accept", "content": {"meal": "veg"}})
    result = next(c for c in chunks if c.type == "tool-result")
    assert answer_text(result) == "booked 1 seats on SK123 with meal veg"


async def test_a_question_too_large_to_store_is_a_tool_error(mcp: MCPClient) -> None:
    agent = booking_agent(await mcp.list_tools(), tool="fx_book_verbosely")
    result = await agent.generate("book me")
    assert result.finish_reason == "stop"
    (error,) = result.steps[0].tool_errors
    assert "at most 64000" in str(error.payload.error) and "answered 'cancel'" in str(error.payload.error)
    assert mcp.open_questions == 0


async def test_a_held_question_that_is_gone_is_a_tool_error_not_a_wait() -> None:
    """2025 protocols: the stored run outlives the process that asked (a restart is a new
    client): resuming it is a tool error the model reads, at once."""
    store = InMemorySuspendedRunStore()
    async with MCPClient(servers={"fx": fixture_server(protocol="legacy")}, timeout=20) as first:
        agent = booking_agent(await first.list_tools(), suspended_runs=store)
        run_id, _ = await suspend(agent)
    assert first.open_questions == 0  # closing answered it (cancel) and dropped the call
    async with MCPClient(servers={"fx": fixture_server(protocol="legacy")}, timeout=20) as second:
        agent = booking_agent(await second.list_tools(), suspended_runs=store)
        chunks = await resumed_result(agent, run_id, {"action": "accept", "content": {"seats": 1}})
    error = next(c for c in chunks if c.type == "tool-error")
    assert "no longer open" in str(error.payload.error)
    assert chunks[-1].type == "finish"


@pytest.fixture(scope="module")
def http_server() -> Iterator[int]:
    yield from serve("http")


async def test_a_2026_question_survives_the_clients_restart(http_server: int) -> None:
    """2026 protocol: the round is in the stored run, so another client (another process, after
    a restart) makes the call again with the answer, and the server finishes it."""
    store = InMemorySuspendedRunStore()
    server = {"url": f"http://127.0.0.1:{http_server}/mcp"}
    async with MCPClient(servers={"fx": server}, timeout=20) as first:
        agent = booking_agent(await first.list_tools(), suspended_runs=store)
        run_id, _ = await suspend(agent)
    async with MCPClient(servers={"fx": server}, timeout=20) as second:
        agent = booking_agent(await second.list_tools(), suspended_runs=store)
        chunks = await resumed_result(agent, run_id, {"action": "accept", "content": {"seats": 4}})
    result = next(c for c in chunks if c.type == "tool-result")
    assert answer_text(result) == "booked 4 seats on SK123, window=False"


async def test_a_2026_answer_to_a_restarted_server_is_the_servers_refusal_at_once() -> None:
    """A stdio server restarts with its client, and its request state does not outlive it: the
    resumed call is a tool error naming the refusal, not a wait."""
    store = InMemorySuspendedRunStore()
    async with MCPClient(servers={"fx": fixture_server()}, timeout=20) as first:
        agent = booking_agent(await first.list_tools(), suspended_runs=store)
        run_id, _ = await suspend(agent)
    async with MCPClient(servers={"fx": fixture_server()}, timeout=20) as second:
        agent = booking_agent(await second.list_tools(), suspended_runs=store)
        chunks = await resumed_result(agent, run_id, {"action": "accept", "content": {"seats": 1}})
    error = next(c for c in chunks if c.type == "tool-error")
    assert "requestState" in str(error.payload.error)
    assert chunks[-1].type == "finish"


async def test_a_held_question_nobody_answers_is_cancelled_after_the_elicitation_timeout() -> None:
    fixture = fixture_server(protocol="legacy")
    async with MCPClient(servers={"fx": fixture}, timeout=20, elicitation_timeout=0.2) as mcp:
        agent = booking_agent(await mcp.list_tools())
        run_id, _ = await suspend(agent)
        assert mcp.open_questions == 1
        await _drained(mcp)
        chunks = await resumed_result(agent, run_id, {"action": "decline"})
        assert "no longer open" in str(next(c for c in chunks if c.type == "tool-error").payload.error)
        # decline_tool_call never runs the tool again: the model reads the reason at once, and
        # the server's question waits out the same timeout before it hears cancel.
        declined_agent = booking_agent(await mcp.list_tools())
        declined_run, _ = await suspend(declined_agent)
        declined = await declined_agent.decline_tool_call(run_id=declined_run, reason="not now")
        kinds = [c.type async for c in declined.full_stream]
        assert "tool-output-denied" in kinds and kinds[-1] == "finish"
        assert mcp.open_questions == 1
        await _drained(mcp)


async def _drained(mcp: MCPClient) -> None:
    for _ in range(100):
        if mcp.open_questions == 0:
            return
        await _tick()
    raise AssertionError(f"{mcp.open_questions} question(s) still open")


async def test_without_elicitation_the_client_does_not_offer_it_and_the_run_goes_on() -> None:
    async with MCPClient(servers={"fx": fixture_server()}, timeout=20, elicitation=False) as mcp:
        agent = booking_agent(await mcp.list_tools())
        result = await agent.generate("book me")
    assert result.finish_reason == "stop"
    (error,) = result.steps[0].tool_errors
    assert "elicitation capability" in str(error.payload.error)


async def test_a_call_nobody_can_be_asked_about_hears_cancel(mcp: MCPClient) -> None:
    """A call outside a run (no run and tool call to suspend) cannot wait for a person."""
    tool = (await mcp.list_tools())["fx_book"]
    result = await tool.execute({"flight": "SK123"}, ToolContext(tool_call_id="direct"))
    assert result == {"result": "not booked: cancel"}
    assert mcp.open_questions == 0


async def _tick() -> None:
    await asyncio.sleep(0.02)
