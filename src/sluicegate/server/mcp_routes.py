"""The app's MCP servers (`Sluicegate(mcp_servers=...)`) at Mastra's routes.

`GET /api/mcp/v0/servers` and `/v0/servers/{id}` describe them (Mastra's registry shapes),
`GET /api/mcp/{serverId}/tools[/{toolId}]` lists their tools, `POST .../execute` runs one, and
`/api/mcp/{serverId}/mcp` speaks streamable HTTP to MCP clients, `/api/mcp/{serverId}/sse` and
`/messages` the older SSE transport. Everything sits under `/api`, so the bearer token and the
identity hook gate all of it, the MCP endpoints included; a tool call runs with the caller's
request context (its identity's resource and values). An SSE session is the one stateful
thing here: it belongs to the caller that opened it (its resource and its credential), and a
message posted to it by anyone else is answered 404, as if it did not exist. A tool that needs
a person's approval is never run here (403), whatever the operator allows on `/api/tools`:
the MCP server itself refuses it on every path.

The streamable HTTP endpoint needs a running session manager: each app lifespan starts a fresh
one per server (`MCPEndpoints.run`); before that the endpoint answers 503.
"""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, FastAPI, Query, Request
from starlette.routing import Route

from sluicegate.errors import AccessDeniedError, APICallError
from sluicegate.mcp.config import REQUEST_CONTEXT_SCOPE_KEY
from sluicegate.registry import Sluicegate
from sluicegate.request_context import RESOURCE_ID_KEY, RequestContext
from sluicegate.server.auth import Receive, Scope, Send, send_json
from sluicegate.server.bodies import ToolExecuteBody, request_context_from
from sluicegate.server.deps import ERRORS, registry_of
from sluicegate.server.errors import ApiError, bad_request
from sluicegate.server.identity import bind_context
from sluicegate.server.tool_approval import refuse_unapproved
from sluicegate.stream.payload import to_json
from sluicegate.tools.tool import ToolInputError

if TYPE_CHECKING:
    from sluicegate.mcp.server import MCPServer

router = APIRouter(prefix="/api/mcp", tags=["mcp"])

_EXECUTE_ERRORS: dict[int | str, dict[str, Any]] = {
    **ERRORS,
    403: {"model": ERRORS[400]["model"], "description": "The tool requires approval."},
    502: ERRORS[400],
}


def _server(request: Request, server_id: str) -> MCPServer:
    server = registry_of(request).get_mcp_server(server_id)
    if server is None:
        raise ApiError(404, f"MCP server {server_id!r} not found", field="serverId")
    return server


def _tool_or_404(server: MCPServer, server_id: str, tool_id: str) -> None:
    if not server.has_tool(tool_id):
        raise ApiError(404, f"tool {tool_id!r} not found on MCP server {server_id!r}", field="toolId")


def server_info(server_id: str, server: MCPServer) -> dict[str, Any]:
    """Mastra's `ServerInfo`: the registry entry of one server."""
    info: dict[str, Any] = {
        "id": server_id,
        "name": server.name,
        "version_detail": {"version": server.version, "release_date": server.release_date, "is_latest": True},
    }
    if server.description:
        info["description"] = server.description
    return info


def tool_info(server: MCPServer, tool_id: str) -> dict[str, Any]:
    """Mastra's tool info: the MCP definition's fields, with `id` and `toolType` ("agent" for an
    `ask_<agent>` tool)."""
    definition = next(d for d in server.tool_definitions() if d.name == tool_id)
    listed = definition.model_dump(mode="json", by_alias=True, exclude_none=True)
    info: dict[str, Any] = {"id": tool_id, **listed}
    if server.tool(tool_id) is None:
        info["toolType"] = "agent"
    return info


@router.get("/v0/servers", responses=ERRORS)
async def list_servers(
    request: Request,
    page: int | None = Query(default=None, ge=0, le=1_000_000),
    perPage: int | None = Query(default=None, ge=1, le=1000),
    limit: int | None = Query(default=None, ge=1, le=1000),
    offset: int | None = Query(default=None, ge=0, le=1_000_000),
) -> dict[str, Any]:
    """Every server (Mastra's shape), paged by `page`/`perPage` or the older `limit`/`offset`."""
    servers = list(registry_of(request).mcp_servers.items())
    legacy = (limit is not None or offset is not None) and page is None and perPage is None
    per_page = perPage if perPage is not None else limit
    shown, following = servers, None
    if per_page is not None:
        number = page if page is not None else (offset or 0) // per_page
        start = number * per_page
        shown = servers[start : start + per_page]
        if start + per_page < len(servers):
            following = (
                f"/mcp/v0/servers?limit={per_page}&offset={start + per_page}"
                if legacy
                else f"/mcp/v0/servers?perPage={per_page}&page={number + 1}"
            )
    return {
        "servers": [server_info(key, server) for key, server in shown],
        "total_count": len(servers),
        "next": following,
    }


@router.get("/v0/servers/{id}", responses=ERRORS)
async def get_server(id: str, request: Request, version: str | None = Query(default=None)) -> dict[str, Any]:
    """One server's detail (Mastra's `ServerDetail`: no packages or remotes to install from)."""
    server = registry_of(request).get_mcp_server(id)
    if server is None:
        raise ApiError(404, f"MCP server {id!r} not found", field="id")
    if version is not None and version != server.version:
        raise ApiError(
            404, f"MCP server {id!r} found, but not version {version!r}; its version is {server.version!r}"
        )
    return {**server_info(id, server), "package_canonical": "", "packages": [], "remotes": []}


