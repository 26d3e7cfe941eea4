"""The app the scale-out test runs in two processes: memory in PostgreSQL, the response cache
in Redis, nothing per conversation in the process."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator

from sluicegate import Agent, Sluicegate
from sluicegate.cache import RedisCache
from sluicegate.memory import Memory
from sluicegate.models.base import CallOptions, GenerateResult, StreamPart, StreamResult, generate_from_stream
from sluicegate.processors import CostGuardProcessor, ResponseCache
from sluicegate.storage import PostgresStore


class CountingModel:
    """Answers with the serving process id and how many user messages the prompt holds."""

    specification_version = "v2"
    provider = "counting"
    model_id = "counting-1"

    async def _parts(self, options: CallOptions) -> AsyncIterator[StreamPart]:
        users = [m for m in options.prompt if m.get("role") == "user"]
        text = f"pid {os.getpid()} saw {len(users)} user messages"
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "text-start", "id": "t1"}
        yield {"type": "text-delta", "id": "t1", "delta": text}
        yield {"type": "text-end", "id": "t1"}
        yield {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 1}}

    async def do_stream(self, options: CallOptions) -> StreamResult:
        return StreamResult(stream=self._parts(options))

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        return await generate_from_stream(self._parts(options))


storage = PostgresStore(os.environ["SLUICEGATE_PG_DSN"])
cache = RedisCache(os.environ["SLUICEGATE_REDIS_URL"])
assistant = Agent(
    name="assistant",
    model=CountingModel(),
    input_processors=[ResponseCache(cache=cache)],
    memory=Memory(storage=storage),
)
# Each call costs $2 (1 input + 1 output token at $1 per token); a resource may spend $3.
metered = Agent(
    name="metered",
    model=CountingModel(),
    input_processors=[
        CostGuardProcessor(
            max_cost=3.0,
            scope="resource",
            pricing={"counting-1": {"input": 1_000_000, "output": 1_000_000}},
            store=storage,
        )
    ],
    memory=Memory(storage=storage),
)
app = Sluicegate(agents=[assistant, metered], storage=storage)
