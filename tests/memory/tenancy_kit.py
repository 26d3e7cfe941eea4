"""Helpers for the tenancy tests: a model that answers from its prompt and yields to the event
loop between parts, so concurrent runs really interleave."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from sluicegate.models.base import CallOptions, GenerateResult, StreamResult, generate_from_stream


def last_user_text(prompt: list[dict[str, Any]]) -> str:
    for message in reversed(prompt):
        if message["role"] == "user":
            content = message["content"]
            if isinstance(content, str):
                return content
            return "".join(p.get("text", "") for p in content if p.get("type") == "text")
    return ""


class EchoModel:
    """Replies `echo: <last user text>`, one word per delta, sleeping between parts."""

    specification_version = "v2"

    def __init__(
        self,
        *,
        model_id: str = "echo-model",
        delay: float = 0.0,
        output_tokens: int = 5,
        fail: BaseException | None = None,
    ) -> None:
        self._model_id = model_id
        self.delay = delay
        self.output_tokens = output_tokens
        self.fail = fail
        self.calls: list[CallOptions] = []

    @property
    def provider(self) -> str:
        return "echo"

    @property
    def model_id(self) -> str:
        return self._model_id

    async def do_stream(self, options: CallOptions) -> StreamResult:
        self.calls.append(options)
        if self.fail is not None:
            raise self.fail
        reply = "echo: " + last_user_text(options.prompt)
        delay = self.delay
        output_tokens = self.output_tokens

        async def parts() -> AsyncIterator[Any]:
            yield {"type": "stream-start", "warnings": []}
            yield {"type": "text-start", "id": "t"}
            for word in reply.split(" "):
                await asyncio.sleep(delay)
                yield {"type": "text-delta", "id": "t", "delta": word + " "}
            yield {"type": "text-end", "id": "t"}
            await asyncio.sleep(delay)
            yield {
                "type": "finish",
                "finishReason": "stop",
                "usage": {
                    "inputTokens": 10,
                    "outputTokens": output_tokens,
                    "totalTokens": 10 + output_tokens,
                },
            }

        return StreamResult(stream=parts())

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        return await generate_from_stream(await self.do_stream(options))
