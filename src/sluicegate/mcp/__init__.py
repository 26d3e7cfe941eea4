"""Model Context Protocol (the `mcp` extra): tools, resources and prompts of MCP servers for
sluicegate agents, under the same processors as every other tool (`MCPClient`), and sluicegate's
tools and agents served to MCP clients (`MCPServer`). See docs/mcp.md.

`MCPConfigError` needs nothing beyond sluicegate; the rest loads the `mcp` SDK on first use
and raises `MissingExtraError` naming the extra when it is not installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sluicegate._lazy import lazy_attributes
from sluicegate.mcp.config import MCPConfigError

if TYPE_CHECKING:
    from sluicegate.mcp.client import MCPClient
    from sluicegate.mcp.connection import MCPConnectionError, MCPTimeoutError
    from sluicegate.mcp.elicitation import (
        MCPElicitationError,
        MCPElicitationGoneError,
        MCPElicitationInputError,
    )
    from sluicegate.mcp.server import MCPServer
    from sluicegate.mcp.tools import MCPToolError

__all__ = [
    "MCPClient",
    "MCPConfigError",
    "MCPConnectionError",
    "MCPElicitationError",
    "MCPElicitationGoneError",
    "MCPElicitationInputError",
    "MCPServer",
    "MCPTimeoutError",
    "MCPToolError",
]

__getattr__ = lazy_attributes(
    __name__,
    {
        "MCPClient": "client",
        "MCPConnectionError": "connection",
        "MCPTimeoutError": "connection",
        "MCPElicitationError": "elicitation",
        "MCPElicitationGoneError": "elicitation",
        "MCPElicitationInputError": "elicitation",
        "MCPToolError": "tools",
        "MCPServer": "server",
    },
)
