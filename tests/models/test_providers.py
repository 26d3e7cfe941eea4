"""Model strings, API keys, the OpenAI-compatible registry and the demo model choice."""

from __future__ import annotations

from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.demo_model import demo_model
from sluicegate.errors import MissingAPIKeyError, UnknownModelError
from sluicegate.models import OpenAICompatible, known_providers, resolve_model
from sluicegate.models.anthropic_messages import AnthropicMessagesModel
from sluicegate.models.base import CallOptions, LanguageModel
from sluicegate.models.openai_chat import OpenAIChatModel
from sluicegate.models.openai_compatible import COMPATIBLE_PROVIDERS
from sluicegate.models.openai_responses import OpenAIResponsesModel

from .fake_provider import FakeProvider, openai_sse

REQUIRED = [
    "openrouter",
    "groq",
    "cerebras",
    "together",
    "deepseek",
    "fireworks",
    "xai",
    "mistral",
    "ollama",
    "lmstudio",
    "vllm",
]


def test_every_named_provider_is_registered() -> None:
    assert set(REQUIRED) <= set(known_providers())
    assert {"openai", "anthropic", "local"} <= set(known_providers())


@pytest.mark.parametrize(
    ("string", "cls", "env"),
    [
        ("openai/gpt-5-mini", OpenAIResponsesModel, "OPENAI_API_KEY"),
        ("openai.chat/gpt-4o-mini", OpenAIChatModel, "OPENAI_API_KEY"),
        ("anthropic/claude-sonnet-4-5", AnthropicMessagesModel, "ANTHROPIC_API_KEY"),
        ("groq/llama-3.3-70b-versatile", OpenAICompatible, "GROQ_API_KEY"),
    ],
)
def test_model_strings_need_their_key(
    monkeypatch: pytest.MonkeyPatch, string: str, cls: type, env: str
) -> None:
    with pytest.raises(MissingAPIKeyError, match=env):
        resolve_model(string)
    monkeypatch.setenv(env, "key-123")
    model = resolve_model(string)
    assert isinstance(model, cls) and isinstance(model, LanguageModel)
    assert model.model_id == string.split("/", 1)[1]
    assert model.specification_version == "v2"


@pytest.mark.parametrize("name", sorted(COMPATIBLE_PROVIDERS))
def test_compatible_providers_use_their_base_url_and_key(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    spec = COMPATIBLE_PROVIDERS[name]
    if spec.api_key_env:
        monkeypatch.setenv(spec.api_key_env, f"{name}-key")
    model = resolve_model(f"{name}/some-model")
    assert isinstance(model, OpenAICompatible)
    assert model.provider == f"{name}.chat"
    client = model.client()
    assert str(client.base_url).rstrip("/") == spec.base_url.rstrip("/")
    assert client.api_key == (f"{name}-key" if spec.api_key_env else "not-needed")


def test_local_servers_take_a_base_url_override(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OLLAMA_BASE_URL", "http://10.0.0.5:11434/v1")
    model = resolve_model("ollama/qwen2.5")
    assert str(model.client().base_url).rstrip("/") == "http://10.0.0.5:11434/v1"  # type: ignore[attr-defined]


def test_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(UnknownModelError) as caught:
        resolve_model("nosuch/model")
    for name in ("anthropic", "openai", "groq", "local"):
        assert name in str(caught.value)


def test_agent_with_a_model_string_resolves_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant")
    agent = Agent(name="a", instructions="x", model="anthropic/claude-sonnet-4-5")
    assert resolve_model(agent.model).provider == "anthropic.messages"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}, "openai/gpt-5-mini"),
        ({"ANTHROPIC_API_KEY": "k"}, "anthropic/claude-haiku-4-5"),
        ({}, "local/smollm2-135m"),
    ],
)
def test_demo_model(monkeypatch: pytest.MonkeyPatch, env: dict[str, str], expected: str) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert demo_model() == expected


async def test_compatible_sends_reasoning_back_and_passes_provider_options(
    fake_provider: FakeProvider,
) -> None:
    fake_provider.reply(
        "/v1/chat/completions",
        sse=openai_sse(
            [
                {
                    "id": "c",
                    "created": 1,
                    "model": "m",
                    "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}],
                }
            ]
        ),
    )
    model = OpenAICompatible(
        "deepseek-reasoner", base_url=f"{fake_provider.url}/v1", api_key="k", name="deepseek"
    )
    prompt: list[dict[str, Any]] = [
        {"role": "user", "content": [{"type": "text", "text": "q"}]},
        {
            "role": "assistant",
            "content": [{"type": "reasoning", "text": "because"}, {"type": "text", "text": "a"}],
        },
        {"role": "user", "content": [{"type": "text", "text": "q2"}]},
    ]
    parts = [
        p
        async for p in (
            await model.do_stream(
                CallOptions(
                    prompt=prompt,
                    max_output_tokens=5,
                    provider_options={
                        "deepseek": {"reasoningEffort": "high", "thinking": {"type": "enabled"}},
                        "openai": {"user": "ignored"},
                    },
                )
            )
        ).stream
    ]
    assert parts[-1]["finishReason"] == "stop"
    body = fake_provider.bodies()[0]
    assert body["messages"][1] == {"role": "assistant", "content": "a", "reasoning_content": "because"}
    assert body["max_tokens"] == 5 and "max_completion_tokens" not in body
    assert body["reasoning_effort"] == "high" and body["thinking"] == {"type": "enabled"}
    assert "user" not in body
    assert fake_provider.requests[0].headers["authorization"] == "Bearer k"
