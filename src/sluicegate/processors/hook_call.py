"""One processor hook, resolved once per request, and the one rule for calling it.

Every hook call of the runner (the once-per-step hooks, the per-chunk stream hook, the flush at
a step's end, a stream deadline) fails the same way, decided by `fail`:

- `TripWire` (the processor's `abort`) passes through, tagged with the processor id, after the
  processor's `on_violation` heard of it;
- `ProcessorError` (already named) and `AccessDeniedError` (a caller reaching for another's
  data, which callers catch by its exact class; see `sluicegate.errors`) pass through as they are;
- any other exception becomes a `ProcessorError` naming the processor and the hook.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, NoReturn

from sluicegate.errors import AccessDeniedError, ProcessorError, TripWire
from sluicegate.processors.base import collecting_reports, report_violation, stop_collecting
from sluicegate.processors.hook_timeout import await_bounded
from sluicegate.processors.offload import offload_sync_hook

PASSES_THROUGH: tuple[type[Exception], ...] = (ProcessorError, AccessDeniedError)
"""Exceptions a hook raises that reach the caller unwrapped (besides `TripWire`)."""

Hook = Callable[[Any], Any]
"""A hook as called: one args object in, a result or an awaitable of one out."""


class HookEntry:
    """One processor's hook for one request: the bound function, the processor's id, `state`,
    `abort` and timeout, and its position (`args.processor_index`)."""

    __slots__ = ("abort", "fn", "hook", "index", "is_async", "pid", "processor", "state", "timeout")

    def __init__(
        self,
        processor: Any,
        hook: str,
        pid: str,
        state: dict[str, Any],
        abort: Any,
        timeout: float | None,
        index: int | None = None,
    ) -> None:
        self.processor = processor
        self.index = index
        self.hook = hook
        self.pid = pid
        self.fn: Hook = getattr(processor, hook)
        self.is_async = inspect.iscoroutinefunction(self.fn)
        self.state = state
        self.abort = abort
        self.timeout = timeout

    def wrap(self, wrapper: Callable[[Hook], Hook]) -> None:
        """Replace the hook by `wrapper(hook)`, an async function (tracing wraps hooks in spans)."""
        self.fn = wrapper(self.fn)
        self.is_async = True


async def fail(entry: HookEntry, hook: str, exc: Exception) -> NoReturn:
    """Raise what a failure of `entry`'s `hook` becomes (the rule in the module docstring)."""
    if isinstance(exc, TripWire):
        if exc.processor_id is None:
            exc.processor_id = entry.pid
        await report_violation(entry.processor, exc.reason, exc.metadata)
        raise exc
    if isinstance(exc, PASSES_THROUGH):
        raise exc
    raise ProcessorError(
        f"processor {entry.pid!r} failed in {hook}: {exc}", processor_id=entry.pid, hook=hook
    ) from exc


async def call_hook(entry: HookEntry, args: Any, fn: Hook | None = None, hook: str | None = None) -> Any:
    """`entry`'s hook (or `fn`, another hook of the same processor, named `hook`) called with
    `args`: a sync hook on large input in a worker thread, an awaitable under the processor's
    timeout, async `on_violation` reports made meanwhile awaited, failures by `fail`."""
    call = entry.fn if fn is None else fn
    name = entry.hook if hook is None else hook
    reports, token = collecting_reports()
    try:
        result = call(args) if fn is None and entry.is_async else await offload_sync_hook(call, args)
        if inspect.isawaitable(result):
            result = await await_bounded(result, entry.timeout, entry.pid, name)
        return result
    except Exception as exc:
        await fail(entry, name, exc)
    finally:
        stop_collecting(token)
        if reports.pending:
            await reports.drain()
        reports.open = False


def wrong_return(entry: HookEntry, result: Any, expected: str) -> ProcessorError:
    """A hook returned something its caller cannot use."""
    return ProcessorError(
        f"processor {entry.pid!r} returned {type(result).__name__} from {entry.hook}; expected {expected}",
        processor_id=entry.pid,
        hook=entry.hook,
    )
