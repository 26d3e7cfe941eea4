"""A client that goes away cancels the run (provider stream included); so does the timeout."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from fastapi.testclient import TestClient
from tests.server.helpers import call_then_disconnect, sse_events

from sluicegate import Agent, Sluicegate
from sluicegate.models.base import CallOptions, StreamPart, StreamResult
from sluicegate.server import ServerSettings, create_app


class SlowModel:
    """Streams one delta every `delay` seconds for `deltas` deltas; records how streams ended."""

    specification_version = "v2"
    provider = "slow"
    model_id = "slow-1"

    def __init__(self, *, deltas: int = 100, delay: float = 0.02) -> None:
        self.deltas = deltas
        self.delay = delay
        self.sent = 0
        self.closed = asyncio.Event()
        self.finished = False

    async def _parts(self) -> AsyncIterator[StreamPart]:
        try:
            yield {"type": "stream-start", "warnings": []}
            yield {"type": "text-start", "id": "t1"}
            for i in range(self.deltas):
                await asyncio.sleep(self.delay)
                self.sent += 1
                yield {"type": "text-delta", "id": "t1", "delta": f"w{i} "}
            yield {"type": "text-end", "id": "t1"}
            yield {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 1}}
            self.finished = True
        finally:
            self.closed.set()

    async def do_stream(self, options: CallOptions) -> StreamResult:
        return StreamResult(stream=self._parts())

    async def do_generate(self, options: CallOptions) -> Any:
        raise NotImplementedError


def _app(model: SlowModel, timeout: float | None = 30.0) -> Any:
    agent = Agent(name="slow", model=model)
    return create_app(Sluicegate(agents=[agent]), ServerSettings(request_timeout=timeout))


async def test_stream_disconnect_cancels_the_provider_stream() -> None:
    model = SlowModel()
    sent = await call_then_disconnect(_app(model), "/api/agents/slow/stream", {"messages": "go"}, after=0.2)
    await asyncio.wait_for(model.closed.wait(), 2)
    assert not model.finished
    assert model.sent < model.deltas / 2
    assert sent[0]["status"] == 200


async def test_generate_disconnect_cancels_the_run() -> None:
    model = SlowModel()
    await call_then_disconnect(_app(model), "/api/agents/slow/generate", {"messages": "go"}, after=0.2)
    await asyncio.wait_for(model.closed.wait(), 2)
    assert not model.finished
    assert model.sent < model.deltas / 2


def test_generate_timeout_is_504() -> None:
    model = SlowModel()
    with TestClient(_app(model, timeout=0.2)) as client:
        response = client.post("/api/agents/slow/generate", json={"messages": "go"})
    assert response.status_code == 504
    assert "0.2" in response.json()["error"]
    assert not model.finished


def test_stream_timeout_ends_with_an_error_chunk() -> None:
    model = SlowModel()
    with TestClient(_app(model, timeout=0.2)) as client:
        response = client.post("/api/agents/slow/stream", json={"messages": "go"})
    events, done = sse_events(response.text)
    assert done
    assert events[-1]["type"] == "error"
    assert events[-1]["payload"]["error"]["name"] == "TimeoutError"
    assert not model.finished
