"""A small app for worker processes (`sluicegate worker tests/durable/steps_app.py`): a mock
model asks for a no-op tool twice, then answers."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

from sluicegate import Agent, Sluicegate, tool
from sluicegate.models.base import CallOptions, StreamResult

STEPS = 2


class StepModel:
    specification_version = "v2"
    provider = "steps"
    model_id = "steps"

    async def do_stream(self, options: CallOptions) -> StreamResult:
        done = sum(1 for m in options.prompt if m.get("role") == "tool")
        return StreamResult(self._answer() if done >= STEPS else self._ask(done))

    async def _ask(self, n: int) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "tool-call", "toolCallId": f"c{n}", "toolName": "noop", "input": json.dumps({"n": n})}
        yield {"type": "finish", "finishReason": "tool-calls", "usage": {"inputTokens": 1, "outputTokens": 1}}

    async def _answer(self) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "text-start", "id": "t"}
        yield {"type": "text-delta", "id": "t", "delta": "done"}
        yield {"type": "text-end", "id": "t"}
        yield {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 1}}

    async def do_generate(self, options: CallOptions) -> Any:
        raise NotImplementedError


@tool
async def noop(n: int) -> int:
    """Does nothing."""
    return n


agent = Agent("steps", model=StepModel(), tools=[noop])
app = Sluicegate(agents={"steps": agent})
