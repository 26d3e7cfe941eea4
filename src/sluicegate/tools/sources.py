"""Tools that must be listed before they can be used: an MCP server's, for one.

An application module cannot `await mcp.list_tools()` at import, so an agent may take the
client itself (`Agent(tools=[mcp, other_tool])`); whatever runs the agent (the first run, the
server's start, a Temporal worker's start) lists it then, and closes it when it stops.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from sluicegate.tools.tool import Tool


@runtime_checkable
class ToolSource(Protocol):
    """Anything with `async list_tools() -> {name: Tool}` and `async close()` (`MCPClient`)."""

    async def list_tools(self) -> dict[str, Tool]: ...

    async def close(self) -> None: ...
