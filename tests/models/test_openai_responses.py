"""OpenAI Responses adapter against a fake server speaking the documented event stream."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sluicegate.errors import APICallError
from sluicegate.models.base import CallOptions
from sluicegate.models.openai_responses import OpenAIResponsesModel

from .fake_provider import USER, FakeProvider, named_sse, parts_of

PATH = "/v1/responses"
USAGE = {
    "input_tokens": 30,
    "input_tokens_details": {"cached_tokens": 8},
    "output_tokens": 20,
    "output_tokens_details": {"reasoning_tokens": 12},
    "total_tokens": 50,
}


def response(status: str = "in_progress", **extra: Any) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1741290958,
        "status": status,
        "model": "gpt-5-mini-2025-08-07",
        "output": [],
        "error": None,
        "incomplete_details": None,
        **extra,
    }


def created() -> dict[str, Any]:
    return {"type": "response.created", "sequence_number": 0, "response": response()}


def completed(**extra: Any) -> dict[str, Any]:
    return {
        "type": "response.completed",
        "sequence_number": 99,
        "response": response("completed", usage=USAGE, **extra),
    }


def message_events(item_id: str, index: int, *pieces: str) -> list[dict[str, Any]]:
    return [
        {
            "type": "response.output_item.added",
            "output_index": index,
            "item": {
                "id": item_id,
                "type": "message",
                "status": "in_progress",
                "role": "assistant",
                "content": [],
            },
        },
        {
            "type": "response.content_part.added",
            "item_id": item_id,
            "output_index": index,
            "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []},
        },
        *(
            {
                "type": "response.output_text.delta",
                "item_id": item_id,
                "output_index": index,
                "content_index": 0,
                "delta": p,
            }
            for p in pieces
        ),
        {
            "type": "response.output_text.done",
            "item_id": item_id,
            "output_index": index,
            "content_index": 0,
            "text": "".join(pieces),
        },
        {
            "type": "response.output_item.done",
            "output_index": index,
            "item": {
                "id": item_id,
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "".join(pieces), "annotations": []}],
            },
        },
    ]


def model(server: FakeProvider) -> OpenAIResponsesModel:
    return OpenAIResponsesModel("gpt-5-mini", api_key="sk-test", base_url=f"{server.url}/v1")


async def test_streams_reasoning_text_and_usage(fake_provider: FakeProvider) -> None:
    fake_provider.reply(
        PATH,
        sse=named_sse(
            [
                created(),
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {"id": "rs_1", "type": "reasoning", "summary": []},
                },
                {
                    "type": "response.reasoning_summary_part.added",
                    "item_id": "rs_1",
                    "output_index": 0,
                    "summary_index": 0,
                    "part": {"type": "summary_text", "text": ""},
                },
                {
                    "type": "response.reasoning_summary_text.delta",
                    "item_id": "rs_1",
                    "output_index": 0,
                    "summary_index": 0,
                    "delta": "Thinking",
                },
                {
                    "type": "response.output_item.done",
                    "output_index": 0,
                    "item": {
                        "id": "rs_1",
                        "type": "reasoning",
                        "summary": [{"type": "summary_text", "text": "Thinking"}],
                        "encrypted_content": "enc==",
                    },
                },
                *message_events("msg_1", 1, "Hel", "lo"),
                completed(),
            ]
        ),
    )
    parts = await parts_of(
        model(fake_provider),
        CallOptions(
            prompt=[{"role": "system", "content": "Be brief."}, *USER],
            max_output_tokens=64,
            provider_options={
                "openai": {
                    "reasoningEffort": "low",
                    "reasoningSummary": "auto",
                    "include": ["reasoning.encrypted_content"],
                    "store": False,
                    "textVerbosity": "low",
                }
            },
        ),
    )
    assert [p["type"] for p in parts] == [
        "stream-start",
        "response-metadata",
        "reasoning-start",
        "reasoning-delta",
        "reasoning-end",
        "text-start",
        "text-delta",
        "text-delta",
        "text-end",
        "finish",
    ]
    assert parts[1] == {
        "type": "response-metadata",
        "id": "resp_1",
        "modelId": "gpt-5-mini-2025-08-07",
        "timestamp": "2025-03-06T19:55:58.000Z",
    }
    assert parts[4]["providerMetadata"] == {
        "openai": {"itemId": "rs_1", "reasoningEncryptedContent": "enc=="}
    }
    assert parts[-1]["finishReason"] == "stop"
    assert parts[-1]["usage"] == {
        "inputTokens": 30,
        "outputTokens": 20,
        "totalTokens": 50,
        "reasoningTokens": 12,
        "cachedInputTokens": 8,
    }
    body = fake_provider.bodies()[0]
    assert body == {
        "model": "gpt-5-mini",
        "input": [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": [{"type": "input_text", "text": "Hi"}]},
        ],
        "max_output_tokens": 64,
        "text": {"verbosity": "low"},
        "reasoning": {"effort": "low", "summary": "auto"},
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "stream": True,
    }


async def test_streams_function_call_arguments(fake_provider: FakeProvider) -> None:
    fake_provider.reply(
        PATH,
        sse=named_sse(
            [
                created(),
                {
                    "type": "response.output_item.added",
                    "output_index": 0,
                    "item": {
                        "type": "function_call",
                        "id": "fc_1",
                        "call_id": "call_1",
                        "name": "weather",
                        "arguments": "",
                        "status": "in_progress",
                    },
                },
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": "fc_1",
                    "output_index": 0,
                    "delta": '{"city":',
                },
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": "fc_1",
                    "output_index": 0,
                    "delta": '"Oslo"}',
                },
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": "fc_1",
                    "output_index": 0,
                    "arguments": '{"city":"Oslo"}',
                },
                {
                    "type": "response.output_item.done",
                    "output_index": 0,
                    "item": {
                        "type": "function_call",
                        "id": "fc_1",
                        "call_id": "call_1",
                        "name": "weather",
                        "arguments": '{"city":"Oslo"}',
                        "status": "completed",
                    },
                },
                completed(),
            ]
        ),
    )
    tools = [
        {"type": "function", "name": "weather", "description": "Weather", "inputSchema": {"type": "object"}}
    ]
    parts = await parts_of(
        model(fake_provider),
        CallOptions(prompt=USER, tools=tools, tool_choice={"type": "tool", "toolName": "weather"}),
    )
    assert [p["type"] for p in parts][2:] == [
        "tool-input-start",
        "tool-input-delta",
        "tool-input-delta",
        "tool-input-end",
        "tool-call",
        "finish",
    ]
    assert parts[2] == {"type": "tool-input-start", "id": "call_1", "toolName": "weather"}
    assert parts[3] == {"type": "tool-input-delta", "id": "call_1", "delta": '{"city":'}
    assert parts[6]["toolCallId"] == "call_1" and parts[6]["input"] == '{"city":"Oslo"}'
    assert parts[-1]["finishReason"] == "tool-calls"
    body = fake_provider.bodies()[0]
    assert body["tools"] == [
        {
            "type": "function",
            "name": "weather",
            "description": "Weather",
            "parameters": {"type": "object"},
            "strict": False,
        }
    ]
    assert body["tool_choice"] == {"type": "function", "name": "weather"}


async def test_maps_history_items(fake_provider: FakeProvider) -> None:
    fake_provider.reply(PATH, sse=named_sse([created(), *message_events("msg_2", 0, "ok"), completed()]))
    prompt = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look"},
                {"type": "file", "mediaType": "image/jpeg", "data": "https://x.test/a.jpg"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "reasoning",
                    "text": "plan",
                    "providerOptions": {"openai": {"itemId": "rs_9", "reasoningEncryptedContent": "enc"}},
                },
                {"type": "reasoning", "text": "other provider's thoughts"},
                {"type": "text", "text": "Calling"},
                {
                    "type": "tool-call",
                    "toolCallId": "call_9",
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
                    "toolCallId": "call_9",
                    "toolName": "weather",
                    "output": {"type": "text", "value": "sunny"},
                }
            ],
        },
    ]
    await parts_of(model(fake_provider), CallOptions(prompt=prompt))
    assert fake_provider.bodies()[0]["input"] == [
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "Look"},
                {"type": "input_image", "image_url": "https://x.test/a.jpg"},
            ],
        },
        {
            "type": "reasoning",
            "id": "rs_9",
            "summary": [{"type": "summary_text", "text": "plan"}],
            "encrypted_content": "enc",
        },
        {"role": "assistant", "content": [{"type": "output_text", "text": "Calling"}]},
        {"type": "function_call", "call_id": "call_9", "name": "weather", "arguments": '{"city": "Oslo"}'},
        {"type": "function_call_output", "call_id": "call_9", "output": "sunny"},
    ]


async def test_incomplete_response_finishes_with_length(fake_provider: FakeProvider) -> None:
    incomplete = response("incomplete", usage=USAGE, incomplete_details={"reason": "max_output_tokens"})
    fake_provider.reply(
        PATH,
        sse=named_sse(
            [
                created(),
                *message_events("m", 0, "Hi"),
                {"type": "response.incomplete", "response": incomplete},
            ]
        ),
    )
    parts = await parts_of(model(fake_provider), CallOptions(prompt=USER))
    assert parts[-1]["finishReason"] == "length"


async def test_error_event_mid_stream(fake_provider: FakeProvider) -> None:
    event = {
        "type": "error",
        "code": "server_error",
        "sequence_number": 3,
        "message": "An error occurred while processing your request. You can retry your request.",
        "param": None,
    }
    fake_provider.reply(PATH, sse=named_sse([created(), *message_events("m", 0, "Hi")[:3], event]))
    parts = await parts_of(model(fake_provider), CallOptions(prompt=USER))
    assert [p["type"] for p in parts][-2:] == ["text-delta", "error"]
    error = parts[-1]["error"]
    assert isinstance(error, APICallError)
    assert error.is_retryable is True and error.data == event
    assert str(error).startswith("An error occurred")
    assert error.url == f"{fake_provider.url}/v1/responses"


async def test_nested_error_event_mid_stream_keeps_the_event_shape(fake_provider: FakeProvider) -> None:
    inner = {"type": "invalid_request_error", "code": "invalid_prompt", "message": "Invalid prompt."}
    fake_provider.reply(
        PATH, sse=named_sse([created(), {"type": "error", "sequence_number": 1, "error": inner}])
    )
    parts = await parts_of(model(fake_provider), CallOptions(prompt=USER))
    error = parts[-1]["error"]
    assert str(error) == "Invalid prompt." and error.is_retryable is False
    assert error.data == {"type": "error", "error": inner}


async def test_response_failed_event(fake_provider: FakeProvider) -> None:
    failed = {
        "type": "response.failed",
        "sequence_number": 4,
        "response": response("failed", error={"code": "server_error", "message": "The model failed."}),
    }
    fake_provider.reply(PATH, sse=named_sse([created(), failed]))
    parts = await parts_of(model(fake_provider), CallOptions(prompt=USER))
    assert [p["type"] for p in parts] == ["stream-start", "response-metadata", "error"]
    error = parts[-1]["error"]
    assert str(error) == "The model failed." and error.is_retryable is True and error.data == failed


@pytest.mark.parametrize(("status", "retryable"), [(400, False), (429, True), (500, True)])
async def test_http_errors(fake_provider: FakeProvider, status: int, retryable: bool) -> None:
    body = {
        "error": {"message": f"status {status}", "type": "invalid_request_error", "param": None, "code": None}
    }
    fake_provider.reply(PATH, status=status, json=body)
    with pytest.raises(APICallError) as caught:
        await model(fake_provider).do_stream(CallOptions(prompt=USER))
    assert (caught.value.status_code, caught.value.is_retryable, str(caught.value)) == (
        status,
        retryable,
        f"status {status}",
    )
    assert json.loads(caught.value.response_body or "") == body


async def test_do_generate(fake_provider: FakeProvider) -> None:
    fake_provider.reply(
        PATH,
        json=response(
            "completed",
            usage=USAGE,
            output=[
                {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "why"}]},
                {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "output_text", "text": "Answer", "annotations": []}],
                },
                {
                    "id": "fc_1",
                    "type": "function_call",
                    "call_id": "call_1",
                    "name": "weather",
                    "arguments": "{}",
                },
            ],
        ),
    )
    result = await model(fake_provider).do_generate(CallOptions(prompt=USER))
    assert [c["type"] for c in result.content] == ["reasoning", "text", "tool-call"]
    assert result.content[1]["text"] == "Answer" and result.content[2]["toolCallId"] == "call_1"
    assert result.finish_reason == "tool-calls" and result.usage["reasoningTokens"] == 12
