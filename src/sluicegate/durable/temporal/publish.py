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
import json
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

# KEYS: the stream, the meta hash. ARGV: max chunks, offset of the first chunk, idle TTL (ms), then
# the chunks' JSON. Offsets already written are skipped, so a repeated write is a no-op.
_WRITE_AT = """
local top = redis.call('XREVRANGE', KEYS[1], '+', '-', 'COUNT', 1)
local written = 0
if #top > 0 then
  local id = top[1][1]
  local dash = string.find(id, '-')
  written = tonumber(string.sub(id, 1, dash - 1))
end
local start = tonumber(ARGV[2])
for i = 4, #ARGV do
  local offset = start + i - 4
  if offset + 1 > written then
    redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], (offset + 1) .. '-0', 'c', ARGV[i])
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return #ARGV - 3
"""


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
        key = self.run_log._key(run_id)
        top = await self.run_log._redis().xrevrange(key, "+", "-", count=1)
        if not top:
            return 0
        raw = top[0][0]
        text = raw.decode() if isinstance(raw, bytes) else str(raw)
        return int(text.split("-")[0])

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
        log = self.run_log
        key = log._key(run_id)
        encoded = [json.dumps(c, separators=(",", ":"), default=str) for c in chunks]
        await log._redis().eval(
            _WRITE_AT, 2, key, key + ":meta", log.max_chunks, offset, log._idle_ms, *encoded
        )
        return offset + len(chunks)

    async def close(self, run_id: str, offset: int, status: RunStatus) -> None:
        """The run's stream ended after `offset` chunks, with `status`."""
        if isinstance(self.run_log, InMemoryRunLog):
            writer = self._writers.pop(run_id, None)
            if writer is not None:
                await writer.close(status)
            return
        log = self.run_log
        key = log._key(run_id)
        meta = key + ":meta"
        client = log._redis()
        if (await client.hget(meta, "status")) in (status, status.encode()):
            return  # closed by an earlier attempt
        pipe = client.pipeline(transaction=False)
        pipe.xadd(key, {"end": status}, id=f"{offset}-1")
        pipe.hset(meta, mapping={"status": status, "next": offset})
        pipe.pexpire(key, log._retention_ms)
        pipe.pexpire(meta, log._retention_ms)
        await pipe.execute(raise_on_error=False)


def _next(info: RunInfo) -> int:
    return int(info.next_offset)
