"""The run log's contract, on both backends (`InMemoryRunLog`, and `RedisRunLog` on a real
`redis-server`), then what is particular to each: the in-process bounds, retention and reader
cleanup; Redis across two instances, and Redis going away mid-run."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from sluicegate.stream import (
    Chunk,
    InMemoryRunLog,
    OffsetExpiredError,
    OffsetOutOfRangeError,
    Payload,
    RedisRunLog,
    RunLog,
    RunLogUnavailableError,
    RunNotFoundError,
    RunStateError,
    text_delta,
)
from sluicegate.stream.chunk import tag_run_id

from .redis_server import RedisServer


def delta(i: int, run_id: str = "run-1") -> Chunk[Any]:
    return text_delta(run_id, "t1", f"w{i}")


def texts(chunks: list[Chunk[Any]]) -> list[str]:
    return [c.payload.text for c in chunks]


async def collect(log: RunLog, run_id: str, offset: int = 0) -> list[Chunk[Any]]:
    return [c async for c in log.read(run_id, offset)]


@pytest.fixture(params=["memory", "redis"])
async def log(request: pytest.FixtureRequest) -> AsyncIterator[RunLog]:
    if request.param == "memory":
        yield InMemoryRunLog()
        return
    server: RedisServer = request.getfixturevalue("redis_server")
    made = RedisRunLog(url=server.url, prefix=f"test:{uuid.uuid4().hex}:", block=0.2)
    try:
        yield made
    finally:
        await made.aclose()


# -- the contract, on both backends ---------------------------------------------------------------


async def test_replays_a_closed_run_from_zero_and_from_an_offset(log: RunLog) -> None:
    writer = await log.open("run-1", agent_id="a")
    for i in range(5):
        writer.append(delta(i))
    await writer.close("finished")
    assert texts(await collect(log, "run-1")) == ["w0", "w1", "w2", "w3", "w4"]
    assert texts(await collect(log, "run-1", 3)) == ["w3", "w4"]
    assert await collect(log, "run-1", 5) == []


async def test_chunks_come_back_equal(log: RunLog) -> None:
    chunks: list[Chunk[Any]] = [
        Chunk("start", "run-1"),
        delta(0),
        Chunk("data-progress", "run-1", data={"pct": 50}),
    ]
    writer = await log.open("run-1", agent_id="a")
    for chunk in chunks:
        writer.append(chunk)
    await writer.close("finished")
    assert await collect(log, "run-1") == chunks


async def test_a_reader_follows_the_run_live_until_it_closes(log: RunLog) -> None:
    writer = await log.open("run-1", agent_id="a")
    writer.append(delta(0))
    seen: list[str] = []
    got_one, got_two = asyncio.Event(), asyncio.Event()

    async def read() -> None:
        async for chunk in log.read("run-1"):
            seen.append(chunk.payload.text)
            (got_one if len(seen) == 1 else got_two).set()

    reader = asyncio.create_task(read())
    await asyncio.wait_for(got_one.wait(), 5)  # not a fixed sleep: a busy machine may be slower
    assert seen == ["w0"] and not reader.done()
    writer.append(delta(1))
    await asyncio.wait_for(got_two.wait(), 5)
    writer.append(delta(2))
    await writer.close("finished")
    await asyncio.wait_for(reader, 5)
    assert seen == ["w0", "w1", "w2"]


async def test_concurrent_readers_each_get_every_chunk(log: RunLog) -> None:
    writer = await log.open("run-1", agent_id="a")
    readers = [asyncio.create_task(collect(log, "run-1", start)) for start in (0, 0, 2)]
    for i in range(50):
        writer.append(delta(i))
        if i % 7 == 0:
            await asyncio.sleep(0)
    await writer.close("finished")
    results = await asyncio.wait_for(asyncio.gather(*readers), 10)
    assert texts(results[0]) == [f"w{i}" for i in range(50)]
    assert texts(results[1]) == texts(results[0])
    assert texts(results[2]) == texts(results[0])[2:]


async def test_an_offset_past_the_end_of_a_live_run_waits_for_it(log: RunLog) -> None:
    writer = await log.open("run-1", agent_id="a")
    writer.append(delta(0))
    reader = asyncio.create_task(collect(log, "run-1", 2))
    await asyncio.sleep(0.05)
    assert not reader.done()
    writer.append(delta(1))
    writer.append(delta(2))
    await writer.close("finished")
    assert texts(await asyncio.wait_for(reader, 5)) == ["w2"]


async def test_an_offset_past_the_end_of_a_closed_run_is_refused(log: RunLog) -> None:
    writer = await log.open("run-1", agent_id="a")
    writer.append(delta(0))
    await writer.close("finished")
    with pytest.raises(OffsetOutOfRangeError) as caught:
        await collect(log, "run-1", 2)
    assert (caught.value.offset, caught.value.end) == (2, 1)


async def test_unknown_run_and_bad_offsets_are_typed_errors(log: RunLog) -> None:
    with pytest.raises(RunNotFoundError) as caught:
        await collect(log, "nope")
    assert caught.value.run_id == "nope"
    with pytest.raises(RunNotFoundError):
        await log.info("nope")
    writer = await log.open("run-1", agent_id="a")
    await writer.close("finished")
    for bad in (-1, True, 1.5, "0"):
        with pytest.raises(ValueError, match="offset"):
            await collect(log, "run-1", bad)  # type: ignore[arg-type]


async def test_info_names_the_owner_and_the_offsets(log: RunLog) -> None:
    writer = await log.open("run-1", agent_id="support", resource_id="user-1", thread_id="t-9")
    writer.append(delta(0))
    writer.append(delta(1))
    await writer.close("suspended")
    info = await log.info("run-1")
    assert (info.agent_id, info.resource_id, info.thread_id) == ("support", "user-1", "t-9")
    assert (info.status, info.first_offset, info.next_offset) == ("suspended", 0, 2)


async def test_a_suspended_run_reopens_and_continues_its_offsets(log: RunLog) -> None:
    writer = await log.open("run-1", agent_id="a", resource_id="r")
    writer.append(delta(0))
    await writer.close("suspended")
    assert texts(await collect(log, "run-1")) == ["w0"]
    with pytest.raises(RunStateError, match="belongs to"):
        await log.open("run-1", agent_id="other", resource_id="r")
    resumed = await log.open("run-1", agent_id="a", resource_id="r")
    resumed.append(delta(1))
    await resumed.close("finished")
    assert texts(await collect(log, "run-1")) == ["w0", "w1"]
    assert texts(await collect(log, "run-1", 1)) == ["w1"]
    with pytest.raises(RunStateError, match="ended"):
        await log.open("run-1", agent_id="a", resource_id="r")


async def test_a_reader_at_the_suspension_follows_a_run_reopened_before_its_next_chunk(log: RunLog) -> None:
    """Resuming reopens the run before its first new chunk: a reader joining then, at the
    offset the suspension closed at, waits for that chunk instead of ending at the old close
    (a durable run's decision answers that offset to its client)."""
    writer = await log.open("run-1", agent_id="a")
    writer.append(delta(0))
    await writer.close("suspended")
    resumed = await log.open("run-1", agent_id="a")
    reader = asyncio.ensure_future(collect(log, "run-1", 1))
    await asyncio.sleep(0.3)  # the reader has met the close and must still be waiting
    assert not reader.done()
    resumed.append(delta(1))
    await resumed.close("finished")
    assert texts(await asyncio.wait_for(reader, 5)) == ["w1"]


async def test_writer_state_rules(log: RunLog) -> None:
    writer = await log.open("run-1", agent_id="a")
    with pytest.raises(RunStateError, match="already open"):
        await log.open("run-1", agent_id="a")
    with pytest.raises(ValueError, match="status"):
        await writer.close("done")  # type: ignore[arg-type]
    await writer.close("aborted")
    await writer.close("aborted")  # closing twice is a no-op
    with pytest.raises(RunStateError, match="closed"):
        writer.append(delta(0))
    for bad in ("", None):
        with pytest.raises(ValueError, match="run_id"):
            await log.open(bad, agent_id="a")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="agent_id"):
        await log.open("run-2", agent_id="")


