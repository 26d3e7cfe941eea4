"""`configure()`: one call to send sluicegate's spans and metrics somewhere.

Needs the SDK: `pip install 'sluicegate[otel]'`. Applications that already set up
OpenTelemetry need not call it: runs report to the global providers.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlparse

from sluicegate.errors import ConfigurationError
from sluicegate.tracing.state import STATE, is_default_meter_provider, is_default_tracer_provider


class Telemetry:
    """What `configure()` set up: its providers, and the recorded spans/metrics when in memory."""

    def __init__(
        self, tracer_provider: Any, meter_provider: Any, span_exporter: Any, metric_reader: Any
    ) -> None:
        self.tracer_provider = tracer_provider
        self.meter_provider = meter_provider
        self._span_exporter = span_exporter
        self._metric_reader = metric_reader

    def spans(self) -> list[Any]:
        """The finished spans, oldest first (`in_memory=True` only)."""
        if self._span_exporter is None:
            raise ConfigurationError("spans() needs configure(in_memory=True)")
        self.tracer_provider.force_flush()
        return list(self._span_exporter.get_finished_spans())

    def span_tree(self, attributes: Sequence[str] = ()) -> str:
        """The finished spans as an indented tree (see `format_span_tree`)."""
        from sluicegate.tracing.tree import format_span_tree

        return format_span_tree(self.spans(), attributes)

    def metrics(self) -> dict[str, list[tuple[dict[str, Any], Any]]]:
        """`{metric name: [(attributes, value), ...]}` (`in_memory=True` only): a counter's
        value is its sum, a histogram's is `(count, sum)`."""
        if self._metric_reader is None:
            raise ConfigurationError("metrics() needs configure(in_memory=True)")
        out: dict[str, list[tuple[dict[str, Any], Any]]] = {}
        data = self._metric_reader.get_metrics_data()
        for resource_metrics in data.resource_metrics if data is not None else ():
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    points = out.setdefault(metric.name, [])
                    for point in metric.data.data_points:
                        value = point.value if hasattr(point, "value") else (point.count, point.sum)
                        points.append((dict(point.attributes or {}), value))
        return out

    def clear(self) -> None:
        """Forget the spans recorded so far (`in_memory=True`)."""
        if self._span_exporter is not None:
            self._span_exporter.clear()

    def force_flush(self) -> None:
        self.tracer_provider.force_flush()
        self.meter_provider.force_flush()

    def shutdown(self) -> None:
        """Flush and stop; sluicegate runs stop reporting to these providers."""
        self.force_flush()
        self.tracer_provider.shutdown()
        self.meter_provider.shutdown()
        if STATE.tracer_provider is self.tracer_provider:
            STATE.tracer_provider = None
            STATE.meter_provider = None


def configure(
    *,
    console: bool = False,
    otlp_endpoint: str | None = None,
    otlp_headers: dict[str, str] | None = None,
    in_memory: bool = False,
    capture_content: bool = False,
    capture_changes: bool = False,
    span_exporters: Sequence[Any] = (),
    service_name: str = "sluicegate",
    set_global: bool = True,
) -> Telemetry:
    """Set up tracing and metrics for sluicegate runs.

    `console` prints spans and metrics to stdout; `otlp_endpoint` (e.g.
    `"http://127.0.0.1:4318"`) exports both over OTLP/HTTP (protobuf) to `/v1/traces` and
    `/v1/metrics`; `in_memory` keeps them for `Telemetry.spans()` / `.metrics()` (tests);
    `span_exporters` adds your own. `capture_content=True` records prompts, completions and
    tool arguments/results (after processors ran; off by default). `capture_changes=True` (with
    `capture_content`) also records, on each processor span whose outcome is `modified`, what the
    processor was given and what it made of it: that is content *before* later guardrails ran,
    so values they redact appear in spans. It is meant for development (`sluicegate dev` turns
    it on for the studio's inspector), never for traces exported from production.

    sluicegate runs use these providers from now on. With `set_global` (the default) the
    first call also installs them as OpenTelemetry's global providers when none is set, so
    other instrumented libraries join the same traces; later calls replace only sluicegate's.
    Tests pass `set_global=False` so that `Telemetry.shutdown()` leaves nothing behind.
    """
    flags = (
        ("console", console),
        ("in_memory", in_memory),
        ("capture_content", capture_content),
        ("capture_changes", capture_changes),
        ("set_global", set_global),
    )
    for name, value in flags:
        if not isinstance(value, bool):
            raise ConfigurationError(f"configure({name}=...) must be a bool, got {value!r}")
    if capture_changes and not capture_content:
        raise ConfigurationError("configure(capture_changes=True) needs capture_content=True")
    if otlp_endpoint is not None:
        parsed = urlparse(otlp_endpoint) if isinstance(otlp_endpoint, str) else None
        if parsed is None or parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise ConfigurationError(
                f"configure(otlp_endpoint=...) must be an http(s) URL like 'http://127.0.0.1:4318', "
                f"got {otlp_endpoint!r}"
            )
    if not isinstance(service_name, str) or not service_name:
        raise ConfigurationError("configure(service_name=...) must be a non-empty string")
    # Here, not at module level: `import sluicegate` must not load OpenTelemetry.
    from opentelemetry import metrics, trace

    try:
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import (
            ConsoleMetricExporter,
            InMemoryMetricReader,
            MetricReader,
            PeriodicExportingMetricReader,
        )
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import (
            BatchSpanProcessor,
            ConsoleSpanExporter,
            SimpleSpanProcessor,
        )
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError as exc:  # pragma: no cover - depends on the installed extras
        raise ConfigurationError(
            "sluicegate.tracing.configure needs the OpenTelemetry SDK: pip install 'sluicegate[otel]'"
        ) from exc

    resource = Resource.create({"service.name": service_name})
    tracer_provider = TracerProvider(resource=resource)
    readers: list[MetricReader] = []
    memory_exporter = memory_reader = None
    if in_memory:
        memory_exporter = InMemorySpanExporter()
        tracer_provider.add_span_processor(SimpleSpanProcessor(memory_exporter))
        memory_reader = InMemoryMetricReader()
        readers.append(memory_reader)
    if console:
        # sys.stdout as it is now (the exporters' defaults are bound when the SDK is imported)
        tracer_provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stdout)))
        readers.append(PeriodicExportingMetricReader(ConsoleMetricExporter(out=sys.stdout)))
    if otlp_endpoint is not None:
        try:
            from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise ConfigurationError(
                "otlp_endpoint needs the OTLP exporter: pip install 'sluicegate[otel]'"
            ) from exc
        base = otlp_endpoint.rstrip("/")
        tracer_provider.add_span_processor(
            BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{base}/v1/traces", headers=otlp_headers))
        )
        readers.append(
            PeriodicExportingMetricReader(
                OTLPMetricExporter(endpoint=f"{base}/v1/metrics", headers=otlp_headers)
            )
        )
    for exporter in span_exporters:
        tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider = MeterProvider(resource=resource, metric_readers=readers)

    previous = STATE.tracer_provider
    STATE.tracer_provider = tracer_provider
    STATE.meter_provider = meter_provider
    STATE.capture_content = capture_content
    STATE.capture_changes = capture_changes
    if previous is None and set_global:
        if is_default_tracer_provider(trace.get_tracer_provider()):
            trace.set_tracer_provider(tracer_provider)
        if is_default_meter_provider(metrics.get_meter_provider()):
            metrics.set_meter_provider(meter_provider)
    return Telemetry(tracer_provider, meter_provider, memory_exporter, memory_reader)
