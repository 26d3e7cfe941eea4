"""`RedisRunLog`: the run log on Redis Streams, so any instance can serve a reconnecting client.

Layout, per run (keys under `prefix`; the run id is a hash tag, so both keys of a run share a
Redis Cluster slot):

- `{prefix}{{run_id}}`: a stream. The chunk at offset `k` is the entry `{k+1}-0` with field `c`
  (the chunk's `to_dict()` as JSON); a close after `n` chunks is the entry `{n}-1` with field
  `end` (the status). A reopened (resumed) run appends after its close marker, so IDs stay
  increasing and offset `k` is always `{k+1}-0`. `XADD ... MAXLEN ~ max_chunks` bounds it.
- `{prefix}{{run_id}}:meta`: a hash with `agent_id`, `resource_id`, `thread_id`, `status`
  (`running`, a `RunStatus`, or `lost`) and `next` (the chunk count, written on close).

Both keys expire `idle_ttl` seconds after the last flush while the run is open (a writer that
crashed does not leave its run forever) and `retention` seconds after the close.

Appends are buffered and flushed by one background task per log: the chunks that arrived while
the previous pipeline was in flight go out in the next one, one small Lua script call per run
per batch (XADDs and the TTL refresh on the server: a command per chunk would cost the client
more to pack and parse than the chunk's JSON). So a streaming run costs a list append per
chunk and about one round trip per batch, and a reader on another instance sees a chunk about
one round trip after it was appended. `close()` flushes what is left. Needs Redis >= 5.

Redis failing never breaks the run (the log is a convenience channel, not a guardrail): the
writer drops that run's log, logs a WARNING (once per outage), and at close tries to mark the
run `lost`, so readers get `RunLogUnavailableError` instead of a replay that looks complete.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Any

from sluicegate._redis import LoopRedis
from sluicegate.errors import MissingExtraError

try:
    from redis.asyncio import Redis
    from redis.exceptions import RedisError
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingExtraError("redis", extra="redis", feature="RedisRunLog") from exc

from sluicegate.stream.chunk import Chunk
from sluicegate.stream.run_log import (
    OffsetExpiredError,
    OffsetOutOfRangeError,
    RunInfo,
    RunLogUnavailableError,
    RunNotFoundError,
    RunStateError,
    RunStatus,
    RunWriter,
    _check_reopen,
    check_ids,
    check_offset,
    check_positive,
    check_status,
)

logger = logging.getLogger("sluicegate.run_log")

_FAILURES = (RedisError, OSError)

# KEYS: the stream, the meta hash. ARGV: max chunks, offset of the first chunk, idle TTL (ms),
# then the chunks' JSON. Chunk at offset k is the entry `{k+1}-0`.
_APPEND = """
local start = tonumber(ARGV[2])
for i = 4, #ARGV do
  redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], (start + i - 3) .. '-0', 'c', ARGV[i])
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return #ARGV - 3
"""
_RUNNING = "running"
_LOST = "lost"


class _RedisWriter:
    """The writing end of one run on Redis: a buffer the log's flusher drains."""

    __slots__ = (
        "_closed",
        "_done",
        "_end",
        "_failed",
        "_flushed",
        "_log",
        "_scheduled",
        "buffer",
        "key",
        "meta_key",
        "run_id",
    )

    def __init__(self, log: RedisRunLog, run_id: str, start: int) -> None:
        self._log = log
        self.run_id = run_id
        self.key = log._key(run_id)
        self.meta_key = self.key + ":meta"
        self.buffer: list[Chunk[Any]] = []
        self._flushed = start
        self._scheduled = False
        self._failed = False
        self._closed = False
        self._end: RunStatus | None = None
        self._done: asyncio.Future[None] | None = None

    def append(self, chunk: Chunk[Any]) -> None:
        if self._closed:
            raise RunStateError(f"run {self.run_id!r} is closed; it takes no chunks")
        if self._failed:
            return
        self.buffer.append(chunk)
        if not self._scheduled:
            self._scheduled = True
            self._log._schedule(self)

    async def close(self, status: RunStatus) -> None:
        check_status(status)
        if self._closed:
            return
        self._closed = True
        if self._failed:
            await self._log._mark_lost(self)
            return
        self._end = status
        self._done = asyncio.get_running_loop().create_future()
        if not self._scheduled:
            self._scheduled = True
            self._log._schedule(self)
        await self._done
        if self._failed:
            await self._log._mark_lost(self)


