"""An app whose agent takes its tools from an `MCPClient`, for `sluicegate worker` processes
(tests/durable/test_mcp_worker.py): nothing is awaited here, the worker lists the tools at its
start. `SLUICEGATE_TEST_MCP_COMMAND` replaces the server's command (a server that cannot start)."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from typing import Any

from tests.mcp.helpers import fixture_server

from sluicegate import Agent, Sluicegate
from sluicegate.mcp import MCPClient
from sluicegate.models.base import CallOptions, StreamResult

FINISH = {"inputTokens": 1, "outputTokens": 1}


class EchoModel:
    """Asks the MCP server's `echo` once, then answers with what came back."""

    specification_version = "v2"
    provider = "echo"
    model_id = "echo"

    async def do_stream(self, options: CallOptions) -> StreamResult:
        results = [m for m in options.prompt if m.get("role") == "tool"]
        return StreamResult(self._answer(results[-1]) if results else self._ask())

    async def _ask(self) -> AsyncIterator[dict[str, Any]]:
        call = json.dumps({"text": "hello over MCP"})
        yield {"type": "tool-call", "toolCallId": "c1", "toolName": "fx_echo", "input": call}
        yield {"type": "finish", "finishReason": "tool-calls", "usage": FINISH}

    async def _answer(self, message: dict[str, Any]) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "text-start", "id": "t"}
        yield {"type": "text-delta", "id": "t", "delta": f"server said: {json.dumps(message['content'])}"}
        yield {"type": "text-end", "id": "t"}
        yield {"type": "finish", "finishReason": "stop", "usage": FINISH}

    async def do_generate(self, options: CallOptions) -> Any:
        raise NotImplementedError


server = fixture_server()
if os.environ.get("SLUICEGATE_TEST_MCP_COMMAND"):
    server = {**server, "command": os.environ["SLUICEGATE_TEST_MCP_COMMAND"]}
mcp = MCPClient(servers={"fx": server}, timeout=20)
agent = Agent("mcp-echo", model=EchoModel(), tools=[mcp])
app = Sluicegate(agents={"mcp-echo": agent})
