"""`MCPServer`: sluicegate tools and agents served to MCP clients, through the `mcp` SDK.

    server = MCPServer(name="main", version="1.0.0", tools={"lookup": lookup}, agents={"support": agent})
    await server.run_stdio()                 # for desktop clients
    app = server.streamable_http_app()       # a Starlette app (streamable HTTP at /mcp)

Each tool keeps its name, description, input schema and annotations; each agent is a tool
`ask_<agent>` taking `{"message": ...}` (Mastra's naming) whose answer is the agent's text, the
run going through all of the agent's processors, so an MCP caller gets guarded answers. A call
never raises into the SDK: invalid input, a failing tool, a tripwire are `isError` results the
caller reads. Nothing here can wait for a person, so a tool that needs approval (or that
suspends) is refused rather than run unapproved, and an agent run that would wait ends as an
error.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sluicegate.agent.tool_errors import error_text
from sluicegate.errors import MissingExtraError
from sluicegate.mcp.config import REQUEST_CONTEXT_SCOPE_KEY, MCPConfigError
from sluicegate.mcp.tools import TOOL_NAME
from sluicegate.request_context import RequestContext
from sluicegate.tools import Tool, ToolContext, normalize_tools
from sluicegate.tools.tool import requires_approval

try:
    import mcp_types
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken
    from mcp.server.lowlevel import Server
    from mcp.server.sse import SseServerTransport
    from mcp.server.stdio import stdio_server
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingExtraError("mcp", extra="mcp", feature="sluicegate.mcp.MCPServer") from exc

if TYPE_CHECKING:
    from starlette.applications import Starlette
    from starlette.types import ASGIApp, Receive, Scope, Send

    from sluicegate.agent import Agent

ASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"message": {"type": "string", "description": "What to ask the agent."}},
    "required": ["message"],
    "additionalProperties": False,
}


class MCPServer:
    """`tools` (a dict or list of `Tool`s) and `agents` (name -> `Agent`) as one MCP server."""

    def __init__(
        self,
        *,
        name: str,
        version: str,
        tools: dict[str, Tool] | list[Tool] | None = None,
        agents: dict[str, Agent] | None = None,
        description: str | None = None,
        release_date: str | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():
            raise MCPConfigError(f"MCPServer: name must be a non-empty string, got {name!r}")
        if not isinstance(version, str) or not version.strip():
            raise MCPConfigError(f"MCPServer {name!r}: version must be a non-empty string, got {version!r}")
        self.name, self.version, self.description = name, version, description
        self.release_date = release_date or datetime.now(UTC).isoformat()
        """What Mastra's server registry answers as `version_detail.release_date`."""
        self.tools: dict[str, Tool] = normalize_tools(tools)
        self.agents: dict[str, Agent] = dict(agents or {})
        for key in self.agents:
            if not isinstance(key, str) or not TOOL_NAME.fullmatch(f"ask_{key}"):
                raise MCPConfigError(f"MCPServer {name!r}: agent name {key!r} does not make an MCP tool name")
        for key in self.tools:
            if not TOOL_NAME.fullmatch(key):
                raise MCPConfigError(
                    f"MCPServer {name!r}: tool name {key!r} is not an MCP tool name "
                    "(letters, digits, '_', '-', '.', up to 128)"
                )
        clash = sorted(set(self.tools) & {f"ask_{key}" for key in self.agents})
        if clash:
            raise MCPConfigError(f"MCPServer {name!r}: {', '.join(clash)} is both a tool and an agent's tool")
        try:
            self._definitions = self._build_definitions()
        except ValueError as exc:  # pydantic's ValidationError: a tool's annotations
            raise MCPConfigError(f"MCPServer {name!r}: {error_text(exc)}") from exc
        self.sdk_server: Server[Any] = Server(
            name,
            version=version,
            description=description,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )

    def __repr__(self) -> str:
        return f"MCPServer(name={self.name!r}, tools={sorted(self.tools)}, agents={sorted(self.agents)})"

    def tool_definitions(self) -> list[mcp_types.Tool]:
        """What `tools/list` answers: the tools, then one `ask_<agent>` per agent."""
        return list(self._definitions)

    def _build_definitions(self) -> list[mcp_types.Tool]:
        listed = []
        for key, tool in self.tools.items():
            hints = tool.annotations
            listed.append(
                mcp_types.Tool(
                    name=key,
                    description=tool.description or None,
                    input_schema=tool.json_schema(),
                    annotations=mcp_types.ToolAnnotations.model_validate(hints) if hints else None,
                )
            )
        for key, agent in self.agents.items():
            about = getattr(agent, "description", None) or f"Ask the {key} agent."
            listed.append(mcp_types.Tool(name=f"ask_{key}", description=about, input_schema=ASK_SCHEMA))
        return listed

    def has_tool(self, name: str) -> bool:
        """Whether `name` is one of the served tools or an `ask_<agent>` tool."""
        return name in self.tools or (name.startswith("ask_") and name[4:] in self.agents)

    def needs_approval(self, name: str) -> bool:
        """Whether the served tool `name` waits for a person (an agent's tool never does here:
        its run ends as an error instead of waiting)."""
        tool = self.tools.get(name)
        return tool is not None and requires_approval(tool)

    def tool(self, name: str) -> Tool | None:
        """The served `Tool` named `name` (None for an `ask_<agent>` tool or an unknown name)."""
        return self.tools.get(name)

    async def call(
        self, name: str, arguments: dict[str, Any] | None, *, request_context: RequestContext | None = None
    ) -> mcp_types.CallToolResult:
        """One `tools/call`: a tool's result, an agent's answer, or an `isError` result."""
        if not self.has_tool(name):
            return _error(f"unknown tool {name!r}")
        try:
            value = await self.execute(name, arguments or {}, request_context=request_context)
        except Exception as exc:
            return _error(error_text(exc))
        return _text(value) if name not in self.tools else _result(value)

    async def execute(
        self, name: str, arguments: dict[str, Any], *, request_context: RequestContext | None = None
    ) -> Any:
        """Run tool `name` (raising what it raises): a tool's result, or an agent's answer text.
        `request_context` is the caller's (its identity's resource and values), else empty."""
        context = request_context if request_context is not None else RequestContext()
        if name in self.tools:
            return await self._run_tool(self.tools[name], name, arguments, context)
        if name.startswith("ask_") and name[4:] in self.agents:
            return await self._ask(self.agents[name[4:]], arguments, context)
        raise MCPConfigError(f"unknown tool {name!r}")

    async def _run_tool(
        self, tool: Tool, name: str, arguments: dict[str, Any], request_context: RequestContext
    ) -> Any:
        if requires_approval(tool):
            raise MCPConfigError(f"tool {name!r} needs a person's approval, which an MCP call cannot give")
        context = ToolContext(
            tool_call_id=f"mcp-{uuid.uuid4().hex}",
            request_context=request_context,
            tool_name=name,
            suspend_schema=tool.context_schema(),
        )
        result = await tool.execute(tool.validate(arguments), context)
        if context.suspended:
            raise MCPConfigError(f"tool {name!r} waits for a person, which an MCP call cannot do")
        return result

    async def _ask(self, agent: Agent, arguments: dict[str, Any], request_context: RequestContext) -> str:
        message = arguments.get("message") if isinstance(arguments, dict) else None
        if not isinstance(message, str) or set(arguments) - {"message"}:
            raise MCPConfigError('ask_<agent> takes {"message": "<text>"} and nothing else')
        result = await agent.generate(message, request_context=request_context)
        if result.tripwire is not None:
            raise MCPConfigError(f"the agent's guardrails stopped the answer: {result.tripwire.reason}")
        if result.finish_reason == "suspended":
            raise MCPConfigError("the agent's run waits for a person, which an MCP call cannot do")
        return result.text

    async def _list_tools(self, ctx: Any, params: Any) -> mcp_types.ListToolsResult:
        return mcp_types.ListToolsResult(tools=self.tool_definitions())

    async def _call_tool(self, ctx: Any, params: mcp_types.CallToolRequestParams) -> mcp_types.CallToolResult:
        scope = getattr(getattr(ctx, "request", None), "scope", None)
        given = scope.get(REQUEST_CONTEXT_SCOPE_KEY) if isinstance(scope, dict) else None
        context = given if isinstance(given, RequestContext) else None
        return await self.call(params.name, params.arguments, request_context=context)

    async def run_stdio(self) -> None:
        """Serve one client over this process's stdin and stdout until it hangs up."""
        async with stdio_server() as (read, write):
            await self.sdk_server.run(read, write, self.sdk_server.create_initialization_options())

    def streamable_http_app(self, *, path: str = "/mcp") -> Starlette:
        """A Starlette app serving streamable HTTP at `path` (mount it, or run it with uvicorn)."""
        return self.sdk_server.streamable_http_app(streamable_http_path=path)

    def http_endpoint(self) -> tuple[StreamableHTTPSessionManager, ASGIApp]:
        """A fresh streamable HTTP session manager and the ASGI app answering through it, for
        a host app to mount: the host runs `manager.run()` in its lifespan (a manager runs
        once). Host checks, auth and body limits are the host's middleware. Stateless: each
        request stands alone with its own credentials, so there is no session id another
        caller could post into, and any worker process can answer any request.
        """
        manager = StreamableHTTPSessionManager(app=self.sdk_server, stateless=True)
        return manager, StreamableHTTPASGIApp(manager)

    def sse_endpoint(self, messages_path: str) -> SSEEndpoint:
        """The older SSE transport (a GET opening an event stream, POSTs to `messages_path`),
        for a host app to mount; see `SSEEndpoint`."""
        return SSEEndpoint(self, messages_path)


