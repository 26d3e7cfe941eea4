"""OpenAI Chat Completions adapter against a fake server speaking the documented wire format."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sluicegate.errors import APICallError
from sluicegate.models.base import CallOptions
from sluicegate.models.openai_chat import OpenAIChatModel

from .fake_provider import USER, FakeProvider, openai_sse, parts_of

PATH = "/v1/chat/completions"


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "gpt-4o-mini-2024-07-18",
        **extra,
    }
    body["choices"] = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return body


USAGE = {
    "prompt_tokens": 12,
    "completion_tokens": 7,
    "total_tokens": 19,
    "prompt_tokens_details": {"cached_tokens": 4},
    "completion_tokens_details": {"reasoning_tokens": 2},
}


def model(server: FakeProvider, **kwargs: Any) -> OpenAIChatModel:
    return OpenAIChatModel("gpt-4o-mini", api_key="sk-test", base_url=f"{server.url}/v1", **kwargs)


async def test_streams_text_usage_and_response_metadata(fake_provider: FakeProvider) -> None:
    fake_provider.reply(
        PATH,
        sse=openai_sse(
            [
                chunk({"role": "assistant", "content": ""}),
                chunk({"content": "Hel"}),
                chunk({"content": "lo"}),
                chunk({}, "stop"),
                chunk(None, usage=USAGE),
            ]
        ),
    )
    parts = await parts_of(
        model(fake_provider),
        CallOptions(
            prompt=[{"role": "system", "content": "Be brief."}, *USER],
            max_output_tokens=50,
            temperature=0.2,
            provider_options={"openai": {"reasoningEffort": "low", "user": "u1"}},
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
    assert parts[1] == {
        "type": "response-metadata",
        "id": "chatcmpl-1",
        "modelId": "gpt-4o-mini-2024-07-18",
        "timestamp": "2023-11-14T22:13:20.000Z",
    }
    assert "".join(p["delta"] for p in parts if p["type"] == "text-delta") == "Hello"
    assert parts[-1] == {
        "type": "finish",
        "finishReason": "stop",
        "usage": {
            "inputTokens": 12,
            "outputTokens": 7,
            "totalTokens": 19,
            "reasoningTokens": 2,
            "cachedInputTokens": 4,
        },
    }
    request = fake_provider.requests[0]
    assert request.headers["authorization"] == "Bearer sk-test"
    assert request.body == {
        "model": "gpt-4o-mini",
        "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}],
        "max_completion_tokens": 50,
        "temperature": 0.2,
        "reasoning_effort": "low",
        "user": "u1",
        "stream": True,
        "stream_options": {"include_usage": True},
    }


async def test_streams_tool_calls_with_incremental_arguments(fake_provider: FakeProvider) -> None:
    fake_provider.reply(
        PATH,
        sse=openai_sse(
            [
                chunk(
                    {
                        "role": "assistant",
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_a",
                                "type": "function",
                                "function": {"name": "weather", "arguments": ""},
                            }
                        ],
                    }
                ),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city":'}}]}),
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": 1,
                                "id": "call_b",
                                "type": "function",
                                "function": {"name": "time", "arguments": "{}"},
                            }
                        ]
                    }
                ),
                chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
                chunk({}, "tool_calls"),
                chunk(None, usage=USAGE),
            ]
        ),
    )
    tools = [
        {
            "type": "function",
            "name": "weather",
            "description": "Get weather",
            "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
        {"type": "function", "name": "time", "inputSchema": {"type": "object"}},
    ]
    parts = await parts_of(
        model(fake_provider),
        CallOptions(prompt=USER, tools=tools, tool_choice={"type": "tool", "toolName": "weather"}),
    )
    kinds = [p["type"] for p in parts]
    assert kinds == [
        "stream-start",
        "response-metadata",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-start",
        "tool-input-delta",
        "tool-input-delta",
        "tool-input-end",
        "tool-call",
        "tool-input-end",
        "tool-call",
        "finish",
    ]
    assert parts[2] == {"type": "tool-input-start", "id": "call_a", "toolName": "weather"}
    deltas = "".join(p["delta"] for p in parts if p["type"] == "tool-input-delta" and p["id"] == "call_a")
    assert deltas == '{"city":"Paris"}'
    calls = [p for p in parts if p["type"] == "tool-call"]
    assert calls == [
        {"type": "tool-call", "toolCallId": "call_a", "toolName": "weather", "input": '{"city":"Paris"}'},
        {"type": "tool-call", "toolCallId": "call_b", "toolName": "time", "input": "{}"},
    ]
    assert parts[-1]["finishReason"] == "tool-calls"
    body = fake_provider.requests[0].body
    assert body["tools"][0] == {
        "type": "function",
        "function": {
            "name": "weather",
            "description": "Get weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
    assert body["tool_choice"] == {"type": "function", "function": {"name": "weather"}}


async def test_tool_choice_none_sends_no_tools_and_required_is_passed(fake_provider: FakeProvider) -> None:
    for _ in range(2):
        fake_provider.reply(PATH, sse=openai_sse([chunk({"content": "x"}, "stop")]))
    tools = [{"type": "function", "name": "weather", "inputSchema": {"type": "object"}}]
    m = model(fake_provider)
    await parts_of(m, CallOptions(prompt=USER, tools=tools, tool_choice={"type": "none"}))
    await parts_of(m, CallOptions(prompt=USER, tools=tools, tool_choice={"type": "required"}))
    first, second = fake_provider.bodies()
    assert "tools" not in first and "tool_choice" not in first
    assert second["tool_choice"] == "required"


async def test_maps_history_with_tool_results_images_and_reasoning(fake_provider: FakeProvider) -> None:
    fake_provider.reply(PATH, sse=openai_sse([chunk({"content": "ok"}, "stop")]))
    prompt = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "file", "mediaType": "image/png", "data": "iVBORw0KGgo="},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "reasoning", "text": "hmm"},
                {"type": "text", "text": "Checking"},
                {"type": "tool-call", "toolCallId": "c1", "toolName": "weather", "input": {"city": "Oslo"}},
            ],
        },
        {
            "role": "tool",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "c1",
                    "toolName": "weather",
                    "output": {"type": "json", "value": {"temp": 3}},
                }
            ],
        },
    ]
    await parts_of(model(fake_provider), CallOptions(prompt=prompt))
    messages = fake_provider.bodies()[0]["messages"]
    assert messages[0] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ],
    }
    # OpenAI itself does not take reasoning back: only OpenAI-compatible servers get reasoning_content.
    assert messages[1] == {
        "role": "assistant",
        "content": "Checking",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": '{"city": "Oslo"}'}}
        ],
    }
    assert messages[2] == {"role": "tool", "tool_call_id": "c1", "content": '{"temp": 3}'}


async def test_json_response_format_becomes_json_schema(fake_provider: FakeProvider) -> None:
    fake_provider.reply(PATH, sse=openai_sse([chunk({"content": "{}"}, "stop")]))
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    await parts_of(
        model(fake_provider), CallOptions(prompt=USER, response_format={"type": "json", "schema": schema})
    )
    assert fake_provider.bodies()[0]["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "response", "schema": schema, "strict": False},
    }


async def test_reasoning_deltas_are_streamed_as_reasoning(fake_provider: FakeProvider) -> None:
    fake_provider.reply(
        PATH,
        sse=openai_sse(
            [
                chunk({"reasoning_content": "Let me "}),
                chunk({"reasoning_content": "think."}),
                chunk({"content": "Done."}),
                chunk({}, "stop"),
            ]
        ),
    )
    parts = await parts_of(model(fake_provider), CallOptions(prompt=USER))
    assert [p["type"] for p in parts][2:] == [
        "reasoning-start",
        "reasoning-delta",
        "reasoning-delta",
        "reasoning-end",
        "text-start",
        "text-delta",
        "text-end",
        "finish",
    ]
    assert "".join(p["delta"] for p in parts if p["type"] == "reasoning-delta") == "Let me think."


@pytest.mark.parametrize(
    ("status", "retryable"),
    [(400, False), (401, False), (408, True), (409, True), (429, True), (500, True), (503, True)],
)
async def test_http_errors_become_api_call_errors(
    fake_provider: FakeProvider, status: int, retryable: bool
) -> None:
    error_body = {"error": {"message": f"failure {status}", "type": "invalid_request_error", "code": None}}
    fake_provider.reply(PATH, status=status, json=error_body, headers={"x-request-id": "req_1"})
    with pytest.raises(APICallError) as caught:
        await model(fake_provider).do_stream(CallOptions(prompt=USER))
    error = caught.value
    assert error.status_code == status
    assert error.is_retryable is retryable
    assert str(error) == f"failure {status}"
    assert json.loads(error.response_body or "") == error_body
    assert error.url == f"{fake_provider.url}/v1/chat/completions"
    assert error.response_headers is not None and error.response_headers["x-request-id"] == "req_1"
    assert error.request_body_values["messages"] == [{"role": "user", "content": "Hi"}]


async def test_error_event_mid_stream_becomes_an_error_part(fake_provider: FakeProvider) -> None:
    fake_provider.reply(
        PATH,
        sse=openai_sse(
            [
                chunk({"content": "Hel"}),
                {
                    "error": {
                        "message": "The server had an error while processing your request.",
                        "type": "server_error",
                    }
                },
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
    assert str(error) == "The server had an error while processing your request."
    assert error.is_retryable is True
    assert error.url == f"{fake_provider.url}/v1/chat/completions"
    assert json.loads(error.response_body or "")["type"] == "server_error"


async def test_a_connection_reset_mid_stream_is_a_retryable_error_part(fake_provider: FakeProvider) -> None:
    fake_provider.reply(
        PATH, sse=openai_sse([chunk({"content": "Hel"}), chunk({"content": "lo"})]), cut_after=1
    )
    parts = await parts_of(model(fake_provider), CallOptions(prompt=USER))
    assert parts[-1]["type"] == "error"
    assert parts[-1]["error"].is_retryable is True
    assert "Hel" in [p.get("delta") for p in parts]


async def test_do_generate_reads_a_completion(fake_provider: FakeProvider) -> None:
    fake_provider.reply(
        PATH,
        json={
            "id": "chatcmpl-9",
            "object": "chat.completion",
            "created": 1700000000,
            "model": "gpt-4o-mini",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": "Let me check.",
                        "tool_calls": [
                            {
                                "id": "c9",
                                "type": "function",
                                "function": {"name": "weather", "arguments": '{"a":1}'},
                            }
                        ],
                    },
                }
            ],
            "usage": USAGE,
        },
    )
    result = await model(fake_provider).do_generate(CallOptions(prompt=USER))
    assert result.content == [
        {"type": "text", "text": "Let me check."},
        {"type": "tool-call", "toolCallId": "c9", "toolName": "weather", "input": '{"a":1}'},
    ]
    assert result.finish_reason == "tool-calls"
    assert result.usage["cachedInputTokens"] == 4 and result.usage["reasoningTokens"] == 2
    assert result.response is not None and result.response["id"] == "chatcmpl-9"
    assert "stream" not in fake_provider.bodies()[0]


async def test_do_generate_raises_on_http_error(fake_provider: FakeProvider) -> None:
    fake_provider.reply(
        PATH,
        status=429,
        json={"error": {"message": "Rate limit reached", "type": "rate_limit"}},
        headers={"retry-after": "1"},
    )
    with pytest.raises(APICallError) as caught:
        await model(fake_provider).do_generate(CallOptions(prompt=USER))
    assert caught.value.status_code == 429 and caught.value.is_retryable
    assert caught.value.response_headers is not None and caught.value.response_headers["retry-after"] == "1"


async def test_unreachable_server_is_a_retryable_api_call_error() -> None:
    m = OpenAIChatModel("gpt-4o-mini", api_key="sk", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(APICallError) as caught:
        await m.do_stream(CallOptions(prompt=USER))
    assert caught.value.is_retryable and caught.value.status_code is None
    assert caught.value.url == "http://127.0.0.1:9/v1/chat/completions"
