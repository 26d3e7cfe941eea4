"""Fixtures for the provider adapter tests: one fake provider server per session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .fake_provider import FakeProvider


@pytest.fixture(scope="session")
def _fake_provider_server() -> Iterator[FakeProvider]:
    server = FakeProvider()
    yield server
    server.close()


@pytest.fixture
def fake_provider(_fake_provider_server: FakeProvider) -> Iterator[FakeProvider]:
    _fake_provider_server.reset()
    yield _fake_provider_server
    _fake_provider_server.reset()


@pytest.fixture(autouse=True)
def _no_provider_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests decide which keys exist; the developer's own keys must not leak in."""
    for name in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GROQ_API_KEY",
        "CEREBRAS_API_KEY",
        "OPENROUTER_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
