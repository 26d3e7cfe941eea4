"""Shared test helpers."""

from __future__ import annotations

import os

import pytest

REQUIRE_SERVICES = os.environ.get("SLUICEGATE_REQUIRE_SERVICES") == "1"


def missing_service(reason: str) -> None:
    """Skip a test whose server is not installed here, or fail where CI requires it."""
    if REQUIRE_SERVICES:
        pytest.fail(f"{reason} (SLUICEGATE_REQUIRE_SERVICES=1)")
    pytest.skip(reason)
