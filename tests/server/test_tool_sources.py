"""`sluicegate serve` with an agent that takes its tools from an `MCPClient`: the server lists
them at its start (the app module awaits nothing) and closes the clients when it stops; a
source that cannot list fails the start instead of serving an agent without its tools."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from tests.agent.test_tool_sources import Source, _echo

from sluicegate import Agent, Sluicegate
from sluicegate.server import ServerSettings, create_app
from sluicegate.testing import MockModel


def test_the_server_lists_the_tools_at_its_start_and_closes_the_source_at_its_stop() -> None:
    source = Source({"fx_echo": _echo()})
    app = create_app(Sluicegate(agents=[Agent("clock", model=MockModel(), tools=[source])]), ServerSettings())
    with TestClient(app) as client:
        assert source.listings == 1
        agent = client.get("/api/agents/clock").json()
        assert "fx_echo" in agent["tools"]
        assert source.closes == 0
    assert source.closes == 1


def test_a_source_that_cannot_list_fails_the_servers_start() -> None:
    source = Source({}, error=RuntimeError("MCP server 'fx' could not start"))
    app = create_app(Sluicegate(agents=[Agent("clock", model=MockModel(), tools=[source])]), ServerSettings())
    with (
        pytest.raises(Exception, match="agent 'clock': could not list the tools of Source\\(fx\\)"),
        TestClient(app),
    ):
        pass
    assert source.closes == 1