class SSEEndpoint:
    """The older SSE transport for one server, for a host app to route to: `connect` answers
    the GET that opens a session's event stream (and runs the session while it is open),
    `post` the messages a client posts to `messages_path?session_id=...`. A session belongs to
    the `owner` that opened it (the host's word for the caller: its identity and credential);
    a post by anyone else is answered as if the session did not exist (the SDK's check)."""

    def __init__(self, server: MCPServer, messages_path: str) -> None:
        self._server = server
        self._transport = SseServerTransport(messages_path)

    async def connect(self, scope: Scope, receive: Receive, send: Send, *, owner: str) -> None:
        scope["user"] = _principal(owner)
        sdk = self._server.sdk_server
        try:
            async with self._transport.connect_sse(scope, receive, send) as (read, write):
                await sdk.run(read, write, sdk.create_initialization_options())
        except ValueError:  # refused by the SDK's request checks, which answered it already
            return

    async def post(self, scope: Scope, receive: Receive, send: Send, *, owner: str) -> None:
        scope["user"] = _principal(owner)
        await self._transport.handle_post_message(scope, receive, send)


def _principal(owner: str) -> AuthenticatedUser:
    return AuthenticatedUser(AccessToken(token="", client_id="sluicegate", scopes=[], subject=owner))


def _result(value: Any) -> mcp_types.CallToolResult:
    text = value if isinstance(value, str) else json.dumps(value, default=str, ensure_ascii=False)
    structured = value if isinstance(value, dict) else None
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=text)], structured_content=structured
    )


def _text(text: str) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)])


def _error(text: str) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(content=[mcp_types.TextContent(type="text", text=text)], is_error=True)
