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

A reservation is the one call whose repetition would cost money: its activity may commit and
its worker die before the server recorded the answer, and the retried activity would reserve
again. So the stand-in gives each `reserve` an `idempotency_key` (`reservation_key`) that every
attempt and every replay of that call shares, and the store answers a key it holds with the
reservation it made.
"""

from __future__ import annotations

import dataclasses
import inspect
import itertools
import logging
import weakref
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any

from temporalio import workflow

from sluicegate.budget import Reservation
from sluicegate.messages import Message
from sluicegate.processors.base import processor_id
from sluicegate.storage.base import MemoryStore
from sluicegate.storage.call_counts import CallReservation
from sluicegate.storage.context_summaries import ContextSummary
from sluicegate.storage.types import MessageInclude, Resource, Thread
from sluicegate.vector.base import QueryResult

log = logging.getLogger("sluicegate.durable")

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
    if isinstance(value, (MessageInclude, Reservation, QueryResult, CallReservation, ContextSummary)):
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
    "CallReservation": lambda v: CallReservation(**v),
    "ContextSummary": lambda v: ContextSummary(**v),
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


_issued: weakref.WeakKeyDictionary[Any, itertools.count[int]] = weakref.WeakKeyDictionary()
"""Reservations made so far, per workflow instance (a replay starts a new instance at 0)."""


def reservation_key() -> str:
    """The idempotency key of the workflow's next reservation: its workflow id and Temporal run
    id (unique, even when a workflow id is used again) and how many it made before. A workflow
    makes its calls in the same order on every replay, so each attempt and replay of one
    reservation sends the same key, and no other reservation has it."""
    info = workflow.info()
    number = next(_issued.setdefault(workflow.instance(), itertools.count(1)))
    return f"{info.workflow_id}/{info.run_id}/reserve-{number}"


def takes_idempotency_key(store: Any) -> bool:
    """Whether the store's `reserve` accepts `idempotency_key` (the built-in stores do)."""
    try:
        parameters = inspect.signature(store.reserve).parameters
    except (TypeError, ValueError):
        return False
    return "idempotency_key" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    )


_warned: set[type] = set()


def store_proxy(store: Any, call: Call) -> Any:
    """A stand-in for `store` whose coroutine methods are `call(method, args, kwargs)`. It is a
    `MemoryStore` when `store` is one, and has exactly the store's methods, so checks such as
    `isinstance(store, ReservingUsageStore)` answer as for the real store. Its `reserve` calls
    carry a `reservation_key` unless the caller gave an `idempotency_key`."""
    keyed = "reserve" in store_methods(store) and takes_idempotency_key(store)
    if "reserve" in store_methods(store) and not keyed and type(store) not in _warned:
        _warned.add(type(store))
        log.warning(
            "%s.reserve takes no idempotency_key: a durable run whose worker dies right after a "
            "reservation may be charged that reservation twice",
            type(store).__name__,
        )

    def forward(name: str) -> Callable[..., Awaitable[Any]]:
        async def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            if (
                name == "reserve"
                and keyed
                and kwargs.get("idempotency_key") is None
                and workflow.in_workflow()
            ):
                kwargs = {**kwargs, "idempotency_key": reservation_key()}
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
    """A processor that keeps a store (the cost guard's `store`): its calls become activities,
    through a copy the processor makes with that store's stand-in (`Processor.with_store`)."""
    store = getattr(processor, "store", None)
    return store is not None and bool(store_methods(store))


def durable_processors(agent: Any) -> list[Any]:
    """The agent's processors listed as such (a callable array is resolved per request, so
    its processors' stores cannot be looked up by a worker: the workflow refuses one with a
    store or a judge when the function returns it, `checks.check_returned`)."""
    out: list[Any] = []
    for name in ("input_processors", "output_processors", "error_processors"):
        array = getattr(agent, name, None)
        if isinstance(array, (list, tuple)):
            out.extend(array)
    return out
