"""The cost guard is a budget on every store: under 200 concurrent runs whose answers are 8x the
estimate a $1 budget is exceeded by at most one call's reservation, and usage a provider reports
as negative, NaN or infinite never reaches a budget (the reservation stands as the charge).

Loopback only: the models run in-process or behind the fake provider on 127.0.0.1."""

from __future__ import annotations

import asyncio
import logging
import math
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import pytest
from tests.conftest import missing_service
from tests.memory.memory_pg_server import PostgresUnavailable, start_postgres
from tests.models.fake_provider import FakeProvider, openai_sse

from sluicegate import Agent, RequestContext
from sluicegate.models import OpenAICompatible
from sluicegate.processors import CostGuardProcessor, InMemoryUsageStore
from sluicegate.processors.builtin.cost_guard import DEFAULT_OUTPUT_TOKENS, estimate_input_tokens
from sluicegate.request_context import RESOURCE_ID_KEY
from sluicegate.storage import PostgresStore, SQLiteStore
from sluicegate.stream import Usage

from .budget_kit import MODEL_ID, PRICING, LongAnswerModel

BUDGET = 1.0
RUNS = 200
KEY = "resource:u1"
PATH = "/v1/chat/completions"


@pytest.fixture(scope="module")
def postgres_dsn() -> Iterator[str]:
    try:
        dsn, stop = start_postgres()
    except PostgresUnavailable as error:
        missing_service(str(error))
        raise
    try:
        yield dsn
    finally:
        stop()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def usage_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    if request.param == "memory":
        yield InMemoryUsageStore()
        return
    if request.param == "sqlite":
        store: Any = SQLiteStore(tmp_path / "usage.db")
    else:
        dsn = request.getfixturevalue("postgres_dsn")
        name = "b_" + uuid.uuid4().hex[:16]
        conn = await asyncpg.connect(dsn)
        try:
            await conn.execute(f"CREATE DATABASE {name}")
        finally:
            await conn.close()
        store = PostgresStore(dsn.rsplit("/", 1)[0] + f"/{name}")
    yield store
    await store.close()


@pytest.fixture
def provider() -> Iterator[FakeProvider]:
    server = FakeProvider()
    yield server
    server.close()


def user() -> RequestContext:
    return RequestContext({RESOURCE_ID_KEY: "u1"})


def guard(store: Any, max_cost: float = BUDGET) -> CostGuardProcessor:
    return CostGuardProcessor(max_cost=max_cost, scope="resource", store=store, pricing=PRICING)


# ---------------------------------------------------------------- finding 2: overshoot


async def test_a_budget_holds_under_200_concurrent_runs_answering_8x_the_estimate(usage_store: Any) -> None:
    model = LongAnswerModel(answer_tokens=8 * DEFAULT_OUTPUT_TOKENS)
    cost_guard = guard(usage_store)
    agent = Agent(name="a", model=model, input_processors=[cost_guard])
    started = time.perf_counter()
    results = await asyncio.wait_for(
        asyncio.gather(*(agent.generate("hi", request_context=user()) for _ in range(RUNS))), 60
    )
    elapsed = time.perf_counter() - started
    spent = await usage_store.total(KEY, None)

    prompt_tokens = estimate_input_tokens(MODEL_ID, model.calls[0].prompt, [])
    reservation = cost_guard.cost_of(MODEL_ID, Usage(prompt_tokens, DEFAULT_OUTPUT_TOKENS))
    # The store holds what the provider billed, within the documented bound...
    assert spent == pytest.approx(model.charged)
    assert BUDGET <= spent <= BUDGET + reservation, f"spent ${spent:.2f} of ${BUDGET:.2f}"
    # ...because every call was sent capped at the output its reservation covers.
    assert {call.max_output_tokens for call in model.calls} == {DEFAULT_OUTPUT_TOKENS}
    passed = [r for r in results if r.tripwire is None]
    assert len(passed) == len(model.calls) < RUNS
    assert all(r.finish_reason == "length" for r in passed)
    assert all(
        r.tripwire is not None and "Cost guard" in r.tripwire.reason for r in results if r not in passed
    )
    assert elapsed < 30


