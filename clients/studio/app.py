"""The app Mastra's Studio is tried against: a guarded agent (PII redacted, a forbidden word
blocked) and an agent with memory, both on the offline `EchoModel`, and an MCP server (a tool
and the guarded agent as `ask_guarded`).

    sluicegate dev clients/studio/app.py      # then: npx mastra studio (in clients/studio)
"""

from __future__ import annotations

import os
from typing import Any

from sluicegate import Agent, Sluicegate
from sluicegate.mcp import MCPServer
from sluicegate.memory import Memory
from sluicegate.processors import PIIDetector, RegexFilter
from sluicegate.storage import SQLiteStore
from sluicegate.testing.echo_model import EchoModel
from sluicegate.tools import ToolContext, create_tool

storage = SQLiteStore(os.environ.get("SLUICEGATE_STUDIO_DB", "studio.db"))
pii = PIIDetector(strategy="redact", redaction_method="placeholder", detection_types=["email", "phone"])
forbidden = RegexFilter(rules=[{"name": "forbidden", "pattern": r"(?i)\bforbidden\b"}], strategy="block")

guarded = Agent(
    name="guarded",
    description="Redacts emails and phone numbers; refuses the word 'forbidden'.",
    instructions="You repeat the user.",
    model=EchoModel(deltas=4),
    input_processors=[pii, forbidden],
)
remembering = Agent(
    name="remembering",
    description="Remembers the conversation of each thread.",
    instructions="You repeat the user.",
    model=EchoModel(deltas=4),
    memory=Memory(storage=storage),
)


def add(input: Any, context: ToolContext) -> Any:
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
desk = MCPServer(
    name="desk",
    version="1.0.0",
    description="Sums, and the guarded agent",
    tools={"add": adder},
    agents={"guarded": guarded},
)

registry = Sluicegate(
    agents={"guarded": guarded, "remembering": remembering},
    processors=[pii, forbidden],
    storage=storage,
    mcp_servers={"desk": desk},
)
