"""`abort_signal`, `ModelOutput.aclose()` / `async with`, and a consumer that stops reading:
the provider call ends at once, the stream says why, nothing half-written is stored."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.errors import AbortError, APICallError, ConfigurationError
from sluicegate.memory import Memory
from sluicegate.models.base import CallOptions, GenerateResult, StreamResult
from sluicegate.processors import Processor
from sluicegate.storage import SQLiteStore
from sluicegate.testing import MockModel, text_step

from .helpers import types


class HangingModel:
    """Streams one text delta, then waits forever (a provider that stalls mid-answer).
    `closed` is set when its stream is closed or cancelled."""

    provider = "test"
    model_id = "hanging"
    specification_version = "v2"

    def __init__(self) -> None:
        self.closed = asyncio.Event()
        self.started = asyncio.Event()
        self.calls = 0

    async def do_stream(self, options: CallOptions) -> StreamResult:
        self.calls += 1
        return StreamResult(stream=self._parts())

    async def _parts(self) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {"type": "text-start", "id": "t"}
            yield {"type": "text-delta", "id": "t", "delta": "Hel"}
            self.started.set()
            await asyncio.Event().wait()
            yield {"type": "text-delta", "id": "t", "delta": "never"}
        finally:
            self.closed.set()

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        raise NotImplementedError


async def _closed_soon(model: HangingModel) -> None:
    await asyncio.wait_for(model.closed.wait(), timeout=2)


async def test_abort_signal_ends_a_hanging_stream_with_an_abort_chunk_and_closes_the_provider():
    model = HangingModel()
    signal = asyncio.Event()
    output = await Agent("a", model=model).stream("hi", abort_signal=signal)

    async def abort_when_started() -> None:
        await model.started.wait()
        signal.set()

    setter = asyncio.create_task(abort_when_started())
    chunks = [c async for c in output.full_stream]
    await setter
    assert types(chunks)[-1] == "abort"
    assert "finish" not in types(chunks)
    assert model.closed.is_set()
    assert await output.finish_reason == "abort"
    assert await output.text == "Hel"
    assert asyncio.current_task().cancelling() == 0  # the consumer's task was not left cancelled


async def test_abort_between_chunks_stops_before_the_next_one():
    signal = asyncio.Event()
    model = MockModel([text_step("one two three", pieces=3)])
    output = await Agent("a", model=model).stream("hi", abort_signal=signal)
    seen: list[str] = []
    async for chunk in output.full_stream:
        seen.append(chunk.type)
        if chunk.type == "text-delta":
            signal.set()
    assert seen[-2:] == ["text-delta", "abort"]
    assert seen.count("text-delta") == 1


async def test_generate_raises_abort_error_and_stores_nothing():
    store = SQLiteStore(":memory:")
    memory = Memory(storage=store)
    model = HangingModel()
    agent = Agent("a", model=model, memory=memory)
    signal = asyncio.Event()

    async def abort_later() -> None:
        await model.started.wait()
        signal.set()

    setter = asyncio.create_task(abort_later())
    with pytest.raises(AbortError):
        await agent.generate("hi", abort_signal=signal, memory={"thread": "t1", "resource": "u1"})
    await setter
    assert model.closed.is_set()
    assert await store.list_messages("t1") == []


async def test_a_signal_set_before_the_call_never_reaches_the_model():
    signal = asyncio.Event()
    signal.set()
    model = MockModel([text_step("never")])
    output = await Agent("a", model=model).stream("hi", abort_signal=signal)
    assert types([c async for c in output.full_stream]) == ["abort"]
    assert model.calls == []


async def test_abort_signal_must_look_like_an_event():
    with pytest.raises(ConfigurationError, match="abort_signal"):
        await Agent("a", model=MockModel([text_step("x")])).generate("hi", abort_signal=True)


async def test_api_error_processors_receive_the_abort_signal():
    seen: list[Any] = []

    class Recorder(Processor):
        id = "recorder"

        def process_api_error(self, args):
            seen.append(args.abort_signal)

    signal = asyncio.Event()
    model = MockModel([APICallError("boom", status_code=500)])
    agent = Agent("a", model=model, error_processors=[Recorder()])
    with pytest.raises(APICallError):
        await agent.generate("hi", abort_signal=signal)
    assert seen == [signal]


async def test_aclose_cancels_the_provider_call_at_once():
    model = HangingModel()
    output = await Agent("a", model=model).stream("hi")
    stream = output.full_stream
    async for chunk in stream:
        if chunk.type == "text-delta":
            break
    await output.aclose()
    assert model.closed.is_set()


async def test_async_with_closes_the_run_on_exit():
    model = HangingModel()
    async with await Agent("a", model=model).stream("hi") as output:
        async for text in output.text_stream:
            assert text == "Hel"
            break
    assert model.closed.is_set()


async def test_breaking_out_of_text_stream_closes_the_provider_call():
    model = HangingModel()
    output = await Agent("a", model=model).stream("hi")
    async for _ in output.text_stream:
        break
    await _closed_soon(model)


async def test_breaking_out_of_full_stream_closes_the_provider_call():
    model = HangingModel()
    output = await Agent("a", model=model).stream("hi")
    async for chunk in output.full_stream:
        if chunk.type == "text-delta":
            break
    await _closed_soon(model)


async def test_aclose_before_reading_never_calls_the_model():
    model = MockModel([text_step("never")])
    output = await Agent("a", model=model).stream("hi")
    await output.aclose()
    assert model.calls == []


async def test_abort_with_a_deadline_processor_waiting_on_the_model():
    from sluicegate.processors import BatchPartsProcessor

    model = HangingModel()
    signal = asyncio.Event()
    agent = Agent("a", model=model, output_processors=[BatchPartsProcessor(batch_size=10, max_wait_time=20)])
    output = await agent.stream("hi", abort_signal=signal)

    async def abort_later() -> None:
        await model.started.wait()
        await asyncio.sleep(0.05)  # the batch flushed on its deadline; the model is still silent
        signal.set()

    setter = asyncio.create_task(abort_later())
    chunks = [c async for c in output.full_stream]
    await setter
    assert types(chunks)[-1] == "abort"
    assert await output.text == "Hel"
    await _closed_soon(model)


async def test_an_abort_while_the_result_is_saved_does_not_cut_the_save_short():
    saved: list[str] = []
    signal = asyncio.Event()

    class SlowSave(Processor):
        id = "slow-save"

        async def process_output_result(self, args):
            signal.set()  # the client goes away while the turn is being written
            await asyncio.sleep(0.01)
            saved.append(args.result.text)

    agent = Agent("a", model=MockModel([text_step("done")]), output_processors=[SlowSave()])
    output = await agent.stream("hi", abort_signal=signal)
    chunks = [c async for c in output.full_stream]
    assert saved == ["done"]
    assert types(chunks)[-1] == "abort"


class _Parked:
    """An await that suspends its coroutine and is never resumed (no event loop involved)."""

    def __await__(self) -> Any:
        yield "parked"


class ParkedModel:
    """Parks the run inside its model call: the loop is suspended mid-step, at an await."""

    provider = "test"
    model_id = "parked"
    specification_version = "v2"

    async def do_stream(self, options: CallOptions) -> StreamResult:
        await _Parked()
        raise AssertionError("never resumed")

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        raise NotImplementedError


def _send(coroutine: Any) -> Any:
    try:
        return coroutine.send(None)
    except StopIteration as stop:
        return stop.value


def test_a_run_closed_while_it_awaits_closes_without_yielding_again(monkeypatch: pytest.MonkeyPatch):
    """A consumer dropped while the loop awaits (a durable workflow's coroutine collected when
    its worker stops) leaves the loop mid-step; when the loop is then closed, the failure its
    inner generators raise while closing is not an ending to stream: the loop yielded its
    `error` chunk into the close ("async generator ignored GeneratorExit")."""
    import gc
    import sys
    from contextlib import aclosing

    unraisable: list[Any] = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    agent = Agent("parked", model=ParkedModel())
    run = _send(agent.prepare_run("go", {}))
    seen: list[str] = []

    async def consume() -> None:
        async with aclosing(run.events()) as events:
            async for chunk in events:
                seen.append(chunk.type)

    consumer = consume()
    assert _send(consumer) == "parked"  # no event loop here: as in a workflow's thread
    assert seen == ["start", "step-start"]
    with pytest.raises(RuntimeError, match="already running"):
        consumer.close()  # the consumer's own aclosing cannot close a generator mid-await
    del consumer
    gc.collect()
    assert [(u.exc_type, str(u.exc_value)) for u in unraisable] == []
    assert seen == ["start", "step-start"]