async def test_a_call_setting_its_own_limit_is_priced_and_capped_at_it(usage_store: Any) -> None:
    model = LongAnswerModel(answer_tokens=5000)
    cost_guard = guard(usage_store)
    agent = Agent(name="a", model=model, input_processors=[cost_guard])
    results = await asyncio.gather(
        *(
            agent.generate("hi", request_context=user(), model_settings={"max_tokens": 1000})
            for _ in range(50)
        )
    )
    spent = await usage_store.total(KEY, None)
    prompt_tokens = estimate_input_tokens(MODEL_ID, model.calls[0].prompt, [])
    reservation = cost_guard.cost_of(MODEL_ID, Usage(prompt_tokens, 1000))
    assert spent == pytest.approx(model.charged)
    assert BUDGET <= spent <= BUDGET + reservation
    assert {call.max_output_tokens for call in model.calls} == {1000}
    assert sum(r.tripwire is None for r in results) == len(model.calls) < 50


async def test_a_provider_ignoring_the_limit_is_charged_and_reported(
    usage_store: Any, caplog: pytest.LogCaptureFixture
) -> None:
    model = LongAnswerModel(answer_tokens=2048, honours_limit=False)
    agent = Agent(name="a", model=model, input_processors=[guard(usage_store)])
    with caplog.at_level(logging.WARNING, logger="sluicegate.processors.builtin.cost_guard"):
        result = await agent.generate("hi", request_context=user())
    assert model.calls[0].max_output_tokens == DEFAULT_OUTPUT_TOKENS
    assert await usage_store.total(KEY, None) == pytest.approx(model.charged)
    [warning] = result.steps[0].warnings
    assert "2048 output tokens for a call capped at 256" in warning["message"]
    assert any("capped at 256" in r.getMessage() for r in caplog.records)


# ---------------------------------------------------------------- finding 3: trusted usage


def openai_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "c1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": MODEL_ID,
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def answer_with_usage(completion_tokens: float) -> list[Any]:
    usage = {"prompt_tokens": 10, "completion_tokens": completion_tokens, "total_tokens": 10}
    return openai_sse(
        [
            openai_chunk({"role": "assistant", "content": "ok"}),
            openai_chunk({}, "stop"),
            {**openai_chunk({}), "choices": [], "usage": usage},
        ]
    )


@pytest.mark.parametrize(
    "completion_tokens", [-1_000_000, math.nan, math.inf], ids=["negative", "nan", "inf"]
)
async def test_unusable_provider_usage_leaves_the_reservation_as_the_charge(
    usage_store: Any, provider: FakeProvider, completion_tokens: float, caplog: pytest.LogCaptureFixture
) -> None:
    for _ in range(3):  # enough answers for calls that should not be made
        provider.reply(PATH, sse=answer_with_usage(completion_tokens))
    model = OpenAICompatible(MODEL_ID, base_url=provider.url + "/v1", name="fake")
    cost_guard = guard(usage_store, max_cost=0.0001)  # one call's reservation reaches it
    agent = Agent(name="a", model=model, input_processors=[cost_guard])
    with caplog.at_level(logging.WARNING, logger="sluicegate.processors.builtin.cost_guard"):
        first = await agent.generate("hi", request_context=user())
    assert first.error is None and first.text == "ok"
    spent = await usage_store.total(KEY, None)
    prompt = [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    reservation = cost_guard.cost_of(
        MODEL_ID, Usage(estimate_input_tokens(MODEL_ID, prompt, []), DEFAULT_OUTPUT_TOKENS)
    )
    assert math.isfinite(spent) and spent == pytest.approx(reservation), f"spent {spent}"
    later = await asyncio.gather(*(agent.generate("hi", request_context=user()) for _ in range(2)))
    assert all(r.tripwire is not None for r in later)
    assert len(provider.bodies(PATH)) == 1

    [warning] = first.steps[0].warnings
    assert "unusable usage" in warning["message"] and "output_tokens" in warning["message"]
    assert any("unusable usage" in r.getMessage() for r in caplog.records)
    # The key is not locked for good: a larger budget on the same store lets the user go on.
    assert (
        await Agent(name="b", model=model, input_processors=[guard(usage_store)]).generate(
            "hi", request_context=user()
        )
    ).tripwire is None
