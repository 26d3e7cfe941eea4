"""Fault injection: the agent against a misbehaving provider on 127.0.0.1, with a real SQLite
memory, while a 10 ms ticker measures how long the event loop was blocked."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from models.fake_provider import FakeProvider
from sluicegate.memory import Memory
from sluicegate.storage import SQLiteStore

TICK = 0.010


class StallMonitor:
    """Ticks every 10 ms on the running loop; `max_stall` is the worst lateness seen (seconds),
    the tick still in flight included."""

    def __init__(self) -> None:
        self._max = 0.0
        self._task: asyncio.Task[None] | None = None
        self._last = time.perf_counter()

    def _record(self) -> None:
        self._max = self.max_stall

    @property
    def max_stall(self) -> float:
        return max(self._max, time.perf_counter() - self._last - TICK)

    async def _tick(self) -> None:
        while True:
            self._last = time.perf_counter()
            await asyncio.sleep(TICK)
            self._record()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._tick())

    async def stop(self) -> None:
        assert self._task is not None
        self._record()  # the tick still in flight
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            pass


@pytest.fixture(scope="session")
def _provider_server() -> Iterator[FakeProvider]:
    server = FakeProvider()
    yield server
    server.close()


@pytest.fixture
def provider(_provider_server: FakeProvider) -> Iterator[FakeProvider]:
    _provider_server.reset()
    yield _provider_server
    _provider_server.reset()


@pytest.fixture
async def stalls() -> AsyncIterator[StallMonitor]:
    monitor = StallMonitor()
    monitor.start()
    yield monitor
    await monitor.stop()


@pytest.fixture
async def memory(tmp_path: Path) -> AsyncIterator[Memory]:
    store = SQLiteStore(str(tmp_path / "faults.db"))
    yield Memory(storage=store)
    await store.close()
