"""`ModelOutput`: what `Agent.stream` returns.

`full_stream` is the run itself — an async generator that drives the agent loop as it is
iterated — so the consumer pays no queue or task hand-off per chunk. The awaitable properties
drive the same generator to its end and read the run's results.

Once handed out, the generator is referenced weakly: a consumer that breaks out of
`full_stream` (or `text_stream`) and drops it lets Python close it at once, which closes the
provider call. `aclose()` (or `async with`) does the same explicitly.
"""

from __future__ import annotations

import weakref
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic

from typing_extensions import TypeVar

from sluicegate.errors import SluicegateError
from sluicegate.stream.chunk import Chunk

if TYPE_CHECKING:
    from sluicegate.agent.results import Response, StepResult, Tripwire
    from sluicegate.agent.run import AgentRun
    from sluicegate.stream.kinds import ToolCallChunk, ToolErrorChunk, ToolResultChunk
    from sluicegate.stream.usage import Usage

T = TypeVar("T")
Out = TypeVar("Out", default=Any)


class ModelOutput(Generic[Out]):
    """A streaming run: iterate `full_stream` (once), or await a result property."""

    def __init__(self, run: AgentRun) -> None:
        self._run = run
        self._events: AsyncGenerator[Chunk, None] | None = run.events()
        self._events_ref: weakref.ref[AsyncGenerator[Chunk, None]] | None = None
        self._handed_out = False

    def _generator(self) -> AsyncGenerator[Chunk, None] | None:
        if self._events is not None:
            return self._events
        return self._events_ref() if self._events_ref is not None else None

    def _hand_out(self) -> AsyncGenerator[Chunk, None]:
        events = self._events
        assert events is not None
        self._handed_out = True
        self._events_ref = weakref.ref(events)
        self._events = None
        return events

    async def aclose(self) -> None:
        """Stop the run now: the provider call is cancelled and nothing more is produced. A
        resumed run closed before it acted on its decision gives its claim back."""
        self._handed_out = True
        events = self._generator()
        self._events = None
        if events is not None:
            await events.aclose()
        await self._run.give_back_claim()

    async def __aenter__(self) -> ModelOutput:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    @property
    def run_id(self) -> str:
        return self._run.run_id

    @property
    def trace_id(self) -> str:
        """The run's OpenTelemetry trace id (32 hex chars), or "" when the run is not traced."""
        return self._run.trace_id

    @property
    def full_stream(self) -> AsyncGenerator[Chunk, None]:
        """Every chunk of the run, in order. May be iterated once."""
        if self._handed_out:
            raise SluicegateError("full_stream can be iterated only once per run")
        return self._hand_out()

    @property
    def text_stream(self) -> AsyncIterator[str]:
        """The text of each `text-delta` chunk."""
        return self._texts(self.full_stream)

    @staticmethod
    async def _texts(chunks: AsyncGenerator[Chunk, None]) -> AsyncIterator[str]:
        try:
            async for chunk in chunks:
                if chunk.type == "text-delta":
                    yield chunk.payload.text
        finally:
            await chunks.aclose()

    async def _finish(self, read: Callable[[AgentRun], T]) -> T:
        self._handed_out = True
        events = self._generator()
        if events is not None:
            async for _ in events:
                pass
        return read(self._run)

    @property
    def text(self) -> Awaitable[str]:
        return self._finish(lambda run: run.stream_text())

    @property
    def reasoning_text(self) -> Awaitable[str]:
        return self._finish(lambda run: run.reasoning_text())

    @property
    def finish_reason(self) -> Awaitable[str | None]:
        return self._finish(lambda run: run.finish_reason)

    @property
    def usage(self) -> Awaitable[Usage]:
        return self._finish(lambda run: run.usage)

    @property
    def total_usage(self) -> Awaitable[Usage]:
        return self.usage

    @property
    def steps(self) -> Awaitable[list[StepResult]]:
        return self._finish(lambda run: list(run.steps))

    @property
    def tool_calls(self) -> Awaitable[list[ToolCallChunk]]:
        return self._finish(lambda run: run.all_tool_calls())

    @property
    def tool_results(self) -> Awaitable[list[ToolResultChunk]]:
        return self._finish(lambda run: run.all_tool_results())

    @property
    def tool_errors(self) -> Awaitable[list[ToolErrorChunk]]:
        """Every failed tool call of the run (`tool-error` chunks)."""
        return self._finish(lambda run: run.all_tool_errors())

    @property
    def tripwire(self) -> Awaitable[Tripwire | None]:
        return self._finish(lambda run: run.tripwire)

    @property
    def steps_exhausted(self) -> Awaitable[bool]:
        """Whether the run ended at `max_steps` while the model still wanted tools."""
        return self._finish(lambda run: run.steps_exhausted)

    @property
    def error(self) -> Awaitable[BaseException | None]:
        return self._finish(lambda run: run.error)

    @property
    def response(self) -> Awaitable[Response]:
        return self._finish(lambda run: run.response())

    @property
    def object(self) -> Awaitable[Out]:
        """The validated structured output (see `structured_output`)."""
        return self._finish(lambda run: run.object)

    @property
    def object_stream(self) -> AsyncIterator[Any]:
        """Partial structured output while the model writes it: each time the answer so far
        parses to a new, non-empty value (open strings and containers closed), that value as
        plain JSON (dicts and lists; the validated object is `await output.object`). Reads
        `full_stream`, so use one or the other."""
        return self._partial_objects(self.full_stream)

    @staticmethod
    async def _partial_objects(chunks: AsyncIterator[Chunk]) -> AsyncIterator[Any]:
        from sluicegate.agent.structured import parse_partial_json

        pieces: list[str] = []
        last: Any = None
        async for chunk in chunks:
            kind = chunk.type
            if kind == "text-delta":
                pieces.append(chunk.payload.text)
                value = parse_partial_json("".join(pieces))
                if value and value != last:
                    last = value
                    yield value
            elif kind == "step-start":
                pieces.clear()
                last = None

    async def consume(self) -> None:
        """Drive the run to its end without reading the chunks."""
        await self._finish(lambda run: None)
