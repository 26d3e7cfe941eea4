"""Streaming a run to the client in Mastra's framing, with cancellation.

Each chunk goes out as one server-sent event, `data: <chunk JSON>\\n\\n` (the JSON is
`Chunk.to_dict()`: `{"type", "runId", "from", "payload"}`), and the stream ends with
`data: [DONE]\\n\\n`, which is what `@mastra/client-js`'s `processDataStream` reads.

The run is driven by a task of its own while another task waits for the client to go away: a
disconnect (or the per-request timeout) cancels the run, which closes the provider stream.
A stream quiet for the heartbeat interval (`ServerSettings.heartbeat_interval`, 25 s, Mastra's)
gets a `: heartbeat` comment line: proxies that close idle connections keep it, and writing to
a peer that has gone away fails, which the server notices as a disconnect.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import AbstractContextManager
from typing import Any, Literal, Protocol, cast

from starlette.responses import Response

from sluicegate.errors import public_error
from sluicegate.server.auth import Receive, Scope, Send
from sluicegate.stream.chunk import Chunk

DONE = b"data: [DONE]\n\n"
HEARTBEAT = b": heartbeat\n\n"
"""An SSE comment (clients skip it): sent on a stream quiet for the heartbeat interval."""
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


def sse(event: dict[str, Any]) -> bytes:
    return b"data: " + _dumps(event).encode() + b"\n\n"


def error_event(run_id: str, message: str, name: str) -> dict[str, Any]:
    return {
        "type": "error",
        "runId": run_id,
        "from": "AGENT",
        "payload": {"error": {"message": message, "name": name}},
    }


_ERROR_CHUNKS = frozenset(("error", "tool-error"))


def chunk_event(chunk: Any, error_details: bool) -> dict[str, Any]:
    """A chunk's JSON for the client. An `error` / `tool-error` chunk's error goes out as
    `public_error` (a provider's own text only with `error_details`): the in-process chunk keeps
    the exception itself, for the application's code."""
    event: dict[str, Any] = chunk.to_dict()
    if chunk.type in _ERROR_CHUNKS:
        publish_error(chunk, event, error_details)
    return event


def publish_error(chunk: Any, event: dict[str, Any], error_details: bool) -> None:
    """An error chunk's event carries the error's public summary, not the exception."""
    error = chunk.payload.get("error")
    if isinstance(error, BaseException):
        event["payload"]["error"] = public_error(error, details=error_details)


async def warned(chunks: AsyncIterator[Any], run_id: str, message: str) -> AsyncIterator[Any]:
    """`chunks` after a `warning` chunk for the client (`{"payload": {"message"}}`): something
    in the request was ignored. Only such a run's stream goes through this extra step."""
    yield Chunk("warning", run_id, {"message": message})
    async for chunk in chunks:
        yield chunk


async def wait_for_disconnect(receive: Receive) -> None:
    """Return when the client disconnects (the request body has been read already)."""
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return


class StreamEncoder(Protocol):
    """Another protocol's framing of a run's chunks (`ChunkStreamResponse(encoder=...)`): the
    bytes for each chunk (b"" for none, several events joined), for a failure, and for the end
    (before `data: [DONE]`). One encoder serves one response: it may keep state."""

    def chunk(self, chunk: Any) -> bytes: ...

    def error(self, message: str, name: str) -> bytes: ...

    def end(self) -> bytes: ...


class EncodedFrames:
    """The `StreamEncoder` of a protocol adapter whose stream yields its frames already encoded
    (bytes): they go out as they are, and a failure the response meets itself (the request
    timeout, an error outside the run's own handling) is the protocol's error frame,
    `error(message, name)`. No end frame: such protocols end the stream themselves."""

    def __init__(self, error: Callable[[str, str], bytes]) -> None:
        self.error = error

    def chunk(self, chunk: Any) -> bytes:
        return cast(bytes, chunk)

    def end(self) -> bytes:
        return b""


DEFAULT_HEARTBEAT = 25.0


def _app_heartbeat(scope: Scope) -> float:
    """The serving app's `heartbeat_interval` (its `ServerSettings` on `app.state`)."""
    state = getattr(scope.get("app"), "state", None)
    interval = getattr(getattr(state, "settings", None), "heartbeat_interval", None)
    return interval if isinstance(interval, int | float) and interval > 0 else DEFAULT_HEARTBEAT


class ChunkStreamResponse(Response):
    """An ASGI response that streams a run's chunks as SSE and cancels the run when the client
    leaves or `timeout` seconds pass (`timeout_message` is the `error` event then).

    `on_end` runs once the response is over, however it ended (a resumed run's output is
    closed there, so one its client never read gives its claim back). `events` turns a chunk
    into its event JSON (`WireEvents.event`: Mastra's wire fields); without it, `chunk_event`.
    `encoder` replaces Mastra's framing with another protocol's (`StreamEncoder`), and `done`
    the bytes that end the stream (`data: [DONE]`; `b""` for a protocol without a terminator)."""

    def __init__(
        self,
        chunks: AsyncIterator[Any],
        *,
        run_id: str,
        timeout: float | None,
        headers: dict[str, str] | None = None,
        span: Callable[[], AbstractContextManager[Any]] | None = None,
        error_details: bool = False,
        on_end: Callable[[], Awaitable[None]] | None = None,
        timeout_message: str = "the run did not finish within {timeout:g} s and was cancelled",
        heartbeat: float | None = None,
        events: Callable[[Any], dict[str, Any]] | None = None,
        encoder: StreamEncoder | None = None,
        done: bytes = DONE,
    ) -> None:
        self.status_code = 200
        self.background = None
        self.media_type = "text/event-stream"
        self._chunks = chunks
        self._run_id = run_id
        self._timeout = timeout
        self._extra_headers = headers or {}
        self._span = span
        self._error_details = error_details
        self._on_end = on_end
        self._timeout_message = timeout_message
        self._heartbeat = heartbeat
        """Seconds; None: the serving app's `heartbeat_interval` (25 s without one)."""
        self._events = events
        self._encoder = encoder
        self._done = done
        self.cancelled_by: Literal["disconnect", "timeout"] | None = None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = [
            (b"content-type", b"text/event-stream"),  # UTF-8 by definition (as Mastra sends it)
            (b"cache-control", b"no-cache"),
            (b"x-accel-buffering", b"no"),
            *[(k.lower().encode(), v.encode()) for k, v in self._extra_headers.items()],
        ]
        tasks: tuple[asyncio.Future[None], ...] = ()
        if self._heartbeat is None:
            self._heartbeat = _app_heartbeat(scope)
        try:
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            producer = asyncio.ensure_future(self._produce(send))
            watcher = asyncio.ensure_future(wait_for_disconnect(receive))
            tasks = (producer, watcher)
            done, _ = await asyncio.wait(
                {producer, watcher}, timeout=self._timeout, return_when=asyncio.FIRST_COMPLETED
            )
            if producer in done:
                producer.result()
                return
            self.cancelled_by = "disconnect" if watcher in done else "timeout"
            producer.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await producer
            if self.cancelled_by == "timeout":
                with contextlib.suppress(OSError):
                    message = self._timeout_message.format(timeout=self._timeout)
                    await send(
                        {
                            "type": "http.response.body",
                            "body": self._error_bytes(message, "TimeoutError") + self._done,
                            "more_body": False,
                        }
                    )
        finally:
            for task in tasks:
                if not task.done():
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await task
            if self._on_end is not None:
                await self._on_end()

    def _error_bytes(self, message: str, name: str) -> bytes:
        if self._encoder is not None:
            return self._encoder.error(message, name)
        return sse(error_event(self._run_id, message, name))

    async def _produce(self, send: Send) -> None:
        chunks = self._chunks
        span = self._span() if self._span is not None else contextlib.nullcontext()
        with span:
            await self._send_all(chunks, send)
        # The run's span has ended (and reached the trace buffer) before the client sees the end.
        await send({"type": "http.response.body", "body": self._done, "more_body": False})

    async def _send_all(self, chunks: AsyncIterator[Any], send: Send) -> None:
        """Encode chunks as they come; a writer task sends whatever has piled up since its last
        write in one piece, so a fast run costs a few writes and a slow one streams each chunk
        as soon as it exists."""
        pending: list[bytes] = []
        ready = asyncio.Event()
        finished = False
        loop = asyncio.get_running_loop()
        last_write = loop.time()

        async def writer() -> None:
            nonlocal last_write
            while True:
                await ready.wait()
                ready.clear()
                if pending:
                    body = b"".join(pending)
                    pending.clear()
                    await send({"type": "http.response.body", "body": body, "more_body": True})
                    last_write = loop.time()
                if finished and not pending:
                    return

        async def heartbeat(interval: float) -> None:
            """A comment line whenever nothing was written for `interval` seconds (sent by the
            writer, so writes never interleave)."""
            while True:
                quiet = loop.time() - last_write
                if quiet < interval:
                    await asyncio.sleep(interval - quiet)
                    continue
                pending.append(HEARTBEAT)
                ready.set()
                await asyncio.sleep(interval)

        writing = asyncio.ensure_future(writer())
        beating = asyncio.ensure_future(heartbeat(self._heartbeat or DEFAULT_HEARTBEAT))
        details = self._error_details
        events = self._events
        if events is None:
            events = functools.partial(chunk_event, error_details=details)
        encoder = self._encoder
        try:
            try:
                if encoder is None:
                    async for chunk in chunks:
                        pending.append(sse(events(chunk)))
                        ready.set()
                        if writing.done():
                            writing.result()  # the client is gone: stop the run
                else:
                    encode = encoder.chunk
                    async for chunk in chunks:
                        data = encode(chunk)
                        if data:  # a chunk the protocol has no event for sends nothing
                            pending.append(data)
                            ready.set()
                        if writing.done():
                            writing.result()
                    pending.append(encoder.end())
            except (asyncio.CancelledError, OSError):
                raise
            except Exception as exc:  # the run failed outside its own error handling
                public = public_error(exc, details=details)
                pending.append(self._error_bytes(public["message"], public["name"]))
            finished = True
            ready.set()
            await writing
        finally:
            beating.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await beating
            if not writing.done():
                writing.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await writing
            closer = getattr(chunks, "aclose", None)
            if closer is not None:
                with contextlib.suppress(Exception):
                    await cast(AsyncGenerator[Any, None], chunks).aclose()
