"""Connection guards for `sluicegate serve`: a deadline for reading each request, and a cap on
open connections per process.

uvicorn's HTTP protocols wait forever for a request's headers and body (`timeout_keep_alive`
covers only the idle time between requests), and its `limit_concurrency` is checked only once a
request's headers are complete: a socket that never finishes its headers is never refused and
holds a file descriptor. About a thousand of them use up a process's usual limit of 1,024, the
server stops accepting, and every other client waits. The protocols here subclass uvicorn's
(h11, and httptools when installed) with two guards:

- A read deadline (`request_read_timeout`), armed when a connection opens or finishes an answer,
  and disarmed once a request's headers and whole body have arrived. Trickling bytes does not
  move it. When it fires the request is answered 408 (unless an answer is already under way)
  and the connection closed; closing also ends an app waiting in `receive()`, which gets
  `http.disconnect`. A connection that sent nothing is just closed, like an idle keep-alive one.
- A cap (`max_connections`): a connection beyond it is answered 503 at once, before anything is
  read, and closed once the client is done sending (or after a second), so the refusal never
  waits on the client and costs its descriptor only briefly.

Both also bound how long a peer that vanished (a half-open connection: no FIN, no RST) can
hold its connection: streamed answers send a heartbeat when quiet (`streaming.py`), and the
socket's `TCP_USER_TIMEOUT` (Linux) drops a connection whose sent data goes unacknowledged for
`DEAD_PEER_TIMEOUT` seconds, instead of the kernel's ~15 minutes of retransmissions; the app
then sees `http.disconnect`, and a thread subscription gives back its slot.

`sluicegate serve` passes `http=GuardedH11Protocol` (or the httptools one) to uvicorn (a class:
older uvicorn versions take no "module:Class" string there); the limits come from
`ServerSettings.from_env()`, so every worker process agrees. `protocol_class(settings)` gives a
class bound to explicit settings instead.
"""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import json
import logging
import socket
from collections.abc import Sized
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from sluicegate.server.settings import ServerSettings

log = logging.getLogger("sluicegate.server")

MAX_CONNECTIONS_CEILING = 2048
"""The largest default cap: one Python process gains nothing from more open connections."""
REFUSAL_GRACE = 1.0
"""Seconds a refused connection stays open for the client to finish sending its request."""

DEAD_PEER_TIMEOUT = 120.0
"""Seconds sent data may go unacknowledged before the kernel drops the connection: a peer that
is still there acknowledges within a few round trips, even when its application reads nothing."""

Phase = Literal["idle", "headers", "body"]
"""Where a connection that waits on its client is: between requests, in the headers, in the body."""


def _open_file_limit() -> int | None:
    try:
        import resource
    except ImportError:  # not a POSIX system: no limit to read
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else soft


