"""A fresh in-memory OpenTelemetry setup per test, removed afterwards (never global)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import metrics, trace
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.trace import NoOpTracerProvider

from sluicegate.tracing import Telemetry, configure


@pytest.fixture
def telemetry() -> Iterator[Telemetry]:
    setup = configure(in_memory=True, set_global=False)
    yield setup
    setup.shutdown()


@pytest.fixture
def telemetry_with_content() -> Iterator[Telemetry]:
    setup = configure(in_memory=True, capture_content=True, set_global=False)
    yield setup
    setup.shutdown()


@pytest.fixture(autouse=True)
def no_global_providers(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as a process that installed no OpenTelemetry provider. OpenTelemetry's
    global providers can be set once per process, and other tests (the server's studio) do."""
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: NoOpTracerProvider())
    monkeypatch.setattr(metrics, "get_meter_provider", lambda: NoOpMeterProvider())
