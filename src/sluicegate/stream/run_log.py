"""The run log: every chunk of a run, kept for a while, so a client that lost its connection can
replay from the offset it had reached and follow the run live (Mastra's agent `observe`).

The contract, shared by `InMemoryRunLog` and `RedisRunLog`:

- `await log.open(run_id, agent_id=..., resource_id=..., thread_id=...)` returns the run's
  `RunWriter`. Opening a run that is open, or that ended for good, is a `RunStateError`; opening
  a run that was closed `"suspended"` reopens it and continues its offsets (a resumed run is the
  same stream, as in Mastra).
- `writer.append(chunk)` records the next chunk: its offset is its index in the run's stream,
  from 0. It is synchronous and cheap, because it runs once per streamed chunk. Chunks are kept
  by reference (the in-process log) or serialized when flushed (Redis): no copy on append.
  The in-process writer also has `text_sink(run_id)`: a `TextSink`, where the streaming loop
  writes the text deltas it built itself as their text alone.
- `await writer.close(status)`: the run ended (`finished`, `suspended`, `error`, `aborted`).
  Closing twice is a no-op; appending after close is a `RunStateError`.
- `log.read(run_id, offset=0)` replays the run from `offset`, then follows it live until it is
  closed; a reader that joins after the close replays and ends. Errors are raised on the first
  iteration: an unknown (or forgotten) run is a `RunNotFoundError`; an offset whose chunks were
  dropped by the bound is an `OffsetExpiredError` naming the first offset still held; a
  negative offset is a `ValueError`. An offset past the end of a *running* run waits for that
  chunk (another instance may not have flushed what the client already saw); past the end of a
  *closed* run it is an `OffsetOutOfRangeError`, since no client can have seen it.
- `await log.info(run_id)` returns `RunInfo`: who owns the run (agent, resource, thread), its
  status and its offsets, for access checks before a stream is opened.

The log is a convenience channel for reconnecting clients, not a guardrail: a log that fails
(Redis down) never breaks the run; its readers get `RunLogUnavailableError`.

Divergence from Mastra: Mastra's offset counts every event of the run's pubsub topic (lifecycle
events included); here it counts exactly the chunks of the stream the client reads, so "number
of chunks received" is the offset to reconnect with. Mastra's `observe` on an unknown run waits
(for a producer that never comes, unless an idle timeout is set); here it is a typed error.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol, get_args

from sluicegate.errors import SluicegateError
from sluicegate.stream.chunk import Chunk, text_delta

logger = logging.getLogger("sluicegate.run_log")

RunStatus = Literal["finished", "suspended", "error", "aborted"]
RUN_STATUSES: frozenset[str] = frozenset(get_args(RunStatus))


class RunLogError(SluicegateError):
    """Base class of the run log's errors."""


class RunNotFoundError(RunLogError, LookupError):
    """No run with this id is in the log: never opened here, or forgotten after its retention."""

    def __init__(self, run_id: str) -> None:
        super().__init__(f"run {run_id!r} is not in the run log (unknown, or its retention ended)")
        self.run_id = run_id


class OffsetExpiredError(RunLogError):
    """The chunks at `offset` were dropped to keep the run within its bound; `first_offset` is
    the oldest one still held (reconnect from there, knowing the chunks before it are lost)."""

    def __init__(self, run_id: str, offset: int, first_offset: int) -> None:
        super().__init__(
            f"offset {offset} of run {run_id!r} is no longer held; the first offset held is {first_offset}"
        )
        self.run_id = run_id
        self.offset = offset
        self.first_offset = first_offset


class OffsetOutOfRangeError(RunLogError, ValueError):
    """The offset is past the end of a closed run: no client can have received that chunk."""

    def __init__(self, run_id: str, offset: int, end: int) -> None:
        super().__init__(
            f"offset {offset} is past the end of run {run_id!r}, which closed after {end} chunks"
        )
        self.run_id = run_id
        self.offset = offset
        self.end = end


