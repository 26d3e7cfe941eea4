"""One MCP server's configuration, checked before anything starts.

The shape is Mastra's `MastraMCPServerDefinition`, in Python's words: a stdio server is
`{"command": ..., "args": [...], "env": {...}, "cwd": ...}`, a remote one `{"url": ...,
"headers": {...}}` (streamable HTTP, falling back to the older SSE transport; a URL ending in
`/sse`, or `"transport": "sse"`, goes straight to SSE). Either may set `timeout` (seconds per
request), `connect_timeout`, `require_approval` and `protocol` (`"auto"`: the newest protocol
both sides speak; `"legacy"`: the 2025 handshake protocols only). Anything else is refused by name: a typo
such as `"header"` would otherwise send requests without the credentials meant for them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from sluicegate.errors import ConfigurationError

ApprovalPolicy = bool | Literal["unless-read-only"]
"""`True`: every call waits for a person; `False`: none does; `"unless-read-only"`: every call
of a tool whose `readOnlyHint` annotation is not true waits."""

DEFAULT_TIMEOUT = 60.0
"""Seconds one request (a tool call, a listing) may take: the SDK's and Mastra's default."""

SERVER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]{0,63}")
"""Server names prefix tool names (`<server>_<tool>`), which providers limit to these
characters; `_` is left out so the prefix stays unambiguous."""

_COMMON_KEYS = frozenset(("timeout", "connect_timeout", "require_approval", "protocol"))
_STDIO_KEYS = frozenset(("command", "args", "env", "cwd")) | _COMMON_KEYS
_HTTP_KEYS = frozenset(("url", "headers", "transport")) | _COMMON_KEYS


REQUEST_CONTEXT_SCOPE_KEY = "sluicegate.mcp.request_context"
"""Where a host app leaves the caller's `RequestContext` in an HTTP request's ASGI scope: the
MCP tool calls of that request run with it (the caller's resource and identity values)."""


class MCPConfigError(ConfigurationError, ValueError):
    """An MCP client or server configuration is wrong; the message names the server and key."""


@dataclass(frozen=True)
class ServerConfig:
    """A checked server definition (see the module docstring)."""

    name: str
    timeout: float
    connect_timeout: float
    require_approval: ApprovalPolicy
    protocol: Literal["auto", "legacy"] = "auto"
    """`"legacy"`: only the initialize-handshake protocols (2025), for a server that
    misbehaves with the 2026 protocol's discovery."""
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] | None = None
    cwd: str | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    transport: Literal["streamable-http", "sse"] | None = None
    """None: streamable HTTP first, SSE if that fails (Mastra's order)."""

    @property
    def kind(self) -> str:
        return "stdio" if self.command is not None else (self.transport or "http")


def check_approval(value: Any, where: str) -> ApprovalPolicy:
    if value is True or value is False or value == "unless-read-only":
        return value  # type: ignore[no-any-return]
    raise MCPConfigError(
        f"{where}: require_approval must be True, False or 'unless-read-only', got {value!r}"
    )


def check_timeout(value: Any, where: str) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise MCPConfigError(f"{where} must be a positive number of seconds, got {value!r}")
    return float(value)


def parse_server(name: Any, raw: Any, *, timeout: float, require_approval: ApprovalPolicy) -> ServerConfig:
    """`servers[name]` checked, with the client's defaults for what it leaves out."""
    if not isinstance(name, str) or not SERVER_NAME.fullmatch(name):
        raise MCPConfigError(
            f"MCP server name {name!r}: use 1-64 letters, digits or '-' "
            "(it prefixes tool names as <server>_<tool>)"
        )
    where = f"MCP server {name!r}"
    if not isinstance(raw, dict):
        raise MCPConfigError(f"{where}: its definition must be a dict, got {type(raw).__name__}")
    has_command, has_url = "command" in raw, "url" in raw
    if has_command == has_url:
        raise MCPConfigError(f"{where}: give exactly one of 'command' (stdio) or 'url' (HTTP)")
    allowed = _STDIO_KEYS if has_command else _HTTP_KEYS
    unknown = sorted(map(str, set(raw) - allowed))
    if unknown:
        raise MCPConfigError(
            f"{where}: unknown key(s) {', '.join(map(repr, unknown))}; a "
            f"{'stdio' if has_command else 'URL'} server takes {', '.join(sorted(allowed))}"
        )
    server_timeout = check_timeout(raw.get("timeout", timeout), f"{where}: timeout")
    common: dict[str, Any] = {
        "name": name,
        "timeout": server_timeout,
        "connect_timeout": check_timeout(
            raw.get("connect_timeout", server_timeout), f"{where}: connect_timeout"
        ),
        "require_approval": check_approval(raw.get("require_approval", require_approval), where),
        "protocol": raw.get("protocol", "auto"),
    }
    if common["protocol"] not in ("auto", "legacy"):
        raise MCPConfigError(f"{where}: protocol must be 'auto' or 'legacy', got {common['protocol']!r}")
    if has_command:
        return ServerConfig(
            command=_text(raw["command"], f"{where}: command"),
            args=tuple(_text_list(raw.get("args", []), f"{where}: args")),
            env=_text_map(raw["env"], f"{where}: env") if raw.get("env") is not None else None,
            cwd=_text(raw["cwd"], f"{where}: cwd") if raw.get("cwd") is not None else None,
            **common,
        )
    url = _text(raw["url"], f"{where}: url")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise MCPConfigError(f"{where}: url must be an http:// or https:// URL, got {url!r}")
    transport: Any = raw.get("transport")
    if transport not in (None, "streamable-http", "sse"):
        raise MCPConfigError(f"{where}: transport must be 'streamable-http' or 'sse', got {transport!r}")
    if transport is None and parts.path.rstrip("/").endswith("/sse"):
        transport = "sse"
    return ServerConfig(
        url=url,
        headers=_text_map(raw.get("headers") or {}, f"{where}: headers"),
        transport=transport,
        **common,
    )


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value or "\x00" in value:
        raise MCPConfigError(f"{where} must be a non-empty string, got {value!r}")
    return value


def _text_list(value: Any, where: str) -> list[str]:
    if not isinstance(value, list | tuple) or not all(isinstance(v, str) and "\x00" not in v for v in value):
        raise MCPConfigError(f"{where} must be a list of strings, got {value!r}")
    return list(value)


def _text_map(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise MCPConfigError(f"{where} must be a dict of strings to strings")
    return dict(value)
