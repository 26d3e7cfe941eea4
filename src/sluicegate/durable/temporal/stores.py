"""Storage inside a durable run: every call of a store the run uses is an activity.

The workflow holds a stand-in (`store_proxy`) for each store its agent reaches: the memory's
storage (threads, history, working memory), its vector store (semantic recall) and a
processor's `store` (the cost guard's budget).
A call on the stand-in becomes the activity `sluicegate.<agent id>.storage` (local, except for
`ONCE_ONLY` calls), which makes the same call on the real store of the worker that runs it; a
replayed run gets the recorded answer instead, so history is loaded, messages saved and budgets
charged once per run, not once per replay. Arguments and answers cross as JSON through
`encode`/`decode` (messages, threads, resources, reservations and vector hits by their
`to_dict` shapes); anything else is refused by name.
"""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from sluicegate.budget import Reservation
from sluicegate.messages import Message
from sluicegate.processors.base import processor_id
from sluicegate.storage.base import MemoryStore
from sluicegate.storage.types import MessageInclude, Resource, Thread
from sluicegate.vector.base import QueryResult

_TAG = "__sluicegate__"

ONCE_ONLY = frozenset(("reserve", "record", "settle"))
"""Store calls that must not run twice (a budget's reservation and charges): a regular activity,
whose answer the server records as soon as it returns. The others (reads, saves by id,
overwrites) are local activities, which a retried workflow task may run again."""

Call = Callable[[str, list[Any], dict[str, Any]], Awaitable[Any]]


def encode(value: Any) -> Any:
    """`value` as JSON, tagging the storage types so `decode` gives them back."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, datetime):
        return {_TAG: "datetime", "v": value.isoformat()}
    if isinstance(value, (Message, Thread, Resource)):
        return {_TAG: type(value).__name__, "v": encode(value.to_dict())}
    if isinstance(value, (MessageInclude, Reservation, QueryResult)):
        return {_TAG: type(value).__name__, "v": encode(dataclasses.asdict(value))}
    raise TypeError(
        f"a {type(value).__name__} cannot cross the workflow boundary of a durable run's storage call"
    )


_DECODERS: dict[str, Callable[[Any], Any]] = {
    "datetime": datetime.fromisoformat,
    "Message": Message.from_dict,
    "Thread": Thread.from_dict,
    "Resource": Resource.from_dict,
    "MessageInclude": lambda v: MessageInclude(**v),
    "Reservation": lambda v: Reservation(**v),
    "QueryResult": lambda v: QueryResult(**v),
}


def decode(value: Any) -> Any:
    if isinstance(value, list):
        return [decode(v) for v in value]
    if isinstance(value, dict):
        tag = value.get(_TAG)
        if isinstance(tag, str):
            return _DECODERS[tag](decode(value["v"]))
        return {k: decode(v) for k, v in value.items()}
    return value


def store_methods(store: Any) -> list[str]:
    """The store's public coroutine methods: what the stand-in forwards."""
    return [
        name
        for name in dir(type(store))
        if not name.startswith("_") and inspect.iscoroutinefunction(getattr(type(store), name, None))
    ]


def store_proxy(store: Any, call: Call) -> Any:
    """A stand-in for `store` whose coroutine methods are `call(method, args, kwargs)`. It is a
    `MemoryStore` when `store` is one, and has exactly the store's methods, so checks such as
    `isinstance(store, ReservingUsageStore)` answer as for the real store."""

    def forward(name: str) -> Callable[..., Awaitable[Any]]:
        async def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            return await call(name, list(args), kwargs)

        method.__name__ = name
        return method

    namespace: dict[str, Any] = {name: forward(name) for name in store_methods(store)}
    namespace["__repr__"] = lambda self: f"<durable {store!r}>"
    bases: tuple[type, ...] = (MemoryStore,) if isinstance(store, MemoryStore) else (object,)
    cls = type(f"Durable{type(store).__name__}", bases, namespace)
    return cls()


def real_store(agent: Any, locator: list[str]) -> Any:
    """The store a stand-in stands for, on this worker: `["memory"]` (the agent's memory's
    storage), `["vector"]` (its vector store) or `["processor", pid]` (that processor's `store`)."""
    if locator in (["memory"], ["vector"]):
        memory = getattr(agent, "memory", None)
        store = None if memory is None else memory.storage if locator == ["memory"] else memory.vector
        if store is None:
            raise LookupError(f"agent {agent.id!r} has no memory {locator[0]} store on this worker")
        return store
    if len(locator) == 2 and locator[0] == "processor":
        for processor in durable_processors(agent):
            if processor_id(processor) == locator[1]:
                return processor.store
    raise LookupError(f"agent {agent.id!r} has no store {locator!r} on this worker")


def has_store(processor: Any) -> bool:
    """A processor that keeps a store (the cost guard's `store`): its calls become activities."""
    store = getattr(processor, "store", None)
    return store is not None and bool(store_methods(store))


def durable_processors(agent: Any) -> list[Any]:
    """The agent's processors listed as such (a callable array is resolved per request, so
    its processors' stores cannot be looked up by a worker: `check_durable` refuses them)."""
    out: list[Any] = []
    for name in ("input_processors", "output_processors", "error_processors"):
        array = getattr(agent, name, None)
        if isinstance(array, (list, tuple)):
            out.extend(array)
    return out
