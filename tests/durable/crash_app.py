"""The app the crash tests' worker processes run (`sluicegate worker tests/durable/crash_app.py`).

Its model and tool write what they do, with their process id, into $SG_CRASH_DIR, so a test
knows which worker to SIGKILL and can count tool runs. Chunks go to Redis ($SG_REDIS_URL);
memory and the cost guard's budget to one SQLite file there, shared by the workers. A worker
whose reservation finds `kill-after-reserve-<budget key>` there kills itself once the
reservation committed, before its activity could report it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections.abc import AsyncIterator
from typing import Any

from temporalio import activity

from sluicegate import Agent, Sluicegate, tool
from sluicegate.memory import Memory
from sluicegate.models.base import CallOptions, StreamResult
from sluicegate.processors.builtin.cost_guard import CostGuardProcessor
from sluicegate.storage import SQLiteStore
from sluicegate.stream.redis_run_log import RedisRunLog
from sluicegate.tools import ToolContext

DIR = os.environ.get("SG_CRASH_DIR", "/tmp")
ANSWER = ["The ", "answer ", "is ", "42", "."]


def _note(name: str, text: str) -> None:
    """`<pid> <text> <run id>` (the run id is the workflow id of the activity running this)."""
    run_id = activity.info().workflow_id if activity.in_activity() else "local"
    with open(os.path.join(os.environ.get("SG_CRASH_DIR", "/tmp"), name), "a") as f:
        f.write(f"{os.getpid()} {text.split()[0]} {run_id} {' '.join(text.split()[1:])}\n")


class CrashModel:
    """Step 0 asks for the tool; step 1 streams the answer slowly."""

    specification_version = "v2"
    provider = "crash"
    model_id = "model"

    async def do_stream(self, options: CallOptions) -> StreamResult:
        answered = any(m.get("role") == "tool" for m in options.prompt)
        _note("model.log", "answer" if answered else "ask")
        return StreamResult(self._answer() if answered else self._ask())

    async def _ask(self) -> AsyncIterator[dict[str, Any]]:
        yield {
            "type": "tool-call",
            "toolCallId": "call-1",
            "toolName": "lookup",
            "input": json.dumps({"q": "x"}),
        }
        yield {"type": "finish", "finishReason": "tool-calls", "usage": {"inputTokens": 1, "outputTokens": 1}}

    async def _answer(self) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "text-start", "id": "t"}
        for piece in ANSWER:
            await asyncio.sleep(0.15)
            yield {"type": "text-delta", "id": "t", "delta": piece}
        yield {"type": "text-end", "id": "t"}
        yield {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 2, "outputTokens": 5}}

    async def do_generate(self, options: CallOptions) -> Any:
        raise NotImplementedError


@tool
async def lookup(q: str, context: ToolContext) -> str:
    """Look something up (slowly)."""
    _note("tool.log", f"start {context.idempotency_key}")
    await asyncio.sleep(float(os.environ.get("SG_TOOL_SECONDS", "1.0")))
    _note("tool.log", f"done {context.idempotency_key}")
    return "42"


def _take_flag(name: str) -> bool:
    """Whether the flag file `name` was there (it is removed)."""
    try:
        os.remove(os.path.join(os.environ.get("SG_CRASH_DIR", "/tmp"), name))
    except FileNotFoundError:
        return False
    return True


class DyingStore(SQLiteStore):
    """SIGKILLs its worker right after a flagged reservation committed (once per flag)."""

    async def reserve(self, key: str, amount: float, **kwargs: Any) -> Any:
        reservation = await super().reserve(key, amount, **kwargs)
        if activity.in_activity() and _take_flag(f"kill-after-reserve-{key}"):
            _note("store.log", f"reserved {reservation.id} {kwargs.get('idempotency_key')}")
            os.kill(os.getpid(), signal.SIGKILL)
        return reservation


storage = DyingStore(os.path.join(DIR, "memory.db"))
PRICING = {"model": {"input": 1_000_000.0, "output": 1_000_000.0}}
"""A dollar a token: the budget spent is the number of tokens charged."""
guard = CostGuardProcessor(max_cost=1000.0, scope="resource", store=storage, pricing=PRICING)

agent = Agent(
    "crashy",
    model=CrashModel(),
    tools=[lookup],
    memory=Memory(storage=storage),
    input_processors=[guard],
    run_log=RedisRunLog(os.environ.get("SG_REDIS_URL", "redis://127.0.0.1:6379/0")),
)
app = Sluicegate(agents={"crashy": agent})
