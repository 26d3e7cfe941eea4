"""An app served as `sluicegate serve --temporal` serves it, in process: its routes over ASGI, runs
as workflows on a worker of its own task queue, against the session's dev server."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import NamedTuple

import httpx
import pytest
from temporalio.client import Client
from tests.durable.temporal_server import DevServer

from sluicegate import Sluicegate
from sluicegate.durable.temporal import create_worker
from sluicegate.server import ServerSettings, create_app


class Served(NamedTuple):
    http: httpx.AsyncClient
    """A client of the app's routes."""
    temporal: Client
    """The Temporal client its worker uses."""
    task_queue: str


@asynccontextmanager
async def served_durably(
    app: Sluicegate,
    temporal_server: DevServer,
    monkeypatch: pytest.MonkeyPatch,
    settings: ServerSettings | None = None,
) -> AsyncIterator[Served]:
    """A client of `app`'s routes with `serve --temporal`'s settings, while a worker runs."""
    queue = f"q-{uuid.uuid4()}"
    monkeypatch.setenv("SLUICEGATE_TEMPORAL", temporal_server.target)
    monkeypatch.setenv("SLUICEGATE_TEMPORAL_TASK_QUEUE", queue)
    server = create_app(app, settings or ServerSettings())
    client = await Client.connect(temporal_server.target)
    async with (
        create_worker(client, app, task_queue=queue),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=server), base_url="http://test", timeout=60
        ) as http,
    ):
        yield Served(http, client, queue)
