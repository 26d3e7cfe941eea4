"""Shared test helpers."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

REQUIRE_SERVICES = os.environ.get("SLUICEGATE_REQUIRE_SERVICES") == "1"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("conformance", "the conformance scenarios run on Temporal")
    group.addoption(
        "--conformance-scenarios",
        metavar="DIR",
        default=None,
        help="scenario folder (default ../shared/conformance/scenarios, relative to the project root)",
    )
    group.addoption(
        "--conformance-expected",
        metavar="DIR",
        default=None,
        help="expected results folder (default ../shared/conformance/expected)",
    )


def missing_service(reason: str) -> None:
    """Skip a test whose server is not installed here, or fail where CI requires it."""
    if REQUIRE_SERVICES:
        pytest.fail(f"{reason} (SLUICEGATE_REQUIRE_SERVICES=1)")
    pytest.skip(reason)


@pytest.fixture(autouse=True)
def _sluicegate_environment() -> Iterator[None]:
    """`sluicegate serve`/`dev` hand their settings to the server's workers as `SLUICEGATE_*`
    variables; a test that runs the command in-process must not leave them (a Host rule, say)
    to the tests after it."""
    before = {k: v for k, v in os.environ.items() if k.startswith("SLUICEGATE_")}
    yield
    for name in [k for k in os.environ if k.startswith("SLUICEGATE_") and k not in before]:
        del os.environ[name]
    os.environ.update(before)
