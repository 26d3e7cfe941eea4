"""Anthropic Messages adapter against a fake server speaking the documented SSE protocol."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sluicegate.errors import APICallError
from sluicegate.models.anthropic_messages import AnthropicMessagesModel
from sluicegate.models.base import CallOptions

from .fake_provider import USER, FakeProvider, named_sse, parts_of

PATH = "/v1/messages"
PREFILL = (
    "This model does not support assistant message prefill. The conversation must end with a user message."
)


def message_start(**usage: Any) -> dict[str, Any]:
    return {
        "type": "message_start",
        "message": {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5-20250929",
            "content": [],
            "stop_reason": None,
            "usage": {"input_tokens": 25, "output_tokens": 1, **usage},
        },
    }


def text_events(*pieces: str, index: int = 0) -> list[dict[str, Any]]:
    return [
        {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}},
        *(
            {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": p}}
            for p in pieces
        ),
        {"type": "content_block_stop", "index": index},
    ]


def end(stop_reason: str = "end_turn", output_tokens: int = 15) -> list[dict[str, Any]]:
    return [
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop_reason, "stop_sequence": None},
            "usage": {"output_tokens": output_tokens},
        },
        {"type": "message_stop"},
    ]


def model(server: FakeProvider) -> AnthropicMessagesModel:
    return AnthropicMessagesModel("claude-sonnet-4-5", api_key="sk-ant-test", base_url=server.url)


async def test_streams_text_with_usage_and_cache_tokens(fake_provider: FakeProvider) -> None:
    fake_provider.reply(
        PATH,
        sse=named_sse(
            [
                message_start(cache_read_input_tokens=10, cache_creation_input_tokens=5),
                {"type": "ping"},
                *text_events("Hello", " there"),
                *end(),
            ]
        ),
    )
    parts = await parts_of(
        model(fake_provider),
        CallOptions(
            prompt=[{"role": "system", "content": "Be brief."}, *USER], max_output_tokens=100, temperature=0.5
        ),
    )
    assert [p["type"] for p in parts] == [
        "stream-start",
        "response-metadata",
        "text-start",
        "text-delta",
        "text-delta",
        "text-end",
        "finish",
    ]
    assert parts[1]["id"] == "msg_1" and parts[1]["modelId"] == "claude-sonnet-4-5-20250929"
    assert parts[1]["timestamp"]
    assert parts[-1]["finishReason"] == "stop"
    assert parts[-1]["usage"] == {
        "inputTokens": 25,
        "outputTokens": 15,
        "totalTokens": 40,
        "reasoningTokens": None,
        "cachedInputTokens": 10,
    }
    assert parts[-1]["providerMetadata"] == {"anthropic": {"cacheCreationInputTokens": 5}}
    request = fake_provider.requests[0]
    # the SDK picks the auth header (x-api-key or a bearer token, by SDK version)
    assert "sk-ant-test" in (request.headers.get("x-api-key", "") + request.headers.get("authorization", ""))
    assert request.headers["anthropic-version"]
    assert request.body == {
        "model": "claude-sonnet-4-5",
        "system": [{"type": "text", "text": "Be brief."}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}],
        "temperature": 0.5,
        "max_tokens": 100,
        "stream": True,
    }


async def test_streams_tool_use_with_partial_json(fake_provider: FakeProvider) -> None:
    fake_provider.reply(
        PATH,
        sse=named_sse(
            [
                message_start(),
                *text_events("Checking."),
                {
                    "type": "content_block_start",
                    "index": 1,
                    "content_block": {"type": "tool_use", "id": "toolu_01", "name": "weather", "input": {}},
                },
                {
                    "type": "content_block_delta",
                    "index": 1,
                    "delta": {"type": "input_json_delta", "partial_json": ""},
                },
                {
                    "type": "content_block_delta",
                    "index": 1,
                    "delta": {"type": "input_json_delta", "partial_json": '{"city": '},
                },
                {
                    "type": "content_block_delta",
                    "index": 1,
                    "delta": {"type": "input_json_delta", "partial_json": '"Oslo"}'},
                },
                {"type": "content_block_stop", "index": 1},
                {
                    "type": "content_block_start",
                    "index": 2,
                    "content_block": {"type": "tool_use", "id": "toolu_02", "name": "now", "input": {}},
                },
                {"type": "content_block_stop", "index": 2},
                *end("tool_use"),
            ]
        ),
    )
    tools = [
        {"type": "function", "name": "weather", "description": "Weather", "inputSchema": {"type": "object"}},
        {"type": "function", "name": "now", "inputSchema": {"type": "object"}},
    ]
    parts = await parts_of(
        model(fake_provider), CallOptions(prompt=USER, tools=tools, tool_choice={"type": "required"})
    )
    tool_parts = [p for p in parts if p["type"].startswith("tool-")]
    assert [p["type"] for p in tool_parts] == [
        "tool-input-start",
        "tool-input-delta",
        "tool-input-delta",
        "tool-input-delta",
        "tool-input-end",
        "tool-call",
        "tool-input-start",
        "tool-input-end",
        "tool-call",
    ]
    assert tool_parts[0] == {"type": "tool-input-start", "id": "toolu_01", "toolName": "weather"}
    assert tool_parts[5] == {
        "type": "tool-call",
        "toolCallId": "toolu_01",
        "toolName": "weather",
        "input": '{"city": "Oslo"}',
    }
    assert tool_parts[-1]["input"] == "{}"
    assert parts[-1]["finishReason"] == "tool-calls"
    body = fake_provider.bodies()[0]
    assert body["tools"] == [
        {"name": "weather", "description": "Weather", "input_schema": {"type": "object"}},
        {"name": "now", "description": "", "input_schema": {"type": "object"}},
    ]
    assert body["tool_choice"] == {"type": "any"}


async def test_streams_thinking_with_signature_and_enables_thinking(fake_provider: FakeProvider) -> None:
    fake_provider.reply(
        PATH,
        sse=named_sse(
            [
                message_start(),
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {"type": "thinking", "thinking": ""},
                },
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "thinking_delta", "thinking": "Let me see."},
                },
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "signature_delta", "signature": "sig=="},
                },
                {"type": "content_block_stop", "index": 0},
                *text_events("Yes.", index=1),
                *end(),
            ]
        ),
    )
    parts = await parts_of(
        model(fake_provider),
        CallOptions(
            prompt=USER,
            max_output_tokens=1000,
            temperature=0.3,
            provider_options={"anthropic": {"thinking": {"type": "enabled", "budgetTokens": 2048}}},
        ),
    )
    reasoning = [p for p in parts if p["type"].startswith("reasoning")]
    assert [p["type"] for p in reasoning] == [
        "reasoning-start",
        "reasoning-delta",
        "reasoning-delta",
        "reasoning-end",
    ]
    assert reasoning[1]["delta"] == "Let me see."
    assert reasoning[2]["providerMetadata"] == {"anthropic": {"signature": "sig=="}}
    body = fake_provider.bodies()[0]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 3048
    assert "temperature" not in body  # thinking does not allow sampling settings


async def test_maps_history_cache_control_and_own_thinking(fake_provider: FakeProvider) -> None:
    fake_provider.reply(PATH, sse=named_sse([message_start(), *text_events("ok"), *end()]))
    prompt = [
        {
            "role": "system",
            "content": "Long instructions",
            "providerOptions": {"anthropic": {"cacheControl": {"type": "ephemeral"}}},
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Weather?"},
                {"type": "file", "mediaType": "application/pdf", "data": "JVBERi0="},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "reasoning", "text": "mine", "providerOptions": {"anthropic": {"signature": "s1"}}},
                {"type": "reasoning", "text": "foreign"},
                {
                    "type": "tool-call",
                    "toolCallId": "toolu_1",
                    "toolName": "weather",
                    "input": {"city": "Oslo"},
                },
            ],
        },
        {
            "role": "tool",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "toolu_1",
                    "toolName": "weather",
                    "output": {"type": "error-text", "value": "boom"},
                }
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "and now?",
                    "providerOptions": {"anthropic": {"cacheControl": {"type": "ephemeral"}}},
                }
            ],
            "providerOptions": {},
        },
    ]
    await parts_of(model(fake_provider), CallOptions(prompt=prompt))
    body = fake_provider.bodies()[0]
    assert body["system"] == [
        {"type": "text", "text": "Long instructions", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Weather?"},
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0="},
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "mine", "signature": "s1"},
                {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Oslo"}},
            ],
        },
        # the tool result and the next user turn merge into one user message
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "boom", "is_error": True},
                {"type": "text", "text": "and now?", "cache_control": {"type": "ephemeral"}},
            ],
        },
    ]


async def test_message_level_cache_control_marks_the_last_block(fake_provider: FakeProvider) -> None:
    fake_provider.reply(PATH, sse=named_sse([message_start(), *text_events("ok"), *end()]))
    prompt = [
        {
            "role": "user",
            "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "providerOptions": {"anthropic": {"cacheControl": {"type": "ephemeral", "ttl": "1h"}}},
        }
    ]
    await parts_of(model(fake_provider), CallOptions(prompt=prompt))
    content = fake_provider.bodies()[0]["messages"][0]["content"]
    assert content == [
        {"type": "text", "text": "a"},
        {"type": "text", "text": "b", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
    ]


async def test_prefill_rejection_is_a_non_retryable_400(fake_provider: FakeProvider) -> None:
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": PREFILL}}
    fake_provider.reply(PATH, status=400, json=body)
    prompt = [*USER, {"role": "assistant", "content": [{"type": "text", "text": "Sure, "}]}]
    with pytest.raises(APICallError) as caught:
        await model(fake_provider).do_stream(CallOptions(prompt=prompt))
    error = caught.value
    assert str(error) == PREFILL
    assert error.status_code == 400 and error.is_retryable is False
    assert json.loads(error.response_body or "") == body
    assert error.url == f"{fake_provider.url}/v1/messages"


@pytest.mark.parametrize(
    ("status", "kind", "retryable"),
    [
        (429, "rate_limit_error", True),
        (500, "api_error", True),
        (529, "overloaded_error", True),
        (401, "authentication_error", False),
        (413, "request_too_large", False),
    ],
)
async def test_http_errors(fake_provider: FakeProvider, status: int, kind: str, retryable: bool) -> None:
    fake_provider.reply(PATH, status=status, json={"type": "error", "error": {"type": kind, "message": kind}})
    with pytest.raises(APICallError) as caught:
        await model(fake_provider).do_stream(CallOptions(prompt=USER))
    assert (caught.value.status_code, caught.value.is_retryable, str(caught.value)) == (
        status,
        retryable,
        kind,
    )


async def test_error_event_mid_stream_becomes_an_error_part(fake_provider: FakeProvider) -> None:
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    fake_provider.reply(
        PATH,
        sse=named_sse(
            [
                message_start(),
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hel"}},
                overloaded,
            ]
        ),
    )
    parts = await parts_of(model(fake_provider), CallOptions(prompt=USER))
    assert [p["type"] for p in parts] == [
        "stream-start",
        "response-metadata",
        "text-start",
        "text-delta",
        "error",
    ]
    error = parts[-1]["error"]
    assert isinstance(error, APICallError)
    assert str(error) == "Overloaded" and error.is_retryable is True
    assert json.loads(error.response_body or "") == overloaded
    assert error.url == f"{fake_provider.url}/v1/messages"


async def test_do_generate(fake_provider: FakeProvider) -> None:
    fake_provider.reply(
        PATH,
        json={
            "id": "msg_2",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "thinking", "thinking": "hm", "signature": "s"},
                {"type": "text", "text": "Hi!"},
                {"type": "tool_use", "id": "toolu_9", "name": "weather", "input": {"city": "Rome"}},
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 9, "output_tokens": 4, "cache_read_input_tokens": 3},
        },
    )
    result = await model(fake_provider).do_generate(CallOptions(prompt=USER, tool_choice={"type": "auto"}))
    assert result.content == [
        {"type": "reasoning", "text": "hm", "providerMetadata": {"anthropic": {"signature": "s"}}},
        {"type": "text", "text": "Hi!"},
        {"type": "tool-call", "toolCallId": "toolu_9", "toolName": "weather", "input": '{"city": "Rome"}'},
    ]
    assert result.finish_reason == "tool-calls"
    assert result.usage["cachedInputTokens"] == 3 and result.usage["totalTokens"] == 13
    assert fake_provider.bodies()[0]["max_tokens"] == 4096