class RunStateError(RunLogError):
    """An open, append or reopen that the run's state does not allow."""


class RunLogUnavailableError(RunLogError):
    """The log of this run cannot be read: its backend failed (the run itself was not broken)."""

    def __init__(self, run_id: str, reason: str) -> None:
        super().__init__(f"the log of run {run_id!r} is unavailable: {reason}")
        self.run_id = run_id


@dataclass(frozen=True, slots=True)
class RunInfo:
    """What the log knows of a run: its owner (for access checks), status and offsets.

    `status` is None while the run is open. `first_offset` is the oldest chunk still held;
    `next_offset` the offset the next chunk will get (the count appended so far)."""

    run_id: str
    agent_id: str
    resource_id: str | None
    thread_id: str | None
    status: RunStatus | None
    first_offset: int
    next_offset: int


class RunWriter(Protocol):
    """The writing end of one run, held by the code that streams it."""

    @property
    def run_id(self) -> str: ...

    def append(self, chunk: Chunk[Any]) -> None: ...

    async def close(self, status: RunStatus) -> None: ...


class RunLog(Protocol):
    """A bounded log of runs' chunks: replay from an offset, then follow live."""

    async def open(
        self,
        run_id: str,
        *,
        agent_id: str,
        resource_id: str | None = None,
        thread_id: str | None = None,
    ) -> RunWriter: ...

    async def info(self, run_id: str) -> RunInfo: ...

    def read(self, run_id: str, offset: int = 0) -> AsyncIterator[Chunk[Any]]: ...


def check_offset(offset: object) -> int:
    """The offset as an int, or a `ValueError` naming what was wrong."""
    if isinstance(offset, bool) or not isinstance(offset, int):
        raise ValueError(f"offset must be a non-negative int, got {offset!r}")
    if offset < 0:
        raise ValueError(f"offset must be a non-negative int, got {offset}")
    return offset


def check_status(status: object) -> RunStatus:
    if status not in RUN_STATUSES:
        raise ValueError(f"status must be one of {sorted(RUN_STATUSES)}, got {status!r}")
    return status  # type: ignore[return-value]


def check_positive(name: str, value: object, *, allow_float: bool = False) -> None:
    number = isinstance(value, int | float) if allow_float else isinstance(value, int)
    if isinstance(value, bool) or not number or float(value) <= 0:  # type: ignore[arg-type]
        raise ValueError(f"{name} must be a positive number, got {value!r}")


def _wake(waiters: list[asyncio.Future[None]]) -> None:
    """Resolve readers' futures, each on its own loop (a reader may run on another thread)."""
    try:
        here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        here = None
    for future in waiters:
        loop = future.get_loop()
        if loop is here:
            if not future.done():
                future.set_result(None)
        else:
            loop.call_soon_threadsafe(_resolve, future)


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


