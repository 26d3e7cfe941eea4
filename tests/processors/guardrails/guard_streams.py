"""Text deltas streamed through one guard, as a client would receive them."""

from __future__ import annotations

import asyncio
from typing import Any

from sluicegate.processors import ProcessOutputStreamArgs
from sluicegate.request_context import RequestContext
from sluicegate.stream.chunk import Chunk, text_delta


def _abort(reason: str = "", **_: Any) -> None:
    raise AssertionError(f"the guard aborted: {reason}")


def stream(guard: Any, pieces: list[str]) -> str:
    """What a client receives of `pieces` streamed through `guard` (text deltas, then the end)."""
    args = ProcessOutputStreamArgs(abort=_abort, request_context=RequestContext())
    out: list[str] = []

    def collect(result: Any) -> None:
        for chunk in result if isinstance(result, list) else [] if result is None else [result]:
            if chunk.type == "text-delta":
                out.append(chunk.payload.text)

    async def run() -> None:
        for chunk in [*(text_delta("r", "t1", p) for p in pieces), Chunk("text-end", "r")]:
            args.part = chunk
            result = guard.process_output_stream(args)
            collect(await result if asyncio.iscoroutine(result) else result)
        flushed = guard.flush_output_stream(args)
        collect(await flushed if asyncio.iscoroutine(flushed) else flushed)

    asyncio.run(run())
    return "".join(out)
