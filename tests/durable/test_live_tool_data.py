"""What activities publish while they run: a tool's `context.writer.custom(...)` chunks (and a
notice before a retried call's), and a stream processor's timed flushes in the model activity."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from temporalio.client import Client

from sluicegate import Agent, Sluicegate, tool
from sluicegate.durable.temporal import TemporalRuns, create_worker, names
from sluicegate.models.base import CallOptions, StreamResult
from sluicegate.processors.builtin.batch_parts import BatchPartsProcessor
from sluicegate.stream.chunk import Chunk
from sluicegate.testing import MockModel, text_step, tool_call_step
from sluicegate.tools import ToolContext

pytestmark = pytest.mark.integration

FAST = {"heartbeatTimeout": 2, "retryInterval": 0.05}


async def _run(
    temporal_server: Any, agent: Agent[Any], body: Callable[[TemporalRuns], Awaitable[Any]], **settings: Any
) -> Any:
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    async with create_worker(client, Sluicegate(agents={agent.id: agent}), task_queue=queue):
        runs = TemporalRuns(client, task_queue=queue, settings={**FAST, **settings})
        return await asyncio.wait_for(body(runs), 60)


async def _chunks(runs: TemporalRuns, agent: Agent[Any], run_id: str) -> list[Chunk[Any]]:
    out = await runs.observe(agent, run_id)
    return [c async for c in out.full_stream]


async def test_a_tools_data_chunk_is_published_before_the_tool_returns(temporal_server: Any) -> None:
    seen = asyncio.Event()
    returned = asyncio.Event()

    @tool
    async def progress(job: str, context: ToolContext) -> str:
        """Report progress, then wait until someone saw it."""
        await context.writer.custom({"type": "data-progress", "data": {"job": job, "pct": 50}})
        await asyncio.wait_for(seen.wait(), 15)  # only a live reader can set it
        returned.set()
        return "done"

    model = MockModel([tool_call_step(("c1", "progress", {"job": "a"})), text_step("finished")])
    agent = Agent("live-data", model=model, tools=[progress])

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "hi")
        out = await runs.observe(agent, run_id)
        chunks: list[Chunk[Any]] = []
        async for chunk in out.full_stream:
            chunks.append(chunk)
            if chunk.type == "data-progress":
                assert not returned.is_set()
                seen.set()
        result = await runs.result(run_id)
        assert result["text"] == "finished"
        kinds = [c.type for c in chunks]
        assert kinds.count("data-progress") == 1
        assert kinds.index("data-progress") < kinds.index("tool-result")
        progress_chunk = chunks[kinds.index("data-progress")]
        assert progress_chunk.data == {"job": "a", "pct": 50}

    await _run(temporal_server, agent, body)


async def test_a_retried_tool_call_announces_itself_and_publishes_nothing_twice(temporal_server: Any) -> None:
    attempts: list[int] = []
    release = asyncio.Event()

    @tool
    async def slow(job: str, context: ToolContext) -> str:
        """Writes its attempt, and hangs on the first one (the attempt times out and is retried)."""
        attempts.append(len(attempts) + 1)
        await context.writer.custom({"type": "data-progress", "data": {"attempt": len(attempts)}})
        if len(attempts) == 1:
            await release.wait()
        return f"done on attempt {len(attempts)}"

    model = MockModel([tool_call_step(("c1", "slow", {"job": "a"})), text_step("finished")])
    agent = Agent("retried-tool", model=model, tools=[slow])

    async def body(runs: TemporalRuns) -> None:
        try:
            run_id = await runs.start(agent, "hi")
            result = await runs.result(run_id)
        finally:
            release.set()
        assert result["text"] == "finished" and attempts == [1, 2]
        chunks = await _chunks(runs, agent, run_id)  # index in this list == offset in the log
        kinds = [c.type for c in chunks]
        first = kinds.index("data-progress")
        notice = kinds.index(names.TOOL_RETRY_NOTICE)
        second = len(kinds) - 1 - kinds[::-1].index("data-progress")
        assert first < notice < second < kinds.index("tool-result")
        assert [c.data["attempt"] for c in chunks if c.type == "data-progress"] == [1, 2]
        expected = {"toolCallId": "c1", "toolName": "slow", "attempt": 2, "discardFrom": first}
        assert chunks[notice].data == expected
        assert kinds.count("tool-result") == 1 and kinds.count("finish") == 1

    await _run(temporal_server, agent, body, toolTimeout=1.5)


async def test_concurrent_tool_calls_each_publish_their_data_once(temporal_server: Any) -> None:
    started: set[str] = set()
    all_started = asyncio.Event()

    @tool
    async def report(job: str, context: ToolContext) -> str:
        """Writes two data chunks, once all three calls run (they run at once, as in one process)."""
        started.add(job)
        if len(started) == 3:
            all_started.set()
        await asyncio.wait_for(all_started.wait(), 10)
        for n in (1, 2):
            await context.writer.custom({"type": "data-progress", "data": {"job": job, "n": n}})
            await asyncio.sleep(0.05)
        return job

    calls = [("c1", "report", {"job": "a"}), ("c2", "report", {"job": "b"}), ("c3", "report", {"job": "c"})]
    local = Agent("concurrent", model=MockModel([tool_call_step(*calls), text_step("ok")]), tools=[report])
    in_process = [c async for c in (await local.stream("hi")).full_stream]
    started.clear()
    all_started.clear()
    agent = Agent("concurrent", model=MockModel([tool_call_step(*calls), text_step("ok")]), tools=[report])

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "hi")
        assert (await runs.result(run_id))["text"] == "ok"
        chunks = await _chunks(runs, agent, run_id)
        data = [(c.data["job"], c.data["n"]) for c in chunks if c.type == "data-progress"]
        expected = [(c.data["job"], c.data["n"]) for c in in_process if c.type == "data-progress"]
        assert sorted(data) == sorted(expected) and len(data) == 6
        kinds = [c.type for c in chunks]
        assert max(i for i, k in enumerate(kinds) if k == "data-progress") < kinds.index("tool-result")
        assert sorted(k for k in kinds if k != "data-progress") == sorted(
            c.type for c in in_process if c.type != "data-progress"
        )

    await _run(temporal_server, agent, body)


class _SlowStream:
    """A model whose stream pauses after its first text until `release` is set."""

    specification_version = "v2"
    provider = "scripted"
    model_id = "slow"

    def __init__(self, release: asyncio.Event) -> None:
        self.release = release

    async def do_stream(self, options: CallOptions) -> StreamResult:
        return StreamResult(self._parts())

    async def _parts(self) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "text-start", "id": "t"}
        yield {"type": "text-delta", "id": "t", "delta": "first "}
        await asyncio.wait_for(self.release.wait(), 10)  # only a live reader can set it
        yield {"type": "text-delta", "id": "t", "delta": "second"}
        yield {"type": "text-end", "id": "t"}
        yield {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 1}}

    async def do_generate(self, options: CallOptions) -> Any:
        raise NotImplementedError


async def test_a_batch_processors_timed_flush_fires_inside_the_model_activity(temporal_server: Any) -> None:
    release = asyncio.Event()
    agent = Agent(
        "batched",
        model=_SlowStream(release),
        output_processors=[BatchPartsProcessor(batch_size=100, max_wait_time=50)],
    )

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "hi")
        out = await runs.observe(agent, run_id)
        texts = []
        async for chunk in out.full_stream:
            if chunk.type == "text-delta":
                texts.append((chunk.payload.text, release.is_set()))
                release.set()
        # The first batch went out on its deadline, while the model stream was still open.
        assert texts == [("first ", False), ("second", True)]
        assert (await runs.result(run_id))["text"] == "first second"

    await _run(temporal_server, agent, body)
