"""MCPClient's configuration is checked before any server starts."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

from sluicegate.errors import ConfigurationError
from sluicegate.mcp import MCPClient, MCPConfigError
from sluicegate.mcp.config import parse_server


def client(**servers: Any) -> MCPClient:
    return MCPClient(servers=servers)


def test_unknown_keys_are_refused_by_name() -> None:
    with pytest.raises(MCPConfigError, match=r"MCP server 'docs': unknown key\(s\) 'header', 'requestInit'"):
        client(docs={"url": "http://127.0.0.1:1/mcp", "header": {"a": "b"}, "requestInit": {}})
    with pytest.raises(MCPConfigError, match=r"unknown key\(s\) 'headers'; a stdio server takes"):
        MCPClient(servers={"time": {"command": "python", "headers": {}}})


def test_a_server_is_stdio_or_url_not_both() -> None:
    with pytest.raises(MCPConfigError, match="exactly one of 'command'"):
        client(x={"command": "python", "url": "http://127.0.0.1/mcp"})
    with pytest.raises(MCPConfigError, match="exactly one of 'command'"):
        client(x={"args": []})


@pytest.mark.parametrize("name", ["", "a_b", "a b", "x" * 65, "-x"])
def test_server_names_must_make_clean_tool_names(name: str) -> None:
    with pytest.raises(MCPConfigError, match="MCP server name"):
        MCPClient(servers={name: {"command": "python"}})


@pytest.mark.parametrize(
    ("definition", "problem"),
    [
        ({"command": ""}, "command must be a non-empty string"),
        ({"command": "python", "args": "-m x"}, "args must be a list of strings"),
        ({"command": "python", "env": {"A": 1}}, "env must be a dict of strings"),
        ({"command": "python", "timeout": 0}, "timeout must be a positive number"),
        ({"command": "python", "timeout": float("inf")}, "timeout must be a positive number"),
        ({"command": "python", "require_approval": "yes"}, "require_approval must be"),
        ({"url": "file:///etc/passwd"}, "url must be an http"),
        ({"url": "http://127.0.0.1/mcp", "transport": "websocket"}, "transport must be"),
        ({"command": "python", "protocol": "2025-06-18"}, "protocol must be 'auto' or 'legacy'"),
    ],
)
def test_bad_values_are_named(definition: dict[str, Any], problem: str) -> None:
    with pytest.raises(MCPConfigError, match=problem):
        client(s=definition)


def test_header_values_are_not_echoed_in_errors() -> None:
    with pytest.raises(MCPConfigError) as caught:
        client(s={"url": "http://127.0.0.1/mcp", "headers": {"Authorization": ["Bearer s3cret"]}})
    assert "s3cret" not in str(caught.value)


def test_client_options_are_checked() -> None:
    with pytest.raises(MCPConfigError, match="needs servers"):
        MCPClient(servers={})
    with pytest.raises(MCPConfigError, match="require_approval"):
        MCPClient(servers={"s": {"command": "python"}}, require_approval="sometimes")  # type: ignore[arg-type]
    with pytest.raises(MCPConfigError, match="timeout"):
        MCPClient(servers={"s": {"command": "python"}}, timeout=-1)
    with pytest.raises(MCPConfigError, match="elicitation must be True or False"):
        MCPClient(servers={"s": {"command": "python"}}, elicitation="yes")  # type: ignore[arg-type]
    with pytest.raises(MCPConfigError, match="elicitation_timeout"):
        MCPClient(servers={"s": {"command": "python"}}, elicitation_timeout=0)
    assert isinstance(MCPConfigError("x"), ConfigurationError)


def test_defaults_and_per_server_overrides() -> None:
    mcp = MCPClient(
        servers={
            "a": {"command": "python"},
            "b": {"url": "http://127.0.0.1/sse", "timeout": 2, "require_approval": True},
            "c": {"url": "http://127.0.0.1/mcp"},
        },
        timeout=9,
        require_approval="unless-read-only",
    )
    a, b, c = mcp.servers["a"], mcp.servers["b"], mcp.servers["c"]
    assert (a.kind, a.timeout, a.connect_timeout, a.require_approval) == ("stdio", 9, 9, "unless-read-only")
    assert (b.kind, b.timeout, b.require_approval) == ("sse", 2, True)  # a /sse URL is the SSE transport
    assert c.kind == "http"  # streamable HTTP, then SSE


def test_parse_keeps_what_was_given() -> None:
    config = parse_server(
        "s",
        {"command": "node", "args": ["a"], "env": {"K": "v"}, "cwd": "/tmp"},
        timeout=5,
        require_approval=False,
    )
    assert (config.command, config.args, config.env, config.cwd) == ("node", ("a",), {"K": "v"}, "/tmp")


def test_without_the_extra_the_error_names_it() -> None:
    code = (
        "import sys; sys.modules['mcp'] = None\n"
        "from sluicegate.errors import MissingExtraError\n"
        "import sluicegate.mcp\n"
        "try:\n    sluicegate.mcp.MCPClient\nexcept MissingExtraError as e:\n    print(e.extra, '|', e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.startswith("mcp |") and "pip install 'sluicegate[mcp]'" in out.stdout
