"""OpenAI-compatible servers: structured-output modes, fallback on rejection, tool-call history
and streamed usage, against the fake provider."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from sluicegate.errors import APICallError, ConfigurationError
from sluicegate.models import OpenAICompatible
from sluicegate.models.base import CallOptions
from sluicegate.models.openai_compatible import COMPATIBLE_PROVIDERS
from sluicegate.models.structured_outputs import apply_mode, rejects_response_format

from .fake_provider import USER, FakeProvider, openai_sse, parts_of

PATH = "/v1/chat/completions"
SCHEMA = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
JSON_CALL = CallOptions(prompt=USER, response_format={"type": "json", "schema": SCHEMA})


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        **extra,
    }
    body["choices"] = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return body


def ok_stream() -> list[Any]:
    return openai_sse([chunk({"content": '{"a": "x"}'}, "stop")])


def compat(server: FakeProvider, **kwargs: Any) -> OpenAICompatible:
    return OpenAICompatible("m", base_url=f"{server.url}/v1", name="llamacpp", **kwargs)


REJECTION = {"error": {"message": "response_format: Input should be 'text' or 'json_object'"}}


async def test_json_object_mode_sends_the_schema_inside_and_in_the_system_prompt(
    fake_provider: FakeProvider,
) -> None:
    fake_provider.reply(PATH, sse=ok_stream())
    await parts_of(compat(fake_provider, structured_outputs="json_object"), JSON_CALL)
    body = fake_provider.bodies()[0]
    assert body["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert body["messages"][0]["role"] == "system"
    assert '"required": ["a"]' in body["messages"][0]["content"]


async def test_prompt_mode_sends_no_response_format_and_extends_the_system_prompt(
    fake_provider: FakeProvider,
) -> None:
    fake_provider.reply(PATH, sse=ok_stream())
    options = CallOptions(
        prompt=[{"role": "system", "content": "Be brief."}, *USER],
        response_format={"type": "json", "schema": SCHEMA},
    )
    await parts_of(compat(fake_provider, structured_outputs="prompt"), options)
    body = fake_provider.bodies()[0]
    assert "response_format" not in body
    assert body["messages"][0]["content"].startswith("Be brief.\n\nJSON schema:")
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


async def test_a_rejected_json_schema_falls_back_and_the_mode_is_kept(fake_provider: FakeProvider) -> None:
    fake_provider.reply(PATH, status=422, json=REJECTION)
    fake_provider.reply(PATH, sse=ok_stream())
    fake_provider.reply(PATH, sse=ok_stream())
    model = compat(fake_provider)
    parts = await parts_of(model, JSON_CALL)
    assert "".join(p.get("delta", "") for p in parts if p["type"] == "text-delta") == '{"a": "x"}'
    first, second = fake_provider.bodies()
    assert first["response_format"]["type"] == "json_schema"
    assert second["response_format"]["type"] == "json_object"
    assert model.structured_outputs == "json_object"
    await parts_of(model, JSON_CALL)  # the next call goes straight to the mode that worked
    assert fake_provider.bodies()[2]["response_format"]["type"] == "json_object"


async def test_fallback_reaches_prompt_mode_for_non_streaming_calls(fake_provider: FakeProvider) -> None:
    fake_provider.reply(PATH, status=400, json={"error": {"message": "json_schema is not supported"}})
    fake_provider.reply(PATH, status=400, json={"error": {"message": "unknown response_format type"}})
    fake_provider.reply(
        PATH,
        json={
            "id": "c1",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "message": {"content": '{"a": "y"}'}, "finish_reason": "stop"}],
        },
    )
    model = compat(fake_provider)
    result = await model.do_generate(JSON_CALL)
    assert result.content == [{"type": "text", "text": '{"a": "y"}'}]
    assert "response_format" not in fake_provider.bodies()[2]
    assert model.structured_outputs == "prompt"


async def test_other_errors_do_not_fall_back(fake_provider: FakeProvider) -> None:
    fake_provider.reply(PATH, status=400, json={"error": {"message": "context length exceeded"}})
    model = compat(fake_provider)
    with pytest.raises(APICallError):
        await model.do_generate(JSON_CALL)
    assert len(fake_provider.bodies()) == 1 and model.structured_outputs == "json_schema"
    # without a JSON response_format there is nothing to fall back from
    fake_provider.reply(PATH, status=422, json=REJECTION)
    with pytest.raises(APICallError):
        await model.do_generate(CallOptions(prompt=USER))
    assert model.structured_outputs == "json_schema"


async def test_the_last_mode_rejected_raises(fake_provider: FakeProvider) -> None:
    fake_provider.reply(PATH, status=422, json=REJECTION)
    with pytest.raises(APICallError):
        await compat(fake_provider, structured_outputs="prompt").do_generate(JSON_CALL)


async def test_concurrent_rejections_move_on_one_step(fake_provider: FakeProvider) -> None:
    model = compat(fake_provider)
    # Replies are taken in arrival order: each rejection waits, so both first calls are in
    # before either is answered (without it, a busy machine let the first call's retry take the
    # second rejection, and the mode rightly moved on twice).
    for _ in range(2):
        fake_provider.reply(PATH, status=422, json=REJECTION, delay=0.5)
    for _ in range(2):
        fake_provider.reply(PATH, sse=ok_stream())
    await asyncio.gather(parts_of(model, JSON_CALL), parts_of(model, JSON_CALL))
    assert model.structured_outputs == "json_object"


def test_unknown_mode_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="json_schema, json_object, prompt"):
        OpenAICompatible("m", base_url="http://127.0.0.1:9/v1", structured_outputs="grammar")  # type: ignore[arg-type]


def test_named_providers_carry_a_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    assert all(p.structured_outputs == "json_schema" for p in COMPATIBLE_PROVIDERS.values())
    model = OpenAICompatible.for_provider("llamacpp", "m")
    assert model.structured_outputs == "json_schema"


def test_json_without_schema_is_json_object_in_every_mode_but_prompt() -> None:
    for mode, expected in (
        ("json_schema", {"type": "json_object"}),
        ("json_object", {"type": "json_object"}),
    ):
        body: dict[str, Any] = {"messages": [], "response_format": {"type": "json_object"}}
        apply_mode(body, {"type": "json"}, mode)  # type: ignore[arg-type]
        assert body["response_format"] == expected
        assert body["messages"] == [{"role": "system", "content": "You MUST answer with JSON."}]


def test_rejection_needs_a_client_error_about_the_format() -> None:
    assert rejects_response_format(APICallError("response_format invalid", status_code=400))
    # llama-cpp-python's server reports its request validation errors as 500s
    assert rejects_response_format(APICallError("loc: body.response_format.type", status_code=500))
    assert rejects_response_format(APICallError("structured output unsupported", status_code=422))
    assert not rejects_response_format(APICallError("schema store is down", status_code=503))
    assert not rejects_response_format(APICallError("response_format", status_code=None))
    assert not rejects_response_format(APICallError("rate limited", status_code=400))
    assert not rejects_response_format(ValueError("response_format"))


async def test_tool_call_history_sends_empty_content_not_null(fake_provider: FakeProvider) -> None:
    fake_provider.reply(PATH, sse=ok_stream())
    prompt = [
        *USER,
        {
            "role": "assistant",
            "content": [
                {"type": "tool-call", "toolCallId": "c1", "toolName": "w", "input": {"city": "Oslo"}}
            ],
        },
        {
            "role": "tool",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "c1",
                    "toolName": "w",
                    "output": {"type": "text", "value": "3"},
                }
            ],
        },
    ]
    await parts_of(compat(fake_provider), CallOptions(prompt=prompt))
    assistant = fake_provider.bodies()[0]["messages"][1]
    assert assistant["content"] == "" and assistant["tool_calls"][0]["function"]["name"] == "w"


async def test_stream_usage_is_requested_and_read(fake_provider: FakeProvider) -> None:
    usage = {"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12}
    fake_provider.reply(
        PATH,
        sse=openai_sse(
            [chunk({"content": "hi"}), chunk(None, None), chunk({}, "stop"), chunk(None, usage=usage)]
        ),
    )
    parts = await parts_of(compat(fake_provider), CallOptions(prompt=USER))
    assert fake_provider.bodies()[0]["stream_options"] == {"include_usage": True}
    assert parts[-1]["usage"]["inputTokens"] == 9 and parts[-1]["usage"]["outputTokens"] == 3
