"""Google Gemini through the official `google-genai` SDK, against a fake Gemini API server."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sluicegate import Agent, tool
from sluicegate.errors import APICallError, MissingAPIKeyError
from sluicegate.models import resolve_model
from sluicegate.models.base import CallOptions

from .fake_provider import USER, FakeProvider, parts_of

pytest.importorskip("google.genai")

from sluicegate.models.google_gemini import GeminiModel

STREAM = "/v1beta/models/gemini-test:streamGenerateContent"


def sse(*chunks: dict[str, Any]) -> list[tuple[str | None, Any]]:
    return [(None, c) for c in chunks]


def chunk(
    parts: list[dict[str, Any]] | None = None, finish: str | None = None, **extra: Any
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts or []}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "modelVersion": "gemini-test-001", "responseId": "r1", **extra}


USAGE = {
    "promptTokenCount": 11,
    "candidatesTokenCount": 5,
    "totalTokenCount": 20,
    "thoughtsTokenCount": 4,
    "cachedContentTokenCount": 3,
}


def model(server: FakeProvider) -> GeminiModel:
    return GeminiModel("gemini-test", api_key="g-test", base_url=server.url)


async def test_streams_text_reasoning_and_usage(fake_provider: FakeProvider) -> None:
    fake_provider.reply(
        STREAM,
        sse=sse(
            chunk([{"text": "thinking", "thought": True}]),
            chunk([{"text": "Hel"}]),
            chunk([{"text": "lo"}], "STOP", usageMetadata=USAGE),
        ),
    )
    parts = await parts_of(
        model(fake_provider), CallOptions(prompt=USER, temperature=0.2, max_output_tokens=9)
    )
    kinds = [p["type"] for p in parts]
    assert kinds == [
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
    assert parts[1]["id"] == "r1" and parts[1]["modelId"] == "gemini-test-001"
    assert "".join(p["delta"] for p in parts if p["type"] == "text-delta") == "Hello"
    assert parts[-1]["finishReason"] == "stop"
    assert parts[-1]["usage"] == {
        "inputTokens": 11,
        "outputTokens": 5,
        "totalTokens": 20,
        "reasoningTokens": 4,
        "cachedInputTokens": 3,
    }
    request = fake_provider.requests[0]
    assert request.headers["x-goog-api-key"] == "g-test"
    assert request.body["contents"] == [{"role": "user", "parts": [{"text": "Hi"}]}]
    assert request.body["generationConfig"]["temperature"] == 0.2
    assert request.body["generationConfig"]["maxOutputTokens"] == 9


async def test_maps_system_tools_tool_choice_history_and_json_schema(fake_provider: FakeProvider) -> None:
    fake_provider.reply(STREAM, sse=sse(chunk([{"text": "{}"}], "STOP")))
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    prompt = [
        {"role": "system", "content": "Be brief."},
        *USER,
        {
            "role": "assistant",
            "content": [
                {"type": "tool-call", "toolCallId": "c1", "toolName": "w", "input": '{"city": "Oslo"}'}
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
    options = CallOptions(
        prompt=prompt,
        tools=[{"type": "function", "name": "w", "description": "weather", "inputSchema": schema}],
        tool_choice={"type": "tool", "toolName": "w"},
        response_format={"type": "json", "schema": schema},
    )
    await parts_of(model(fake_provider), options)
    body = fake_provider.bodies()[0]
    assert body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert body["contents"][1] == {
        "role": "model",
        "parts": [{"functionCall": {"name": "w", "args": {"city": "Oslo"}}}],
    }
    assert body["contents"][2]["parts"][0]["functionResponse"] == {
        "name": "w",
        "response": {"name": "w", "content": "3"},
    }
    declaration = body["tools"][0]["functionDeclarations"][0]
    # the SDK passes this field's name through as written (the API takes both spellings)
    assert declaration.get("parametersJsonSchema", declaration.get("parameters_json_schema")) == schema
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["w"]}}
    assert body["generationConfig"]["responseMimeType"] == "application/json"
    assert body["generationConfig"]["responseJsonSchema"] == schema


async def test_tool_loop_through_an_agent(fake_provider: FakeProvider) -> None:
    fake_provider.reply(
        STREAM, sse=sse(chunk([{"functionCall": {"name": "get_weather", "args": {"city": "Oslo"}}}], "STOP"))
    )
    fake_provider.reply(STREAM, sse=sse(chunk([{"text": "Sunny."}], "STOP", usageMetadata=USAGE)))

    @tool
    def get_weather(city: str) -> str:
        """Current weather in a city."""
        return f"sunny in {city}"

    agent = Agent(name="g", instructions="Weather.", model=model(fake_provider), tools=[get_weather])
    result = await agent.generate("Weather in Oslo?")
    assert result.text == "Sunny."
    assert [s.finish_reason for s in result.steps] == ["tool-calls", "stop"]
    second = fake_provider.bodies()[1]["contents"]
    assert second[-1]["parts"][0]["functionResponse"]["response"]["content"] == "sunny in Oslo"


async def test_http_errors_become_api_call_errors(fake_provider: FakeProvider) -> None:
    fake_provider.reply(
        STREAM,
        status=429,
        json={"error": {"code": 429, "message": "Resource exhausted", "status": "RESOURCE_EXHAUSTED"}},
    )
    with pytest.raises(APICallError) as caught:
        await parts_of(model(fake_provider), CallOptions(prompt=USER))
    assert caught.value.status_code == 429 and caught.value.is_retryable
    assert "Resource exhausted" in str(caught.value)
    fake_provider.reply(
        STREAM, status=400, json={"error": {"code": 400, "message": "bad", "status": "INVALID_ARGUMENT"}}
    )
    with pytest.raises(APICallError) as bad:
        await model(fake_provider).do_generate(CallOptions(prompt=USER))
    assert bad.value.status_code == 400 and not bad.value.is_retryable
    assert json.loads(bad.value.response_body or "{}")["error"]["status"] == "INVALID_ARGUMENT"


async def test_safety_and_length_finish_reasons(fake_provider: FakeProvider) -> None:
    fake_provider.reply(STREAM, sse=sse(chunk([{"text": "x"}], "MAX_TOKENS")))
    fake_provider.reply(STREAM, sse=sse(chunk([], "SAFETY")))
    assert (await parts_of(model(fake_provider), CallOptions(prompt=USER)))[-1]["finishReason"] == "length"
    assert (await parts_of(model(fake_provider), CallOptions(prompt=USER)))[-1][
        "finishReason"
    ] == "content-filter"


def test_model_string_needs_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(MissingAPIKeyError, match="GEMINI_API_KEY"):
        resolve_model("google/gemini-2.5-flash")
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    resolved = resolve_model("google/gemini-2.5-flash")
    assert isinstance(resolved, GeminiModel) and resolved.model_id == "gemini-2.5-flash"
