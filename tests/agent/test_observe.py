"""Reconnecting with `Agent.observe`: every run's chunks go to the agent's run log as the consumer
gets them, and a client replays them from the offset it had reached and follows the run live;
runs across a suspension keep one offset sequence; only the run's own resource may observe."""

from __future__ import annotations

import asyncio
import gc
import logging
from typing import Any

import pytest

from sluicegate import Agent, RequestContext
from sluicegate.errors import ConfigurationError, InvalidInputError
from sluicegate.models.base import StreamResult
from sluicegate.processors import Processor
from sluicegate.request_context import RESOURCE_ID_KEY
from sluicegate.stream import (
    Chunk,
    InMemoryRunLog,
    OffsetExpiredError,
    OffsetOutOfRangeError,
    RunInfo,
    RunNotFoundError,
    RunStateError,
)
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step
from sluicegate.tools import ToolContext, create_tool

from .helpers import collect, types

SCHEMA = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"]}


def chatty_agent(pieces: int = 6, **kwargs: Any) -> Agent:
    steps = [text_step("one two three four five six", pieces=pieces) for _ in range(3)]
    return Agent("chatty", model=MockModel(steps), **kwargs)


async def observed(agent: Agent, run_id: str, offset: int = 0, **options: Any) -> list[Chunk]:
    output = await agent.observe(run_id=run_id, offset=offset, **options)
    return [chunk async for chunk in output.full_stream]


async def status(agent: Agent, run_id: str) -> RunInfo:
    assert agent.run_log is not None
    return await agent.run_log.info(run_id)


async def closed(agent: Agent, run_id: str) -> RunInfo:
    """The run's entry once closed: a stream dropped mid-run is closed by the event loop's
    async-generator finalizer, a task that runs a loop iteration or two later."""
    for _ in range(50):
        info = await status(agent, run_id)
        if info.status is not None:
            return info
        await asyncio.sleep(0)
    raise AssertionError(f"run {run_id} was never closed in the log")


# ---------------------------------------------------------------------------- replay


async def test_a_finished_run_replays_from_zero_and_from_any_offset():
    agent = chatty_agent()
    output = await agent.stream("hi")
    seen = await collect(output)
    assert types(seen)[0] == "start" and types(seen)[-1] == "finish"

    replay = await observed(agent, output.run_id)
    assert replay == seen
    # Kept by reference, no copy; the model's own text deltas as their text, built back equal.
    kept = [a is b for a, b in zip(replay, seen, strict=True)]
    assert kept == [c.type != "text-delta" for c in seen]
    assert await observed(agent, output.run_id, offset=4) == seen[4:]
    assert await observed(agent, output.run_id, offset=len(seen)) == []
    info = await status(agent, output.run_id)
    assert (info.status, info.next_offset, info.agent_id) == ("finished", len(seen), "chatty")


async def test_observed_text_and_text_stream_cover_the_chunks_from_the_offset():
    agent = chatty_agent()
    output = await agent.stream("hi")
    seen = await collect(output)
    first_delta = types(seen).index("text-delta")
    later = await agent.observe(run_id=output.run_id, offset=first_delta + 2)
    assert later.offset == first_delta + 2 and later.run_id == output.run_id
    rest = "".join(c.payload.text for c in seen[first_delta + 2 :] if c.type == "text-delta")
    assert rest and await later.text == rest
    again = await agent.observe(run_id=output.run_id)
    assert "".join([t async for t in again.text_stream]) == "one two three four five six"
    with pytest.raises(Exception, match="only once"):
        _ = again.full_stream


async def test_generate_runs_are_logged_too_with_processor_data_chunks():
    class Marker(Processor):
        id = "marker"

        async def process_output_stream(self, args: Any) -> Any:
            if args.part.type == "text-delta" and not args.state.get("marked"):
                args.state["marked"] = True
                await args.writer.custom({"type": "data-mark", "data": {"at": args.part.payload.text}})
            return args.part

    agent = chatty_agent(output_processors=[Marker()])
    result = await agent.generate("hi")
    replay = await observed(agent, result.run_id)
    assert "data-mark" in types(replay)
    assert types(replay)[-1] == "finish"
    assert "".join(c.payload.text for c in replay if c.type == "text-delta") == result.text
    assert (await status(agent, result.run_id)).status == "finished"


