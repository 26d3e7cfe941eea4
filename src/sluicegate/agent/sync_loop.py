"""One long-lived background event loop for the blocking API (`generate_sync`, `stream_sync`).

`asyncio.run` per call creates and closes a loop each time, and SDK clients (httpx pools) keep
connections bound to the loop that opened them: the second call then fails with "Event loop is
closed", and code that already has a running loop (a notebook) cannot call `asyncio.run` at all.
Every blocking call therefore runs its coroutine on one daemon-thread loop that lives as long as
the process; provider clients are additionally kept per loop (see `models._sdk_model`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Coroutine, Iterator
from typing import Any, TypeVar

from sluicegate.errors import SluicegateError

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None


def background_loop() -> asyncio.AbstractEventLoop:
    """The shared loop, started on first use (again if its thread died, e.g. after fork)."""
    global _loop, _thread
    with _lock:
        if _loop is None or _thread is None or not _thread.is_alive() or _loop.is_closed():
            loop = asyncio.new_event_loop()
            ready = threading.Event()

            def serve() -> None:
                asyncio.set_event_loop(loop)
                loop.call_soon(ready.set)
                loop.run_forever()

            thread = threading.Thread(target=serve, name="sluicegate-sync-loop", daemon=True)
            thread.start()
            ready.wait()
            _loop, _thread = loop, thread
        return _loop


def _check_not_on_loop() -> None:
    if threading.current_thread() is _thread:
        raise SluicegateError(
            "generate_sync/stream_sync were called from inside a running sluicegate call "
            "(a tool or processor); use `await agent.generate(...)` there instead"
        )


def run_sync(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run `coroutine` on the background loop and block until it returns (or raises)."""
    try:
        _check_not_on_loop()
    except SluicegateError:
        coroutine.close()
        raise
    future = asyncio.run_coroutine_threadsafe(coroutine, background_loop())
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise


def iterate_sync(iterator: AsyncIterator[T]) -> Iterator[T]:
    """An async iterator read item by item on the background loop. Closing the returned
    generator (or leaving a `for` loop early) closes the async iterator too."""
    _check_not_on_loop()
    finished = False
    try:
        while True:
            done, item = run_sync(_next(iterator))
            if done:
                finished = True
                return
            yield item
    finally:
        closer = getattr(iterator, "aclose", None)
        if not finished and closer is not None:
            run_sync(closer())


async def _next(iterator: AsyncIterator[T]) -> tuple[bool, Any]:
    try:
        return False, await iterator.__anext__()
    except StopAsyncIteration:
        return True, None