# -- in-process particulars -----------------------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_memory_keeps_the_newest_chunks_and_names_the_first_held_offset() -> None:
    log = InMemoryRunLog(max_chunks=4)
    writer = await log.open("run-1", agent_id="a")
    for i in range(10):
        writer.append(delta(i))
    await writer.close("finished")
    with pytest.raises(OffsetExpiredError) as caught:
        await collect(log, "run-1", 5)
    assert (caught.value.offset, caught.value.first_offset) == (5, 6)
    assert texts(await collect(log, "run-1", 6)) == ["w6", "w7", "w8", "w9"]
    assert (await log.info("run-1")).first_offset == 6


async def test_memory_a_reader_lapped_by_the_writer_gets_offset_expired() -> None:
    log = InMemoryRunLog(max_chunks=3)
    writer = await log.open("run-1", agent_id="a")
    for i in range(3):
        writer.append(delta(i))
    reader = log.read("run-1")
    assert (await anext(reader)).payload.text == "w0"
    for i in range(3, 8):  # the writer is never held back by the slow reader
        writer.append(delta(i))
    with pytest.raises(OffsetExpiredError) as caught:
        await anext(reader)
    assert caught.value.first_offset == 5


async def test_memory_forgets_closed_runs_after_their_retention() -> None:
    clock = Clock()
    log = InMemoryRunLog(retention=60, clock=clock)
    writer = await log.open("run-1", agent_id="a")
    writer.append(delta(0))
    clock.now += 3600  # an open run is kept however long it runs
    assert (await log.info("run-1")).status is None
    await writer.close("finished")
    clock.now += 59
    assert texts(await collect(log, "run-1")) == ["w0"]
    clock.now += 1
    with pytest.raises(RunNotFoundError):
        await collect(log, "run-1")
    assert len(log) == 0


