"""`Agent.observe` across instances: two `Agent`s (the same agent id, each with its own
`RedisRunLog` client, as two processes would have) on one real `redis-server`; one streams a
run, the other replays and follows it, across a suspension too."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from sluicegate import Agent, RequestContext
from sluicegate.request_context import RESOURCE_ID_KEY
from sluicegate.storage import InMemorySuspendedRunStore
from sluicegate.stream import Chunk, RedisRunLog, RunNotFoundError
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step
from sluicegate.tools import ToolContext, create_tool

from .redis_server import RedisServer


@pytest.fixture
async def logs(redis_server: RedisServer) -> AsyncIterator[tuple[RedisRunLog, RedisRunLog]]:
    """Two clients of one Redis log (one key prefix), as two processes would hold them."""
    prefix = f"test:{uuid.uuid4().hex}:"
    made = (
        RedisRunLog(url=redis_server.url, prefix=prefix, block=0.2),
        RedisRunLog(url=redis_server.url, prefix=prefix, block=0.2),
    )
    try:
        yield made
    finally:
        for log in made:
            await log.aclose()


async def observed(agent: Agent, run_id: str, offset: int = 0, **options: Any) -> list[Chunk]:
    output = await agent.observe(run_id=run_id, offset=offset, **options)
    return [chunk async for chunk in output.full_stream]


def dicts(chunks: list[Chunk]) -> list[dict[str, Any]]:
    return [chunk.to_dict() for chunk in chunks]


async def test_one_instance_follows_a_run_another_streams(logs: tuple[RedisRunLog, RedisRunLog]) -> None:
    context = RequestContext({RESOURCE_ID_KEY: "user-1"})
    model = MockModel([text_step("one two three four five six", pieces=6)])
    streaming = Agent("support", model=model, run_log=logs[0])
    serving = Agent("support", model=MockModel([]), run_log=logs[1])

    output = await streaming.stream("hi", request_context=context)
    stream = output.full_stream
    first = [await stream.__anext__() for _ in range(4)]
    follower = asyncio.create_task(observed(serving, output.run_id, offset=2, request_context=context))
    await asyncio.sleep(0.05)
    assert not follower.done()  # caught up with what was flushed, waiting for more
    rest = [chunk async for chunk in stream]
    assert dicts(await asyncio.wait_for(follower, 10)) == dicts(first[2:] + rest)

    whole = await observed(serving, output.run_id, request_context=context)
    assert dicts(whole) == dicts(first + rest)
    info = await logs[1].info(output.run_id)
    assert (info.status, info.next_offset, info.resource_id) == ("finished", len(whole), "user-1")

    with pytest.raises(RunNotFoundError):
        await serving.observe(run_id=output.run_id, request_context=RequestContext({RESOURCE_ID_KEY: "u2"}))
    stranger = Agent("billing", model=MockModel([]), run_log=logs[1])
    with pytest.raises(RunNotFoundError):
        await stranger.observe(run_id=output.run_id, request_context=context)


async def test_a_run_approved_on_another_instance_continues_its_offsets(
    logs: tuple[RedisRunLog, RedisRunLog],
) -> None:
    calls: list[str] = []

    async def execute(input: Any, context: ToolContext) -> Any:
        calls.append(input["id"])
        return {"deleted": input["id"]}

    schema = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}
    delete = create_tool(id="delete", input_schema=schema, execute=execute, require_approval=True)
    store = InMemorySuspendedRunStore()  # the suspended runs, shared as a database would be
    model = MockModel([tool_call_step(("c1", "delete", {"id": "r1"})), text_step("Deleted r1.")])
    first_instance = Agent("admin", model=model, tools=[delete], suspended_runs=store, run_log=logs[0])
    second_instance = Agent("admin", model=model, tools=[delete], suspended_runs=store, run_log=logs[1])

    asked = [chunk async for chunk in (await first_instance.stream("delete r1")).full_stream]
    run_id = asked[0].run_id
    assert asked[-1].type == "tool-call-approval"
    assert (await logs[1].info(run_id)).status == "suspended"

    resumed = await second_instance.approve_tool_call(run_id=run_id)
    after = [chunk async for chunk in resumed.full_stream]
    assert calls == ["r1"] and after[-1].type == "finish"

    assert dicts(await observed(first_instance, run_id, offset=len(asked))) == dicts(after)
    assert dicts(await observed(first_instance, run_id)) == dicts(asked + after)
    info = await logs[0].info(run_id)
    assert (info.status, info.next_offset) == ("finished", len(asked) + len(after))
