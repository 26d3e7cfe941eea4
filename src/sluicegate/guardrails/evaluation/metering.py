"""Counting a chain's detector calls, tokens and cost during an evaluation.

Each guardrail's `DetectorModel` gets its model wrapped once by `Metered`, which counts into
the `Meter` of the current evaluation (a context variable) and is a plain pass-through
otherwise: evaluating an application that is also serving requests counts only the
evaluation's own calls. Prices are the cost guard's `DEFAULT_PRICING` (dollars per million
tokens, longest model-id prefix); an unpriced model counts its calls and tokens at $0 and is
named in `unpriced`.
"""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sluicegate.guardrails.detector import DetectorModel
from sluicegate.models.base import CallOptions, GenerateResult, StreamResult
from sluicegate.processors.builtin.cost_guard import DEFAULT_PRICING, lookup_price
from sluicegate.stream.usage import Usage


@dataclass
class Meter:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float = 0.0
    unpriced: set[str] = field(default_factory=set)


_current: contextvars.ContextVar[Meter | None] = contextvars.ContextVar("sluicegate_eval_meter", default=None)


class Metered:
    """A detector's model, counting each call into the current evaluation's meter."""

    def __init__(self, model: Any) -> None:
        self.inner = model

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        meter = _current.get()
        if meter is not None:
            meter.calls += 1
        result: GenerateResult = await self.inner.do_generate(options)
        if meter is not None:
            usage = Usage.from_v2(result.usage)
            meter.input_tokens += usage.input_tokens
            meter.output_tokens += usage.output_tokens
            model_id = str(getattr(self.inner, "model_id", "") or "")
            price = lookup_price(DEFAULT_PRICING, model_id)
            if price is None:
                meter.unpriced.add(model_id or type(self.inner).__name__)
            else:
                meter.cost += price.cost(usage)
        return result

    async def do_stream(self, options: CallOptions) -> StreamResult:
        return await self.inner.do_stream(options)  # type: ignore[no-any-return]


def detectors_of(processors: Sequence[Any]) -> list[DetectorModel[Any]]:
    """The detector models the processors ask (one level deep: a guardrail's attributes)."""
    found: dict[int, DetectorModel[Any]] = {}
    for processor in processors:
        for value in vars(processor).values() if hasattr(processor, "__dict__") else ():
            if isinstance(value, DetectorModel):
                found[id(value)] = value
    return list(found.values())


def install(processors: Sequence[Any]) -> None:
    """Wrap each detector's model (once; resolving a model string here, as its first call would)."""
    for detector in detectors_of(processors):
        model = detector.model
        if not isinstance(model, Metered):
            detector.use_model(Metered(model))


@contextmanager
def metering() -> Iterator[Meter]:
    meter = Meter()
    token = _current.set(meter)
    try:
        yield meter
    finally:
        _current.reset(token)