def default_max_connections() -> int:
    """Half this process's open-file limit, at most `MAX_CONNECTIONS_CEILING`: the other half
    stays for what requests open themselves (a provider connection each, storage, files) and
    for sockets accepted but not yet counted (see `listen_backlog`)."""
    soft = _open_file_limit()
    if soft is None:
        return MAX_CONNECTIONS_CEILING
    return max(1, min(MAX_CONNECTIONS_CEILING, soft // 2))


def listen_backlog() -> int:
    """The listening socket's backlog: a quarter of the open-file limit, from 64 up to uvicorn's
    default of 2048. asyncio accepts up to a backlog's worth of sockets at once before any is
    counted against the cap, so under a flood a backlog as large as the file limit would run
    the process out of descriptors before the cap could refuse anyone."""
    soft = _open_file_limit()
    return 2048 if soft is None else max(64, min(2048, soft // 4))


@dataclass(frozen=True)
class ConnectionLimits:
    """The two numbers a guarded protocol needs, resolved (the cap from the file limit)."""

    read_timeout: float
    max_connections: int

    @classmethod
    def from_settings(cls, settings: ServerSettings) -> ConnectionLimits:
        return cls(settings.request_read_timeout, settings.max_connections or default_max_connections())


@functools.cache
def _env_limits() -> ConnectionLimits:
    """Read once per process (a worker's environment does not change while it serves)."""
    return ConnectionLimits.from_settings(ServerSettings.from_env())


def _response(status: int, reason: str, message: str, *extra: str) -> bytes:
    """A complete close-delimited HTTP/1.1 answer, written straight to the transport (the
    connection closes right after, so the parser's state does not matter)."""
    body = json.dumps({"error": message}).encode()
    head = [
        f"HTTP/1.1 {status} {reason}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        "connection: close",
        "x-content-type-options: nosniff",
        *extra,
    ]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


class _CapLog:
    """Logs reaching the cap once (not once per refused connection: a flood must not also
    flood the log), and again after the server has dropped back below it."""

    full = False

    @classmethod
    def refused(cls, limit: int) -> None:
        if not cls.full:
            cls.full = True
            log.warning(
                "refusing connections with 503: %d are open, the limit of this process "
                "(--max-connections / SLUICEGATE_MAX_CONNECTIONS)",
                limit,
            )

    @classmethod
    def admitted(cls, open_now: int, limit: int) -> None:
        if cls.full and open_now < limit * 9 // 10:
            cls.full = False
            log.info("accepting connections again (%d of %d open)", open_now, limit)


class _Refusal(asyncio.Protocol):
    """A connection over the cap: 503 and end-of-stream at once. Whatever the client then sends
    is read and dropped until it closes (or `REFUSAL_GRACE` passes), so that closing with unread
    bytes does not reset the connection and lose the answer. At most an eighth of the cap (16
    at least) wait like this; beyond that (a flood) a refused connection is closed at once, so
    refusals never hold more than a bounded number of descriptors."""

    lingering = 0

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop, limit: int) -> None:
        message = f"too many open connections ({limit}, the limit of this server process); retry shortly"
        transport.write(_response(503, "Service Unavailable", message, "retry-after: 1"))
        self._timer: asyncio.TimerHandle | None = None
        if _Refusal.lingering >= max(16, limit // 8) or not transport.can_write_eof():
            transport.close()
            return
        transport.write_eof()
        _Refusal.lingering += 1
        self._timer = loop.call_later(REFUSAL_GRACE, transport.close)

    def data_received(self, data: bytes) -> None:
        return None  # dropped: the request is refused whatever it says

    def eof_received(self) -> bool:
        return False  # the client is done: close

    def connection_lost(self, exc: Exception | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            _Refusal.lingering -= 1


class _Cycle(Protocol):
    @property
    def response_started(self) -> bool: ...


class _Guarded(Protocol):
    """What the guards use of a uvicorn HTTP protocol, plus `client_phase`, which the guarded
    subclasses add: whether (and where) the connection is waiting on its client."""

    @property
    def limits(self) -> ConnectionLimits | None: ...
    @property
    def loop(self) -> asyncio.AbstractEventLoop: ...
    @property
    def transport(self) -> asyncio.Transport: ...
    @property
    def client(self) -> tuple[str, int] | None: ...
    @property
    def connections(self) -> Sized: ...
    @property
    def cycle(self) -> _Cycle | None: ...
    def client_phase(self) -> Phase | None: ...


def _limits(protocol: _Guarded) -> ConnectionLimits:
    return protocol.limits if protocol.limits is not None else _env_limits()


def notice_dead_peers(sock: Any, timeout: float = DEAD_PEER_TIMEOUT) -> bool:
    """Set `TCP_USER_TIMEOUT` on an accepted socket (see the module docstring); False where the
    platform has no such option (the kernel's own retransmission limit applies there)."""
    option = getattr(socket, "TCP_USER_TIMEOUT", None)
    if sock is None or option is None:
        return False
    try:
        sock.setsockopt(socket.IPPROTO_TCP, option, int(timeout * 1000))
    except OSError:  # not TCP (a Unix socket), or refused: the default applies
        return False
    return True


def _admit(protocol: _Guarded, transport: asyncio.Transport) -> bool:
    """Whether a new connection is under the cap; if not, it is handed to a `_Refusal`."""
    limit = _limits(protocol).max_connections
    open_now = len(protocol.connections)
    if open_now >= limit:
        _CapLog.refused(limit)
        transport.set_protocol(_Refusal(transport, protocol.loop, limit))
        return False
    _CapLog.admitted(open_now, limit)
    notice_dead_peers(transport.get_extra_info("socket"))
    return True


class _Deadline:
    """One connection's read deadline. `sync()` after every event that can change the phase:
    the timer runs while the connection waits on its client and starts afresh only when a new
    wait begins (so a trickle of bytes cannot extend it)."""

    def __init__(self, protocol: _Guarded, timeout: float) -> None:
        self.protocol = protocol
        self.timeout = timeout
        self.timer: asyncio.TimerHandle | None = None

    def sync(self) -> None:
        waiting = self.protocol.client_phase() is not None
        if waiting and self.timer is None:
            self.timer = self.protocol.loop.call_later(self.timeout, self._expire)
        elif not waiting and self.timer is not None:
            self.cancel()

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def _expire(self) -> None:
        self.timer = None
        protocol = self.protocol
        transport = protocol.transport
        phase = protocol.client_phase()
        if phase is None or transport.is_closing():
            return
        cycle = protocol.cycle
        if phase == "headers" or (phase == "body" and cycle is not None and not cycle.response_started):
            message = f"the request did not arrive within {self.timeout:g} s (request_read_timeout)"
            transport.write(_response(408, "Request Timeout", message))
        log.debug("closed %s: request not received within %g s (%s)", protocol.client, self.timeout, phase)
        transport.close()


class _HasDeadline(Protocol):
    read_deadline: _Deadline | None


def _stop(protocol: _HasDeadline) -> None:
    """No deadline after the connection is lost or handed to another protocol."""
    if protocol.read_deadline is not None:
        protocol.read_deadline.cancel()
        protocol.read_deadline = None


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the read deadline and the connection cap."""

    limits: ClassVar[ConnectionLimits | None] = None
    """None: from the environment (`ServerSettings.from_env`)."""

    read_deadline: _Deadline | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if not _admit(self, transport):
            return
        super().connection_made(transport)
        self.read_deadline = _Deadline(self, _limits(self).read_timeout)
        self.read_deadline.sync()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.read_deadline is not None:
            self.read_deadline.sync()

    def on_response_complete(self) -> None:
        super().on_response_complete()  # may start (and even finish reading) a pipelined request
        if self.read_deadline is not None:
            self.read_deadline.sync()

    def connection_lost(self, exc: Exception | None) -> None:
        _stop(self)
        super().connection_lost(exc)

    def handle_websocket_upgrade(self, event: h11.Request) -> None:
        _stop(self)  # the transport now belongs to the WebSocket protocol
        super().handle_websocket_upgrade(event)

    def client_phase(self) -> Phase | None:
        """h11 tracks the client's side: IDLE before a request (with bytes buffered once its
        headers have begun), SEND_BODY until the body is complete."""
        state = self.conn.their_state
        if state is h11.SEND_BODY:
            return "body"
        if state is h11.IDLE:
            return "headers" if self.conn.trailing_data[0] else "idle"
        return None


@functools.cache
def _httptools_protocol() -> type[asyncio.Protocol]:
    """Defined on first use: uvicorn's httptools module imports `httptools`, an optional package."""
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class GuardedHttpToolsProtocol(HttpToolsProtocol):
        """uvicorn's httptools protocol with the read deadline and the connection cap."""

        limits: ClassVar[ConnectionLimits | None] = None
        read_deadline: _Deadline | None = None
        _in_message = False  # between the parser's message-begin and message-complete
        _in_body = False  # past the headers of that message

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            if not _admit(self, transport):
                return
            super().connection_made(transport)
            self.read_deadline = _Deadline(self, _limits(self).read_timeout)
            self.read_deadline.sync()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)  # the parser's callbacks below run inside this
            if self.read_deadline is not None:
                self.read_deadline.sync()

        def on_message_begin(self) -> None:
            self._in_message, self._in_body = True, False
            super().on_message_begin()

        def on_headers_complete(self) -> None:
            self._in_body = True
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            self._in_message = self._in_body = False
            super().on_message_complete()

        def on_response_complete(self) -> None:
            super().on_response_complete()
            if self.read_deadline is not None:
                self.read_deadline.sync()

        def connection_lost(self, exc: Exception | None) -> None:
            _stop(self)
            super().connection_lost(exc)

        def handle_websocket_upgrade(self) -> None:
            _stop(self)  # the transport now belongs to the WebSocket protocol
            super().handle_websocket_upgrade()

        def client_phase(self) -> Phase | None:
            if self._in_message:
                return "body" if self._in_body else "headers"
            if self.cycle is None or self.cycle.response_complete:
                return "idle"
            return None

    GuardedHttpToolsProtocol.__qualname__ = "GuardedHttpToolsProtocol"
    GuardedHttpToolsProtocol.__module__ = __name__
    return GuardedHttpToolsProtocol


def __getattr__(name: str) -> Any:
    if name == "GuardedHttpToolsProtocol":
        return _httptools_protocol()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


HttpImpl = Literal["auto", "h11", "httptools"]


def _resolve(http: HttpImpl) -> Literal["h11", "httptools"]:
    """uvicorn's own choice for "auto": httptools when it is installed, else h11."""
    if http == "auto":
        return "httptools" if importlib.util.find_spec("httptools") is not None else "h11"
    return http


def protocol_class(settings: ServerSettings | None = None, http: HttpImpl = "auto") -> type[asyncio.Protocol]:
    """The guarded protocol to give uvicorn as `http=`. Without `settings`, the module-level
    class, which reads its limits from the environment in each process and pickles by name
    (so `--workers` and `--reload` processes get it); with `settings`, a subclass bound to
    them, for a server in this process."""
    base: type[asyncio.Protocol] = GuardedH11Protocol if _resolve(http) == "h11" else _httptools_protocol()
    if settings is None:
        return base
    limits = ConnectionLimits.from_settings(settings)
    return type(base.__name__, (base,), {"limits": limits, "__module__": __name__})