async def test_memory_evicts_the_longest_closed_runs_first_then_the_oldest_open() -> None:
    log = InMemoryRunLog(max_runs=2)
    first = await log.open("open-1", agent_id="a")
    closed = await log.open("closed-1", agent_id="a")
    await closed.close("finished")
    await log.open("open-2", agent_id="a")  # over the bound: the closed run goes
    with pytest.raises(RunNotFoundError):
        await log.info("closed-1")
    await log.open("open-3", agent_id="a")  # no closed run left: the oldest open one goes
    with pytest.raises(RunNotFoundError):
        await log.info("open-1")
    first.append(delta(0))  # its writer keeps streaming without error
    assert len(log) == 2


async def test_memory_a_reader_that_joined_keeps_reading_a_run_forgotten_meanwhile() -> None:
    clock = Clock()
    log = InMemoryRunLog(retention=1, clock=clock)
    writer = await log.open("run-1", agent_id="a")
    for i in range(3):
        writer.append(delta(i))
    await writer.close("finished")
    reader = log.read("run-1")
    assert (await anext(reader)).payload.text == "w0"
    clock.now += 5
    assert texts([c async for c in reader]) == ["w1", "w2"]


async def test_memory_cancelled_readers_leave_nothing_behind() -> None:
    log = InMemoryRunLog()
    writer = await log.open("run-1", agent_id="a")
    readers = [asyncio.create_task(collect(log, "run-1")) for _ in range(3)]
    await asyncio.sleep(0.01)
    assert log.waiting_readers("run-1") == 3
    readers[0].cancel()
    readers[1].cancel()
    await asyncio.gather(*readers[:2], return_exceptions=True)
    assert log.waiting_readers("run-1") == 1
    writer.append(delta(0))
    await writer.close("finished")
    assert texts(await readers[2]) == ["w0"]
    assert log.waiting_readers("run-1") == 0


async def test_memory_append_without_readers_allocates_no_waiter() -> None:
    log = InMemoryRunLog()
    writer = await log.open("run-1", agent_id="a")
    run = log._runs["run-1"]
    for i in range(100):
        writer.append(delta(i))
    assert run.waiters == [] and len(run.held) == 100


async def test_memory_text_sink_texts_read_back_as_their_chunks_at_their_offsets() -> None:
    log = InMemoryRunLog()
    writer = await log.open("run-1", agent_id="a")
    traced = tag_run_id("run-1", {"traceId": "t-1"})
    sink = writer.text_sink(traced)
    writer.append(Chunk("text-start", "run-1", Payload(id="t1")))
    sink.begin("t1")
    sink.put("a")
    sink.put("b")
    writer.append(delta(9))  # a chunk between two texts of the same text
    sink.put("c")
    sink.begin("t2")
    sink.put("d")
    await writer.close("finished")
    expected = [
        Chunk("text-start", "run-1", Payload(id="t1")),
        text_delta(traced, "t1", "a"),
        text_delta(traced, "t1", "b"),
        delta(9),
        text_delta(traced, "t1", "c"),
        text_delta(traced, "t2", "d"),
    ]
    got = await collect(log, "run-1")
    assert [c.to_dict() for c in got] == [c.to_dict() for c in expected]
    assert got[1].metadata == {"traceId": "t-1"}
    for offset in range(len(expected)):
        assert await collect(log, "run-1", offset) == expected[offset:]
    assert (await log.info("run-1")).next_offset == 6


