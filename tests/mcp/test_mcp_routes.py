"""The app's MCP servers: registered on `Sluicegate(mcp_servers=...)`, served at Mastra's
`/api/mcp/...` routes, and reached by the official `mcp` client over streamable HTTP."""

from __future__ import annotations

from typing import Any

import pytest
from tests.mcp.sluicegate_server import server

from sluicegate import Sluicegate
from sluicegate.errors import ConfigurationError


def test_servers_are_registered_by_id() -> None:
    registry = Sluicegate(mcp_servers={"main": server})
    assert registry.mcp_servers == {"main": server}
    assert registry.get_mcp_server("main") is server
    assert registry.get_mcp_server("other") is None
    assert Sluicegate().mcp_servers == {}


@pytest.mark.parametrize(
    ("servers", "message"),
    [
        ({"has space": server}, "mcp_servers key 'has space' is not a server id"),
        ({"../x": server}, "mcp_servers key '../x' is not a server id"),
        ({"": server}, "mcp_servers key '' is not a server id"),
        ({"main": object()}, r"mcp_servers\['main'\] is a object, not a sluicegate.mcp.MCPServer"),
        ([server], "mcp_servers must map ids to MCPServer objects"),
    ],
)
def test_bad_registrations_name_the_entry(servers: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        Sluicegate(mcp_servers=servers)