# `RedisRunLog.write_at`. KEYS: the stream, the meta hash. ARGV: max chunks, offset of the
# first chunk, idle TTL (ms), then the chunks' JSON. Offsets already written are skipped, so a
# repeated write is a no-op.
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


class RedisRunLog:
    """The run log on the Redis server at `url` (see the module docstring for the layout).

    Like `RedisCache`, it keeps one client per running event loop unless `client=` is given.
    Call `aclose()` at shutdown: it flushes what is buffered and stops the flusher.

    Example::

        log = RedisRunLog(url="redis://localhost:6379/0")
        writer = await log.open(run_id, agent_id="support", resource_id="user-1")
        writer.append(chunk)          # per streamed chunk: buffered
        await writer.close("finished")
        async for chunk in log.read(run_id, offset=12):  # on any instance
            ...
    """

    def __init__(
        self,
        url: str = "redis://localhost:6379/0",
        *,
        prefix: str = "sluicegate:runlog:",
        client: Redis | None = None,
        max_chunks: int = 10_000,
        retention: float = 600.0,
        idle_ttl: float = 3600.0,
        read_batch: int = 500,
        block: float = 0.5,
        socket_timeout: float = 2.0,
        socket_connect_timeout: float = 1.0,
    ) -> None:
        check_positive("max_chunks", max_chunks)
        check_positive("retention", retention, allow_float=True)
        check_positive("idle_ttl", idle_ttl, allow_float=True)
        check_positive("read_batch", read_batch)
        check_positive("block", block, allow_float=True)
        if client is None and block >= socket_timeout:
            raise ValueError(
                f"block ({block}s) must be shorter than socket_timeout ({socket_timeout}s), or "
                "every quiet blocking read would time out"
            )
        self.url = url
        self.prefix = prefix
        self.max_chunks = max_chunks
        self.retention = retention
        self.idle_ttl = idle_ttl
        self._retention_ms = max(1, round(retention * 1000))
        self._idle_ms = max(1, round(idle_ttl * 1000))
        self._read_batch = read_batch
        self._block_ms = max(1, round(block * 1000))
        self._clients = LoopRedis(
            url, client=client, socket_timeout=socket_timeout, socket_connect_timeout=socket_connect_timeout
        )
        self._dirty: list[_RedisWriter] = []
        self._wake: asyncio.Event | None = None
        self._flusher: asyncio.Task[None] | None = None
        self._warned = False

    def _key(self, run_id: str) -> str:
        return f"{self.prefix}{{{run_id}}}"

    # -- writes at explicit offsets (durable runs: many writers, retried) ----------------------

    async def end_offset(self, run_id: str) -> int:
        """The offset after the last chunk written to the run (0 for none)."""
        top = await self._redis().xrevrange(self._key(run_id), "+", "-", count=1)
        if not top:
            return 0
        raw = top[0][0]
        text = raw.decode() if isinstance(raw, bytes) else str(raw)
        return int(text.split("-")[0])

    async def write_at(self, run_id: str, offset: int, chunks: Sequence[dict[str, Any] | str]) -> int:
        """`chunks` (`Chunk.to_dict()` shapes, or their JSON) at `offset`, `offset + 1`, ...;
        offsets already written are kept, so a repeated write changes nothing. The offset after
        them."""
        key = self._key(run_id)
        encoded = [
            c if isinstance(c, str) else json.dumps(c, separators=(",", ":"), default=str) for c in chunks
        ]
        await self._redis().eval(
            _WRITE_AT, 2, key, key + ":meta", self.max_chunks, offset, self._idle_ms, *encoded
        )
        return offset + len(chunks)

    async def close_at(self, run_id: str, offset: int, status: RunStatus) -> None:
        """The run's stream ended after `offset` chunks, with `status` (once: a repeat is a no-op)."""
        key = self._key(run_id)
        meta = key + ":meta"
        client = self._redis()
        if (await client.hget(meta, "status")) in (status, status.encode()):
            return  # closed by an earlier attempt
        pipe = client.pipeline(transaction=False)
        pipe.xadd(key, {"end": status}, id=f"{offset}-1")
        pipe.hset(meta, mapping={"status": status, "next": offset})
        pipe.pexpire(key, self._retention_ms)
        pipe.pexpire(meta, self._retention_ms)
        await pipe.execute(raise_on_error=False)

    # -- the client and the flusher ------------------------------------------------------------

    def _redis(self) -> Redis:
        return self._clients.client()

    def _schedule(self, writer: _RedisWriter) -> None:
        self._dirty.append(writer)
        wake, flusher = self._wake, self._flusher
        if (
            wake is None
            or flusher is None
            or flusher.done()
            or flusher.get_loop() is not asyncio.get_running_loop()
        ):
            wake = self._start_flusher()
        wake.set()

    def _start_flusher(self) -> asyncio.Event:
        loop = asyncio.get_running_loop()
        wake = self._wake = asyncio.Event()
        self._flusher = loop.create_task(self._flush_forever(wake))
        return wake

    async def _flush_forever(self, wake: asyncio.Event) -> None:
        while True:
            await wake.wait()
            wake.clear()
            while self._dirty:
                dirty, self._dirty = self._dirty, []
                try:
                    await self._flush(dirty)
                except Exception as exc:  # the flusher must outlive any one batch
                    for writer in dirty:
                        self._fail(writer, exc)
                        if writer._done is not None and not writer._done.done():
                            writer._done.set_result(None)

    async def _flush(self, writers: list[_RedisWriter]) -> None:
        """One pipeline for everything buffered; a failing run does not fail the others."""
        pipe = self._redis().pipeline(transaction=False)
        spans: list[tuple[_RedisWriter, int]] = []
        # Only a close whose marker is in this pipeline is confirmed by it: a close() that
        # arrives while the pipeline is in flight waits for the next one.
        ending: list[_RedisWriter] = []
        commands = 0
        for writer in writers:
            writer._scheduled = False
            chunks, writer.buffer = writer.buffer, []
            if writer._failed:
                continue
            start = writer._flushed
            try:
                encoded = [json.dumps(c.to_dict(), separators=(",", ":")) for c in chunks]
            except (TypeError, ValueError) as exc:
                self._fail(writer, exc)
                continue
            if encoded:
                # One script call per run and batch: packing and parsing one command per chunk
                # would cost more than the chunks' JSON.
                pipe.eval(
                    _APPEND,
                    2,
                    writer.key,
                    writer.meta_key,
                    self.max_chunks,
                    start,
                    self._idle_ms,
                    *encoded,
                )
            writer._flushed = start + len(chunks)
            count = 1 if encoded else 0
            if writer._end is not None:
                pipe.xadd(writer.key, {"end": writer._end}, id=f"{writer._flushed}-1")
                pipe.hset(writer.meta_key, mapping={"status": writer._end, "next": writer._flushed})
                pipe.pexpire(writer.key, self._retention_ms)
                pipe.pexpire(writer.meta_key, self._retention_ms)
                count += 4
                ending.append(writer)
            spans.append((writer, count))
            commands += count
        if commands:
            try:
                results = await pipe.execute(raise_on_error=False)
            except _FAILURES as exc:
                results = [exc] * commands
            else:
                self._warned = False
            index = 0
            for writer, count in spans:
                failure = next((r for r in results[index : index + count] if isinstance(r, Exception)), None)
                index += count
                if failure is not None:
                    self._fail(writer, failure)
        for writer in (*ending, *(w for w in writers if w._failed)):
            done = writer._done
            if done is not None and not done.done():
                done.set_result(None)

    def _fail(self, writer: _RedisWriter, error: BaseException) -> None:
        writer._failed = True
        writer.buffer = []
        if not self._warned:
            self._warned = True
            logger.warning(
                "run log: writing run %r to Redis failed (%s); its log is dropped (the run goes "
                "on; readers get RunLogUnavailableError). Further failures are logged at DEBUG "
                "until a write succeeds.",
                writer.run_id,
                error,
            )
        else:
            logger.debug("run log: dropped the log of run %r (%s)", writer.run_id, error)

    async def _mark_lost(self, writer: _RedisWriter) -> None:
        """Best effort: tell later readers this run's log is incomplete."""
        try:
            pipe = self._redis().pipeline(transaction=False)
            pipe.hset(writer.meta_key, "status", _LOST)
            pipe.pexpire(writer.key, self._retention_ms)
            pipe.pexpire(writer.meta_key, self._retention_ms)
            await pipe.execute()
        except _FAILURES as exc:
            logger.debug("run log: could not mark run %r lost (%s)", writer.run_id, exc)

    async def aclose(self) -> None:
        """Flush what is buffered, stop the flusher, and close the client this log created."""
        if self._dirty:
            dirty, self._dirty = self._dirty, []
            await self._flush(dirty)
        flusher, self._flusher = self._flusher, None
        if flusher is not None and not flusher.done():
            flusher.cancel()
            try:
                await flusher
            except asyncio.CancelledError:
                pass
        await self._clients.aclose()

    # -- the RunLog protocol --------------------------------------------------------------------

    async def open(
        self,
        run_id: str,
        *,
        agent_id: str,
        resource_id: str | None = None,
        thread_id: str | None = None,
    ) -> RunWriter:
        check_ids(run_id, agent_id)
        meta_key = self._key(run_id) + ":meta"
        try:
            client = self._redis()
            meta = _decode(await client.hgetall(meta_key))
            start = 0
            if meta:
                _check_reopen(
                    run_id,
                    None if meta.get("status") == _RUNNING else meta.get("status"),
                    meta.get("agent_id", ""),
                    meta.get("resource_id") or None,
                    agent_id,
                    resource_id,
                )
                start = int(meta.get("next", "0"))
            fields: dict[Any, Any] = {
                "agent_id": agent_id,
                "resource_id": resource_id or "",
                "thread_id": thread_id or "",
                "status": _RUNNING,
            }
            pipe = client.pipeline(transaction=False)
            pipe.hset(meta_key, mapping=fields)
            pipe.pexpire(meta_key, self._idle_ms)
            pipe.pexpire(self._key(run_id), self._idle_ms)
            await pipe.execute()
        except _FAILURES as exc:
            writer = _RedisWriter(self, run_id, 0)
            self._fail(writer, exc)
            return writer
        return _RedisWriter(self, run_id, start)

    async def info(self, run_id: str) -> RunInfo:
        key = self._key(run_id)
        try:
            client = self._redis()
            pipe = client.pipeline(transaction=False)
            pipe.hgetall(key + ":meta")
            pipe.xrange(key, count=self._read_batch)
            pipe.xrevrange(key, count=1)
            raw_meta, head, tail = await pipe.execute()
        except _FAILURES as exc:
            raise RunLogUnavailableError(run_id, f"Redis failed: {exc}") from exc
        meta = _decode(raw_meta)
        if not meta:
            raise RunNotFoundError(run_id)
        if meta.get("status") == _LOST:
            raise RunLogUnavailableError(run_id, "writing it to Redis failed during the run")
        status = meta.get("status")
        next_offset = _next_offset(tail)
        first = next((o for o in (_chunk_offset(i) for i, _ in head) if o is not None), next_offset)
        return RunInfo(
            run_id,
            meta.get("agent_id", ""),
            meta.get("resource_id") or None,
            meta.get("thread_id") or None,
            None if status == _RUNNING else status,  # type: ignore[arg-type]
            first,
            next_offset,
        )

    async def read(self, run_id: str, offset: int = 0) -> AsyncIterator[Chunk[Any]]:
        position = check_offset(offset)
        key = self._key(run_id)
        client = self._redis()
        await self._check_readable(client, run_id)
        cursor = f"{position}-0"  # entries after it: the close at `position`, then offset `position`
        block: int | None = None  # the first read replays without waiting
        while True:
            try:
                response: Any = await client.xread({key: cursor}, count=self._read_batch, block=block)
            except _FAILURES as exc:
                raise RunLogUnavailableError(run_id, f"Redis failed: {exc}") from exc
            entries: list[Any] = response[0][1] if response else []
            block = self._block_ms
            if not entries:
                # A quiet stream: the run may have ended, been forgotten, or outrun the offset.
                meta = await self._check_readable(client, run_id)
                if meta.get("status") != _RUNNING:
                    end = int(meta.get("next", "0"))
                    if position > end:
                        raise OffsetOutOfRangeError(run_id, position, end)
                    if position == end:
                        return
                continue
            closed_at: bytes | str | None = None
            for entry_id, fields in entries:
                cursor = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
                head, _, seq = cursor.partition("-")
                if seq == "0":
                    found = int(head) - 1
                    if found != position:
                        raise OffsetExpiredError(run_id, position, found)
                    data = fields.get(b"c")
                    if data is None:
                        data = fields["c"]
                    yield Chunk.from_dict(json.loads(data))
                    position += 1
                    closed_at = None
                else:
                    closed_at = fields.get(b"end", fields.get("end"))
            if closed_at is not None and len(entries) < self._read_batch:
                # The close is the last entry: the run ended, unless it was reopened since (a
                # resumed run, whose next chunk is not written yet): then it is followed on.
                meta = await self._check_readable(client, run_id)
                if meta.get("status") != _RUNNING:
                    return

    async def _check_readable(self, client: Redis, run_id: str) -> dict[str, str]:
        try:
            meta = _decode(await client.hgetall(self._key(run_id) + ":meta"))
        except _FAILURES as exc:
            raise RunLogUnavailableError(run_id, f"Redis failed: {exc}") from exc
        if not meta:
            raise RunNotFoundError(run_id)
        if meta.get("status") == _LOST:
            raise RunLogUnavailableError(run_id, "writing it to Redis failed during the run")
        return meta

    def __repr__(self) -> str:
        return f"RedisRunLog(prefix={self.prefix!r}, max_chunks={self.max_chunks})"


def _decode(raw: dict[Any, Any]) -> dict[str, str]:
    return {
        (k.decode() if isinstance(k, bytes) else str(k)): (v.decode() if isinstance(v, bytes) else str(v))
        for k, v in raw.items()
    }


def _chunk_offset(entry_id: bytes | str) -> int | None:
    text = entry_id.decode() if isinstance(entry_id, bytes) else entry_id
    head, _, seq = text.partition("-")
    return int(head) - 1 if seq == "0" else None


def _next_offset(tail: list[tuple[Any, Any]]) -> int:
    """The chunk count, from the stream's last entry (a chunk `{k+1}-0` or a close `{n}-1`)."""
    if not tail:
        return 0
    text = tail[0][0].decode() if isinstance(tail[0][0], bytes) else tail[0][0]
    head, _, seq = text.partition("-")
    return int(head) if seq in ("0", "1") else 0
