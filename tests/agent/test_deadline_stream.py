"""The model stream with deadline markers (used while a stream processor holds chunks on a
timer): markers only while the model is silent past a deadline, the model's own error raised as
is, at most one part read ahead, and the model stream closed when the consumer stops."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest

from sluicegate.agent.deadline_stream import with_deadlines

MARK = object()


async def paced(parts: list[str], pause: float, read: list[str], closed: list[bool]) -> AsyncIterator[str]:
    try:
        for part in parts:
            await asyncio.sleep(pause)
            read.append(part)
            yield part
    finally:
        closed.append(True)


async def test_markers_come_only_while_the_model_is_silent_past_the_deadline() -> None:
    deadlines = [time.monotonic() + 0.02]  # a processor holding chunks until then
    out: list[object] = []
    async for part in with_deadlines(
        paced(["a", "b"], 0.06, [], []), lambda: deadlines[0] if deadlines else None, MARK
    ):
        out.append(part)
        if part is MARK:
            deadlines.clear()  # the processor released what it held
    assert out == [MARK, "a", "b"]


async def test_no_deadline_means_no_marker() -> None:
    out = [part async for part in with_deadlines(paced(["a", "b", "c"], 0.01, [], []), lambda: None, MARK)]
    assert out == ["a", "b", "c"]


async def test_the_models_error_is_raised_as_it_is() -> None:
    class Boom(Exception):
        pass

    async def failing() -> AsyncIterator[str]:
        yield "a"
        raise Boom("stream broke")

    seen: list[str] = []
    with pytest.raises(Boom, match="stream broke"):
        async for part in with_deadlines(failing(), lambda: None, MARK):
            seen.append(part)
    assert seen == ["a"]


async def test_it_reads_at_most_one_part_ahead_and_closes_the_model_stream() -> None:
    read: list[str] = []
    closed: list[bool] = []
    stream = with_deadlines(paced(list("abcdef"), 0.0, read, closed), lambda: time.monotonic() + 1, MARK)
    first = await stream.__anext__()
    await asyncio.sleep(0.02)  # the reader had time to run ahead
    assert first == "a" and read == ["a", "b"]
    await stream.aclose()  # type: ignore[attr-defined]
    assert closed == [True] and read == ["a", "b"]


async def test_a_deadline_left_in_the_past_does_not_starve_the_model() -> None:
    parts: list[object] = []
    markers = 0
    async for part in with_deadlines(paced(["a", "b", "c"], 0.01, [], []), lambda: 0.0, MARK):
        if part is MARK:
            markers += 1
            assert markers < 1_000_000, "the model's parts never came"
        else:
            parts.append(part)
    assert parts == ["a", "b", "c"]
