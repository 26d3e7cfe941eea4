"""`ChunkStreamResponse` tells its tee how the stream ended and always runs `on_end` (where a
resumed run's output is closed, so one its client never read gives its claim back)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from sluicegate.server.streaming import ChunkStreamResponse, Outcome
from sluicegate.stream import Chunk


class Recorder:
    def __init__(self) -> None:
        self.appended: list[str] = []
        self.outcomes: list[Outcome] = []
        self.ended = 0

    def append(self, chunk: Any) -> None:
        self.appended.append(chunk.type)

    async def close(self, outcome: Outcome) -> None:
        self.outcomes.append(outcome)

    async def on_end(self) -> None:
        self.ended += 1


async def _chunks(n: int, *, then_wait: bool = False) -> AsyncIterator[Chunk[Any]]:
    for i in range(n):
        yield Chunk("text-delta", "r-1", payload={"id": "t", "text": str(i)})
    if then_wait:
        await asyncio.sleep(60)


def _response(
    chunks: AsyncIterator[Any], recorder: Recorder, timeout: float | None = 5
) -> ChunkStreamResponse:
    return ChunkStreamResponse(chunks, run_id="r-1", timeout=timeout, tee=recorder, on_end=recorder.on_end)


async def _serve(
    response: ChunkStreamResponse, *, leave_after: float | None = None, send_fails: bool = False
) -> None:
    gone = asyncio.Event()
    if leave_after is not None:
        asyncio.get_running_loop().call_later(leave_after, gone.set)

    async def receive() -> dict[str, Any]:
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if send_fails:
            raise OSError("connection reset")

    await response({"type": "http"}, receive, send)


def test_a_finished_stream_is_done_and_every_chunk_was_teed() -> None:
    recorder = Recorder()
    asyncio.run(_serve(_response(_chunks(3), recorder)))
    assert recorder.appended == ["text-delta"] * 3
    assert recorder.outcomes == ["done"] and recorder.ended == 1


def test_a_client_that_leaves_is_a_disconnect() -> None:
    recorder = Recorder()
    asyncio.run(_serve(_response(_chunks(2, then_wait=True), recorder), leave_after=0.05))
    assert recorder.outcomes == ["disconnect"] and recorder.ended == 1


def test_the_timeout_is_its_own_outcome() -> None:
    recorder = Recorder()
    asyncio.run(_serve(_response(_chunks(1, then_wait=True), recorder, timeout=0.05)))
    assert recorder.outcomes == ["timeout"] and recorder.ended == 1


def test_a_response_that_never_started_still_ends() -> None:
    recorder = Recorder()
    with pytest.raises(OSError):
        asyncio.run(_serve(_response(_chunks(2), recorder), send_fails=True))
    assert recorder.outcomes == ["disconnect"] and recorder.ended == 1
    assert recorder.appended == []