# ---------------------------------------------------------------------------- live


async def test_an_observer_follows_a_running_run_live_from_where_the_client_was():
    agent = chatty_agent()
    output = await agent.stream("hi")
    stream = output.full_stream
    first = [await stream.__anext__() for _ in range(4)]
    assert (await status(agent, output.run_id)).status is None  # still running

    follower = asyncio.create_task(observed(agent, output.run_id, offset=len(first)))
    await asyncio.sleep(0)
    assert isinstance(agent.run_log, InMemoryRunLog)
    assert agent.run_log.waiting_readers(output.run_id) == 1  # caught up, waiting on the run

    rest = [chunk async for chunk in stream]
    assert await asyncio.wait_for(follower, 5) == rest
    assert types(rest)[-1] == "finish"


async def test_an_observer_started_at_zero_mid_run_sees_the_whole_run():
    agent = chatty_agent()
    output = await agent.stream("hi")
    stream = output.full_stream
    first = [await stream.__anext__() for _ in range(3)]
    follower = asyncio.create_task(observed(agent, output.run_id))
    rest = [chunk async for chunk in stream]
    assert await asyncio.wait_for(follower, 5) == first + rest


class GatedModel(MockModel):
    """Streams one text delta per `release()`, so a test sees what happens between two."""

    def __init__(self, words: list[str]) -> None:
        super().__init__([])
        self.words = words
        self.gate: asyncio.Queue[None] = asyncio.Queue()

    async def do_stream(self, options: Any) -> StreamResult:
        async def parts() -> Any:
            step = text_step("".join(self.words), pieces=1)
            yield step[0]
            yield step[1]
            for word in self.words:
                await self.gate.get()
                yield {"type": "text-delta", "id": "t1", "delta": word}
            for part in step[-2:]:  # text-end, finish
                yield part

        return StreamResult(stream=parts())


async def test_a_waiting_observer_gets_each_text_delta_before_the_model_sends_the_next():
    words = ["one ", "two ", "three"]
    model = GatedModel(words)
    agent = Agent("gated", model=model)
    output = await agent.stream("hi")
    consumer = asyncio.create_task(collect(output))
    observer = (await _observe_when_open(agent, output.run_id)).full_stream
    while (await asyncio.wait_for(observer.__anext__(), 5)).type != "text-start":
        pass
    assert isinstance(agent.run_log, InMemoryRunLog)
    for word in words:
        reading = asyncio.ensure_future(observer.__anext__())
        for _ in range(100):  # caught up: waiting for the model's next chunk
            if agent.run_log.waiting_readers(output.run_id) == 1:
                break
            await asyncio.sleep(0)
        assert agent.run_log.waiting_readers(output.run_id) == 1 and not reading.done()
        model.gate.put_nowait(None)  # the model sends one delta, then waits for the test again
        chunk = await asyncio.wait_for(reading, 5)
        assert (chunk.type, chunk.payload.text, chunk.payload.id) == ("text-delta", word, "t1")
    seen = await asyncio.wait_for(consumer, 5)
    assert [chunk async for chunk in observer] == seen[seen.index(chunk) + 1 :]


async def test_every_offset_replays_the_same_chunks_the_consumer_got():
    agent = chatty_agent(pieces=6)
    output = await agent.stream("hi")
    seen = await collect(output)
    assert types(seen).count("text-delta") == 6
    for offset in range(len(seen) + 1):
        replay = await observed(agent, output.run_id, offset=offset)
        assert [c.to_dict() for c in replay] == [c.to_dict() for c in seen[offset:]]


async def test_the_log_holds_no_chunk_object_per_model_text_delta():
    """A run's text deltas are kept as their text: the chunks the consumer let go are freed
    (a chunk object per token, held until the ring wraps, is what the collector walked)."""
    agent = Agent("long", model=MockModel([text_step("x" * 500, pieces=500)]))
    output = await agent.stream("hi")
    deltas = total = 0
    async for chunk in output.full_stream:
        deltas += chunk.type == "text-delta"
        total += 1
    del chunk
    gc.collect()
    alive = sum(1 for o in gc.get_objects() if type(o) is Chunk and o.type == "text-delta")
    assert deltas == 500 and alive < 5
    assert (await status(agent, output.run_id)).next_offset == total


