"""ProviderHistoryCompat end to end: reactive rules repair the persisted history and retry;
preemptive rules change only what is sent."""

from __future__ import annotations

import re
from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.errors import APICallError
from sluicegate.messages import Message
from sluicegate.models.base import CallOptions
from sluicegate.processors import CompatRule, ProviderHistoryCompat
from sluicegate.processors.builtin.provider_history_compat import is_maybe_anthropic, is_maybe_cerebras
from sluicegate.testing import MockModel, text_step

from .conftest import PersistedRecorder, prompt_parts, stored_parts

TOOL_ID_ERROR = "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
FOREIGN_ID = "functions.weather:0"

TOOL_HISTORY = [
    {"role": "user", "content": "Weather in Oslo?"},
    {
        "role": "assistant",
        "content": [
            {"type": "tool-call", "toolCallId": FOREIGN_ID, "toolName": "weather", "input": {"city": "Oslo"}}
        ],
    },
    {
        "role": "tool",
        "content": [
            {
                "type": "tool-result",
                "toolCallId": FOREIGN_ID,
                "toolName": "weather",
                "output": {"type": "json", "value": {"temp": 3}},
            }
        ],
    },
    {"role": "assistant", "content": "It is 3 degrees."},
    {"role": "user", "content": "And tomorrow?"},
]

REASONING_HISTORY = [
    {"role": "user", "content": "Think about it"},
    {
        "role": "assistant",
        "content": [
            {
                "type": "reasoning",
                "text": "claude thoughts",
                "providerMetadata": {"anthropic": {"signature": "sig"}},
            },
            {
                "type": "reasoning",
                "text": "openai thoughts",
                "providerMetadata": {"openai": {"itemId": "rs_1"}},
            },
            {"type": "reasoning", "text": "plain thoughts"},
            {"type": "text", "text": "Thought."},
        ],
    },
    {"role": "user", "content": "Again"},
]


def anthropic_tool_id_check(options: CallOptions) -> Any:
    ids = [p["toolCallId"] for p in prompt_parts(options.prompt, "tool-call")]
    if any(not re.fullmatch(r"[a-zA-Z0-9_-]+", i) for i in ids):
        return APICallError(
            TOOL_ID_ERROR,
            status_code=400,
            url="https://api.anthropic.com/v1/messages",
            response_body='{"type":"error","error":{"type":"invalid_request_error"}}',
        )
    return text_step("Sunny tomorrow.")


async def test_tool_id_rule_repairs_persisted_history_and_retries(recorder: PersistedRecorder) -> None:
    model = MockModel([anthropic_tool_id_check, anthropic_tool_id_check], provider="anthropic.messages")
    agent = Agent(
        name="a",
        instructions="x",
        model=model,
        input_processors=[ProviderHistoryCompat()],
        output_processors=[recorder],
    )
    result = await agent.generate(TOOL_HISTORY)
    assert result.text == "Sunny tomorrow."
    assert len(model.calls) == 2
    assert [p["toolCallId"] for p in prompt_parts(model.calls[0].prompt, "tool-call")] == [FOREIGN_ID]
    assert [p["toolCallId"] for p in prompt_parts(model.calls[1].prompt, "tool-call")] == [
        "functions_weather_0"
    ]
    assert [p["toolCallId"] for p in prompt_parts(model.calls[1].prompt, "tool-result")] == [
        "functions_weather_0"
    ]
    # Reactive: the repaired ids are what is persisted.
    invocations = [p["toolInvocation"] for p in stored_parts(recorder.messages, "tool-invocation")]
    assert [(i["toolCallId"], i["state"]) for i in invocations] == [("functions_weather_0", "result")]


async def test_tool_id_rule_retries_only_once() -> None:
    always = APICallError(TOOL_ID_ERROR, status_code=400)
    model = MockModel([always, always, text_step("never")], provider="anthropic.messages")
    agent = Agent(name="a", instructions="x", model=model, input_processors=[ProviderHistoryCompat()])
    with pytest.raises(APICallError):
        await agent.generate(TOOL_HISTORY)
    assert len(model.calls) == 2


async def test_tool_id_rule_does_not_retry_when_nothing_needs_fixing() -> None:
    clean = [{**m} for m in TOOL_HISTORY]
    clean[1] = {
        "role": "assistant",
        "content": [{"type": "tool-call", "toolCallId": "toolu_1", "toolName": "weather", "input": {}}],
    }
    clean[2] = {
        "role": "tool",
        "content": [
            {
                "type": "tool-result",
                "toolCallId": "toolu_1",
                "toolName": "weather",
                "output": {"type": "text", "value": "3"},
            }
        ],
    }
    model = MockModel([APICallError(TOOL_ID_ERROR, status_code=400), text_step("never")])
    agent = Agent(name="a", instructions="x", model=model, input_processors=[ProviderHistoryCompat()])
    with pytest.raises(APICallError):
        await agent.generate(clean)
    assert len(model.calls) == 1


