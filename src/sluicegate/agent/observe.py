"""Reconnecting to a run: every run writes its chunks to the agent's run log (`logged`), and
`Agent.observe(run_id=..., offset=N)` replays them from `N` and follows the run live
(`observe_run`, Mastra's `observe`).

A run is in the log from its first chunk: the entry is opened when the consumer starts reading
(a `ModelOutput` never read starts no run, so it leaves nothing behind) and closed when the run
ends, with the status the run ended in. The log is a convenience channel, not a guardrail: a
log that cannot be opened or written is logged loudly and the run goes on without it.

Ownership is the suspended runs' rule (`resume.caller_resource`): only a call whose request
context names the run's resource (or none, for a run started without one), on an agent with the
run's agent id, may observe it; anyone else gets the same `RunNotFoundError` as for a run that
does not exist.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from sluicegate.errors import ConfigurationError, InvalidInputError, SluicegateError
from sluicegate.request_context import RESOURCE_ID_KEY, RequestContext
from sluicegate.stream.chunk import Chunk
from sluicegate.stream.run_log import (
    OffsetExpiredError,
    OffsetOutOfRangeError,
    RunLog,
    RunNotFoundError,
    RunStatus,
    RunWriter,
    TextSink,
)

if TYPE_CHECKING:
    from sluicegate.agent.run_core import RunCore

log = logging.getLogger("sluicegate.run_log")

_MAX_ID_CHARS = 1024
_ENDINGS = frozenset({"finish", "tripwire", "error", "abort"})
"""Chunk types after which a run has nothing left to say: a consumer that stops reading there
stopped a run that had ended, not an unfinished one."""


def check_run_log(value: Any) -> RunLog | None:
    """`Agent(run_log=...)`: a `RunLog`, or None for no log."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ConfigurationError(
            f"run_log must be a RunLog (InMemoryRunLog, RedisRunLog) or None to keep no log, got {value!r}"
        )
    if not all(callable(getattr(value, name, None)) for name in ("open", "info", "read")):
        raise ConfigurationError(
            "run_log must be a RunLog (with open, info and read; e.g. InMemoryRunLog or RedisRunLog) "
            f"or None, got {type(value).__name__}"
        )
    return value  # type: ignore[no-any-return]


# ---------------------------------------------------------------------------- writing a run


class LogTap:
    """One run's entry in the run log, as the run writes it: opened before the first chunk,
    each chunk appended as it goes out (`append` for the hot path, `put` elsewhere), closed with
    the run's status (`run_status`). A log that fails is logged loudly and written no more."""

    __slots__ = ("append", "last", "run", "run_log", "writer")

    def __init__(self, run: RunCore, run_log: RunLog) -> None:
        self.run = run
        self.run_log = run_log
        self.writer: RunWriter | None = None
        self.append: Callable[[Chunk], None] = _skip
        """The writer's own `append` once open: what the hot path calls (it may raise)."""
        self.last: Chunk | None = None
        """The last chunk given to `put` (the run's ending chunks all are)."""

    async def open(self) -> None:
        self.writer = await _open(self.run, self.run_log)
        if self.writer is not None:
            self.append = self.writer.append

    def put(self, chunk: Chunk) -> None:
        self.last = chunk
        try:
            self.append(chunk)
        except Exception:
            self.broken()

    def broken(self) -> Callable[[Chunk], None]:
        """Appending failed: the log stops here (the run goes on); what to call from now on."""
        run_id = self.run.run_id
        log.warning("run %s: appending to the run log failed; its log stops here", run_id, exc_info=True)
        self.append = _skip
        return self.put

    def text_sink(self, run_id: str) -> TextSink | None:
        """Where the hot path writes the text deltas it builds, when the writer has such a
        sink (the in-process log's `TextSink`); None: it appends their chunks instead."""
        make = getattr(self.writer, "text_sink", None)
        if make is None or self.append is _skip:
            return None
        try:
            return make(run_id)  # type: ignore[no-any-return]
        except Exception:
            self.broken()
            return None

    async def close(self, ended: bool, failure: BaseException | None) -> None:
        if self.writer is not None:
            await _close(self.writer, run_status(self.run, self.last, ended, failure))


async def logged(
    run: RunCore, events: AsyncGenerator[Chunk, None], run_log: RunLog
) -> AsyncGenerator[Chunk, None]:
    """`events`, each chunk appended to the run's log entry as it is handed on (a run whose loop
    cannot write it inline: an abortable one, whose abort chunk comes from the layer around the
    loop); the entry is opened before the first chunk and closed with the run's status when the
    run ends (or its consumer stops reading)."""
    tap = LogTap(run, run_log)
    await tap.open()
    failure: BaseException | None = None
    ended = False
    try:
        async for chunk in events:
            tap.put(chunk)
            yield chunk
        ended = True
    except BaseException as exc:  # GeneratorExit (the consumer stopped), a cancellation, a bug
        failure = exc
        raise
    finally:
        try:
            await events.aclose()  # first the run's own clean-up, which may give a claim back
        finally:
            await tap.close(ended, failure)


def _skip(chunk: Chunk) -> None:
    return None


