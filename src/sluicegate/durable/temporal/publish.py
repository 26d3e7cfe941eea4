"""Chunks of a durable run into the agent's run log, at offsets the workflow owns.

An in-process run has one writer per run. A durable run has many: the workflow (its own chunks,
through the `publish` activity) and each model activity (the model's chunks, as they stream),
on any worker, and a retried activity writes again. So every write names its offset and is
idempotent: a chunk already at that offset is kept, so a replayed publish never doubles a
chunk, and `end` tells a retried attempt where the previous attempt stopped.

`RedisRunLog` (the layout of `stream/redis_run_log.py`) serves readers on every instance;
`InMemoryRunLog` only readers in the worker's own process (tests, one-process deployments).

A model or tool call's chunks go out as they are made (`Publisher.live`): into the in-process
log each is appended at once, as the chunk object itself (its appends are synchronous and
cheap, as in a run in one process); into a shared log they are written in batches by one task,
so a slow log never holds the model stream back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from sluicegate.durable.temporal.payloads import json_text
from sluicegate.stream.chunk import Chunk
from sluicegate.stream.run_log import (
    InMemoryRunLog,
    MemoryRunWriter,
    RunInfo,
    RunNotFoundError,
    RunStateError,
    RunStatus,
)


class Publisher:
    """Writes a run's chunks at explicit offsets (see the module docstring)."""

    def __init__(self, run_log: Any) -> None:
        self.run_log = run_log
        self._writers: dict[str, MemoryRunWriter] = {}
        self._in_memory = isinstance(run_log, InMemoryRunLog)

    @property
    def shared(self) -> bool:
        """Whether readers in other processes see what is written (Redis)."""
        return not self._in_memory

    async def open(
        self, run_id: str, *, agent_id: str, resource_id: str | None, thread_id: str | None
    ) -> int:
        """The run is running; the offset its next chunk takes (a resumed run continues)."""
        try:
            info = await self.run_log.info(run_id)
        except RunNotFoundError:
            info = None
        if info is not None and info.status is None and not self._in_memory:
            if (info.agent_id, info.resource_id) != (agent_id, resource_id):
                # Not an earlier attempt of this run: another run holds the id (as the log's
                # reopen check refuses, never write into it).
                raise RunStateError(f"run {run_id!r} is already open in the run log for another owner")
            return await self.end(run_id)  # opened by an earlier attempt
        if info is not None and info.status is None and run_id in self._writers:
            return _next(info)
        writer = await self.run_log.open(
            run_id, agent_id=agent_id, resource_id=resource_id, thread_id=thread_id
        )
        if isinstance(writer, MemoryRunWriter):
            self._writers[run_id] = writer
        return await self.end(run_id)

    async def end(self, run_id: str) -> int:
        """The offset after the last chunk written to the run."""
        if self._in_memory:
            return _next(await self.run_log.info(run_id))
        return await self.run_log.end_offset(run_id)  # type: ignore[no-any-return]

    async def write(self, run_id: str, offset: int, chunks: Sequence[dict[str, Any] | str]) -> int:
        """`chunks` at `offset`, `offset + 1`, ...; the offset after them. A chunk is its
        `Chunk.to_dict()` shape, or that shape's JSON (the workflow's chunks travel encoded: the
        log keeps them so, see `MemoryRunWriter.append_encoded`)."""
        if not chunks:
            return offset
        if self._in_memory:
            writer = self._writers.get(run_id)
            if writer is None:
                return offset + len(chunks)
            # Only what is not there yet: a retried attempt's chunks are skipped. Kept as JSON,
            # decoded if a reader reads them (`append_encoded`).
            for index in range(max(writer.next_offset - offset, 0), len(chunks)):
                chunk = chunks[index]
                writer.append_encoded(chunk if isinstance(chunk, str) else json_text(chunk))
            return offset + len(chunks)
        return await self.run_log.write_at(run_id, offset, chunks)  # type: ignore[no-any-return]

    def live(self, run_id: str, offset: int) -> LiveWrites:
        """Where a call's chunks go as they are made, from `offset` (see the module docstring)."""
        if not self._in_memory:
            return _Batches(self, run_id, offset)
        writer = self._writers.get(run_id)
        return LiveWrites(offset) if writer is None else _Appends(writer, offset)

    async def close(self, run_id: str, offset: int, status: RunStatus) -> None:
        """The run's stream ended after `offset` chunks, with `status`."""
        if self._in_memory:
            writer = self._writers.pop(run_id, None)
            if writer is not None:
                await writer.close(status)
            return
        await self.run_log.close_at(run_id, offset, status)


def live_writes(publisher: Publisher | None, run_id: str, offset: int) -> LiveWrites:
    """Where a call's chunks go from `offset` (`Publisher.live`; counted only without a log)."""
    return LiveWrites(offset) if publisher is None else publisher.live(run_id, offset)


class LiveWrites:
    """A call's chunks, written from `offset` on as they are made: `add` each (the chunk and its
    `to_dict()`, which the call makes anyway for its result), then `finish` for the offset after
    them (raising what failed to be written) or `cancel`. This base class writes nowhere (no log
    in this process) and only counts."""

    __slots__ = ("offset",)

    def __init__(self, offset: int) -> None:
        self.offset = offset

    def add(self, chunk: Chunk[Any], shape: dict[str, Any]) -> None:
        self.offset += 1

    async def finish(self) -> int:
        return self.offset

    def cancel(self) -> None:
        return None


class _Appends(LiveWrites):
    """Into the in-process log: appended at once, readers see each chunk as it comes. A chunk
    whose offset the log already holds (written by an earlier attempt) is skipped, so a retried
    attempt never doubles one. A failed append stops the writes; `finish` raises it."""

    __slots__ = ("_error", "_writer")

    def __init__(self, writer: MemoryRunWriter, offset: int) -> None:
        super().__init__(offset)
        self._writer = writer
        self._error: Exception | None = None

    def add(self, chunk: Chunk[Any], shape: dict[str, Any]) -> None:
        offset = self.offset
        self.offset = offset + 1
        if self._error is None and offset >= self._writer.next_offset:
            try:
                self._writer.append(chunk)
            except Exception as exc:  # the run closed meanwhile: as a failed batch write
                self._error = exc

    async def finish(self) -> int:
        if self._error is not None:
            raise self._error
        return self.offset


class _Batches(LiveWrites):
    """Into a shared log: buffered without waiting, written in batches by one task."""

    __slots__ = ("_buffer", "_done", "_publisher", "_run_id", "_task", "_wake")

    def __init__(self, publisher: Publisher, run_id: str, offset: int) -> None:
        super().__init__(offset)
        self._publisher = publisher
        self._run_id = run_id
        self._buffer: list[dict[str, Any]] = []
        self._wake = asyncio.Event()
        self._done = False
        self._task = asyncio.ensure_future(self._drain())

    def add(self, chunk: Chunk[Any], shape: dict[str, Any]) -> None:
        self._buffer.append(shape)
        self._wake.set()

    async def _drain(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            batch, self._buffer = self._buffer, []
            if batch:
                self.offset = await self._publisher.write(self._run_id, self.offset, batch)
            if self._done and not self._buffer:
                return

    async def finish(self) -> int:
        self._done = True
        self._wake.set()
        await self._task
        return self.offset

    def cancel(self) -> None:
        self._task.cancel()


def _next(info: RunInfo) -> int:
    return int(info.next_offset)
