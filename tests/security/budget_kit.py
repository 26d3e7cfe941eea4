"""Models for the cost-guard tests: one that answers as long as it is allowed (like a real
provider, it stops at the `max_output_tokens` it is sent), and one that ignores that limit."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from sluicegate.models.base import CallOptions, GenerateResult, StreamResult, generate_from_stream
from sluicegate.processors.builtin.cost_guard import estimate_input_tokens

MODEL_ID = "answer-model"
PRICING = {MODEL_ID: {"input": 10.0, "output": 100.0}}
"""$ per million tokens: the default 256-token reservation of output costs $0.0256."""


class LongAnswerModel:
    """Answers `answer_tokens` output tokens, or fewer when the call sets a smaller
    `max_output_tokens` (unless `honours_limit=False`). Reports as input the prompt's tokens
    counted as the cost guard counts them, so a run's cost is exactly what it is priced at."""

    specification_version = "v2"
    provider = "test"
    model_id = MODEL_ID

    def __init__(self, answer_tokens: int, *, delay: float = 0.02, honours_limit: bool = True) -> None:
        self.answer_tokens = answer_tokens
        self.delay = delay
        self.honours_limit = honours_limit
        self.calls: list[CallOptions] = []
        self.charged = 0.0
        """What the calls cost at `PRICING`, as a provider would bill them."""

    async def do_stream(self, options: CallOptions) -> StreamResult:
        self.calls.append(options)
        output = self.answer_tokens
        if self.honours_limit and options.max_output_tokens is not None:
            output = min(output, options.max_output_tokens)
        input_tokens = estimate_input_tokens(MODEL_ID, options.prompt, options.tools)
        self.charged += (input_tokens * 10.0 + output * 100.0) / 1_000_000
        delay = self.delay

        async def parts() -> AsyncIterator[Any]:
            yield {"type": "stream-start", "warnings": []}
            await asyncio.sleep(delay)
            yield {"type": "text-start", "id": "t"}
            yield {"type": "text-delta", "id": "t", "delta": "word " * 8}
            yield {"type": "text-end", "id": "t"}
            yield {
                "type": "finish",
                "finishReason": "length" if output < self.answer_tokens else "stop",
                "usage": {
                    "inputTokens": input_tokens,
                    "outputTokens": output,
                    "totalTokens": input_tokens + output,
                },
            }

        return StreamResult(stream=parts())

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        return await generate_from_stream(await self.do_stream(options))
