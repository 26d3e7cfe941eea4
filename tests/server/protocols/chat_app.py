"""The app the AI SDK protocol tests serve: `echo` (the example app's tool-calling echo model,
its `block-word` input guardrail, an output PII redaction, memory) and `slow`, whose model
streams for a long time and records that its stream was cancelled."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Any

from tests.server.example_app import BlockWord, ToolEcho, add, ask

from sluicegate import Agent, Sluicegate, tool
from sluicegate.memory import Memory
from sluicegate.models.base import CallOptions, StreamPart
from sluicegate.processors import RegexFilter
from sluicegate.storage import SQLiteStore
from sluicegate.testing.echo_model import EchoModel

EMAIL = "ada.lovelace@example.com"


wiped: list[str] = []
"""The paths `wipe` was run with. Its own list: other tests reload the example app (the
`example` fixture), which would leave an imported list behind the tool's."""


@tool(require_approval=True)
async def wipe(path: str) -> dict[str, str]:
    """Delete a file; every call waits for a person's approval."""
    wiped.append(path)
    return {"wiped": path}


@tool
async def lookup(name: str) -> dict[str, str]:
    """A person's contact details."""
    return {"name": name, "email": EMAIL}


class Slow(EchoModel):
    """Streams a delta every 20 ms for up to a minute; `cancelled` is set when its stream is
    closed before the end (the server cancelled the run)."""

    def __init__(self) -> None:
        super().__init__()
        self.started = asyncio.Event()
        self.cancelled = threading.Event()  # waited on by the test thread

    async def _parts(self, options: CallOptions) -> AsyncIterator[StreamPart]:
        yield {"type": "stream-start", "warnings": []}
        yield {"type": "text-start", "id": "t1"}
        try:
            for _ in range(3000):
                yield {"type": "text-delta", "id": "t1", "delta": "tick "}
                self.started.set()
                await asyncio.sleep(0.02)
        except (asyncio.CancelledError, GeneratorExit):
            self.cancelled.set()
            raise
        yield {"type": "text-end", "id": "t1"}
        yield {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 1}}


def build(resolve_identity: Any = None) -> tuple[Sluicegate, Slow]:
    """A fresh registry (its own in-memory store; `resolve_identity`: its identity hook) and
    the slow model."""
    storage = SQLiteStore(":memory:")
    echo = Agent(
        name="echo",
        instructions="You repeat the user.",
        model=ToolEcho(deltas=40),  # by characters: an email spans many deltas
        tools=[add, wipe, ask, lookup],
        input_processors=[BlockWord()],
        output_processors=[RegexFilter(presets=["pii"], strategy="redact", phase="output")],
        memory=Memory(storage=storage),
    )
    slow_model = Slow()
    slow = Agent(name="slow", instructions="Tick.", model=slow_model)
    registry = Sluicegate(
        agents={"echo": echo, "slow": slow}, storage=storage, resolve_identity=resolve_identity
    )
    return registry, slow_model


__all__ = ["EMAIL", "Slow", "build", "wiped"]
