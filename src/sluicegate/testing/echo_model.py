"""`EchoModel`: an offline model that answers every call, for servers, demos and benchmarks.

It streams `Echo: <the last user text>` split into `deltas` pieces (by characters when the text
has fewer words than that: the answer is the text exactly), waiting `delay` seconds before each
piece. Unlike `MockModel` it has no script, so any number of requests can use it at once.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import AsyncIterator
from typing import Any

from sluicegate.models.base import CallOptions, GenerateResult, StreamPart, StreamResult, generate_from_stream


def _last_user_text(options: CallOptions) -> str:
    for message in reversed(options.prompt):
        if message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                return content
            return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))
    return ""


class EchoModel:
    """A model that echoes the last user message as a stream of `deltas` text deltas."""

    specification_version = "v2"

    def __init__(
        self, *, deltas: int = 8, delay: float = 0.0, provider: str = "echo", model_id: str = "echo-1"
    ) -> None:
        if deltas < 1:
            raise ValueError("deltas must be at least 1")
        self.deltas = deltas
        self.delay = delay
        self._provider = provider
        self._model_id = model_id

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def model_id(self) -> str:
        return self._model_id

    def pieces(self, text: str) -> list[str]:
        """`Echo: <text>` exactly, in `deltas` pieces: by words, or (fewer words than pieces)
        by characters, so a short answer is never padded."""
        full = f"Echo: {text}"
        words = full.split(" ")
        if len(words) < self.deltas:
            count = min(self.deltas, len(full))
            base, extra = divmod(len(full), count)
            bounds = [0]
            for index in range(count):
                bounds.append(bounds[-1] + base + (1 if index < extra else 0))
            return [full[start:end] for start, end in itertools.pairwise(bounds)]
        size = -(-len(words) // self.deltas)
        groups = [" ".join(words[i : i + size]) for i in range(0, len(words), size)]
        return [g if i == 0 else " " + g for i, g in enumerate(groups)]

    async def _parts(self, options: CallOptions) -> AsyncIterator[StreamPart]:
        text = _last_user_text(options)
        pieces = self.pieces(text)
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "text-start", "id": "t1"}
        for piece in pieces:
            if self.delay:
                await asyncio.sleep(self.delay)
            yield {"type": "text-delta", "id": "t1", "delta": piece}
        yield {"type": "text-end", "id": "t1"}
        usage: dict[str, Any] = {
            "inputTokens": max(1, len(text) // 4),
            "outputTokens": len(pieces),
            "totalTokens": max(1, len(text) // 4) + len(pieces),
        }
        yield {"type": "finish", "finishReason": "stop", "usage": usage}

    async def do_stream(self, options: CallOptions) -> StreamResult:
        return StreamResult(stream=self._parts(options))

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        return await generate_from_stream(self._parts(options))
