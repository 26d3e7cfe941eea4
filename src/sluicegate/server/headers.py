"""Security headers on every response the app sends.

Every answer is marked `nosniff` (a browser never guesses a JSON body to be HTML or script),
may not be framed (`frame-ancestors 'none'`, and `X-Frame-Options: DENY` for older browsers),
sends no referrer, and carries a Content-Security-Policy that allows nothing: an API answer
opened as a page can load and run nothing. The studio page replaces that policy with
`STUDIO_POLICY`, which allows exactly what it uses (its own script and stylesheet, fetches to
this origin) and enforces Trusted Types, so a DOM-injection bug in it cannot run script.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

CSP = "content-security-policy"
API_POLICY = "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
STUDIO_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
    "require-trusted-types-for 'script'; trusted-types 'none'; "
    "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"
)
DEFAULTS: tuple[tuple[bytes, bytes], ...] = (
    (CSP.encode(), API_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
)


class SecurityHeaders:
    """Adds `DEFAULTS` to each response that does not set the header itself (the studio page
    sets its own policy)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", ()))
                present = {bytes(name).lower() for name, _ in headers}
                headers.extend(item for item in DEFAULTS if item[0] not in present)
                message["headers"] = headers
            await send(message)

        await self.app(scope, receive, send_with_headers)
