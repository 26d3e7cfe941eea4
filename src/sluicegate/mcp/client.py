"""`MCPClient`: tools, resources and prompts of MCP servers, for sluicegate agents.

    async with MCPClient(servers={"time": {"command": "python", "args": ["-m", "mcp_server_time"]}}) as mcp:
        agent = Agent(..., tools=await mcp.list_tools())     # {"time_get_current_time": Tool, ...}

Shaped like Mastra's `MCPClient`: servers by name, tools namespaced `<server>_<tool>`,
`list_toolsets()` per server for per-call toolsets, each server started on first use and all
stopped by `close()` (or leaving `async with`). `timeout` is in seconds (Mastra's is in
milliseconds); a server may override it, and `require_approval`, in its own definition.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, TypeVar

from sluicegate.mcp.config import (
    DEFAULT_TIMEOUT,
    ApprovalPolicy,
    MCPConfigError,
    ServerConfig,
    check_approval,
    check_timeout,
    parse_server,
)
from sluicegate.mcp.connection import ServerConnection, describe
from sluicegate.mcp.elicitation import DEFAULT_ELICITATION_TIMEOUT, Questions
from sluicegate.mcp.tools import build_tool
from sluicegate.tools import Tool

log = logging.getLogger("sluicegate.mcp")

T = TypeVar("T")


class MCPClient:
    """Connections to the MCP servers in `servers` (name -> definition, see
    `sluicegate.mcp.config`). `require_approval`: `False` (default), `True`, or
    `"unless-read-only"` (calls wait for a person unless the tool's `readOnlyHint` is true).
    `elicitation`: whether servers may ask the user for input mid-call (the run suspends with
    the question, see `sluicegate.mcp.elicitation`); a question waits `elicitation_timeout`
    seconds for its answer, then is answered `cancel`."""

    def __init__(
        self,
        *,
        servers: dict[str, dict[str, Any]],
        timeout: float = DEFAULT_TIMEOUT,
        require_approval: ApprovalPolicy = False,
        elicitation: bool = True,
        elicitation_timeout: float = DEFAULT_ELICITATION_TIMEOUT,
    ) -> None:
        if not isinstance(servers, dict) or not servers:
            raise MCPConfigError("MCPClient needs servers: a dict of server name -> definition")
        timeout = check_timeout(timeout, "MCPClient: timeout")
        policy = check_approval(require_approval, "MCPClient")
        if not isinstance(elicitation, bool):
            raise MCPConfigError(f"MCPClient: elicitation must be True or False, got {elicitation!r}")
        wait = check_timeout(elicitation_timeout, "MCPClient: elicitation_timeout")
        configs = [parse_server(n, d, timeout=timeout, require_approval=policy) for n, d in servers.items()]
        self.servers: dict[str, ServerConfig] = {c.name: c for c in configs}
        self._connections = {c.name: ServerConnection(c, elicitation=elicitation) for c in configs}
        self._questions = Questions(wait)
        self._closed = False

    def __repr__(self) -> str:
        return f"MCPClient(servers={sorted(self.servers)})"

    async def __aenter__(self) -> MCPClient:
        self._closed = False
        for connection in self._connections.values():
            connection.reopen()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Stop every server this client started (or hang up on it) and wait until they are
        gone. Tools listed from it fail as tool errors afterwards; `async with` opens it again."""
        self._closed = True
        self._questions.close()
        await asyncio.gather(*(c.close() for c in self._connections.values()))

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def open_questions(self) -> int:
        """Servers' questions waiting for a person's answer (runs suspended by elicitation)."""
        return len(self._questions)

    async def list_tools(self) -> dict[str, Tool]:
        """Every server's tools, named `<server>_<tool>`, for `Agent(tools=...)`. Servers start
        concurrently; one that cannot be reached raises `MCPConnectionError` naming it."""
        merged: dict[str, Tool] = {}
        for tools in (await self.list_toolsets()).values():
            merged.update(tools)
        return merged

    async def list_toolsets(self) -> dict[str, dict[str, Tool]]:
        """Server name -> that server's tools (named `<server>_<tool>`), for per-call toolsets."""
        names = list(self._connections)
        listed = await asyncio.gather(*(self._server_tools(name) for name in names))
        return dict(zip(names, listed, strict=True))

    async def _server_tools(self, server: str) -> dict[str, Tool]:
        connection = self._connections[server]
        tools: dict[str, Tool] = {}
        cursor: str | None = None
        for _ in range(_PAGE_CAP):
            page = await self._request(server, _tools_page(cursor), "listing tools")
            for listed in page.tools:
                built = build_tool(connection, listed, self._is_open, self._questions)
                if built is not None:
                    tools[built.id] = built
            cursor = page.next_cursor
            if cursor is None:
                break
        return tools

    def _is_open(self) -> bool:
        return not self._closed

    async def list_resources(self) -> dict[str, list[dict[str, Any]]]:
        """Server name -> its resources (MCP's JSON: `uri`, `name`, `mimeType`, ...). A server
        that offers none, or fails, is left out (the failure is logged), as in Mastra."""
        return await self._each("resources", lambda c: c.list_resources(), "resources")

    async def list_resource_templates(self) -> dict[str, list[dict[str, Any]]]:
        """Server name -> its resource templates (`uriTemplate`, `name`, ...)."""
        return await self._each("resources", lambda c: c.list_resource_templates(), "resource_templates")

    async def read_resource(self, server: str, uri: str) -> dict[str, Any]:
        """One resource's contents (`{"contents": [{"uri", "mimeType", "text" | "blob"}]}`)."""
        if not isinstance(uri, str) or not uri:
            raise MCPConfigError(f"read_resource: uri must be a non-empty string, got {uri!r}")
        result = await self._request(server, lambda c: c.read_resource(uri), f"reading resource {uri!r}")
        return _json(result)

    async def list_prompts(self) -> dict[str, list[dict[str, Any]]]:
        """Server name -> its prompts (`name`, `description`, `arguments`)."""
        return await self._each("prompts", lambda c: c.list_prompts(), "prompts")

    async def get_prompt(
        self, server: str, name: str, arguments: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """One prompt filled in (`{"description", "messages": [{"role", "content"}]}`)."""
        if arguments is not None and not (
            isinstance(arguments, dict) and all(isinstance(v, str) for v in arguments.values())
        ):
            raise MCPConfigError(
                "get_prompt: arguments must be a dict of strings (MCP prompt arguments are strings)"
            )
        result = await self._request(
            server, lambda c: c.get_prompt(name, arguments), f"getting prompt {name!r}"
        )
        return _json(result)

    async def _each(
        self, capability: str, op: Callable[[Any], Awaitable[Any]], field: str
    ) -> dict[str, list[dict[str, Any]]]:
        async def one(server: str) -> list[dict[str, Any]] | None:
            try:
                client = await self._live(server)
                if getattr(client.server_capabilities, capability, None) is None:
                    return []
                result = await self._request(server, op, f"listing {field.replace('_', ' ')}")
            except Exception as exc:
                log.error("MCP server %r: listing %s failed: %s", server, field, describe(exc))
                return None
            return [_json(item) for item in getattr(result, field)]

        names = list(self._connections)
        found = await asyncio.gather(*(one(name) for name in names))
        return {name: items for name, items in zip(names, found, strict=True) if items is not None}

    async def _live(self, server: str) -> Any:
        return await self._request(server, _itself, "connecting")

    async def _request(self, server: str, op: Callable[[Any], Awaitable[T]], what: str) -> T:
        if self._closed:
            raise MCPConfigError("this MCPClient is closed; open it again with `async with`")
        connection = self._connections.get(server)
        if connection is None:
            raise MCPConfigError(f"no MCP server named {server!r}; configured: {sorted(self._connections)}")
        return await connection.request(op, what)


_PAGE_CAP = 100
"""Pages of one tool listing: a server whose cursor never ends cannot hang `list_tools`."""


def _tools_page(cursor: str | None) -> Callable[[Any], Awaitable[Any]]:
    async def page(client: Any) -> Any:
        return await client.list_tools(cursor=cursor)

    return page


async def _itself(client: Any) -> Any:
    return client


def _json(value: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = value.model_dump(mode="json", by_alias=True, exclude_none=True)
    for internal in ("resultType", "ttlMs", "cacheScope"):  # the SDK's caching, not content
        dumped.pop(internal, None)
    return dumped