async def test_cerebras_rule_strips_reasoning_from_the_prompt_only(recorder: PersistedRecorder) -> None:
    model = MockModel([text_step("ok")], provider="cerebras.chat", model_id="zai-glm-4.6")
    agent = Agent(
        name="a",
        instructions="x",
        model=model,
        input_processors=[ProviderHistoryCompat()],
        output_processors=[recorder],
    )
    await agent.generate(REASONING_HISTORY)
    assert prompt_parts(model.calls[0].prompt, "reasoning") == []
    assert prompt_parts(model.calls[0].prompt, "text")[1]["text"] == "Thought."
    # Preemptive: the message list keeps the full reasoning trace.
    assert [p["text"] for p in stored_parts(recorder.messages, "reasoning")] == [
        "claude thoughts",
        "openai thoughts",
        "plain thoughts",
    ]


async def test_anthropic_rule_keeps_only_native_reasoning(recorder: PersistedRecorder) -> None:
    model = MockModel([text_step("ok")], provider="anthropic.messages", model_id="claude-sonnet-4-5")
    agent = Agent(
        name="a",
        instructions="x",
        model=model,
        input_processors=[ProviderHistoryCompat()],
        output_processors=[recorder],
    )
    await agent.generate(REASONING_HISTORY)
    assert [p["text"] for p in prompt_parts(model.calls[0].prompt, "reasoning")] == ["claude thoughts"]
    assert len(stored_parts(recorder.messages, "reasoning")) == 3


async def test_other_providers_get_the_prompt_unchanged() -> None:
    model = MockModel([text_step("ok")], provider="openai.responses", model_id="gpt-5")
    agent = Agent(name="a", instructions="x", model=model, input_processors=[ProviderHistoryCompat()])
    await agent.generate(REASONING_HISTORY)
    assert len(prompt_parts(model.calls[0].prompt, "reasoning")) == 3


async def test_additional_rules_run_after_the_built_ins() -> None:
    seen: list[int] = []

    def drop_plain_text_markers(*, prompt: list[dict[str, Any]], model: Any) -> list[dict[str, Any]] | None:
        seen.append(len(prompt_parts(prompt, "reasoning")))  # the built-in strip already ran
        return [
            {
                **m,
                "content": [
                    {**p, "text": p["text"].upper()} if p.get("type") == "text" else p for p in m["content"]
                ],
            }
            if isinstance(m.get("content"), list)
            else m
            for m in prompt
        ]

    rule = CompatRule(name="shout", apply_to_prompt=drop_plain_text_markers)
    model = MockModel([text_step("ok")], provider="cerebras.chat")
    agent = Agent(
        name="a",
        instructions="x",
        model=model,
        input_processors=[ProviderHistoryCompat(additional_rules=[rule])],
    )
    await agent.generate(REASONING_HISTORY)
    assert seen == [0]
    assert prompt_parts(model.calls[0].prompt, "text")[0]["text"] == "THINK ABOUT IT"


async def test_additional_reactive_rule(recorder: PersistedRecorder) -> None:
    def drop_images(messages: list[Message]) -> bool:
        changed = False
        for message in messages:
            kept = [p for p in message.content.parts if p.get("type") != "file"]
            if len(kept) != len(message.content.parts):
                message.content.parts[:] = kept
                changed = True
        return changed

    rule = CompatRule(
        name="no-images", error_patterns=[re.compile(r"does not support image input")], fix=drop_images
    )

    def provider(options: CallOptions) -> Any:
        if prompt_parts(options.prompt, "file"):
            return APICallError(
                "Bad Request",
                status_code=400,
                response_body='{"error": {"message": "model does not support image input"}}',
            )
        return text_step("described")

    model = MockModel([provider, provider])
    history = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is this?"},
                {"type": "file", "mediaType": "image/png", "data": "iVBOR"},
            ],
        }
    ]
    agent = Agent(
        name="a",
        instructions="x",
        model=model,
        output_processors=[recorder],
        input_processors=[ProviderHistoryCompat(additional_rules=[rule])],
    )
    assert (await agent.generate(history)).text == "described"
    assert stored_parts(recorder.messages, "file") == []
    unmatched = CompatRule(name="never", error_patterns=["something else"], fix=drop_images)
    assert not unmatched.matches(
        APICallError("Bad Request", response_body="model does not support image input")
    )


@pytest.mark.parametrize(
    ("model", "cerebras", "anthropic"),
    [
        (MockModel(provider="cerebras.chat"), True, False),
        (MockModel(provider="cerebras"), True, False),
        (MockModel(provider="openrouter.chat", model_id="cerebras/llama-3.3"), True, False),
        (MockModel(provider="anthropic.messages"), False, True),
        (MockModel(provider="anthropicish"), False, False),
        ("anthropic/claude-sonnet-4-5", False, True),
        ("cerebras:zai", True, False),
        ([MockModel(provider="openai.chat"), MockModel(provider="anthropic.messages")], False, True),
        (None, False, False),
    ],
)
def test_provider_detection(model: Any, cerebras: bool, anthropic: bool) -> None:
    assert is_maybe_cerebras(model) is cerebras
    assert is_maybe_anthropic(model) is anthropic
