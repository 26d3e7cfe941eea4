"""The publisher of durable runs' chunks writes only into its own run's log."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from sluicegate.durable.temporal.publish import Publisher
from sluicegate.stream.chunk import Chunk, text_delta
from sluicegate.stream.run_log import InMemoryRunLog, RunInfo, RunNotFoundError, RunStateError


class OpenRunLog:
    """A shared (non in-memory) log holding run `r`, open, of agent `a` and resource `victim`."""

    async def info(self, run_id: str) -> RunInfo:
        return RunInfo(run_id, "a", "victim", None, None, 0, 3)

    async def open(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an open run is never opened again")


async def test_an_open_run_of_another_owner_is_not_taken_for_an_earlier_attempt() -> None:
    publisher = Publisher(OpenRunLog())
    with pytest.raises(RunStateError, match="another owner"):
        await publisher.open("r", agent_id="a", resource_id="mallory", thread_id=None)
    with pytest.raises(RunStateError, match="another owner"):
        await publisher.open("r", agent_id="b", resource_id="victim", thread_id=None)


# ---------------------------------------------------------------- a call's live writes


def _chunk(run_id: str, n: int) -> Chunk[Any]:
    return Chunk("data-n", run_id, data={"n": n})


async def _opened(run_log: InMemoryRunLog, run_id: str = "r") -> Publisher:
    publisher = Publisher(run_log)
    await publisher.open(run_id, agent_id="a", resource_id=None, thread_id=None)
    return publisher


async def test_a_call_s_chunks_are_in_the_in_process_log_as_they_are_added() -> None:
    run_log = InMemoryRunLog()
    publisher = await _opened(run_log)
    live = publisher.live("r", 0)
    first = _chunk("r", 0)
    live.add(first, first.to_dict())
    # No await in between: a reader sees the chunk now, not after a task got its turn.
    assert (await run_log.info("r")).next_offset == 1
    live.add(_chunk("r", 1), _chunk("r", 1).to_dict())
    assert await live.finish() == 2
    reader = run_log.read("r")
    assert [c.data for c in [await anext(reader), await anext(reader)]] == [{"n": 0}, {"n": 1}]


async def test_a_waiting_reader_is_woken_by_each_live_chunk() -> None:
    run_log = InMemoryRunLog()
    publisher = await _opened(run_log)
    reader = run_log.read("r")
    waiting = asyncio.ensure_future(anext(reader))
    await asyncio.sleep(0)
    assert run_log.waiting_readers("r") == 1
    live = publisher.live("r", 0)
    live.add(_chunk("r", 7), _chunk("r", 7).to_dict())
    assert (await asyncio.wait_for(waiting, 1)).data == {"n": 7}
    await live.finish()


async def test_a_retried_attempt_rewriting_the_same_offsets_doubles_no_chunk() -> None:
    run_log = InMemoryRunLog()
    publisher = await _opened(run_log)
    failed = publisher.live("r", 0)
    for n in range(3):
        failed.add(_chunk("r", n), _chunk("r", n).to_dict())
    retried = publisher.live("r", 0)  # the workflow's offset again
    for n in (10, 11, 12, 13):
        retried.add(_chunk("r", n), _chunk("r", n).to_dict())
    assert await retried.finish() == 4
    assert (await run_log.info("r")).next_offset == 4
    await publisher.close("r", 4, "finished")
    held = [c.data["n"] async for c in run_log.read("r")]
    assert held == [0, 1, 2, 13]  # what was there stays at its offset; only the new offset is added


async def test_a_chunk_added_after_the_run_closed_fails_the_call_at_finish() -> None:
    run_log = InMemoryRunLog()
    publisher = await _opened(run_log)
    live = publisher.live("r", 0)
    await publisher.close("r", 0, "aborted")
    live.add(_chunk("r", 0), _chunk("r", 0).to_dict())  # the stream goes on ...
    with pytest.raises(RunStateError, match="closed"):
        await live.finish()  # ... and the write's failure fails the call, as a failed batch did


async def test_a_run_not_opened_in_this_process_is_only_counted() -> None:
    run_log = InMemoryRunLog()
    live = Publisher(run_log).live("elsewhere", 5)
    live.add(_chunk("elsewhere", 0), _chunk("elsewhere", 0).to_dict())
    assert await live.finish() == 6
    with pytest.raises(RunNotFoundError):
        await run_log.info("elsewhere")


class SharedLog:
    """A shared log (not in process): records the batches written at their offsets."""

    def __init__(self) -> None:
        self.writes: list[tuple[int, list[dict[str, Any]]]] = []

    async def write_at(self, run_id: str, offset: int, chunks: list[dict[str, Any]]) -> int:
        self.writes.append((offset, list(chunks)))
        await asyncio.sleep(0)
        return offset + len(chunks)


async def test_a_shared_log_gets_the_chunks_shapes_in_batches_at_their_offsets() -> None:
    shared = SharedLog()
    live = Publisher(shared).live("r", 3)
    shapes = [_chunk("r", n).to_dict() for n in range(3)]
    for n, shape in enumerate(shapes):
        live.add(_chunk("r", n), shape)
    assert await live.finish() == 6
    written = [shape for _, batch in shared.writes for shape in batch]
    assert written == shapes
    assert shared.writes[0][0] == 3


async def test_carried_chunks_are_written_once_at_their_offsets_and_read_back_equal() -> None:
    run_log = InMemoryRunLog()
    publisher = await _opened(run_log)
    shapes = [_chunk("r", n).to_dict() for n in range(3)]
    assert await publisher.write("r", 0, shapes[:2]) == 2
    assert await publisher.write("r", 0, shapes) == 3  # a retried attempt carries them again
    await publisher.close("r", 3, "finished")
    assert [c async for c in run_log.read("r")] == [_chunk("r", n) for n in range(3)]


async def test_encoded_chunks_are_written_once_at_their_offsets_and_read_back_equal() -> None:
    log = InMemoryRunLog()
    publisher = Publisher(log)
    assert await publisher.open("r", agent_id="a", resource_id=None, thread_id=None) == 0
    chunks = [text_delta("r", "t", f"w{i}") for i in range(4)]
    as_text = [json.dumps(c.to_dict()) for c in chunks]
    assert await publisher.write("r", 0, [chunks[0].to_dict(), as_text[1]]) == 2
    # A retried attempt writes the same offsets again, and one more: only the new one is kept.
    assert await publisher.write("r", 1, [as_text[1], as_text[2], chunks[3].to_dict()]) == 4
    await publisher.close("r", 4, "finished")
    assert [c async for c in log.read("r")] == chunks
