"""What `configure()` set: the providers sluicegate reports to and whether content is captured.

Without `configure()`, runs report to OpenTelemetry's global providers (whatever the
application installed) and capture no content.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from opentelemetry import metrics, trace
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider


@dataclass
class TracingState:
    tracer_provider: Any = None
    meter_provider: Any = None
    capture_content: bool = False


STATE = TracingState()


def tracer_provider() -> Any:
    """The configured tracer provider, else the global one (possibly the no-op default)."""
    return STATE.tracer_provider if STATE.tracer_provider is not None else trace.get_tracer_provider()


def meter_provider() -> Any:
    return STATE.meter_provider if STATE.meter_provider is not None else metrics.get_meter_provider()


def is_default_tracer_provider(provider: Any) -> bool:
    """True for OpenTelemetry's proxy/no-op default: nothing would record a span."""
    return isinstance(provider, (ProxyTracerProvider, NoOpTracerProvider))


def is_default_meter_provider(provider: Any) -> bool:
    return isinstance(provider, NoOpMeterProvider) or type(provider).__name__ == "_ProxyMeterProvider"


def enabled() -> bool:
    """Whether a run should record spans or metrics (checked once per run, never per chunk)."""
    return not (is_default_tracer_provider(tracer_provider()) and is_default_meter_provider(meter_provider()))
