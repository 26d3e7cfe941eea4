"""A scripted HTTP server on 127.0.0.1 that speaks a provider's wire protocol.

Tests queue replies per path (`server.reply("/v1/chat/completions", sse=[...])`); each request
takes the next one and is recorded (`server.requests`). Replies are JSON bodies, SSE streams
(chunked, so `cut_after=n` can drop the connection mid-stream like a reset), or errors. For fault
injection a reply can also be a raw body of any content type (`raw=`, e.g. an HTML page with status
200), wait before answering (`delay=`), stall after some events (`stall_after=`), or reset the
connection without answering (`reset=True`). Waits end early when the server closes.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sluicegate.models.base import CallOptions

SSEEvent = tuple[str | None, Any]
"""(event name or None, data: a dict sent as JSON or a raw string)."""


@dataclass
class Reply:
    status: int = 200
    json: Any = None
    sse: list[SSEEvent] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    cut_after: int | None = None
    """Drop the connection (no chunked terminator) after this many SSE events."""
    raw: bytes | None = None
    """A raw body sent with `content_type` instead of JSON or SSE."""
    content_type: str = "text/html; charset=utf-8"
    delay: float = 0.0
    """Seconds to wait before sending anything (a hung provider)."""
    stall_after: int | None = None
    """Stop sending (connection left open) after this many SSE events, for `stall` seconds."""
    stall: float = 0.0
    reset: bool = False
    """Close the connection with a TCP reset instead of answering."""
    keep_alive: bool = False
    """Keep the connection open after an SSE reply, so the client pools and reuses it."""


@dataclass
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: Any


class FakeProvider:
    def __init__(self) -> None:
        self.replies: dict[str, deque[Reply]] = defaultdict(deque)
        self.requests: list[Recorded] = []
        self.closing = threading.Event()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def reply(self, path: str, **kwargs: Any) -> None:
        self.replies[path].append(Reply(**kwargs))

    def reset(self) -> None:
        self.replies.clear()
        self.requests.clear()

    def bodies(self, path: str | None = None) -> list[Any]:
        return [r.body for r in self.requests if path is None or r.path == path]

    def close(self) -> None:
        self.closing.set()
        self._server.shutdown()
        self._server.server_close()

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                path = self.path.split("?")[0]
                provider.requests.append(
                    Recorded("POST", path, {k.lower(): v for k, v in self.headers.items()}, body)
                )
                queue = provider.replies.get(path)
                if not queue:
                    self._send_json(404, {"error": {"message": f"no scripted reply for {path}"}})
                    return
                reply = queue.popleft()
                if reply.delay and provider.closing.wait(reply.delay):
                    return
                if reply.reset:
                    # SO_LINGER 0: close() sends RST, like a proxy dropping the connection.
                    self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    self.close_connection = True
                    self.connection.close()
                    return
                if reply.raw is not None:
                    self._send_raw(reply)
                elif reply.sse is None:
                    self._send_json(reply.status, reply.json, reply.headers)
                else:
                    self._send_sse(reply)

            def _send_raw(self, reply: Reply) -> None:
                data = reply.raw or b""
                self.send_response(reply.status)
                self.send_header("Content-Type", reply.content_type)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
                self.close_connection = True

            def _send_json(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Connection", "close")
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)
                self.close_connection = True

            def _send_sse(self, reply: Reply) -> None:
                self.send_response(reply.status)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                if not reply.keep_alive:
                    self.send_header("Connection", "close")
                for key, value in reply.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                for index, (event, data) in enumerate(reply.sse or []):
                    stalls_here = reply.stall_after is not None and index == reply.stall_after
                    if stalls_here and provider.closing.wait(reply.stall):
                        return
                    if reply.cut_after is not None and index >= reply.cut_after:
                        self.wfile.flush()
                        self.connection.shutdown(socket.SHUT_RDWR)
                        self.close_connection = True
                        return
                    text = data if isinstance(data, str) else json.dumps(data)
                    frame = (f"event: {event}\n" if event else "") + f"data: {text}\n\n"
                    encoded = frame.encode()
                    self.wfile.write(f"{len(encoded):x}\r\n".encode() + encoded + b"\r\n")
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                self.close_connection = not reply.keep_alive

        return Handler


def openai_sse(chunks: list[dict[str, Any]]) -> list[SSEEvent]:
    """Chat Completions stream: data-only events ending with `[DONE]`."""
    return [(None, c) for c in chunks] + [(None, "[DONE]")]


def named_sse(events: list[dict[str, Any]]) -> list[SSEEvent]:
    """Anthropic / Responses stream: each event named after its `type`."""
    return [(e["type"], e) for e in events]


USER = [{"role": "user", "content": [{"type": "text", "text": "Hi"}]}]
"""The one-message prompt most adapter tests send."""


async def parts_of(model: Any, options: CallOptions) -> list[dict[str, Any]]:
    """Every V2 part `model.do_stream(options)` yields."""
    return [p async for p in (await model.do_stream(options)).stream]
