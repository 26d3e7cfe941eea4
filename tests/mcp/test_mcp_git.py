"""`mcp-server-git` (PyPI), a server nobody here wrote, under `require_approval="unless-read-only"`:
its read-only tools run, the ones that change the repository wait for a person."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from sluicegate import Agent
from sluicegate.mcp import MCPClient
from sluicegate.testing import MockModel, text_step, tool_call_step

pytestmark = pytest.mark.integration


def staged(repo: Path) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "status", "--porcelain"], capture_output=True, text=True, check=True
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "notes.txt").write_text("hello\n")
    return path


async def test_writes_wait_for_approval_reads_do_not(repo: Path) -> None:
    server = {"command": sys.executable, "args": ["-m", "mcp_server_git", "--repository", str(repo)]}
    async with MCPClient(servers={"git": server}, require_approval="unless-read-only") as mcp:
        tools = await mcp.list_tools()
        assert not tools["git_git_status"].require_approval and tools["git_git_add"].require_approval
        model = MockModel(
            [
                tool_call_step(
                    ("c1", "git_git_status", {"repo_path": str(repo)}),
                    ("c2", "git_git_add", {"repo_path": str(repo), "files": ["notes.txt"]}),
                ),
                text_step("staged"),
            ]
        )
        agent = Agent(name="git", model=model, tools=tools)
        output = await agent.stream("stage my notes")
        chunks = [c async for c in output.full_stream]
        asked = next(c for c in chunks if c.type == "tool-call-approval")
        assert asked.payload.tool_name == "git_git_add"
        assert asked.payload.annotations["readOnlyHint"] is False
        assert staged(repo) == "?? notes.txt\n"  # nothing changed while it waits
        resumed = await agent.approve_tool_call(run_id=output.run_id, tool_call_id="c2")
        after = [c async for c in resumed.full_stream]
    results = {c.payload.tool_call_id: c.payload.result for c in after if c.type == "tool-result"}
    assert "Untracked files" in results["c1"]["content"][0]["text"]  # the read ran without asking
    assert results["c2"]["content"][0]["text"] == "Files staged successfully"
    assert staged(repo) == "A  notes.txt\n"
