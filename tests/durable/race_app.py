"""The app of the durable stream-race tests: `sluicegate worker tests/durable/race_app.py` in
worker processes, `build(redis_url)` in the test's server. Its chunks go to Redis
($SG_REDIS_URL), the run log the server and the workers share.

The model is deterministic per conversation, so any number of runs share it: a prompt asking
to "transfer" calls `transfer` (which suspends itself for resume data), any other calls
`refund` (which requires approval); once a tool result is in the prompt it answers with it."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

from sluicegate import Agent, Sluicegate, tool
from sluicegate.models.base import CallOptions, StreamResult
from sluicegate.stream.redis_run_log import RedisRunLog
from sluicegate.tools import ToolContext, create_tool

USAGE = {"inputTokens": 1, "outputTokens": 1}


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return " ".join(str(p.get("text", "")) for p in content or [] if isinstance(p, dict))


class RaceModel:
    specification_version = "v2"
    provider = "race"
    model_id = "model"

    async def do_stream(self, options: CallOptions) -> StreamResult:
        results = [m for m in options.prompt if m.get("role") == "tool"]
        if results:
            return StreamResult(self._answer(json.dumps(results[-1]["content"][0].get("output"))))
        asked = " ".join(_text(m) for m in options.prompt if m.get("role") == "user")
        name, args = ("transfer", {"account": "x"}) if "transfer" in asked else ("refund", {"amount": 7})
        return StreamResult(self._ask(name, args))

    async def _ask(self, name: str, args: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "tool-call", "toolCallId": "c1", "toolName": name, "input": json.dumps(args)}
        yield {"type": "finish", "finishReason": "tool-calls", "usage": USAGE}

    async def _answer(self, result: str) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "text-start", "id": "t"}
        yield {"type": "text-delta", "id": "t", "delta": f"done: {result}"}
        yield {"type": "text-end", "id": "t"}
        yield {"type": "finish", "finishReason": "stop", "usage": USAGE}

    async def do_generate(self, options: CallOptions) -> Any:
        raise NotImplementedError


@tool(require_approval=True)
async def refund(amount: int) -> str:
    """Refund money."""
    return f"refunded {amount}"


async def _transfer(input: Any, context: ToolContext) -> Any:
    if context.resume_data is None:
        await context.suspend({"question": f"send to {input['account']}?"})
        return None
    return {"sent": context.resume_data["confirmed"]}


transfer = create_tool(
    id="transfer",
    description="Transfer money",
    input_schema={"type": "object", "properties": {"account": {"type": "string"}}},
    suspend_schema={"type": "object", "properties": {"question": {"type": "string"}}},
    resume_schema={
        "type": "object",
        "properties": {"confirmed": {"type": "boolean"}},
        "required": ["confirmed"],
    },
    execute=_transfer,
)


def build(redis_url: str) -> Sluicegate:
    agent = Agent("racer", model=RaceModel(), tools=[refund, transfer], run_log=RedisRunLog(redis_url))
    return Sluicegate(agents={"racer": agent})


app = build(os.environ.get("SG_REDIS_URL", "redis://127.0.0.1:6379/0"))