class _Run:
    """One run in memory: the chunks it holds (`held`, from offset `base`), the readers waiting
    for the next one, and what the texts among them stand for.

    `held` grows at its end and is trimmed from its start; `first` applies the bound to offsets
    exactly, whatever the list still holds. An entry is a chunk, the text alone of a text
    delta written through a `TextSink` (from `mark_offsets[i]` on, a text is a delta of text
    `marks[i] = (run_id, text_id)`), or a chunk kept as its JSON (bytes, `append_encoded`),
    decoded when read."""

    __slots__ = (
        "agent_id",
        "base",
        "capacity",
        "closed_at",
        "held",
        "limit",
        "lock",
        "mark_offsets",
        "marks",
        "resource_id",
        "run_id",
        "status",
        "thread_id",
        "waiters",
    )

    def __init__(
        self,
        run_id: str,
        capacity: int,
        agent_id: str,
        resource_id: str | None,
        thread_id: str | None,
    ) -> None:
        self.run_id = run_id
        self.capacity = capacity
        self.held: list[Chunk[Any] | str | bytes] = []
        self.base = 0
        # `append` trims past this: one move of the list per quarter of the bound, not per chunk
        # (it is the moves that cost, not the memory of the few chunks more held meanwhile).
        self.limit = capacity + capacity // 4 + 64
        # Held only to trim and to read an entry by offset, so that a reader on another thread
        # never pairs a trimmed list (or marks) with the old base (appends move no entry).
        self.lock = threading.Lock()
        self.mark_offsets: list[int] = []
        self.marks: list[tuple[str, str]] = []
        self.status: RunStatus | None = None
        self.closed_at = 0.0
        self.waiters: list[asyncio.Future[None]] = []
        """The readers waiting: emptied in place, never replaced (a `TextSink` holds it)."""
        self.agent_id = agent_id
        self.resource_id = resource_id
        self.thread_id = thread_id

    @property
    def next(self) -> int:
        return self.base + len(self.held)

    @property
    def first(self) -> int:
        end = self.base + len(self.held)
        return end - self.capacity if end > self.capacity else 0

    def entry(self, position: int) -> Chunk[Any] | None:
        """The chunk at `position`, or None if the bound dropped it; a text is built back into
        its chunk, a JSON entry decoded. The caller checked `position < next`."""
        with self.lock:
            if position < self.first:
                return None
            entry = self.held[position - self.base]
            if isinstance(entry, Chunk):
                return entry
            if isinstance(entry, str):
                run_id, text_id = self.marks[bisect_right(self.mark_offsets, position) - 1]
        if isinstance(entry, bytes):
            return Chunk.from_dict(json.loads(entry))
        return text_delta(run_id, text_id, entry)

    def trim(self) -> None:
        """Let go of what is past the bound, and of the marks no held text needs any more."""
        excess = len(self.held) - self.capacity
        with self.lock:
            if excess > 0:
                del self.held[:excess]
                self.base += excess
            cut = bisect_right(self.mark_offsets, self.base) - 1  # the mark the first text needs
            if cut > 0:
                del self.mark_offsets[:cut], self.marks[:cut]

    def hold(self, entry: Chunk[Any] | bytes) -> None:
        """`entry` at the end, a quarter past the bound trimmed, the waiting readers woken."""
        if self.status is not None:
            raise RunStateError(f"run {self.run_id!r} is closed ({self.status}); it takes no chunks")
        held = self.held
        held.append(entry)
        if len(held) > self.limit:
            self.trim()
        if self.waiters:
            self.wake()

    def wake(self) -> None:
        if self.waiters:
            waiters = list(self.waiters)
            self.waiters.clear()
            _wake(waiters)

    def info(self) -> RunInfo:
        return RunInfo(
            self.run_id,
            self.agent_id,
            self.resource_id,
            self.thread_id,
            self.status,
            self.first,
            self.next,
        )


class MemoryRunWriter:
    """Appends to one in-memory run; holds the run itself, so appending costs no lookup."""

    __slots__ = ("_log", "_run", "run_id")

    def __init__(self, log: InMemoryRunLog, run: _Run) -> None:
        self._log = log
        self._run = run
        self.run_id = run.run_id

    @property
    def next_offset(self) -> int:
        """The offset the next chunk appended gets (a durable run's writes at explicit offsets
        read it to skip what an earlier attempt already wrote)."""
        return self._run.next

    def append(self, chunk: Chunk[Any]) -> None:
        self._run.hold(chunk)

    def append_encoded(self, data: str) -> None:
        """The chunk whose `Chunk.to_dict()` JSON is `data`, kept as that JSON and decoded when
        read: a durable run's chunks arrive encoded, and a chunk that is one string, not a tree
        of dicts and lists (a `step-finish` holds every step so far), costs the garbage
        collector nothing in a log that keeps a thousand runs."""
        self._run.hold(data.encode())

    def text_sink(self, run_id: str) -> TextSink:
        """Where a caller that builds text-delta chunks itself writes them (see `TextSink`)."""
        run = self._run
        if run.status is not None:
            raise RunStateError(f"run {run.run_id!r} is closed ({run.status}); it takes no chunks")
        return TextSink(run, run_id)

    async def close(self, status: RunStatus) -> None:
        check_status(status)
        self._log._close(self._run, status)


