"""The cost guard prices the output limit the provider receives: model settings reach every
processor and provider in one spelling, so two spellings of the limit (`maxOutputTokens` read by
the guard, `max_tokens` sent) cannot price one call and make another."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient
from tests.models.fake_provider import FakeProvider, openai_sse

from sluicegate import Agent, RequestContext, Sluicegate
from sluicegate.budget import Reservation
from sluicegate.errors import ConfigurationError
from sluicegate.models import OpenAICompatible
from sluicegate.processors import CostGuardProcessor, InMemoryUsageStore
from sluicegate.processors.builtin.cost_guard import UsageStore, estimate_input_tokens
from sluicegate.request_context import RESOURCE_ID_KEY
from sluicegate.server import Identity, ServerSettings, create_app
from sluicegate.stream import Usage

from .budget_kit import MODEL_ID, PRICING, LongAnswerModel

PATH = "/v1/chat/completions"
CONFLICT = {"maxOutputTokens": 1, "max_tokens": 5}


class RecordingStore(InMemoryUsageStore):
    """Remembers the amount of every reservation."""

    def __init__(self) -> None:
        super().__init__()
        self.reserved: list[float] = []

    async def reserve(self, key: str, amount: float, **kwargs: Any) -> Reservation:
        self.reserved.append(amount)
        return await super().reserve(key, amount, **kwargs)


def priced(tokens_in: int, tokens_out: int) -> float:
    return CostGuardProcessor(max_cost=1, pricing=PRICING).cost_of(MODEL_ID, Usage(tokens_in, tokens_out))


def user() -> RequestContext:
    return RequestContext({RESOURCE_ID_KEY: "u1"})


def guarded(model: Any, store: UsageStore, *, max_cost: float = 1.0, **agent: Any) -> Agent:
    guard = CostGuardProcessor(max_cost=max_cost, scope="resource", store=store, pricing=PRICING)
    return Agent(name="a", model=model, input_processors=[guard, *agent.pop("after", [])], **agent)


async def test_two_spellings_of_the_output_limit_are_refused_before_any_call() -> None:
    model = LongAnswerModel(answer_tokens=5)
    store = InMemoryUsageStore()
    agent = guarded(model, store)
    outcomes = await asyncio.gather(
        *(agent.generate("hi", request_context=user(), model_settings=CONFLICT) for _ in range(100)),
        return_exceptions=True,
    )
    assert all(isinstance(o, ConfigurationError) for o in outcomes)
    assert "'maxOutputTokens' and 'max_tokens' both set max_output_tokens" in str(outcomes[0])
    assert model.calls == [] and await store.total("resource:u1", None) == 0.0


async def test_the_guard_prices_the_limit_a_later_processor_sets() -> None:
    class Raise:
        id = "raise-limit"

        def process_input_step(self, args: Any) -> dict[str, Any]:
            assert args.model_settings == {"max_output_tokens": 1}  # canonical for every processor
            return {"modelSettings": {"maxOutputTokens": 4000}}

    model = LongAnswerModel(answer_tokens=4000)
    store = RecordingStore()
    await guarded(model, store, after=[Raise()]).generate(
        "hi", request_context=user(), model_settings={"maxOutputTokens": 1}
    )
    assert model.calls[0].max_output_tokens == 4000
    prompt_tokens = estimate_input_tokens(MODEL_ID, model.calls[0].prompt, [])
    assert store.reserved == [pytest.approx(priced(prompt_tokens, 4000))]
    assert await store.total("resource:u1", None) == pytest.approx(model.charged)


async def test_a_processor_editing_the_settings_in_place_cannot_add_a_second_spelling() -> None:
    class Sneak:
        id = "sneak"

        def process_input_step(self, args: Any) -> None:
            args.model_settings["max_tokens"] = 4000

    model = LongAnswerModel(answer_tokens=4000)
    with pytest.raises(ConfigurationError, match="both set max_output_tokens"):
        await guarded(model, InMemoryUsageStore(), after=[Sneak()]).generate(
            "hi", request_context=user(), model_settings={"max_output_tokens": 1}
        )
    assert model.calls == []


async def test_an_output_limit_in_provider_options_is_refused() -> None:
    model = LongAnswerModel(answer_tokens=5)
    with pytest.raises(ConfigurationError, match=r"provider_options\.openai\.maxCompletionTokens"):
        await guarded(model, InMemoryUsageStore()).generate(
            "hi", request_context=user(), provider_options={"openai": {"maxCompletionTokens": 4000}}
        )
    assert model.calls == []


# ---------------------------------------------------------------- over HTTP


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    server = FakeProvider()
    yield server
    server.close()


def answer() -> list[Any]:
    chunk = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": MODEL_ID}
    return openai_sse(
        [
            {**chunk, "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": None}]},
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
            {**chunk, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 1}},
        ]
    )


@pytest.fixture
def client(provider: FakeProvider) -> Iterator[tuple[TestClient, RecordingStore]]:
    model = OpenAICompatible(MODEL_ID, base_url=provider.url + "/v1", name="fake")
    store = RecordingStore()
    registry = Sluicegate(agents={"a": guarded(model, store)}, resolve_identity=lambda _: Identity("u1"))
    with TestClient(create_app(registry, ServerSettings())) as test_client:
        yield test_client, store


def test_http_two_spellings_are_a_400_naming_the_field(
    client: tuple[TestClient, RecordingStore], provider: FakeProvider
) -> None:
    http, store = client
    response = http.post("/api/agents/a/generate", json={"messages": "hi", "modelSettings": CONFLICT})
    assert response.status_code == 400
    assert response.json()["field"] == "modelSettings.max_tokens"
    assert "both set max_output_tokens" in response.json()["error"]
    assert provider.bodies(PATH) == []
    assert asyncio.run(store.total("resource:u1", None)) == 0.0


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"modelSettings": {"maxTokens": 5}}, "modelSettings.maxTokens"),
        ({"modelSettings": {"maxOutputTokens": -1}}, "modelSettings.maxOutputTokens"),
        ({"modelSettings": {"maxOutputTokens": "lots"}}, "modelSettings.maxOutputTokens"),
        ({"providerOptions": {"fake": {"max_tokens": 5000}}}, "providerOptions.fake.max_tokens"),
    ],
)
def test_http_settings_the_guard_could_not_price_are_a_400(
    client: tuple[TestClient, RecordingStore], provider: FakeProvider, body: dict[str, Any], field: str
) -> None:
    response = client[0].post("/api/agents/a/generate", json={"messages": "hi", **body})
    assert response.status_code == 400
    assert response.json()["field"] == field
    assert provider.bodies(PATH) == []


def test_http_the_provider_receives_the_limit_the_guard_priced(
    client: tuple[TestClient, RecordingStore], provider: FakeProvider
) -> None:
    provider.reply(PATH, sse=answer())
    http = client[0]
    response = http.post(
        "/api/agents/a/generate",
        json={"messages": "hi", "modelSettings": {"max_tokens": 5}},
    )
    assert response.status_code == 200
    [sent] = provider.bodies(PATH)
    assert sent["max_tokens"] == 5
    prompt_tokens = estimate_input_tokens(MODEL_ID, [{"role": "user", "content": "hi"}], [])
    assert client[1].reserved == [pytest.approx(priced(prompt_tokens, 5))]
