"""Fallback models against a real HTTP provider on 127.0.0.1: a 500 before the stream, a 500
inside the stream, a provider that refuses connections."""

from __future__ import annotations

import socket
import time
from typing import Any

from sluicegate import Agent
from sluicegate.models import OpenAICompatible

from .fake_provider import FakeProvider, openai_sse

PATH = "/v1/chat/completions"


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def answer(text: str) -> list[Any]:
    return openai_sse([chunk({"role": "assistant", "content": text}), chunk({}, "stop")])


def fake(provider: FakeProvider, model_id: str) -> OpenAICompatible:
    return OpenAICompatible(model_id, base_url=provider.url + "/v1", name="fake")


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def requested_models(provider: FakeProvider) -> list[str]:
    return [body["model"] for body in provider.bodies(PATH)]


async def test_a_500_before_the_stream_moves_the_step_to_the_next_model(fake_provider: FakeProvider) -> None:
    fake_provider.reply(PATH, status=500, json={"error": {"message": "boom", "type": "server_error"}})
    fake_provider.reply(PATH, sse=answer("from the secondary"))
    agent = Agent(
        "a",
        model=[{"model": fake(fake_provider, "primary"), "max_retries": 0}, fake(fake_provider, "secondary")],
    )
    output = await agent.stream("hi")
    kinds = [c.type async for c in output.full_stream]
    assert "data-model-fallback" not in kinds and "error" not in kinds
    assert await output.text == "from the secondary"
    assert requested_models(fake_provider) == ["primary", "secondary"]
    assert [s.model for s in await output.steps] == ["fake.chat/secondary"]


async def test_a_500_inside_the_stream_falls_over_after_telling_the_client(
    fake_provider: FakeProvider,
) -> None:
    failing = openai_sse(
        [
            chunk({"role": "assistant", "content": "Half an ans"}),
            {"error": {"message": "boom", "type": "server_error"}},
        ]
    )
    fake_provider.reply(PATH, sse=failing)
    fake_provider.reply(PATH, sse=answer("A whole answer"))
    agent = Agent(
        "a", model=[fake(fake_provider, "primary"), fake(fake_provider, "secondary")], max_retries=0
    )
    output = await agent.stream("hi")
    chunks = [c async for c in output.full_stream]
    shown = [c.payload.text if c.type == "text-delta" else c.type for c in chunks]
    assert shown[shown.index("Half an ans") + 1] == "data-model-fallback"
    assert shown.index("data-model-fallback") < shown.index("A whole answer")
    notice = next(c for c in chunks if c.type == "data-model-fallback")
    assert (
        notice.data["failedModel"] == "fake.chat/primary"
        and notice.data["nextModel"] == "fake.chat/secondary"
    )
    assert await output.text == "A whole answer"
    assert requested_models(fake_provider) == ["primary", "secondary"]


async def test_a_refused_connection_falls_over_at_once(fake_provider: FakeProvider) -> None:
    fake_provider.reply(PATH, sse=answer("still here"))
    dead = OpenAICompatible("primary", base_url=f"http://127.0.0.1:{closed_port()}/v1", name="dead")
    agent = Agent("a", model=[{"model": dead, "max_retries": 0}, fake(fake_provider, "secondary")])
    start = time.perf_counter()
    result = await agent.generate("hi")
    assert time.perf_counter() - start < 2
    assert result.text == "still here"
    assert [s.model for s in result.steps] == ["fake.chat/secondary"]
