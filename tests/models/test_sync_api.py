"""The blocking API with SDK-backed adapters: `generate_sync` / `stream_sync` twice in a row,
after an `asyncio.run`, and in notebook order (inside a running loop, then `await`), for the
OpenAI, Anthropic and OpenAI-compatible adapters against the fake provider server (keeping
connections alive, so the SDK clients pool them as against a real provider)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.errors import SluicegateError
from sluicegate.models import OpenAICompatible
from sluicegate.models.anthropic_messages import AnthropicMessagesModel
from sluicegate.models.openai_chat import OpenAIChatModel
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step
from sluicegate.tools import tool

from .fake_provider import FakeProvider, named_sse, openai_sse

OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"


def _openai_reply(server: FakeProvider, text: str) -> None:
    base = {"id": "c1", "object": "chat.completion.chunk", "created": 1700000000, "model": "m"}
    server.reply(
        OPENAI_PATH,
        keep_alive=True,
        sse=openai_sse(
            [
                {**base, "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]},
                {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            ]
        ),
    )


def _anthropic_reply(server: FakeProvider, text: str) -> None:
    server.reply(
        ANTHROPIC_PATH,
        keep_alive=True,
        sse=named_sse(
            [
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg_1",
                        "type": "message",
                        "role": "assistant",
                        "model": "claude",
                        "content": [],
                        "usage": {"input_tokens": 3, "output_tokens": 0},
                    },
                },
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
                {"type": "content_block_stop", "index": 0},
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": "end_turn"},
                    "usage": {"output_tokens": 2},
                },
                {"type": "message_stop"},
            ]
        ),
    )


Adapter = tuple[Callable[[FakeProvider], Any], Callable[[FakeProvider, str], None]]

ADAPTERS: dict[str, Adapter] = {
    "openai": (
        lambda s: OpenAIChatModel("gpt-4o-mini", api_key="sk-test", base_url=f"{s.url}/v1"),
        _openai_reply,
    ),
    "anthropic": (
        lambda s: AnthropicMessagesModel("claude", api_key="sk-ant", base_url=s.url),
        _anthropic_reply,
    ),
    "compatible": (lambda s: OpenAICompatible("local", base_url=f"{s.url}/v1"), _openai_reply),
}


@pytest.fixture(params=sorted(ADAPTERS))
def adapter(
    request: pytest.FixtureRequest, fake_provider: FakeProvider
) -> tuple[Agent, Callable[[str], None]]:
    make_model, reply = ADAPTERS[request.param]
    agent: Agent = Agent("sync", model=make_model(fake_provider))
    return agent, lambda text: reply(fake_provider, text)


def test_two_sync_calls_in_a_row(adapter: tuple[Agent, Callable[[str], None]]) -> None:
    agent, reply = adapter
    reply("one")
    reply("two")
    assert agent.generate_sync("a").text == "one"
    assert agent.generate_sync("b").text == "two"


def test_await_then_sync_then_stream_sync(adapter: tuple[Agent, Callable[[str], None]]) -> None:
    agent, reply = adapter
    for text in ("first", "second", "third", "fourth"):
        reply(text)
    assert asyncio.run(agent.generate("a")).text == "first"
    assert agent.generate_sync("b").text == "second"
    assert asyncio.run(agent.generate("c")).text == "third"
    output = agent.stream_sync("d")
    assert "".join(output.text_stream) == "fourth"
    assert output.finish_reason == "stop"


async def test_notebook_order(adapter: tuple[Agent, Callable[[str], None]]) -> None:
    # A notebook cell runs inside a running loop: the sync call must not need the loop, and a
    # later `await` must not trip over clients made on the sync call's loop.
    agent, reply = adapter
    for text in ("one", "two", "three"):
        reply(text)
    assert agent.generate_sync("a").text == "one"
    assert (await agent.generate("b")).text == "two"
    assert agent.generate_sync("c").text == "three"


def test_stream_sync_reads_chunks_and_results() -> None:
    agent = Agent("s", model=MockModel([text_step("hello world", pieces=3)]))
    output = agent.stream_sync("x")
    kinds = [chunk.type for chunk in output.full_stream]
    assert kinds.count("text-delta") == 3 and kinds[-1] == "finish"
    assert output.text == "hello world"
    assert output.usage.total_tokens == 15


def test_leaving_a_sync_stream_early_closes_the_run() -> None:
    agent = Agent("s", model=MockModel([text_step("a b c d", pieces=4)]))
    stream = agent.stream_sync("x").text_stream
    assert next(iter(stream)) == "a "
    stream.close()  # type: ignore[attr-defined]


def test_a_sync_call_from_inside_a_tool_is_refused_not_deadlocked() -> None:
    inner = Agent("inner", model=MockModel([text_step("hi")]))

    @tool
    async def ask() -> str:
        """Ask the inner agent."""
        return inner.generate_sync("x").text

    outer = Agent(
        "outer", model=MockModel([tool_call_step(("c1", "ask", {})), text_step("done")]), tools=[ask]
    )
    result = outer.generate_sync("x")
    assert "generate_sync/stream_sync were called from inside" in str(result.tool_errors[0].payload.error)


def test_errors_surface_from_the_sync_call() -> None:
    agent = Agent("s", model=MockModel([RuntimeError("provider down")]))
    with pytest.raises(RuntimeError, match="provider down"):
        agent.generate_sync("x")
    with pytest.raises(SluicegateError, match="max_steps"):
        agent.generate_sync("x", max_steps=0)
