"""`sluicegate worker app.py` for an app whose agent takes its tools from an `MCPClient`: the
worker lists them at its start (the app module awaits nothing), runs the MCP call as a tool
activity, and stops the server it started when it stops; a server that cannot list is named."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from sluicegate.server import ServerSettings, create_app

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "tests" / "durable" / "mcp_app.py")


def _worker(target: str, queue: str, **env: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "sluicegate", "worker", APP, "--temporal", target, "--task-queue", queue]
    environ = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", **env}
    return subprocess.Popen(command, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)


async def test_serve_temporal_and_the_cli_worker_run_an_mcp_tool_end_to_end(
    temporal_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The documented path: `sluicegate worker app.py` (a real process) runs the MCP call; the
    server (`serve --temporal`, here in process with its lifespan) lists the same tools at its
    start, starts the run, and stops its own server when it stops."""
    from tests.durable import mcp_app
    from tests.mcp.helpers import alive, children

    queue = f"mcp-{uuid.uuid4()}"
    proc = _worker(temporal_server.target, queue)
    ours = children()
    try:
        assert proc.stdout is not None
        line = await asyncio.to_thread(proc.stdout.readline)
        assert b"sluicegate worker: 1 agent(s)" in line, proc.stderr.read() if proc.stderr else b""
        servers = children(proc.pid)
        assert len(servers) == 1  # the fixture MCP server, started to list its tools
        monkeypatch.setenv("SLUICEGATE_TEMPORAL", temporal_server.target)
        monkeypatch.setenv("SLUICEGATE_TEMPORAL_TASK_QUEUE", queue)
        server = create_app(mcp_app.app, ServerSettings())
        transport = httpx.ASGITransport(app=server)
        async with (
            server.router.lifespan_context(server),
            httpx.AsyncClient(transport=transport, base_url="http://test", timeout=60) as http,
        ):
            assert len(children() - ours) == 1  # the server listed the tools with its own client
            tools = (await http.get("/api/agents/mcp-echo")).json()["tools"]
            assert "fx_echo" in tools
            answer = await http.post("/api/agents/mcp-echo/generate", json={"messages": "echo something"})
            assert answer.status_code == 200, answer.text
        assert children() - ours == set()  # the server's lifespan stopped its MCP server
        assert "hello over MCP" in answer.json()["text"]
        run_id = answer.headers["x-sluicegate-workflow-id"]
        client = await Client.connect(temporal_server.target)
        history = await client.get_workflow_handle(run_id).fetch_history()
        activities = {
            e.activity_task_scheduled_event_attributes.activity_type.name
            for e in history.events
            if e.HasField("activity_task_scheduled_event_attributes")
        }
        assert "sluicegate.mcp-echo.tool.fx_echo" in activities
        assert children(proc.pid) == servers  # the worker's own server made the call
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(proc.wait, 30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not [pid for pid in servers if alive(pid)]  # no MCP server left behind


async def test_the_cli_worker_names_the_server_that_could_not_list(temporal_server: Any) -> None:
    proc = _worker(
        temporal_server.target, f"mcp-{uuid.uuid4()}", SLUICEGATE_TEST_MCP_COMMAND="/nonexistent/mcp-server"
    )
    try:
        _, err = await asyncio.to_thread(proc.communicate, timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1
    text = err.decode()
    assert "sluicegate worker: agent 'mcp-echo'" in text
    assert "MCP server 'fx'" in text
    assert "Traceback" not in text


def test_create_worker_refuses_an_app_whose_tools_are_not_listed_yet() -> None:
    from sluicegate import Agent, Sluicegate
    from sluicegate.durable.temporal import create_worker
    from sluicegate.errors import ConfigurationError
    from sluicegate.mcp import MCPClient
    from sluicegate.testing import MockModel

    mcp = MCPClient(servers={"fx": {"command": "true"}})
    app = Sluicegate(agents=[Agent("a", model=MockModel(), tools=[mcp])])
    with pytest.raises(ConfigurationError, match=r"agent 'a' takes tools from MCPClient.*use `open_worker`"):
        create_worker(None, app)  # type: ignore[arg-type]