async def _observe_when_open(agent: Agent, run_id: str) -> Any:
    for _ in range(1000):
        try:
            return await agent.observe(run_id=run_id)
        except RunNotFoundError:
            await asyncio.sleep(0)
    raise AssertionError(f"run {run_id} never opened in the log")


async def test_a_run_is_observable_from_its_first_chunk_not_before():
    agent = chatty_agent()
    output = await agent.stream("hi")
    with pytest.raises(RunNotFoundError):  # nothing ran yet: a stream never read starts no run
        await agent.observe(run_id=output.run_id)
    stream = output.full_stream
    start = await stream.__anext__()
    assert await (await agent.observe(run_id=output.run_id)).full_stream.__anext__() is start
    await stream.aclose()


# ---------------------------------------------------------------------------- suspension


def approval_agent(calls: list[str], **kwargs: Any) -> Agent:
    async def execute(input: Any, context: ToolContext) -> Any:
        calls.append(input["id"])
        return {"deleted": input["id"]}

    delete = create_tool(id="delete", input_schema=SCHEMA, execute=execute, require_approval=True)
    model = MockModel([tool_call_step(("c1", "delete", {"id": "r1"})), text_step("Deleted r1.", pieces=3)])
    return Agent("admin", model=model, tools=[delete], **kwargs)


async def test_a_suspended_then_approved_run_keeps_one_offset_sequence():
    calls: list[str] = []
    context = RequestContext({RESOURCE_ID_KEY: "user-1"})
    agent = approval_agent(calls)
    first = await agent.stream("delete r1", request_context=context)
    asked = await collect(first)
    assert types(asked)[-1] == "tool-call-approval"
    info = await status(agent, first.run_id)
    assert (info.status, info.next_offset, info.resource_id) == ("suspended", len(asked), "user-1")
    # A client that reconnects while the run waits replays up to the question, and the read ends.
    assert await observed(agent, first.run_id, request_context=context) == asked

    resumed = await agent.approve_tool_call(run_id=first.run_id, request_context=context)
    stream = resumed.full_stream
    opening = await stream.__anext__()
    # Followed live across the suspension: from the offset the client had when the run suspended.
    follower = asyncio.create_task(observed(agent, first.run_id, offset=len(asked), request_context=context))
    rest = [chunk async for chunk in stream]
    assert await asyncio.wait_for(follower, 5) == [opening, *rest]
    assert calls == ["r1"] and types(rest)[-1] == "finish"

    whole = await observed(agent, first.run_id, request_context=context)
    assert whole == [*asked, opening, *rest]
    info = await status(agent, first.run_id)
    assert (info.status, info.next_offset) == ("finished", len(whole))


async def test_a_resumed_run_that_fails_before_its_decision_stays_suspended_and_reopens(
    monkeypatch: pytest.MonkeyPatch,
):
    from sluicegate.agent import run_loop

    calls: list[str] = []
    agent = approval_agent(calls)
    first = await agent.generate("delete r1")
    asked = await observed(agent, first.run_id)
    real = run_loop.continue_step

    def broken(*args: Any) -> Any:
        raise RuntimeError("lost before deciding")

    monkeypatch.setattr(run_loop, "continue_step", broken)
    failed = await collect(await agent.approve_tool_call(run_id=first.run_id))
    assert types(failed) == ["error"] and calls == []
    # The claim went back, so the stored run is suspended still; so is its log entry, which the
    # next approval reopens (an entry closed "error" could not be).
    assert (await status(agent, first.run_id)).status == "suspended"
    monkeypatch.setattr(run_loop, "continue_step", real)
    after = await collect(await agent.approve_tool_call(run_id=first.run_id))
    assert calls == ["r1"] and types(after)[-1] == "finish"
    assert await observed(agent, first.run_id) == [*asked, *failed, *after]


