"""The app the server tests (and the Node client test) serve: two agents, a guardrail that
trips, tools (one that needs approval, one that suspends itself) and SQLite memory — all offline.

The echo agent's model echoes the user, except that `/tool <name> <JSON args>` makes it call
that tool, and after a tool's result it answers `Tool <name> said: <result JSON>`."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import AsyncIterator
from typing import Any

from sluicegate import Agent, Sluicegate, tool
from sluicegate.memory import Memory
from sluicegate.models.base import CallOptions, StreamPart
from sluicegate.processors import Processor, UnicodeNormalizer
from sluicegate.processors.args import ProcessInputArgs
from sluicegate.storage import PostgresStore, SQLiteStore
from sluicegate.testing.echo_model import EchoModel
from sluicegate.tools import ToolContext


class BlockWord(Processor):
    """Blocks any input that contains the word "forbidden"."""

    id = "block-word"
    name = "Block word"

    def process_input(self, args: ProcessInputArgs) -> None:
        for message in args.messages:
            if "forbidden" in message.text.lower():
                args.abort("The word 'forbidden' is not allowed", metadata={"word": "forbidden"})


@tool
async def add(a: int, b: int) -> dict[str, int]:
    """Add two integers."""
    return {"sum": a + b}


wiped: list[str] = []


@tool(require_approval=True)
async def wipe(path: str) -> dict[str, str]:
    """Delete a file; every call waits for a person's approval."""
    wiped.append(path)
    return {"wiped": path}


@tool(
    suspend_schema={
        "type": "object",
        "properties": {"question": {"type": "string"}},
        "required": ["question"],
    },
    resume_schema={"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]},
)
async def ask(question: str, context: ToolContext) -> dict[str, str] | None:
    """Ask the user a question; the run waits for the answer (`resumeData: {"answer": ...}`)."""
    if context.resume_data is None:
        await context.suspend({"question": question})
        return None
    return {"answer": context.resume_data["answer"]}


class ToolEcho(EchoModel):
    """`EchoModel`, plus `/tool <name> <JSON args>` to call a tool, then a line about its result."""

    async def _parts(self, options: CallOptions) -> AsyncIterator[StreamPart]:
        last = options.prompt[-1] if options.prompt else {}
        content = last.get("content")
        text = (
            content
            if isinstance(content, str)
            else "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))
        )
        if last.get("role") == "user" and text.startswith("/tool "):
            _, name, args = [*text.split(" ", 2), "{}"][:3]
            yield {"type": "stream-start", "warnings": []}
            call_id = f"call_{uuid.uuid4().hex[:12]}"
            yield {"type": "tool-call", "toolCallId": call_id, "toolName": name, "input": args}
            yield {"type": "finish", "finishReason": "tool-calls", "usage": _USAGE}
            return
        if last.get("role") == "tool":
            result = next((p for p in last.get("content") or [] if p.get("type") == "tool-result"), {})
            output: Any = result.get("output", {})
            said = f"Tool {result.get('toolName')} said: {json.dumps(output.get('value'))}"
            yield {"type": "stream-start", "warnings": []}
            yield {"type": "text-start", "id": "t1"}
            yield {"type": "text-delta", "id": "t1", "delta": said}
            yield {"type": "text-end", "id": "t1"}
            yield {"type": "finish", "finishReason": "stop", "usage": _USAGE}
            return
        async for part in super()._parts(options):
            yield part


_USAGE: dict[str, Any] = {"inputTokens": 3, "outputTokens": 2, "totalTokens": 5}


_db = os.environ.get("SLUICEGATE_TEST_DB", ":memory:")
# A PostgreSQL DSN puts several server processes on one database (tests/server/test_hitl_two_processes.py).
storage: Any = PostgresStore(_db) if _db.startswith("postgresql://") else SQLiteStore(_db)
memory = Memory(storage=storage)
delay = float(os.environ.get("ECHO_DELAY", "0"))
# Several server processes reconnect a client through one Redis run log; one process keeps its own.
redis_url = os.environ.get("SLUICEGATE_REDIS_URL")
logs: dict[str, Any] = {}
if redis_url:
    from sluicegate.stream import RedisRunLog

    logs["run_log"] = RedisRunLog(redis_url)

echo = Agent(
    name="echo",
    description="Echoes what you say.",
    instructions="You repeat the user.",
    model=ToolEcho(deltas=5, delay=delay),
    tools=[add, wipe, ask],
    input_processors=[UnicodeNormalizer(), BlockWord()],
    memory=memory,
    **logs,
)
plain = Agent(name="plain", instructions="No processors.", model=EchoModel(deltas=3))
# Sub-agents two levels deep, served on their own (`example_app.py:boss`, see clients/js/run.sh):
# boss -> researcher -> clerk, whose `wipe` needs approval.
clerk = Agent(name="clerk", description="Files and wipes.", model=ToolEcho(deltas=2), tools=[wipe])
researcher = Agent(name="researcher", model=ToolEcho(deltas=2), agents={"clerk": clerk})
boss = Agent(name="boss", model=ToolEcho(deltas=2), agents={"researcher": researcher})

registry = Sluicegate(agents={"echo": echo, "plain": plain}, processors=[BlockWord()], storage=storage)
