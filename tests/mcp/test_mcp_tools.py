"""MCP tools as sluicegate tools, without a server: names, approval policy, results, errors."""

from __future__ import annotations

from typing import Any

import mcp_types
import pytest

from sluicegate.errors import ToolError
from sluicegate.mcp import MCPConnectionError, MCPToolError
from sluicegate.mcp.config import parse_server
from sluicegate.mcp.connection import ServerConnection, describe
from sluicegate.mcp.tools import build_tool, needs_approval, tool_output
from sluicegate.tools import create_tool


def connection(policy: Any = False) -> ServerConnection:
    return ServerConnection(parse_server("srv", {"command": "x"}, timeout=5, require_approval=policy))


def listed(name: str = "lookup", **extra: Any) -> mcp_types.Tool:
    return mcp_types.Tool(name=name, input_schema={"type": "object"}, **extra)


@pytest.mark.parametrize(
    ("hints", "waits"),
    [
        ({"readOnlyHint": True}, False),
        ({"readOnlyHint": False}, True),
        ({"readOnlyHint": "true"}, True),  # a hint that is not exactly true spares nothing
        ({"destructiveHint": False}, True),
        (None, True),
    ],
)
def test_unless_read_only_spares_only_read_only_tools(hints: dict[str, Any] | None, waits: bool) -> None:
    assert needs_approval(connection("unless-read-only").config, hints) is waits
    assert needs_approval(connection(True).config, {"readOnlyHint": True}) is True
    assert needs_approval(connection(False).config, None) is False


def test_a_listed_tool_becomes_a_namespaced_tool_with_its_annotations() -> None:
    hints = mcp_types.ToolAnnotations(read_only_hint=True, title="Look up")
    tool = build_tool(
        connection("unless-read-only"), listed(annotations=hints, description="Finds"), lambda: True
    )
    assert tool is not None
    assert (tool.id, tool.description, tool.require_approval) == ("srv_lookup", "Finds", False)
    assert tool.annotations == {"title": "Look up", "readOnlyHint": True}


@pytest.mark.parametrize("name", ["has space", "new\nline", "x" * 129, ""])
def test_tools_whose_names_are_not_mcp_names_are_left_out(name: str) -> None:
    assert build_tool(connection(), listed(name), lambda: True) is None


def test_a_tool_with_an_invalid_schema_is_left_out_not_the_server() -> None:
    bad = mcp_types.Tool(name="bad", input_schema={"type": "object", "properties": {"a": {"type": 5}}})
    assert build_tool(connection(), bad, lambda: True) is None


def test_results_the_model_reads() -> None:
    text = mcp_types.TextContent(type="text", text="hello")
    assert tool_output(mcp_types.CallToolResult(content=[text]), "s", "t") == {
        "content": [{"type": "text", "text": "hello"}]
    }
    structured = mcp_types.CallToolResult(content=[text], structured_content={"a": 1})
    assert tool_output(structured, "s", "t") == {"a": 1}
    failed = mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text="no disk")], is_error=True
    )
    with pytest.raises(MCPToolError, match="MCP tool s_t failed: no disk"):
        tool_output(failed, "s", "t")
    with pytest.raises(MCPToolError, match="answered with a dict"):
        tool_output({"content": []}, "s", "t")


def test_error_texts_leave_out_url_credentials_and_queries() -> None:
    error = Exception("404 for url 'https://user:pw@mcp.example.com/v1/mcp?api_key=SECRET&x=1'")
    assert describe(error) == "404 for url 'https://mcp.example.com/v1/mcp'"
    group = BaseExceptionGroup("tg", [ConnectionError("refused at http://127.0.0.1:9/mcp?token=T")])
    assert describe(group) == "refused at http://127.0.0.1:9/mcp"


def test_tool_annotations_must_be_a_dict() -> None:
    with pytest.raises(ToolError, match="annotations must be a dict"):
        create_tool(id="t", annotations="read-only")  # type: ignore[arg-type]


async def test_a_closed_connection_never_starts_its_server() -> None:
    """A call that slips past the client's check while it closes fails instead of starting a
    server nobody will stop."""
    closing = connection()
    await closing.close()
    with pytest.raises(MCPConnectionError, match="its client is closed"):
        await closing.request(lambda client: client.list_tools(), "listing tools")
    assert not closing.connected
