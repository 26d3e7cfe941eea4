"""The workflow's stand-in for a store: which `reserve` calls get the run's idempotency key."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

import pytest

from sluicegate.budget import Reservation
from sluicegate.durable.temporal.stores import store_proxy, takes_idempotency_key
from sluicegate.processors import CostGuardProcessor, InMemoryUsageStore


class LegacyStore:
    """A custom reserving store written before `idempotency_key` existed."""

    async def reserve(
        self, key: str, amount: float, *, limit: float, since: Any, usage: Any, at: Any
    ) -> Reservation:
        return Reservation("1", 0.0)

    async def settle(self, key: str, reservation_id: str, cost: float, usage: Any) -> None:
        return None


def test_the_built_in_stores_take_an_idempotency_key_and_a_legacy_one_does_not() -> None:
    assert takes_idempotency_key(InMemoryUsageStore())
    assert not takes_idempotency_key(LegacyStore())


async def test_a_legacy_store_is_named_in_a_warning_and_called_as_before(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[tuple[str, list[Any], dict[str, Any]]] = []

    async def call(method: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        calls.append((method, args, kwargs))
        return Reservation("1", 0.0)

    with caplog.at_level(logging.WARNING, logger="sluicegate.durable"):
        proxy = store_proxy(LegacyStore(), call)
    assert "LegacyStore.reserve takes no idempotency_key" in caplog.text
    at = datetime.now(UTC)
    await proxy.reserve("k", 1.0, limit=2.0, since=None, usage={}, at=at)
    assert calls == [("reserve", ["k", 1.0], {"limit": 2.0, "since": None, "usage": {}, "at": at})]


async def test_outside_a_workflow_a_reservation_gets_no_key_it_was_not_given() -> None:
    calls: list[dict[str, Any]] = []

    async def call(method: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        calls.append(kwargs)
        return Reservation("1", 0.0)

    proxy = store_proxy(InMemoryUsageStore(), call)
    at = datetime.now(UTC)
    await proxy.reserve("k", 1.0, limit=2.0, since=None, usage={}, at=at)
    await proxy.reserve("k", 1.0, limit=2.0, since=None, usage={}, at=at, idempotency_key="mine")
    assert [c.get("idempotency_key") for c in calls] == [None, "mine"]


async def test_call_counters_cross_the_workflow_boundary() -> None:
    from sluicegate.durable.temporal.stores import decode, encode
    from sluicegate.storage import CallReservation, InMemoryCallCountStore

    real = InMemoryCallCountStore()

    async def call(method: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        # as the storage activity does: arguments and answer encoded to JSON and back
        answer = await getattr(real, method)(*decode(encode(args)), **decode(encode(kwargs)))
        return decode(encode(answer))

    proxy = store_proxy(real, call)
    granted = await proxy.reserve_calls({"tool-calls:2:t1:*": 1})
    refused = await proxy.reserve_calls({"tool-calls:2:t1:*": 1})
    assert granted == CallReservation(True, {"tool-calls:2:t1:*": 1})
    assert refused == CallReservation(False, {"tool-calls:2:t1:*": 1}, "tool-calls:2:t1:*")
    assert await proxy.call_counts(["tool-calls:2:t1:*"]) == {"tool-calls:2:t1:*": 1}


def test_a_worker_refuses_a_processor_with_a_store_and_no_with_store() -> None:
    from sluicegate.durable.temporal.checks import check_processor
    from sluicegate.errors import ConfigurationError

    class Duck:
        """A processor by its hooks alone, keeping a store it cannot be given another of."""

        id = "duck"
        store = InMemoryUsageStore()

        def process_input(self, args: Any) -> None:
            return None

    with pytest.raises(ConfigurationError, match="'duck' keeps a store but has no with_store"):
        check_processor("a", Duck())
    check_processor("a", CostGuardProcessor(max_cost=1))  # a Processor has one


def test_a_worker_refuses_default_arrays_whose_processors_need_activities() -> None:
    from sluicegate import Agent
    from sluicegate.durable.temporal.checks import check_durable
    from sluicegate.errors import ConfigurationError
    from sluicegate.processors import RegexFilter
    from sluicegate.testing import MockModel

    guard = CostGuardProcessor(max_cost=1)
    with pytest.raises(ConfigurationError, match="'cost-guard' in default_options output_processors"):
        check_durable(Agent("a", model=MockModel([]), default_options={"output_processors": [guard]}))
    with pytest.raises(ConfigurationError, match="default_options input_processors is a function"):
        check_durable(Agent("a", model=MockModel([]), default_options={"input_processors": lambda rc: []}))
    check_durable(
        Agent("a", model=MockModel([]), default_options={"output_processors": [RegexFilter(presets=["pii"])]})
    )
    check_durable(Agent("a", model=MockModel([]), output_processors=[guard]))  # its own array: wired
