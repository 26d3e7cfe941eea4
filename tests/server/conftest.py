from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sluicegate import Sluicegate
from sluicegate.server import ServerSettings, create_app


@pytest.fixture
def example() -> Any:
    """A fresh copy of the example app (its own in-memory SQLite store)."""
    import tests.server.example_app as module

    return importlib.reload(module)


@pytest.fixture
def make_client(example: Any) -> Iterator[Callable[..., TestClient]]:
    clients: list[TestClient] = []

    def make(settings: ServerSettings | None = None, registry: Sluicegate | None = None) -> TestClient:
        client = TestClient(create_app(registry or example.registry, settings or ServerSettings()))
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.fixture
def client(make_client: Callable[..., TestClient]) -> TestClient:
    return make_client()