async def test_a_resumed_stream_stopped_after_its_decision_ran_is_aborted():
    calls: list[str] = []
    agent = approval_agent(calls)
    first = await agent.generate("delete r1")
    resumed = await agent.approve_tool_call(run_id=first.run_id)
    stream = resumed.full_stream
    async for chunk in stream:
        if chunk.type == "tool-result":
            break
    await resumed.aclose()
    assert calls == ["r1"]
    assert (await closed(agent, first.run_id)).status == "aborted"


# ---------------------------------------------------------------------------- ownership and errors


async def test_only_the_runs_own_resource_may_observe_it():
    agent = chatty_agent()
    mine = RequestContext({RESOURCE_ID_KEY: "user-1"})
    result = await agent.generate("hi", request_context=mine)
    assert await observed(agent, result.run_id, request_context=mine)
    for other in (RequestContext({RESOURCE_ID_KEY: "user-2"}), RequestContext(), None):
        with pytest.raises(RunNotFoundError) as refused:
            await agent.observe(run_id=result.run_id, request_context=other)
        with pytest.raises(RunNotFoundError) as unknown:
            await agent.observe(run_id="no-such-run", request_context=other)
        assert str(refused.value) == str(unknown.value).replace("no-such-run", result.run_id)

    anonymous = await agent.generate("hi")  # started without a resource: only callers with none
    assert await observed(agent, anonymous.run_id)
    with pytest.raises(RunNotFoundError):
        await agent.observe(run_id=anonymous.run_id, request_context=mine)


async def test_another_agent_on_the_same_log_cannot_observe_the_run():
    shared = InMemoryRunLog()
    writer_agent = chatty_agent(run_log=shared)
    result = await writer_agent.generate("hi")
    twin = Agent("chatty", model=MockModel([]), run_log=shared)  # same id: it may
    assert await observed(twin, result.run_id)
    stranger = Agent("other", model=MockModel([]), run_log=shared)
    with pytest.raises(RunNotFoundError):
        await stranger.observe(run_id=result.run_id)
    separate = chatty_agent()  # its own default log: it never saw the run
    with pytest.raises(RunNotFoundError):
        await separate.observe(run_id=result.run_id)


async def test_offsets_the_log_cannot_serve_are_typed_errors_at_the_call():
    agent = chatty_agent(pieces=12, run_log=InMemoryRunLog(max_chunks=5))
    result = await agent.generate("hi")
    info = await status(agent, result.run_id)
    assert info.first_offset == info.next_offset - 5
    with pytest.raises(OffsetExpiredError) as expired:
        await agent.observe(run_id=result.run_id, offset=0)
    assert expired.value.first_offset == info.first_offset
    assert len(await observed(agent, result.run_id, offset=info.first_offset)) == 5
    with pytest.raises(OffsetOutOfRangeError) as past:
        await agent.observe(run_id=result.run_id, offset=info.next_offset + 1)
    assert past.value.end == info.next_offset
    for bad in (-1, "3", 1.0, True, None):
        with pytest.raises(InvalidInputError, match="offset"):
            await agent.observe(run_id=result.run_id, offset=bad)
    for bad_id in ("", 7, "x" * 1025):
        with pytest.raises(InvalidInputError, match="run_id"):
            await agent.observe(run_id=bad_id)
    with pytest.raises(TypeError, match="unknown option"):
        await agent.observe(run_id=result.run_id, resource_id="user-1")


# ---------------------------------------------------------------------------- how runs close


async def test_a_consumer_that_stops_reading_closes_the_run_as_aborted():
    agent = chatty_agent()
    output = await agent.stream("hi")
    async for chunk in output.full_stream:
        if chunk.type == "text-delta":
            break
    await output.aclose()
    info = await closed(agent, output.run_id)
    assert info.status == "aborted"
    replay = await observed(agent, output.run_id)
    assert types(replay)[-1] == "text-delta" and len(replay) == info.next_offset