async def test_memory_text_sink_texts_follow_the_bound_and_keep_their_text_id() -> None:
    log = InMemoryRunLog(max_chunks=3)
    writer = await log.open("run-1", agent_id="a")
    sink = writer.text_sink("run-1")
    sink.begin("t1")
    for i in range(10):
        sink.put(f"w{i}")
    info = await log.info("run-1")
    assert (info.first_offset, info.next_offset) == (7, 10)  # exact before any trim
    with pytest.raises(OffsetExpiredError) as expired:
        await anext(log.read("run-1", 5))
    assert expired.value.first_offset == 7
    writer.append(delta(10))
    sink.begin("t2")
    sink.put("x")
    await writer.close("finished")  # trims to the bound; the mark of t1 (offset 0) stays for w9
    run = log._runs["run-1"]
    assert len(run.held) == 3 and run.mark_offsets == [0, 11]
    got = await collect(log, "run-1", 9)
    assert [(c.payload.id, c.payload.text) for c in got] == [("t1", "w9"), ("t1", "w10"), ("t2", "x")]


async def test_memory_text_sink_a_text_id_per_delta_keeps_each_id_and_few_marks() -> None:
    log = InMemoryRunLog(max_chunks=50)
    writer = await log.open("run-1", agent_id="a")
    sink = writer.text_sink("run-1")
    for i in range(1000):  # a new text id on every delta: a mark each, let go with its text
        sink.begin(f"t{i}")
        sink.put(f"w{i}")
    run = log._runs["run-1"]
    assert len(run.held) <= run.limit + 1 and len(run.marks) == len(run.mark_offsets) <= run.limit + 1
    await writer.close("finished")
    got = await collect(log, "run-1", 950)
    assert [(c.payload.id, c.payload.text) for c in got] == [(f"t{i}", f"w{i}") for i in range(950, 1000)]
    assert len(run.marks) == 50


async def test_memory_text_sink_wakes_a_waiting_reader_and_takes_nothing_after_close() -> None:
    log = InMemoryRunLog()
    writer = await log.open("run-1", agent_id="a")
    sink = writer.text_sink("run-1")
    reader = log.read("run-1")
    reading = asyncio.ensure_future(anext(reader))
    await asyncio.sleep(0)
    assert log.waiting_readers("run-1") == 1 and sink.waiters
    sink.begin("t1")
    sink.put("a")
    sink.wake()
    assert texts([await asyncio.wait_for(reading, 1)]) == ["a"]
    await writer.close("finished")
    sink.put("late")  # after the close: not kept
    with pytest.raises(RunStateError):
        sink.begin("t2")
    with pytest.raises(RunStateError):
        writer.text_sink("run-1")
    assert [c async for c in reader] == []
    assert (await log.info("run-1")).next_offset == 1


async def test_memory_encoded_chunks_read_back_as_their_chunks_among_texts_and_chunks() -> None:
    """A durable run's chunks arrive as JSON: kept as such, decoded when read."""
    log = InMemoryRunLog(max_chunks=4)
    writer = await log.open("run-1", agent_id="a")
    sink = writer.text_sink("run-1")
    traced = tag_run_id("run-1", {"traceId": "t-1"})
    step = Chunk("step-finish", traced, Payload(output=Payload(text="ab"), step_result={"reason": "stop"}))
    writer.append_encoded(json.dumps(Chunk("start", "run-1", Payload(id="a")).to_dict()))
    assert writer.next_offset == 1
    sink.begin("t1")
    sink.put("a")
    writer.append_encoded(json.dumps(step.to_dict()))  # between two texts of the same text
    sink.put("b")
    writer.append(delta(9))
    reader = log.read("run-1", 1)
    got = [await anext(reader) for _ in range(4)]
    assert [c.to_dict() for c in got[:4]] == [
        text_delta("run-1", "t1", "a").to_dict(),
        step.to_dict(),
        text_delta("run-1", "t1", "b").to_dict(),
        delta(9).to_dict(),
    ]
    assert got[1].metadata == {"traceId": "t-1"} and got[1].payload.output.text == "ab"
    for _ in range(3):  # past the bound: encoded chunks are trimmed like any entry
        writer.append_encoded(json.dumps(delta(0).to_dict()))
    assert (await log.info("run-1")).first_offset == 4 and writer.next_offset == 8
    await writer.close("finished")
    with pytest.raises(RunStateError):
        writer.append_encoded(json.dumps(delta(1).to_dict()))
    assert texts(await collect(log, "run-1", 4)) == ["w9", "w0", "w0", "w0"]


