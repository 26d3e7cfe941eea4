"""The Host check: a server on a loopback address answers only to loopback host names.

A web page the developer visits can point a name it controls at 127.0.0.1 (DNS rebinding) and
then call `http://rebind.attacker.example:4111/api/...` from the browser as same-origin: CORS
never sees a cross-origin request, and a `sluicegate dev` without a token runs tools and model
overrides for it. The browser still sends the attacker's name in `Host`, so a loopback server
that accepts only `localhost`, `127.0.0.1` and `[::1]` (any port) is out of its reach.
`sluicegate serve`/`dev` on a loopback address turn the check on (`loopback_rule`); more names
are allowed with `--allowed-hosts` (`SLUICEGATE_ALLOWED_HOSTS`, `ServerSettings.allowed_hosts`).
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from sluicegate.errors import ConfigurationError

LOOPBACK_HOSTS = ("localhost", "127.0.0.1", "[::1]")
"""The names a loopback server answers to without configuration."""
ANY_HOST = "*"
ENV = "SLUICEGATE_ALLOWED_HOSTS"


def is_loopback(bind_host: str) -> bool:
    """Whether `bind_host` (what the server listens on) reaches this machine only."""
    name = bind_host.strip().strip("[]").lower().rstrip(".")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def host_name(value: str) -> str | None:
    """The canonical name in a `Host` value or an allowed-hosts entry: lower case, no port, no
    trailing dot, an IPv6 address in brackets. None for a value that is not a host name."""
    value = value.strip().lower()
    if not value or any(c.isspace() or c in "/\\@?#%" or not c.isprintable() for c in value):
        return None
    if value.startswith("["):
        end = value.find("]")
        address, rest = value[1:end], value[end + 1 :]
        if end < 0 or not _port(rest):
            return None
        try:
            ipaddress.IPv6Address(address)
        except ValueError:
            return None
        return f"[{address}]"
    if value.count(":") > 1:  # a bare IPv6 address (only in configuration; a Host needs brackets)
        try:
            return f"[{ipaddress.IPv6Address(value).compressed}]"
        except ValueError:
            return None
    name, _, port = value.partition(":")
    if not name or (value.count(":") and not _port(":" + port)):
        return None
    return name.rstrip(".") or None


def _port(rest: str) -> bool:
    return rest == "" or (rest.startswith(":") and rest[1:].isdigit() and len(rest) <= 6)


def allowed_names(entries: Iterable[str]) -> tuple[str, ...]:
    """Configured entries as canonical names (`*` kept); a malformed one is a
    `ConfigurationError` naming it."""
    names: dict[str, None] = {}
    for entry in entries:
        if entry.strip() == ANY_HOST:
            names[ANY_HOST] = None
            continue
        name = host_name(entry)
        if name is None:
            raise ConfigurationError(
                f"allowed_hosts: {entry!r} is not a host name (e.g. app.example.com, localhost, [::1])"
            )
        names[name] = None
    return tuple(names)


def loopback_rule(bind_host: str, extra: Iterable[str]) -> tuple[str, ...]:
    """The hosts a server listening on `bind_host` allows: on a loopback address, the loopback
    names (and the address itself) plus `extra`; elsewhere only `extra` (empty: no check)."""
    extra = allowed_names(extra)
    if ANY_HOST in extra:
        return (ANY_HOST,)
    if not is_loopback(bind_host):
        return extra
    own = host_name(bind_host)
    return allowed_names([*LOOPBACK_HOSTS, *([own] if own else []), *extra])


class HostCheck:
    """ASGI middleware: a request whose `Host` is not an allowed name gets 400 naming the rule
    (a missing or malformed `Host` too: the check fails closed)."""

    def __init__(self, app: ASGIApp, allowed: tuple[str, ...]) -> None:
        self.app = app
        self.allowed = frozenset(allowed_names(allowed))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket") or ANY_HOST in self.allowed:
            await self.app(scope, receive, send)
            return
        raw = next((v for k, v in scope.get("headers", ()) if k == b"host"), None)
        value = raw.decode("latin-1") if raw is not None else ""
        if host_name(value) in self.allowed:
            await self.app(scope, receive, send)
            return
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008})
            return
        await _refuse(send, value, sorted(self.allowed))


async def _refuse(send: Send, value: str, allowed: list[str]) -> None:
    shown = repr(value[:100]) if value else "(none)"
    message = (
        f"Host {shown} is not allowed: this server answers only to {', '.join(allowed)} "
        "(a server on a loopback address refuses other names, against DNS rebinding); "
        f"allow more with --allowed-hosts ({ENV})"
    )
    body = json.dumps({"error": message, "code": "HOST_NOT_ALLOWED"}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": body})