class TextSink:
    """The hot path's way to write text deltas to an in-process run: the chunk
    `text_delta(run_id, text_id, text)` is kept as its text alone, appended by the held list's
    own `put` (no Python frame, no chunk object held per token for the garbage collector to
    walk; readers get an equal chunk, built when read). Per delta, the caller does:

        if text_id != sink.text_id:
            sink.begin(text_id)  # a new text: marks what the texts from here stand for
        sink.put(text)
        if sink.waiters:
            sink.wake()  # a reader waits for this chunk

    Only while it is the run's only writer, between its other appends and until it closes (a
    text put after the close is not kept). Its texts count against the bound at once, and are
    let go (trimmed) at an `append` or `begin` that finds a quarter more held, and at close."""

    __slots__ = ("_run", "put", "run_id", "text_id", "waiters")

    def __init__(self, run: _Run, run_id: str) -> None:
        self._run = run
        self.run_id = run_id
        self.put: Callable[[str], None] = run.held.append
        self.waiters = run.waiters
        self.text_id: str | None = None
        """The text the deltas put now belong to (None: `begin` first)."""

    def begin(self, text_id: str) -> None:
        run = self._run
        if run.status is not None:
            raise RunStateError(f"run {run.run_id!r} is closed ({run.status}); it takes no chunks")
        if len(run.held) > run.limit:  # as `append` does: a text id per delta costs no more
            run.trim()
        run.mark_offsets.append(run.next)
        run.marks.append((self.run_id, text_id))
        self.text_id = text_id

    def wake(self) -> None:
        self._run.wake()


