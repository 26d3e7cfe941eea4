"""sluicegate's own MCPServer over stdio, for tests/mcp/test_mcp_server.py: a tool and an agent
whose answers pass its PII guardrail."""

from __future__ import annotations

import asyncio
from typing import Any

from sluicegate import Agent
from sluicegate.mcp import MCPServer
from sluicegate.processors import PIIDetector
from sluicegate.testing import MockModel, text_step
from sluicegate.tools import ToolContext, create_tool


async def add(input: Any, context: ToolContext) -> Any:
    return {"sum": input["a"] + input["b"]}


adder = create_tool(
    id="add",
    description="Add two integers",
    input_schema={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
    execute=add,
    annotations={"readOnlyHint": True},
)
wipe = create_tool(id="wipe", input_schema={"type": "object"}, execute=add, require_approval=True)
support = Agent(
    name="support",
    model=MockModel([text_step("Write to jane.roe@example.com for refunds.")] * 20),
    output_processors=[PIIDetector()],
)
server = MCPServer(
    name="main", version="1.0.0", tools={"add": adder, "wipe": wipe}, agents={"support": support}
)

if __name__ == "__main__":
    asyncio.run(server.run_stdio())