async def test_a_dropped_stream_is_closed_as_aborted_by_its_finalizer():
    agent = chatty_agent()
    output = await agent.stream("hi")
    stream = output.full_stream
    await stream.__anext__()
    assert (await status(agent, output.run_id)).status is None
    del stream  # the generator is collected; the event loop's finalizer closes it
    assert (await closed(agent, output.run_id)).status == "aborted"


async def test_a_cancelled_consumer_closes_the_run_as_aborted_and_an_observer_ends():
    gate = asyncio.Event()

    async def slow(input: Any, context: ToolContext) -> Any:
        await gate.wait()
        return {}

    tool = create_tool(id="slow", input_schema=SCHEMA, execute=slow)
    agent = Agent("a", model=MockModel([tool_call_step(("c1", "slow", {"id": "x"}))]), tools=[tool])
    output = await agent.stream("go")
    consumer = asyncio.create_task(collect(output))
    await asyncio.sleep(0.05)
    follower = asyncio.create_task(observed(agent, output.run_id))
    await asyncio.sleep(0.01)
    consumer.cancel()
    with pytest.raises(asyncio.CancelledError):
        await consumer
    replay = await asyncio.wait_for(follower, 5)  # the observer ends with the run
    assert types(replay)[-1] == "tool-call"
    assert (await status(agent, output.run_id)).status == "aborted"


async def test_an_abort_signal_logs_the_abort_chunk_and_closes_as_aborted():
    signal = asyncio.Event()
    agent = chatty_agent()
    output = await agent.stream("hi", abort_signal=signal)
    seen = []
    async for chunk in output.full_stream:
        seen.append(chunk)
        if chunk.type == "text-delta":
            signal.set()
    assert types(seen)[-1] == "abort"
    assert await observed(agent, output.run_id) == seen
    assert (await status(agent, output.run_id)).status == "aborted"


async def test_a_consumer_that_stops_after_the_finish_chunk_leaves_a_finished_run():
    agent = chatty_agent()
    output = await agent.stream("hi")
    async for chunk in output.full_stream:
        if chunk.type == "finish":
            break
    await output.aclose()
    assert (await closed(agent, output.run_id)).status == "finished"


async def test_an_unrecovered_model_error_closes_the_run_as_error():
    agent = Agent("a", model=MockModel([ValueError("model broke")]), max_retries=0)
    output = await agent.stream("hi")
    seen = await collect(output)
    assert "error" in types(seen)
    assert await observed(agent, output.run_id) == seen
    assert (await status(agent, output.run_id)).status == "error"


async def test_a_tripwire_ends_the_run_as_finished_with_the_tripwire_chunk_logged():
    class Block(Processor):
        id = "block"

        async def process_input(self, args: Any) -> Any:
            args.abort("not allowed")

    agent = chatty_agent(input_processors=[Block()])
    result = await agent.generate("hi")
    replay = await observed(agent, result.run_id)
    assert types(replay)[-1] == "tripwire"
    assert (await status(agent, result.run_id)).status == "finished"


# ---------------------------------------------------------------------------- the option


async def test_run_log_none_keeps_no_log_and_observe_says_so():
    agent = chatty_agent(run_log=None)
    assert agent.run_log is None
    result = await agent.generate("hi")
    assert result.text == "one two three four five six"
    with pytest.raises(ConfigurationError, match="run_log=None"):
        await agent.observe(run_id=result.run_id)


def test_the_default_log_is_made_on_first_use_one_per_agent():
    agent = chatty_agent()
    assert agent._run_log is None  # nothing made at construction
    log = agent.run_log
    assert isinstance(log, InMemoryRunLog) and agent.run_log is log
    assert chatty_agent().run_log is not log


@pytest.mark.parametrize("bad", [False, True, "memory", {}, object()])
def test_a_run_log_option_that_is_not_a_log_is_refused(bad: Any):
    with pytest.raises(ConfigurationError, match="run_log"):
        chatty_agent(run_log=bad)


class BrokenLog(InMemoryRunLog):
    def __init__(self, fail: str) -> None:
        super().__init__()
        self.fail = fail

    async def open(self, run_id: str, **kwargs: Any) -> Any:
        if self.fail == "open":
            raise RuntimeError("log down")
        writer = await super().open(run_id, **kwargs)
        if self.fail == "append":

            def append(chunk: Chunk) -> None:
                raise RuntimeError("log full")

            writer.append = append  # type: ignore[method-assign]
        return writer