async def test_memory_an_encoded_chunk_wakes_a_waiting_reader() -> None:
    log = InMemoryRunLog()
    writer = await log.open("run-1", agent_id="a")
    reading = asyncio.ensure_future(anext(log.read("run-1")))
    await asyncio.sleep(0)
    writer.append_encoded(json.dumps(delta(3).to_dict()))
    assert (await asyncio.wait_for(reading, 1)) == delta(3)


async def test_memory_encoded_chunks_read_back_equal_and_hold_no_object_tree() -> None:
    log = InMemoryRunLog(max_chunks=4)
    writer = await log.open("run-1", agent_id="a")
    step = Chunk("step-finish", "run-1", Payload(output=Payload(steps=[{"content": [{"type": "text"}]}] * 3)))
    reader = log.read("run-1")
    reading = asyncio.ensure_future(anext(reader))
    await asyncio.sleep(0)
    writer.append_encoded(json.dumps(step.to_dict()))  # wakes the waiting reader, as `append` does
    assert (await asyncio.wait_for(reading, 1)).to_dict() == step.to_dict()
    writer.append(delta(1))
    writer.append_encoded(json.dumps(delta(2).to_dict()))
    held = log._runs["run-1"].held
    assert not gc.is_tracked(held[0])  # one string for the collector, not a tree of dicts
    assert [c.to_dict() for c in await collect_open(log, "run-1", 1, 2)] == [
        delta(1).to_dict(),
        delta(2).to_dict(),
    ]
    for i in range(3, 8):
        writer.append_encoded(json.dumps(delta(i).to_dict()))
    with pytest.raises(OffsetExpiredError):
        await anext(log.read("run-1", 0))
    await writer.close("finished")
    with pytest.raises(RunStateError):
        writer.append_encoded(json.dumps(delta(9).to_dict()))
    assert texts(await collect(log, "run-1", 4)) == ["w4", "w5", "w6", "w7"]


async def collect_open(log: RunLog, run_id: str, offset: int, count: int) -> list[Chunk[Any]]:
    """`count` chunks of a run still open, from `offset`."""
    reader = log.read(run_id, offset)
    return [await anext(reader) for _ in range(count)]


def test_memory_rejects_bad_bounds() -> None:
    for kwargs in ({"max_chunks": 0}, {"max_runs": -1}, {"retention": 0}, {"max_chunks": 1.5}):
        with pytest.raises(ValueError, match=next(iter(kwargs))):
            InMemoryRunLog(**kwargs)  # type: ignore[arg-type]


# -- Redis particulars ----------------------------------------------------------------------------


async def test_redis_one_instance_writes_another_follows_live(redis_server: RedisServer) -> None:
    prefix = f"test:{uuid.uuid4().hex}:"
    writing = RedisRunLog(url=redis_server.url, prefix=prefix)
    reading = RedisRunLog(url=redis_server.url, prefix=prefix, block=0.2)
    try:
        writer = await writing.open("run-1", agent_id="a", resource_id="r")
        writer.append(delta(0))
        seen: list[str] = []
        first = asyncio.Event()

        async def read() -> None:
            async for chunk in reading.read("run-1"):
                seen.append(chunk.payload.text)
                first.set()

        reader = asyncio.create_task(read())
        await asyncio.wait_for(first.wait(), 5)  # the buffered append was flushed on its own
        for i in range(1, 200):
            writer.append(delta(i))
            if i % 10 == 0:
                await asyncio.sleep(0.001)
        await writer.close("finished")
        await asyncio.wait_for(reader, 5)
        assert seen == [f"w{i}" for i in range(200)]
        info = await reading.info("run-1")
        assert (info.status, info.next_offset, info.resource_id) == ("finished", 200, "r")
    finally:
        await writing.aclose()
        await reading.aclose()


async def test_redis_write_at_stores_encoded_chunks_as_they_are(redis_server: RedisServer) -> None:
    made = RedisRunLog(url=redis_server.url, prefix=f"test:{uuid.uuid4().hex}:", block=0.2)
    try:
        await made.open("run-1", agent_id="a")
        encoded = json.dumps(delta(1).to_dict())
        assert await made.write_at("run-1", 0, [delta(0).to_dict(), encoded]) == 2
        assert (
            await made.write_at("run-1", 1, [encoded, json.dumps(delta(2).to_dict())]) == 3
        )  # offset 1 kept
        await made.close_at("run-1", 3, "finished")
        assert texts(await collect(made, "run-1")) == ["w0", "w1", "w2"]
    finally:
        await made.aclose()


