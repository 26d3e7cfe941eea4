"""OpenTelemetry traces and metrics for agent runs.

Every run is an `invoke_agent` span with `chat`, `execute_tool` and `processor <id> <phase>`
children (see `sluicegate.tracing.spans`), and counters/histograms (see
`sluicegate.tracing.metrics`). Nothing is recorded, and nothing is paid on the per-chunk path,
until a tracer or meter provider exists: call `configure(...)` or install your own.

    from sluicegate.tracing import configure
    telemetry = configure(otlp_endpoint="http://127.0.0.1:4318")
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sluicegate._lazy import lazy_attributes
from sluicegate.tracing.configure import Telemetry, configure
from sluicegate.tracing.tree import format_span_tree

if TYPE_CHECKING:
    from sluicegate.tracing.record import TracingContext

__all__ = ["Telemetry", "TracingContext", "configure", "format_span_tree"]

# `record` imports OpenTelemetry, which a process that never traces does not load (see
# `sluicegate.tracing.run_start`): imported on first use.
__getattr__ = lazy_attributes(__name__, {"TracingContext": "record"})


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
