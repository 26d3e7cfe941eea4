"""Bearer-token auth for the API (`SLUICEGATE_API_TOKEN`) and the request-body size limit.

Both are plain ASGI middleware so they act before a route reads the body: an unauthenticated
or oversized request is refused without being parsed.
"""

from __future__ import annotations

import hmac
import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


async def send_json(
    send: Send, status: int, body: dict[str, Any], headers: list[tuple[bytes, bytes]]
) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(data)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})


def route_path(scope: Scope) -> str:
    """The path the app routes on: without the `root_path` of a parent app that mounted it
    (Starlette keeps the full path in `path`), so a gate checks what the router will match."""
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    if root and path.startswith(root):
        return path[len(root) :] or "/"
    return path


def is_protected(scope: Scope, protected: tuple[str, ...]) -> bool:
    """Whether a request's route path lies under one of `protected` (the prefix itself, the
    liveness probe, does not)."""
    path = route_path(scope)
    return any(path.startswith(p + "/") for p in protected)


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return bytes(value)
    return None


class BearerAuth:
    """Requires `Authorization: Bearer <token>` on paths under `protected` (CORS preflights
    pass through so browsers can learn they must send the header; `/api` itself answers
    without, as a liveness probe that reveals nothing)."""

    def __init__(self, app: ASGIApp, *, token: str, protected: tuple[str, ...] = ("/api",)) -> None:
        self.app = app
        self._token = token.encode()
        self._protected = protected

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") == "OPTIONS":
            await self.app(scope, receive, send)
            return
        if not is_protected(scope, self._protected):  # `/api` itself: liveness
            await self.app(scope, receive, send)
            return
        given = _header(scope, b"authorization") or b""
        scheme, _, token = given.partition(b" ")
        if scheme.lower() != b"bearer" or not hmac.compare_digest(token.strip(), self._token):
            await send_json(
                send,
                401,
                {"error": "missing or invalid bearer token (Authorization: Bearer <SLUICEGATE_API_TOKEN>)"},
                [(b"www-authenticate", b"Bearer")],
            )
            return
        await self.app(scope, receive, send)


class BodyLimit:
    """Refuses bodies over `max_bytes` with 413, by `Content-Length` or while reading.

    The body is read here (bounded) and replayed to the app, so the limit holds however the
    route reads it; later `receive` calls go to the server (a route can still see a disconnect).
    """

    def __init__(self, app: ASGIApp, *, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") in ("GET", "HEAD", "OPTIONS"):
            await self.app(scope, receive, send)
            return
        declared = _header(scope, b"content-length")
        too_large = {"error": f"request body exceeds {self.max_bytes} bytes"}
        if declared is not None:
            try:
                size = int(declared)
            except ValueError:
                await send_json(send, 400, {"error": "content-length: not an integer"}, [])
                return
            if size > self.max_bytes:
                await send_json(send, 413, too_large, [(b"connection", b"close")])
                return
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before sending its body
            body = message.get("body", b"")
            seen += len(body)
            if seen > self.max_bytes:
                await send_json(send, 413, too_large, [(b"connection", b"close")])
                return
            chunks.append(body)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)