async def _open(run: RunCore, run_log: RunLog) -> RunWriter | None:
    message_list = run.message_list
    try:
        return await run_log.open(
            run.run_id,
            agent_id=run.agent_id,
            resource_id=message_list.resource_id,
            thread_id=message_list.thread_id,
        )
    except Exception:
        log.warning(
            "run %s of agent %r: the run log could not open it; the run goes on, but it cannot be observed",
            run.run_id,
            run.agent_id,
            exc_info=True,
        )
        return None


async def _close(writer: RunWriter, status: RunStatus) -> None:
    try:
        await writer.close(status)
    except Exception:
        log.warning("run %s: closing its run log entry (%s) failed", writer.run_id, status, exc_info=True)


def run_status(run: RunCore, last: Chunk | None, ended: bool, failure: BaseException | None) -> RunStatus:
    """How the run ended, as the log records it.

    A run waiting on a person is `suspended` (also a resumed run stopped before its decision
    ran: its stored run is claimable again, so its log must reopen). A run that stopped before
    its last chunk (aborted, its consumer gone, cancelled) is `aborted`; an unrecovered error is
    `error`; anything else, a tripwire included, `finished`."""
    state = run.state
    if state.held is not None:
        return "suspended"
    if getattr(run, "resumption", None) is not None and not state.decided:
        return "suspended"
    if state.aborted:
        return "aborted"
    if not ended and (last is None or last.type not in _ENDINGS):
        return "error" if isinstance(failure, Exception) else "aborted"
    if state.error is not None and state.tripwire is None:
        return "error"
    return "finished"


# ---------------------------------------------------------------------------- observing a run


class ObservedOutput:
    """A run read from the log: `full_stream` replays from the offset asked for and follows the
    run until it closes (finished, suspended, error or aborted). The chunks are the run's own
    (from an in-process log, the very objects its consumer got, but for the model's own text
    deltas, kept as their text and built back equal): read them, do not change them."""

    def __init__(self, run_id: str, offset: int, chunks: AsyncIterator[Chunk]) -> None:
        self.run_id = run_id
        self.offset = offset
        """The offset of the first chunk of `full_stream` (the count a client had received)."""
        self._chunks: AsyncIterator[Chunk] | None = chunks

    @property
    def full_stream(self) -> AsyncIterator[Chunk]:
        """The run's chunks from `offset`, then live. May be iterated once."""
        chunks = self._chunks
        if chunks is None:
            raise SluicegateError("full_stream can be iterated only once per observe()")
        self._chunks = None
        return chunks

    @property
    def text_stream(self) -> AsyncIterator[str]:
        """The text of each `text-delta` chunk from `offset` on."""
        return _texts(self.full_stream)

    @property
    def text(self) -> Awaitable[str]:
        """The text of the run from `offset` to its close (reads `full_stream`)."""
        return _joined(self.text_stream)

    async def aclose(self) -> None:
        """Stop following the run (the run itself goes on)."""
        chunks, self._chunks = self._chunks, None
        close = getattr(chunks, "aclose", None)
        if close is not None:
            await close()

    async def __aenter__(self) -> ObservedOutput:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"ObservedOutput(run_id={self.run_id!r}, offset={self.offset})"


async def _joined(texts: AsyncIterator[str]) -> str:
    return "".join([text async for text in texts])


async def _texts(chunks: AsyncIterator[Chunk]) -> AsyncIterator[str]:
    try:
        async for chunk in chunks:
            if chunk.type == "text-delta":
                yield chunk.payload.text
    finally:
        close = getattr(chunks, "aclose", None)
        if close is not None:
            await close()


async def observe_run(
    run_log: RunLog | None,
    *,
    agent_id: str,
    agent_name: str,
    run_id: Any,
    offset: Any,
    options: dict[str, Any],
) -> ObservedOutput:
    """The run's chunks from `offset`, after the checks the module docstring describes. What
    can be refused is refused here, not on the first read: an unknown run or another owner's
    (`RunNotFoundError`), an offset the log no longer holds (`OffsetExpiredError`) or past the
    end of a closed run (`OffsetOutOfRangeError`)."""
    unknown = set(options) - {"request_context"}
    if unknown:
        raise TypeError(f"unknown option(s) for observe: {sorted(unknown)}; known: ['request_context']")
    if not isinstance(run_id, str) or not run_id or len(run_id) > _MAX_ID_CHARS:
        raise InvalidInputError(f"run_id must be a non-empty string of at most {_MAX_ID_CHARS} characters")
    if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
        raise InvalidInputError(
            f"offset must be a non-negative int (the number of chunks already received), got {offset!r}"
        )
    context = options.get("request_context")
    if context is not None and not isinstance(context, RequestContext):
        raise SluicegateError("request_context must be a sluicegate.RequestContext")
    resource = context.get(RESOURCE_ID_KEY) if context is not None else None
    if run_log is None:
        raise ConfigurationError(
            f"agent {agent_name!r} keeps no run log (run_log=None), so its runs cannot be observed"
        )
    info = await run_log.info(run_id)  # RunNotFoundError, RunLogUnavailableError
    if info.agent_id != agent_id or info.resource_id != resource:
        raise RunNotFoundError(run_id)
    if offset < info.first_offset:
        raise OffsetExpiredError(run_id, offset, info.first_offset)
    if info.status is not None and offset > info.next_offset:
        raise OffsetOutOfRangeError(run_id, offset, info.next_offset)
    return ObservedOutput(run_id, offset, run_log.read(run_id, offset))