class InMemoryRunLog:
    """The run log of one process: at most `max_chunks` chunks per run (the oldest are dropped
    past that), at most `max_runs` runs (the longest-closed are forgotten first, then the oldest
    open ones), and each closed run is forgotten `retention` seconds after its close.

    Readers read the run's chunks at their own pace, so a slow reader never holds the writer
    back; one that falls more than `max_chunks` behind gets `OffsetExpiredError`. The bound is
    exact for offsets; in memory a run may hold a quarter more chunks until its next trim, and
    a text written through a `TextSink` (the agent's own text deltas) is held as its text until
    the next chunk of another kind. A waiting reader costs one future per wait, and a cancelled
    one leaves nothing behind. `clock` (seconds, monotonic) is injectable for tests. Use it from
    one event loop's thread; readers on other loops are woken thread-safely.
    """

    def __init__(
        self,
        *,
        max_chunks: int = 10_000,
        max_runs: int = 1_000,
        retention: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        check_positive("max_chunks", max_chunks)
        check_positive("max_runs", max_runs)
        check_positive("retention", retention, allow_float=True)
        self.max_chunks = max_chunks
        self.max_runs = max_runs
        self.retention = float(retention)
        self._clock = clock
        self._runs: dict[str, _Run] = {}
        # Closed runs in the order they closed: the retention sweep and eviction read its head.
        self._closed: OrderedDict[str, _Run] = OrderedDict()

    def __len__(self) -> int:
        self._sweep()
        return len(self._runs)

    async def open(
        self,
        run_id: str,
        *,
        agent_id: str,
        resource_id: str | None = None,
        thread_id: str | None = None,
    ) -> MemoryRunWriter:
        check_ids(run_id, agent_id)
        self._sweep()
        run = self._runs.get(run_id)
        if run is not None:
            _check_reopen(run.run_id, run.status, run.agent_id, run.resource_id, agent_id, resource_id)
            del self._closed[run_id]
            run.status = None
            return MemoryRunWriter(self, run)
        run = _Run(run_id, self.max_chunks, agent_id, resource_id, thread_id)
        self._runs[run_id] = run
        self._evict()
        return MemoryRunWriter(self, run)

    async def info(self, run_id: str) -> RunInfo:
        return self._get(run_id).info()

    async def read(self, run_id: str, offset: int = 0) -> AsyncIterator[Chunk[Any]]:
        position = check_offset(offset)
        run = self._get(run_id)
        while True:
            # One entry at a time, `next` re-read and the bound checked with it: the writer may
            # append (or trim) between two yields, and a reader lapped by the bound must not be
            # handed a newer chunk under an old offset.
            while position < run.next:
                chunk = run.entry(position)
                if chunk is None:
                    raise OffsetExpiredError(run_id, position, run.first)
                yield chunk
                position += 1
            if run.status is not None:
                if position > run.next:
                    raise OffsetOutOfRangeError(run_id, position, run.next)
                return
            future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            run.waiters.append(future)
            if position < run.next:  # appended, on the writer's thread, since the check above
                run.waiters.remove(future)
                continue
            try:
                await future
            finally:
                if not future.done() or future.cancelled():
                    try:
                        run.waiters.remove(future)
                    except ValueError:
                        pass

    def waiting_readers(self, run_id: str) -> int:
        """How many readers of the run are waiting for its next chunk (for tests and metrics)."""
        return len(self._get(run_id).waiters)

    def _get(self, run_id: str) -> _Run:
        self._sweep()
        run = self._runs.get(run_id)
        if run is None:
            raise RunNotFoundError(run_id)
        return run

    def _close(self, run: _Run, status: RunStatus) -> None:
        if run.status is not None:
            return
        run.status = status
        run.closed_at = self._clock()
        run.trim()
        with run.lock:
            run.held = list(run.held)  # a text sink's late `put` lands in the old list: not kept
        if self._runs.get(run.run_id) is run:
            self._closed[run.run_id] = run
        run.wake()

    def _sweep(self) -> None:
        """Forget the runs whose retention has passed (the closed map is in close order)."""
        if not self._closed:
            return
        deadline = self._clock() - self.retention
        closed = self._closed
        while closed:
            run_id, run = next(iter(closed.items()))
            if run.closed_at > deadline:
                break
            del closed[run_id]
            del self._runs[run_id]

    def _evict(self) -> None:
        while len(self._runs) > self.max_runs:
            if self._closed:
                run_id, _ = self._closed.popitem(last=False)
                del self._runs[run_id]
                continue
            run_id = next(iter(self._runs))
            logger.warning(
                "run log full (max_runs=%d): forgetting the oldest open run %r; its writer keeps "
                "streaming, new readers will not find it",
                self.max_runs,
                run_id,
            )
            del self._runs[run_id]


def check_ids(run_id: Any, agent_id: Any) -> None:
    """`open`'s ids: non-empty strings (they become keys, in memory and on Redis)."""
    if not isinstance(run_id, str) or not run_id:
        raise ValueError(f"run_id must be a non-empty string, got {run_id!r}")
    if not isinstance(agent_id, str) or not agent_id:
        raise ValueError(f"agent_id must be a non-empty string, got {agent_id!r}")


def _check_reopen(
    run_id: str,
    status: str | None,
    agent_id: str,
    resource_id: str | None,
    new_agent_id: str,
    new_resource_id: str | None,
) -> None:
    """Only a suspended run is reopened, and only by its owner."""
    if status is None:
        raise RunStateError(f"run {run_id!r} is already open in the run log")
    if status != "suspended":
        raise RunStateError(f"run {run_id!r} ended ({status}); only a suspended run is reopened")
    if (agent_id, resource_id) != (new_agent_id, new_resource_id):
        raise RunStateError(
            f"run {run_id!r} belongs to agent {agent_id!r} / resource {resource_id!r}; it cannot "
            f"be reopened for agent {new_agent_id!r} / resource {new_resource_id!r}"
        )
