"""`abort_signal`: cancelling a run from outside while it waits on anything.

A run is an async generator driven by its consumer, so the only task that can be interrupted
is the consumer's, and only while it is inside the run. `abortable` wraps the run: a watcher
task waits for the signal and cancels the consumer's task if (and only if) it is suspended in
the run at that moment; otherwise the wrapper notices the signal before asking for the next
chunk. Either way the run's own clean-up runs (tool tasks cancelled, the provider stream
closed), nothing after the abort point runs (so `process_output_result` and memory saving do
not), and the stream ends with the chunk `on_abort` returns.

The wrapper costs one generator layer per chunk; runs without a signal do not use it.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from typing import Any

from sluicegate.errors import ConfigurationError
from sluicegate.stream.chunk import Chunk


def check_abort_signal(signal: Any) -> None:
    """An abort signal must look like `asyncio.Event`: `is_set()` and an awaitable `wait()`."""
    if signal is None:
        return
    if not callable(getattr(signal, "is_set", None)) or not callable(getattr(signal, "wait", None)):
        raise ConfigurationError(
            f"abort_signal must be an asyncio.Event (or have is_set() and async wait()), "
            f"got {type(signal).__name__}"
        )


class _Watch:
    """Which task is inside the run right now, and whether the watcher cancelled it."""

    __slots__ = ("cancelled", "inside")

    def __init__(self) -> None:
        self.inside: asyncio.Task[Any] | None = None
        self.cancelled = False


async def _watch(signal: Any, state: _Watch, can_cancel: Callable[[], bool]) -> None:
    await signal.wait()
    task = state.inside
    if task is not None and not task.done() and can_cancel():
        state.cancelled = True
        task.cancel()


async def abortable(
    run: AsyncGenerator[Chunk, None],
    signal: Any,
    on_abort: Callable[[], Chunk],
    can_cancel: Callable[[], bool] = lambda: True,
) -> AsyncGenerator[Chunk, None]:
    """`run`'s chunks until `signal` is set; then `run` is cancelled and closed, and the
    stream ends with `on_abort()`. While `can_cancel()` is false (the run is saving its
    result) a set signal waits for the next chunk boundary instead of cancelling mid-write."""
    state = _Watch()
    watcher: asyncio.Future[None] | None = None
    task: asyncio.Task[Any] | None = None
    try:
        while not signal.is_set():
            if watcher is None:
                watcher = asyncio.ensure_future(_watch(signal, state, can_cancel))
            task = asyncio.current_task()
            state.inside = task
            try:
                chunk = await run.__anext__()
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                if not state.cancelled:
                    raise  # somebody else cancelled the consumer: not ours to swallow
                break
            finally:
                state.inside = None
            yield chunk
        if state.cancelled and task is not None and task.cancelling():
            task.uncancel()  # our own cancellation is spent; the consumer's task goes on
        await run.aclose()
        yield on_abort()
    finally:
        if watcher is not None:
            watcher.cancel()
        await run.aclose()
