"""The OpenTelemetry metrics sluicegate records.

Counters (by `sluicegate.processor.id`): `sluicegate.processor.tripwires`,
`sluicegate.processor.violations`, `sluicegate.processor.retries`, `sluicegate.detector.calls`.
Histograms: `sluicegate.processor.hook.duration` (ms, by processor id and phase; one
observation per hook call, or per processor per step for `output_stream`) and the GenAI
conventions' `gen_ai.client.operation.duration` (s, model latency) and
`gen_ai.client.token.usage` (tokens, by `gen_ai.token.type`).
"""

from __future__ import annotations

from typing import Any

from sluicegate.tracing import attributes as attr
from sluicegate.tracing.state import meter_provider, opentelemetry_in_use

SCOPE = "sluicegate"


class Instruments:
    """The instruments of one meter provider."""

    def __init__(self, provider: Any) -> None:
        meter = provider.get_meter(SCOPE)
        self.tripwires = meter.create_counter(
            "sluicegate.processor.tripwires", unit="{tripwire}", description="Processor aborts"
        )
        self.violations = meter.create_counter(
            "sluicegate.processor.violations",
            unit="{violation}",
            description="Violations reported to on_violation (aborts and warn-strategy detections)",
        )
        self.retries = meter.create_counter(
            "sluicegate.processor.retries", unit="{retry}", description="Retries a processor asked for"
        )
        self.detector_calls = meter.create_counter(
            "sluicegate.detector.calls", unit="{call}", description="Calls to a guardrail's detector model"
        )
        self.hook_duration = meter.create_histogram(
            "sluicegate.processor.hook.duration", unit="ms", description="Time spent in a processor hook"
        )
        self.operation_duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="Model call latency"
        )
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Tokens used by model calls"
        )


_cache: dict[int, tuple[Any, Instruments]] = {}


def instruments() -> Instruments:
    """The instruments of the current meter provider (created once per provider)."""
    provider = meter_provider()
    cached = _cache.get(id(provider))
    if cached is None or cached[0] is not provider:
        cached = (provider, Instruments(provider))
        _cache[id(provider)] = cached
    return cached[1]


def record_violation(processor_id: str) -> None:
    if opentelemetry_in_use():  # else there is no meter provider to count with
        instruments().violations.add(1, {attr.PROCESSOR_ID: processor_id})


def record_detector_call(processor_id: str) -> None:
    if opentelemetry_in_use():
        instruments().detector_calls.add(1, {attr.PROCESSOR_ID: processor_id})