@router.get("/{serverId}/tools", responses=ERRORS)
async def list_tools(serverId: str, request: Request) -> dict[str, Any]:
    server = _server(request, serverId)
    return {"tools": [tool_info(server, d.name) for d in server.tool_definitions()]}


@router.get("/{serverId}/tools/{toolId}", responses=ERRORS)
async def get_tool(serverId: str, toolId: str, request: Request) -> dict[str, Any]:
    server = _server(request, serverId)
    _tool_or_404(server, serverId, toolId)
    return tool_info(server, toolId)


@router.post("/{serverId}/tools/{toolId}/execute", responses=_EXECUTE_ERRORS)
async def execute_tool(serverId: str, toolId: str, body: ToolExecuteBody, request: Request) -> dict[str, Any]:
    """Run one of the server's tools with `data` as its arguments: `{"result": ...}`. A tool
    that requires approval is refused (403); an `ask_<agent>` tool answers the agent's text."""
    server = _server(request, serverId)
    _tool_or_404(server, serverId, toolId)
    tool = server.tool(toolId)
    if tool is not None:
        refuse_unapproved(tool, allowed=False)
    arguments = {} if body.data is None else body.data
    if not isinstance(arguments, dict):
        raise bad_request("data", "must be an object of the tool's arguments")
    if tool is not None:
        try:
            tool.validate(arguments)
        except ToolInputError as exc:
            raise bad_request("data", str(exc)) from None
    elif set(arguments) != {"message"} or not isinstance(arguments["message"], str):
        raise bad_request("data", f'{toolId} takes {{"message": "<text>"}} and nothing else')
    context = bind_context(request, request_context_from(body.requestContext))
    try:
        result = await server.execute(toolId, arguments, request_context=context)
    except AccessDeniedError:
        raise  # another resource's data: 403, not a tool failure
    except Exception as exc:
        detail = exc.public_message if isinstance(exc, APICallError) else exc
        raise ApiError(502, f"tool {toolId!r} of MCP server {serverId!r} failed: {detail}") from None
    return {"result": to_json(result)}


class MCPEndpoints:
    """The ASGI endpoint of `/api/mcp/{serverId}/mcp`: hands each request to that server's
    streamable HTTP session manager, with the caller's request context in the scope."""

    def __init__(self, registry: Sluicegate) -> None:
        self._registry = registry
        self._running: dict[str, Any] = {}
        self._sse: dict[str, Any] = {}

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        """A fresh session manager per server for one app lifespan (a manager runs only once)."""
        async with AsyncExitStack() as stack:
            for key, server in self._registry.mcp_servers.items():
                manager, app = server.http_endpoint()
                await stack.enter_async_context(manager.run())
                self._running[key] = app
                self._sse[key] = server.sse_endpoint(f"/api/mcp/{key}/messages")
            try:
                yield
            finally:
                self._running.clear()
                self._sse.clear()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        server_id = await self._bind(scope, send)
        if server_id is not None:
            await self._running[server_id](scope, receive, send)

    async def sse(self, scope: Scope, receive: Receive, send: Send) -> None:
        """`GET /api/mcp/{serverId}/sse`: a session's event stream, the session run while it is open."""
        server_id = await self._bind(scope, send)
        if server_id is not None:
            await self._sse[server_id].connect(scope, receive, send, owner=_owner(scope))

    async def messages(self, scope: Scope, receive: Receive, send: Send) -> None:
        """`POST /api/mcp/{serverId}/messages?session_id=...`: a message into the caller's session."""
        server_id = await self._bind(scope, send)
        if server_id is not None:
            await self._sse[server_id].post(scope, receive, send, owner=_owner(scope))

    async def _bind(self, scope: Scope, send: Send) -> str | None:
        """The server the path names, running, with the caller's request context in the scope;
        None when the request was answered (404, 503)."""
        server_id = str(scope.get("path_params", {}).get("serverId", ""))
        if self._registry.get_mcp_server(server_id) is None:
            missing = {"error": f"MCP server {server_id!r} not found", "field": "serverId"}
            await send_json(send, 404, missing, [])
            return None
        if server_id not in self._running:
            idle = {"error": "the MCP endpoint runs only while the app's lifespan does"}
            await send_json(send, 503, idle, [])
            return None
        scope[REQUEST_CONTEXT_SCOPE_KEY] = bind_context(Request(scope), request_context_from(None))
        return server_id


def _owner(scope: Scope) -> str:
    """Who opened (or posts to) an SSE session: the identity's resource and a digest of the
    credential sent, so neither another resource nor another token can use the session."""
    context = scope.get(REQUEST_CONTEXT_SCOPE_KEY)
    resource = context.get(RESOURCE_ID_KEY) if isinstance(context, RequestContext) else None
    credential = Request(scope).headers.get("authorization", "")
    digest = hashlib.sha256(credential.encode("utf-8", "surrogateescape")).hexdigest()
    return f"{resource if isinstance(resource, str) else ''}\x00{digest}"


def install(app: FastAPI, endpoints: MCPEndpoints) -> None:
    """Add the MCP routes to `app`; its lifespan runs `endpoints.run()`."""
    app.include_router(router)
    app.router.routes.append(Route("/api/mcp/{serverId}/mcp", endpoint=endpoints))
    app.router.routes.append(Route("/api/mcp/{serverId}/sse", endpoint=_ASGI(endpoints.sse), methods=["GET"]))
    app.router.routes.append(
        Route("/api/mcp/{serverId}/messages", endpoint=_ASGI(endpoints.messages), methods=["POST"])
    )


class _ASGI:
    """A bound method as an ASGI app (Starlette's `Route` takes a plain method for a
    request-response endpoint)."""

    def __init__(self, app: Any) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, send)
