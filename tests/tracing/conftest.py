"""A fresh in-memory OpenTelemetry setup per test, removed afterwards (never global)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

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
