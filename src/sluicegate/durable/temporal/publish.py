"""Chunks of a durable run into the agent's run log, at offsets the workflow owns.

An in-process run has one writer per run. A durable run has many: the workflow (its own chunks,
through the `publish` activity) and each model activity (the model's chunks, as they stream),
on any worker, and a retried activity writes again. So every write names its offset and is
idempotent: a chunk already at that offset is kept, so a replayed publish never doubles a
chunk, and `end` tells a retried attempt where the previous attempt stopped.

`RedisRunLog` (the layout of `stream/redis_run_log.py`) serves readers on every instance;
`InMemoryRunLog` only readers in the worker's own process (tests, one-process deployments).
"""

from __future__ import annotations

import asyncio
from typing import Any

from sluicegate.stream.chunk import Chunk
from sluicegate.stream.run_log import (
    InMemoryRunLog,
    RunInfo,
    RunNotFoundError,
    RunStateError,
    RunStatus,
    RunWriter,
)


class Publisher:
    """Writes a run's chunks at explicit offsets (see the module docstring)."""

    def __init__(self, run_log: Any) -> None:
        self.run_log = run_log
        self._writers: dict[str, RunWriter] = {}
        self._lock = asyncio.Lock()

    @property
    def shared(self) -> bool:
        """Whether readers in other processes see what is written (Redis)."""
        return not isinstance(self.run_log, InMemoryRunLog)

    async def open(
        self, run_id: str, *, agent_id: str, resource_id: str | None, thread_id: str | None
    ) -> int:
        """The run is running; the offset its next chunk takes (a resumed run continues)."""
        try:
            info = await self.run_log.info(run_id)
        except RunNotFoundError:
            info = None
        if info is not None and info.status is None and not isinstance(self.run_log, InMemoryRunLog):
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
        if isinstance(self.run_log, InMemoryRunLog):
            self._writers[run_id] = writer
        return await self.end(run_id)

    async def end(self, run_id: str) -> int:
        """The offset after the last chunk written to the run."""
        if isinstance(self.run_log, InMemoryRunLog):
            return _next(await self.run_log.info(run_id))
        return await self.run_log.end_offset(run_id)  # type: ignore[no-any-return]

    async def write(self, run_id: str, offset: int, chunks: list[dict[str, Any]]) -> int:
        """`chunks` (`Chunk.to_dict()` shapes) at `offset`, `offset + 1`, ...; the offset after them."""
        if not chunks:
            return offset
        if isinstance(self.run_log, InMemoryRunLog):
            writer = self._writers.get(run_id)
            if writer is None:
                return offset + len(chunks)
            written = _next(await self.run_log.info(run_id))
            for index, chunk in enumerate(chunks):
                if offset + index >= written:
                    writer.append(Chunk.from_dict(chunk))
            return offset + len(chunks)
        return await self.run_log.write_at(run_id, offset, chunks)  # type: ignore[no-any-return]

    async def close(self, run_id: str, offset: int, status: RunStatus) -> None:
        """The run's stream ended after `offset` chunks, with `status`."""
        if isinstance(self.run_log, InMemoryRunLog):
            writer = self._writers.pop(run_id, None)
            if writer is not None:
                await writer.close(status)
            return
        await self.run_log.close_at(run_id, offset, status)


def _next(info: RunInfo) -> int:
    return int(info.next_offset)
