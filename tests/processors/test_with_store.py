"""`Processor.with_store`: a copy of a processor that keeps another store, the original left as
it was (a durable run gives its processors a store whose calls are activities this way)."""

from __future__ import annotations

from typing import Any

import pytest

from sluicegate.processors import (
    ContextCompactor,
    CostGuardProcessor,
    InMemoryUsageStore,
    ModelCallLimit,
    Processor,
    ToolCallLimit,
)
from sluicegate.processors.base import KeepsStore
from sluicegate.storage.call_counts import InMemoryCallCountStore
from sluicegate.storage.context_summaries import InMemoryContextSummaryStore
from sluicegate.testing import MockModel


class Budgeted(Processor):
    id = "budgeted"

    def __init__(self, store: Any) -> None:
        super().__init__()
        self.store = store
        self.limit = 3


def _made() -> list[tuple[Any, Any]]:
    return [
        (CostGuardProcessor(max_cost=1, store=InMemoryUsageStore()), InMemoryUsageStore()),
        (ModelCallLimit(thread=2, store=InMemoryCallCountStore()), InMemoryCallCountStore()),
        (ToolCallLimit(limits={"*": 1}, store=InMemoryCallCountStore()), InMemoryCallCountStore()),
        (
            ContextCompactor(model=MockModel([]), trigger_tokens=100, store=InMemoryContextSummaryStore()),
            InMemoryContextSummaryStore(),
        ),
        (Budgeted(object()), object()),
    ]


@pytest.mark.parametrize(("processor", "store"), _made(), ids=lambda v: type(v).__name__)
def test_a_copy_uses_the_new_store_and_the_original_keeps_its_own(processor: Any, store: Any) -> None:
    own = processor.store
    copied = processor.with_store(store)
    assert isinstance(processor, KeepsStore)
    assert type(copied) is type(processor) and copied is not processor
    assert copied.store is store
    assert processor.store is own  # untouched
    assert copied.id == processor.id


def test_a_copy_keeps_the_rest_of_the_processors_settings() -> None:
    guard = CostGuardProcessor(max_cost=2.5, scope="thread", store=InMemoryUsageStore())
    copied = guard.with_store(InMemoryUsageStore())
    assert (copied.max_cost, copied.scope, copied.pricing) == (2.5, "thread", guard.pricing)


@pytest.mark.parametrize(
    "processor",
    [
        ModelCallLimit(thread=1),
        ToolCallLimit(limits={"*": 1}),
        ContextCompactor(model=MockModel([]), trigger_tokens=9),
    ],
    ids=lambda v: type(v).__name__,
)
def test_a_store_of_the_wrong_kind_is_refused_by_name(processor: Any) -> None:
    with pytest.raises(TypeError, match="got dict"):
        processor.with_store({})


def test_a_processor_without_a_store_or_a_missing_store_is_a_type_error() -> None:
    class Plain(Processor):
        id = "plain"

    with pytest.raises(TypeError, match="Plain keeps no store"):
        Plain().with_store(InMemoryUsageStore())
    with pytest.raises(TypeError, match="needs a store, got None"):
        CostGuardProcessor(max_cost=1).with_store(None)