async def test_redis_trims_to_its_bound_and_names_the_first_held_offset(
    redis_server: RedisServer,
) -> None:
    log = RedisRunLog(url=redis_server.url, prefix=f"test:{uuid.uuid4().hex}:", max_chunks=10)
    try:
        writer = await log.open("run-1", agent_id="a")
        for i in range(1000):
            writer.append(delta(i))
        await writer.close("finished")
        with pytest.raises(OffsetExpiredError) as caught:
            await collect(log, "run-1", 0)
        first = caught.value.first_offset
        assert 0 < first <= 990  # MAXLEN ~ trims whole nodes, so at least 10 are kept
        assert (await log.info("run-1")).first_offset == first
        assert texts(await collect(log, "run-1", first)) == [f"w{i}" for i in range(first, 1000)]
    finally:
        await log.aclose()


async def test_redis_expires_a_closed_run_after_its_retention(redis_server: RedisServer) -> None:
    log = RedisRunLog(url=redis_server.url, prefix=f"test:{uuid.uuid4().hex}:", retention=0.3)
    try:
        writer = await log.open("run-1", agent_id="a")
        writer.append(delta(0))
        await writer.close("finished")
        assert texts(await collect(log, "run-1")) == ["w0"]
        await asyncio.sleep(0.5)
        with pytest.raises(RunNotFoundError):
            await collect(log, "run-1")
    finally:
        await log.aclose()


async def test_redis_a_chunk_that_cannot_be_written_drops_that_runs_log_only(
    redis_server: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    log = RedisRunLog(url=redis_server.url, prefix=f"test:{uuid.uuid4().hex}:")
    try:
        bad = await log.open("bad", agent_id="a")
        good = await log.open("good", agent_id="a")
        with caplog.at_level(logging.WARNING, logger="sluicegate.run_log"):
            bad.append(Chunk("data-x", "bad", data=object()))  # not JSON
            good.append(delta(0, "good"))
            bad.append(delta(1, "bad"))
            await bad.close("finished")
            await good.close("finished")
        assert "its log is dropped" in caplog.text
        with pytest.raises(RunLogUnavailableError):
            await collect(log, "bad")
        assert texts(await collect(log, "good")) == ["w0"]
    finally:
        await log.aclose()


async def test_redis_going_away_mid_run_does_not_break_the_writer(
    disposable_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    log = RedisRunLog(url=disposable_redis.url, prefix="test:", block=0.2)
    try:
        writer = await log.open("run-1", agent_id="a")
        writer.append(delta(0))
        await writer.close("suspended")
        resumed = await log.open("run-1", agent_id="a")
        resumed.append(delta(1))
        await asyncio.sleep(0.05)
        disposable_redis.stop()
        with caplog.at_level(logging.WARNING, logger="sluicegate.run_log"):
            for i in range(2, 50):
                resumed.append(delta(i))
                await asyncio.sleep(0)
            await resumed.close("finished")  # no exception: the run goes on
            late = await log.open("run-2", agent_id="a")  # opening while Redis is down
            late.append(delta(0, "run-2"))
            await late.close("finished")
        assert "its log is dropped" in caplog.text
        with pytest.raises(RunLogUnavailableError):
            await collect(log, "run-1")
    finally:
        await log.aclose()


def test_redis_rejects_bad_options() -> None:
    with pytest.raises(ValueError, match="block"):
        RedisRunLog(block=5, socket_timeout=1)
    with pytest.raises(ValueError, match="max_chunks"):
        RedisRunLog(max_chunks=0)


async def test_redis_a_cancelled_reader_does_not_disturb_the_log(redis_server: RedisServer) -> None:
    log = RedisRunLog(url=redis_server.url, prefix=f"test:{uuid.uuid4().hex}:", block=0.2)
    try:
        writer = await log.open("run-1", agent_id="a")
        writer.append(delta(0))
        reader = asyncio.create_task(collect(log, "run-1"))
        await asyncio.sleep(0.1)  # blocked in XREAD, waiting for chunk 1
        reader.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reader
        writer.append(delta(1))
        await writer.close("finished")
        assert texts(await collect(log, "run-1")) == ["w0", "w1"]
    finally:
        await log.aclose()
