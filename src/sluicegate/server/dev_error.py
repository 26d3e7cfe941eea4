"""What `sluicegate dev` serves while the application file does not load: on every route, a
page naming the file, the line and the message (JSON under `/api`), instead of a port that
refuses connections. The page reloads itself every two seconds, so once the reloader has
restarted the server with the fixed file the browser shows the app."""

from __future__ import annotations

import html
import json
from typing import Any

from sluicegate.server.headers import API_POLICY, Receive, Scope, Send

RETRY_SECONDS = 2


def error_app(error: BaseException) -> Any:
    """An ASGI app answering every HTTP request with 500 and `error`."""
    file = getattr(error, "file", None)
    line = getattr(error, "line", None)
    message = getattr(error, "detail", None) or str(error)
    where = f"{file}:{line}" if file and line else (file or "")
    page = (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f'<meta http-equiv="refresh" content="{RETRY_SECONDS}">'
        "<title>sluicegate dev: the app did not load</title></head><body>"
        "<h1>The application did not load</h1>"
        f"<p><code>{html.escape(where)}</code></p><pre>{html.escape(message)}</pre>"
        "<p>Fix the file: the server reloads, and this page with it.</p></body></html>"
    ).encode()
    body = json.dumps(
        {"error": {"message": f"the application did not load: {error}", "file": file, "line": line}}
    ).encode()
    common = [(b"content-security-policy", API_POLICY.encode()), (b"x-content-type-options", b"nosniff")]

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while True:
                message = await receive()
                if message["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                elif message["type"] == "lifespan.shutdown":
                    await send({"type": "lifespan.shutdown.complete"})
                    return
        if scope["type"] != "http":
            return
        is_api = str(scope.get("path", "")).startswith("/api")
        content, kind = (body, b"application/json") if is_api else (page, b"text/html; charset=utf-8")
        await send(
            {
                "type": "http.response.start",
                "status": 500,
                "headers": [
                    (b"content-type", kind),
                    (b"content-length", str(len(content)).encode()),
                    *common,
                ],
            }
        )
        await send({"type": "http.response.body", "body": content})

    return app
