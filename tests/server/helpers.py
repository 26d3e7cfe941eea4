"""Reading Mastra's SSE framing, and driving the ASGI app by hand (to disconnect mid-run)."""

from __future__ import annotations

import asyncio
import json
from typing import Any


def sse_events(body: str) -> tuple[list[dict[str, Any]], bool]:
    """The JSON events of a stream body and whether it ended with `data: [DONE]`."""
    events: list[dict[str, Any]] = []
    done = False
    for record in body.split("\n\n"):
        if not record:
            continue
        assert record.startswith("data: "), record
        data = record[len("data: ") :]
        if data == "[DONE]":
            done = True
            continue
        assert not done, "nothing may follow [DONE]"
        events.append(json.loads(data))
    return events, done


async def call_then_disconnect(
    app: Any, path: str, body: dict[str, Any], *, after: float
) -> list[dict[str, Any]]:
    """POST `body` to `path`, disconnect `after` seconds later; the messages the app sent."""
    payload = json.dumps(body).encode()
    sent: list[dict[str, Any]] = []
    delivered = False
    gone = asyncio.Event()

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": payload, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode())],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    loop = asyncio.get_running_loop()
    loop.call_later(after, gone.set)
    await asyncio.wait_for(app(scope, receive, send), timeout=10)
    return sent
