from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.processors import CostGuardProcessor, InMemoryUsageStore, ProcessorViolation
from sluicegate.processors.builtin.cost_guard import UsageStore, parse_window
from sluicegate.stream import Usage
from sluicegate.testing import MockModel, text_step, tool_call_step

MILLION = 1_000_000


def priced_step(input_tokens: int = MILLION, output_tokens: int = 0) -> list[Any]:
    return text_step("ok", input_tokens=input_tokens, output_tokens=output_tokens)


def gpt4o(steps: list[Any]) -> MockModel:
    return MockModel(steps, model_id="gpt-4o-2024-08-06")


def test_pricing_table_longest_prefix_and_override() -> None:
    guard = CostGuardProcessor(max_cost=1, pricing={"my-model": {"input": 1.0, "output": 2.0}})
    assert guard.cost_of("gpt-4o-2024-08-06", Usage(MILLION, MILLION)) == pytest.approx(12.5)
    assert guard.cost_of("openai/gpt-4o-mini", Usage(MILLION, 0)) == pytest.approx(0.15)
    assert guard.cost_of("my-model-v2", Usage(MILLION, MILLION)) == pytest.approx(3.0)
    assert guard.cost_of("unknown-model", Usage(MILLION, MILLION)) == 0.0


def test_window_parsing() -> None:
    assert parse_window("30d") == timedelta(days=30)
    assert parse_window("24h") == timedelta(hours=24)
    with pytest.raises(ValueError):
        parse_window("soon")


def test_in_memory_store_matches_the_protocol() -> None:
    assert isinstance(InMemoryUsageStore(), UsageStore)


async def test_run_scope_blocks_the_step_after_the_budget_is_spent() -> None:
    model = gpt4o([tool_call_step(("c1", "nothing", {})), priced_step()])
    seen: list[ProcessorViolation] = []
    guard = CostGuardProcessor(max_cost=0.00001, on_violation=seen.append)
    result = await Agent(name="c", model=model, input_processors=[guard]).generate("hi", max_steps=3)
    assert len(model.calls) == 1
    assert result.tripwire is not None and "Cost guard" in result.tripwire.reason
    assert seen and seen[0].detail["usage"]["input_tokens"] == 10 and seen[0].detail["usage"]["cost"] > 0


async def test_warn_strategy_continues_and_reports_once() -> None:
    model = gpt4o(
        [tool_call_step(("c1", "nothing", {})), tool_call_step(("c2", "nothing", {})), priced_step()]
    )
    seen: list[ProcessorViolation] = []
    guard = CostGuardProcessor(max_cost=0.00001, strategy="warn", on_violation=seen.append)
    result = await Agent(name="c", model=model, input_processors=[guard]).generate("hi", max_steps=4)
    assert result.tripwire is None and len(model.calls) == 3
    assert len(seen) == 1 and seen[0].detail["strategy"] == "warn"


async def test_thread_scope_spans_requests_and_resource_scope_is_separate() -> None:
    store = InMemoryUsageStore()
    guard = CostGuardProcessor(max_cost=2.0, scope="thread", store=store)
    # Memory is not configured in this unit: simulate the thread id the agent would set.
    from sluicegate import RequestContext
    from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY

    def ctx(thread: str, resource: str = "u1") -> RequestContext:
        context = RequestContext()
        context.set(THREAD_ID_KEY, thread)
        context.set(RESOURCE_ID_KEY, resource)
        return context

    await Agent(name="c", model=gpt4o([priced_step()]), input_processors=[guard]).generate(
        "hi", request_context=ctx("t1")
    )
    assert await store.total("thread:t1", None) == pytest.approx(2.5)
    blocked = await Agent(name="c", model=gpt4o([priced_step()]), input_processors=[guard]).generate(
        "again", request_context=ctx("t1")
    )
    assert blocked.tripwire is not None
    fresh = await Agent(name="c", model=gpt4o([priced_step()]), input_processors=[guard]).generate(
        "again", request_context=ctx("t2")
    )
    assert fresh.tripwire is None
    by_resource = CostGuardProcessor(max_cost=2.0, scope="resource", store=store)
    await Agent(name="c", model=gpt4o([priced_step()]), input_processors=[by_resource]).generate(
        "hi", request_context=ctx("t3", "u9")
    )
    assert await store.total("resource:u9", None) == pytest.approx(2.5)
    other_thread_same_user = await Agent(
        name="c", model=gpt4o([priced_step()]), input_processors=[by_resource]
    ).generate("x", request_context=ctx("t4", "u9"))
    assert other_thread_same_user.tripwire is not None


async def test_window_ignores_old_spend() -> None:
    store = InMemoryUsageStore()
    await store.record("resource:u1", 100.0, {"input_tokens": 1}, datetime.now(UTC) - timedelta(days=40))
    from sluicegate import RequestContext
    from sluicegate.request_context import RESOURCE_ID_KEY

    context = RequestContext()
    context.set(RESOURCE_ID_KEY, "u1")
    windowed = CostGuardProcessor(max_cost=1.0, scope="resource", window="30d", store=store)
    result = await Agent(name="c", model=gpt4o([priced_step(10)]), input_processors=[windowed]).generate(
        "hi", request_context=context
    )
    assert result.tripwire is None
    forever = CostGuardProcessor(max_cost=1.0, scope="resource", store=store)
    result = await Agent(name="c", model=gpt4o([priced_step(10)]), input_processors=[forever]).generate(
        "hi", request_context=context
    )
    assert result.tripwire is not None
