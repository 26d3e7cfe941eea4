"""`sluicegate mcp app.py --server main`: one of the app's MCP servers over stdio, for desktop
clients (Claude Desktop, an IDE) that start their servers as processes.

stdout is the protocol's channel, so anything the app prints while it loads goes to stderr;
a stray line there would be a message the client cannot read. The process is the client's own,
on its machine: no token or identity hook applies (those guard the HTTP routes).
"""

from __future__ import annotations

import asyncio
import contextlib
import sys

from sluicegate.errors import ConfigurationError


def serve_mcp(target: str, server_id: str | None) -> int:
    """Serve `server_id` (the only server when None) of the app at `target` until the client
    hangs up."""
    from sluicegate.server.loader import load_registry

    with contextlib.redirect_stdout(sys.stderr):
        registry = load_registry(target)
    servers = registry.mcp_servers
    known = ", ".join(sorted(servers)) or "none"
    if server_id is None:
        if len(servers) != 1:
            raise ConfigurationError(f"{target}: name the MCP server with --server (its servers: {known})")
        server_id = next(iter(servers))
    server = servers.get(server_id)
    if server is None:
        raise ConfigurationError(f"{target} has no MCP server {server_id!r} (its servers: {known})")
    print(f"sluicegate: serving MCP server {server_id!r} over stdio", file=sys.stderr)

    async def serve() -> None:
        try:  # the agents' own MCP tools (`tools=[mcp]`): listed first, their servers stopped after
            await registry.load_tools()
            await server.run_stdio()
        finally:
            await registry.close_tool_sources()

    asyncio.run(serve())
    return 0