@pytest.mark.parametrize("fail", ["open", "append"])
async def test_a_failing_log_never_breaks_the_run(fail: str, caplog: pytest.LogCaptureFixture):
    agent = chatty_agent(run_log=BrokenLog(fail))
    with caplog.at_level(logging.WARNING, logger="sluicegate.run_log"):
        output = await agent.stream("hi")
        seen = await collect(output)
    assert types(seen)[-1] == "finish" and await output.text == "one two three four five six"
    assert "run log" in caplog.text


class SinkFailingWriter:
    """An in-process writer whose text sink cannot be had (`text_sink`) or fails on its first
    text (`begin`)."""

    def __init__(self, inner: Any, fail: str) -> None:
        self.inner, self.fail = inner, fail
        self.run_id, self.append = inner.run_id, inner.append

    async def close(self, status: Any) -> None:
        await self.inner.close(status)

    def text_sink(self, run_id: str) -> Any:
        if self.fail == "text_sink":
            raise RuntimeError("no sink")
        return BrokenSink(self.inner.text_sink(run_id))


class BrokenSink:
    def __init__(self, sink: Any) -> None:
        self.put, self.waiters, self.text_id, self.wake = sink.put, sink.waiters, None, sink.wake

    def begin(self, text_id: str) -> None:
        raise RuntimeError("sink down")


@pytest.mark.parametrize("fail", ["text_sink", "begin"])
async def test_a_failing_text_sink_never_breaks_the_run(fail: str, caplog: pytest.LogCaptureFixture):
    class Log(InMemoryRunLog):
        async def open(self, run_id: str, **kwargs: Any) -> Any:
            return SinkFailingWriter(await super().open(run_id, **kwargs), fail)

    agent = chatty_agent(run_log=Log())
    with caplog.at_level(logging.WARNING, logger="sluicegate.run_log"):
        output = await agent.stream("hi")
        seen = await collect(output)
    assert types(seen)[-1] == "finish" and await output.text == "one two three four five six"
    assert "appending to the run log failed" in caplog.text
    logged = types(await observed(agent, output.run_id))
    assert "text-delta" not in logged and logged == types(seen)[: len(logged)]  # stopped there


async def test_a_run_id_open_in_the_log_is_not_taken_over():
    shared = InMemoryRunLog()
    agent = chatty_agent(run_log=shared)
    output = await agent.stream("hi")
    await shared.open(output.run_id, agent_id="someone-else")  # the id is taken, and running
    seen = await collect(output)  # the run goes on, unlogged
    assert types(seen)[-1] == "finish"
    info = await shared.info(output.run_id)
    assert (info.agent_id, info.next_offset) == ("someone-else", 0)
    with pytest.raises(RunStateError):
        await shared.open(output.run_id, agent_id="chatty")


async def test_closing_the_stream_closes_the_run_and_its_entry_at_once():
    closed_provider: list[bool] = []

    async def parts() -> Any:
        try:
            for part in text_step("one two three", pieces=3):
                yield part
        finally:
            closed_provider.append(True)

    class Model(MockModel):
        async def do_stream(self, options: Any) -> StreamResult:
            return StreamResult(stream=parts())

    agent = Agent("a", model=Model())
    output = await agent.stream("hi")
    stream = output.full_stream
    async for chunk in stream:
        if chunk.type == "text-delta":
            break
    await stream.aclose()
    assert closed_provider == [True]  # the provider stream is closed by the time aclose returns
    assert (await status(agent, output.run_id)).status == "aborted"


def test_an_agents_own_log_is_bounded_for_memory() -> None:
    """The default log keeps at most 200 runs of 4,000 chunks (about 190 MB at ~230 bytes a
    chunk), so a busy server's memory stays bounded without configuration."""
    from sluicegate.testing import MockModel

    log = Agent("bounded", model=MockModel([])).run_log
    assert log is not None
    assert (log.max_runs, log.max_chunks) == (200, 4_000)  # type: ignore[attr-defined]
