"""RefusalHandler against real adapters talking to a local server: refusals as providers send them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from models.fake_provider import FakeProvider, named_sse, openai_sse
from sluicegate import Agent
from sluicegate.models.anthropic_messages import AnthropicMessagesModel
from sluicegate.models.openai_chat import OpenAIChatModel
from sluicegate.processors import RefusalHandler


@pytest.fixture(scope="module")
def _server() -> Iterator[FakeProvider]:
    provider = FakeProvider()
    yield provider
    provider.close()


@pytest.fixture
def server(_server: FakeProvider) -> Iterator[FakeProvider]:
    _server.reset()
    yield _server
    _server.reset()


def anthropic_answer(text: str, stop_reason: str) -> list[Any]:
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [],
                "stop_reason": None,
                "usage": {"input_tokens": 20, "output_tokens": 1},
            },
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": 5},
        },
        {"type": "message_stop"},
    ]
    return named_sse(events)


def refusals_agent(model: Any) -> Agent:
    handler = RefusalHandler()
    return Agent("a", model=model, output_processors=[handler], error_processors=[handler])


async def test_anthropic_refusal_stop_reason_is_retried(server: FakeProvider) -> None:
    server.reply("/v1/messages", sse=anthropic_answer("", "refusal"))
    server.reply("/v1/messages", sse=anthropic_answer("Nmap sends probes to ...", "end_turn"))
    model = AnthropicMessagesModel("claude-sonnet-4-5", api_key="sk-ant-test", base_url=server.url)
    output = await refusals_agent(model).stream("How does nmap work?")
    chunks = [chunk async for chunk in output.full_stream]
    assert await output.text == "Nmap sends probes to ..."
    assert [c.payload.step_result.reason for c in chunks if c.type == "step-finish"] == ["retry", "stop"]
    retried = server.bodies("/v1/messages")[1]
    assert "it was a refusal" in str(retried.get("system"))


async def test_openai_content_policy_error_is_retried(server: FakeProvider) -> None:
    path = "/v1/chat/completions"
    server.reply(
        path,
        status=400,
        json={
            "error": {
                "message": "Your request was rejected as a result of our safety system.",
                "type": "invalid_request_error",
                "code": "content_policy_violation",
            }
        },
    )
    server.reply(
        path,
        sse=openai_sse(
            [
                {"choices": [{"index": 0, "delta": {"role": "assistant", "content": "Here it is."}}]},
                {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            ]
        ),
    )
    model = OpenAIChatModel("gpt-4o-mini", api_key="sk-test", base_url=f"{server.url}/v1")
    result = await refusals_agent(model).generate("x")
    assert result.text == "Here it is."
    messages = server.bodies(path)[1]["messages"]
    assert messages[-1]["role"] == "user" and "<system-reminder>it was a refusal" in str(
        messages[-1]["content"]
    )
