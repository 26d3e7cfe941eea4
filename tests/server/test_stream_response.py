"""`ChunkStreamResponse` runs `on_end` however the response ends (a resumed run's output is
closed there, so one its client never read gives its claim back)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from sluicegate.server.streaming import ChunkStreamResponse
from sluicegate.stream import Chunk


class Ends:
    def __init__(self) -> None:
        self.count = 0

    async def __call__(self) -> None:
        self.count += 1


async def _chunks(n: int, *, then_wait: bool = False) -> AsyncIterator[Chunk[Any]]:
    for i in range(n):
        yield Chunk("text-delta", "r-1", payload={"id": "t", "text": str(i)})
    if then_wait:
        await asyncio.sleep(60)


async def _serve(
    chunks: AsyncIterator[Any],
    ends: Ends,
    *,
    limit: float = 5,
    leave_after: float | None = None,
    fail: bool = False,
) -> list[dict[str, Any]]:
    response = ChunkStreamResponse(chunks, run_id="r-1", timeout=limit, on_end=ends)
    gone = asyncio.Event()
    sent: list[dict[str, Any]] = []
    if leave_after is not None:
        asyncio.get_running_loop().call_later(leave_after, gone.set)

    async def receive() -> dict[str, Any]:
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if fail:
            raise OSError("connection reset")
        sent.append(message)

    await response({"type": "http"}, receive, send)
    return sent


def test_on_end_runs_after_a_finished_stream() -> None:
    ends = Ends()
    sent = asyncio.run(_serve(_chunks(3), ends))
    assert sent[-1]["body"] == b"data: [DONE]\n\n" and ends.count == 1


def test_on_end_runs_when_the_client_leaves_or_time_is_up() -> None:
    ends = Ends()
    asyncio.run(_serve(_chunks(2, then_wait=True), ends, leave_after=0.05))
    asyncio.run(_serve(_chunks(1, then_wait=True), ends, limit=0.05))
    assert ends.count == 2


def test_on_end_runs_when_the_response_could_not_even_start() -> None:
    ends = Ends()
    with pytest.raises(OSError):
        asyncio.run(_serve(_chunks(2), ends, fail=True))
    assert ends.count == 1
