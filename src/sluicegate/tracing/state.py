"""What `configure()` set: the providers sluicegate reports to and whether content is captured.

Without `configure()`, runs report to OpenTelemetry's global providers (whatever the
application installed) and capture no content.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

# OpenTelemetry is imported inside the functions below, and only once something in the process
# uses it (see `opentelemetry_in_use`): `import sluicegate` and untraced runs do not load it.

PROVIDER_VARIABLES = ("OTEL_PYTHON_TRACER_PROVIDER", "OTEL_PYTHON_METER_PROVIDER")
"""Environment variables that make OpenTelemetry's API build a global provider on first ask."""


@dataclass
class TracingState:
    tracer_provider: Any = None
    meter_provider: Any = None
    capture_content: bool = False
    capture_changes: bool = False
    """Also record what each modifying processor was given and what it made of it (see
    `configure(capture_changes=...)`)."""
    adapt_tracer: Any = None
    """Adapts a run's tracer to where the run executes (a durable worker installs one so that a
    workflow's replayed spans keep their ids and are exported once); None: used as is."""


STATE = TracingState()


def opentelemetry_in_use() -> bool:
    """False when nothing in this process imported OpenTelemetry and the environment names no
    provider: then no provider (`configure()` imports it too) and no current span can exist,
    so there is nothing to record or propagate, and no reason to import it."""
    return "opentelemetry" in sys.modules or any(os.environ.get(name) for name in PROVIDER_VARIABLES)


def tracer_provider() -> Any:
    """The configured tracer provider, else the global one (possibly the no-op default)."""
    if STATE.tracer_provider is not None:
        return STATE.tracer_provider
    from opentelemetry import trace

    return trace.get_tracer_provider()


def meter_provider() -> Any:
    if STATE.meter_provider is not None:
        return STATE.meter_provider
    from opentelemetry import metrics

    return metrics.get_meter_provider()


def is_default_tracer_provider(provider: Any) -> bool:
    """True for OpenTelemetry's proxy/no-op default: nothing would record a span."""
    from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider

    return isinstance(provider, (ProxyTracerProvider, NoOpTracerProvider))


def is_default_meter_provider(provider: Any) -> bool:
    from opentelemetry.metrics import NoOpMeterProvider

    return isinstance(provider, NoOpMeterProvider) or type(provider).__name__ == "_ProxyMeterProvider"


def enabled() -> bool:
    """Whether a run should record spans or metrics (checked once per run, never per chunk)."""
    if not opentelemetry_in_use():
        return False
    return not (is_default_tracer_provider(tracer_provider()) and is_default_meter_provider(meter_provider()))
