"""The models a run's processors will call, checked when the run starts.

A guardrail's detector model (or a router's classifier and routes) given as a
`"provider/model"` string is resolved on first use, so building one never needs credentials.
Left at that, a missing API key or extra would surface only when the guardrail first runs:
for an output guardrail, after the main model has answered (and been paid). Resolving them
before the first model call turns that into a `ConfigurationError` while nothing has run.
A model that resolved once is not resolved again.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import Any
from weakref import WeakKeyDictionary

from sluicegate.errors import ConfigurationError, MissingAPIKeyError, UnknownModelError
from sluicegate.processors.base import processor_id

_checked_routes: WeakKeyDictionary[Any, bool] = WeakKeyDictionary()
_ROUTER_MODULE = "sluicegate.processors.builtin.model_router"
_DETECTOR_MODULE = "sluicegate.guardrails.detector"


def check_processor_models(processors: Iterable[Any]) -> None:
    """Raise a `ConfigurationError` naming the processor when a model it will call cannot be
    used (no API key, unknown provider, a missing extra)."""
    seen: set[int] = set()
    for processor in processors:
        for owner, what, resolve in _models(processor, seen):
            try:
                resolve()
            except ConfigurationError as exc:
                message = f"processor {processor_id(owner)!r}: its {what} cannot be used: {exc}"
                same = type(exc) in (MissingAPIKeyError, UnknownModelError)
                raise (type(exc) if same else ConfigurationError)(message) from exc


def _models(processor: Any, seen: set[int]) -> Iterator[tuple[Any, str, Callable[[], object]]]:
    """(the processor calling it, what it is, a function resolving it) for each model
    `processor` (or a processor in it, for a workflow) may call."""
    if id(processor) in seen:
        return
    seen.add(id(processor))
    inner = getattr(processor, "processors", None)
    if callable(inner) and type(processor).__name__ == "ProcessorWorkflow":
        for step_processor in inner():
            yield from _models(step_processor, seen)
        return
    detectors = sys.modules.get(_DETECTOR_MODULE)  # not imported: no guardrail exists
    if detectors is not None:
        for value in getattr(processor, "__dict__", {}).values():
            if isinstance(value, detectors.DetectorModel):
                yield processor, "model", functools.partial(getattr, value, "model")
    router_module = sys.modules.get(_ROUTER_MODULE)
    if (
        router_module is not None
        and isinstance(processor, router_module.ModelRouterProcessor)
        and processor not in _checked_routes
    ):
        from sluicegate.models.registry import resolve_model

        for route, model in processor.routes.items():
            if isinstance(model, str):
                yield processor, f"route {route!r} ({model!r})", functools.partial(resolve_model, model)
        _checked_routes[processor] = True
