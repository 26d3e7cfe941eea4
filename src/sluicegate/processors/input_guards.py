"""Running input guardrails concurrently.

An input processor that only *checks* the input (it may abort, warn or report, but never
changes messages) says so with a true `checks_input_only` attribute. Adjacent checking
processors then run concurrently: three 200 ms judges cost 200 ms, not 600 ms. If one trips,
the others are cancelled and the first tripwire (in processor order) ends the run.

A checking processor with `run_in_parallel = True` goes further: it runs concurrently with the
first model call (as OpenAI's Agents SDK allows). The model's output is then buffered — not
released to the client, no tools executed — until every such guard passed, and the model call
is cancelled as soon as one trips (`gated`).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")


def checks_only(processor: Any) -> bool:
    return bool(getattr(processor, "checks_input_only", False))


def runs_in_parallel(processor: Any) -> bool:
    return checks_only(processor) and bool(getattr(processor, "run_in_parallel", False))


def groups(entries: Sequence[T], key: Callable[[T], bool]) -> list[list[T]]:
    """`entries` cut into runs: adjacent entries with a true `key` share a run."""
    out: list[list[T]] = []
    for entry in entries:
        if out and key(entry) and key(out[-1][0]):
            out[-1].append(entry)
        else:
            out.append([entry])
    return out


async def all_or_first_failure(calls: Sequence[Awaitable[Any]]) -> list[Any]:
    """Run `calls` concurrently; if any raises, cancel the rest and raise the first failure
    in the order given (not the order of completion, so the outcome is deterministic)."""
    tasks = [asyncio.ensure_future(call) for call in calls]
    try:
        pending: set[asyncio.Future[Any]] = set(tasks)
        while pending:
            _, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_EXCEPTION)
            failed = [t for t in tasks if t.done() and not t.cancelled() and t.exception() is not None]
            if failed:
                for task in pending:
                    task.cancel()
                raise failed[0].exception()  # type: ignore[misc]
        return [task.result() for task in tasks]
    finally:
        for task in tasks:
            if not task.done():
                task.cancel()


async def gated(stream: AsyncIterator[T], gate: asyncio.Future[Any]) -> AsyncGenerator[T, None]:
    """`stream`'s items, held back until `gate` completes; if the gate fails, the stream is
    closed (cancelling the model call) and the gate's exception raised instead."""
    iterator = stream.__aiter__()
    held: list[T] = []
    try:
        while not gate.done():
            step: asyncio.Future[T] = asyncio.ensure_future(iterator.__anext__())
            await asyncio.wait({step, gate}, return_when=asyncio.FIRST_COMPLETED)
            if not step.done():
                if gate.exception() is not None:
                    step.cancel()
                    await asyncio.wait({step})  # let the model step unwind before closing it
                    raise gate.exception()  # type: ignore[misc]
                item = await step
            else:
                try:
                    item = step.result()
                except StopAsyncIteration:
                    await gate
                    break
            held.append(item)
        else:
            gate.result()
        for item in held:
            yield item
        held.clear()
        async for item in iterator:
            yield item
    finally:
        if not gate.done():
            gate.cancel()
        closer = getattr(iterator, "aclose", None)
        if closer is not None:
            await closer()
