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

import pytest
from temporalio.client import Client

from sluicegate.durable.temporal import TemporalRuns

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "tests" / "durable" / "mcp_app.py")


def _worker(target: str, queue: str, **env: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "sluicegate", "worker", APP, "--temporal", target, "--task-queue", queue]
    environ = {**os.environ, "PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{ROOT}", **env}
    return subprocess.Popen(command, env=environ, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)


def _children(pid: int) -> set[int]:
    """Live (not zombie) processes whose parent is `pid`."""
    found = set()
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid and fields[0] != "Z":
            found.add(int(entry))
    return found


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2 :].split()[0] != "Z"


async def test_the_cli_worker_lists_mcp_tools_at_its_start_and_stops_their_server(
    temporal_server: Any,
) -> None:
    from tests.durable import mcp_app

    queue = f"mcp-{uuid.uuid4()}"
    proc = _worker(temporal_server.target, queue)
    try:
        assert proc.stdout is not None
        line = await asyncio.to_thread(proc.stdout.readline)
        assert b"sluicegate worker: 1 agent(s)" in line, proc.stderr.read() if proc.stderr else b""
        servers = _children(proc.pid)
        assert len(servers) == 1  # the fixture MCP server, started to list its tools
        # The process that starts runs lists the same tools (names only; it never calls them).
        await mcp_app.app.load_tools()
        try:
            runs = TemporalRuns(await Client.connect(temporal_server.target), task_queue=queue)
            run_id = await runs.start(mcp_app.agent, "echo something")
            result = await asyncio.wait_for(runs.result(run_id), 60)
        finally:
            await mcp_app.app.close_tool_sources()
        assert "hello over MCP" in result["text"]
        history = await runs.client.get_workflow_handle(run_id).fetch_history()
        activities = {
            e.activity_task_scheduled_event_attributes.activity_type.name
            for e in history.events
            if e.HasField("activity_task_scheduled_event_attributes")
        }
        assert "sluicegate.mcp-echo.tool.fx_echo" in activities
        assert _children(proc.pid) == servers  # the same server served the call
        proc.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(proc.wait, 30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not [pid for pid in servers if _alive(pid)]  # no MCP server left behind


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
