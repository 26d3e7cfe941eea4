"""Sub-agents: `Agent(agents={"researcher": researcher})` gives the model one tool per agent,
named and shaped as Mastra 1.71 does: `agent-researcher`, input `{"prompt": ...}`, a result
carrying the sub-agent's `text`.

The sub-agent runs in process with its own processors, model and tools. Its text streams as
the tool's live data (`data-sub-agent` chunks), its run's spans nest under the parent's tool
span (the tool runs inside it), and its tripwire is the tool's error result, which the parent's
model reads, unless the parent says `propagate_tripwire=True`: then the parent run ends with
that tripwire. The sub-agent works for the same resource but not in the parent's thread (it
has no memory of the parent's conversation unless the prompt gives it). Not built yet: a call
inside a sub-agent that waits for a person's approval (the tool fails, naming the call), and
counting the sub-agent's spend in the parent's `CostGuardProcessor`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from sluicegate.errors import ConfigurationError, SubAgentTripWire, ToolError
from sluicegate.memory.context import MEMORY_CONTEXT_KEY
from sluicegate.request_context import THREAD_ID_KEY, RequestContext
from sluicegate.tools import Tool, ToolContext, create_tool


@runtime_checkable
class SubAgent(Protocol):
    """What a sub-agent is to its parent (an `Agent`; named here by its shape, as this module
    is imported by the agent's)."""

    name: str
    description: str | None

    async def stream(self, messages: Any, **options: Any) -> Any: ...


TOOL_PREFIX = "agent-"
"""A sub-agent's tool is named `agent-<name>` (Mastra's naming)."""
DEPTH_KEY = "sluicegate__subAgentDepth"
"""How deep in sub-agents a run is (set on the sub-agent's request context)."""
MAX_DEPTH = 5
"""Sub-agents calling sub-agents deeper than this are refused (a cycle would never end)."""
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_DROPPED_KEYS = (THREAD_ID_KEY, MEMORY_CONTEXT_KEY)
"""The parent's thread stays the parent's: the sub-agent does not read or write it."""

INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"prompt": {"type": "string", "minLength": 1, "description": "What to ask the agent"}},
    "required": ["prompt"],
    "additionalProperties": False,
}


def checked_agents(agents: Any) -> dict[str, SubAgent]:
    """`agents=` as a name -> Agent dict, or a `ConfigurationError` naming what is wrong."""
    if agents is None:
        return {}
    if not isinstance(agents, Mapping):
        raise ConfigurationError(f"agents must be a mapping of name to Agent, got {type(agents).__name__}")
    out: dict[str, SubAgent] = {}
    for name, agent in agents.items():
        if not isinstance(name, str) or not _NAME.match(name):
            raise ConfigurationError(
                f"agents: {name!r} is not a usable name (letters, digits, '_' and '-', at most 64)"
            )
        if not isinstance(agent, SubAgent) or isinstance(agent, type):
            raise ConfigurationError(f"agents[{name!r}] must be an Agent, got {type(agent).__name__}")
        out[name] = agent
    return out


def sub_agent_tools(agents: Mapping[str, SubAgent], *, propagate_tripwire: bool) -> dict[str, Tool]:
    """One tool per sub-agent, by its tool name."""
    return {f"{TOOL_PREFIX}{name}": _tool(name, agent, propagate_tripwire) for name, agent in agents.items()}


def _child_context(parent: RequestContext | None) -> RequestContext:
    values = {} if parent is None else {k: parent.get(k) for k in parent if k not in _DROPPED_KEYS}
    depth = values.get(DEPTH_KEY, 0)
    depth = depth if isinstance(depth, int) and not isinstance(depth, bool) else MAX_DEPTH
    if depth >= MAX_DEPTH:
        raise ToolError(f"sub-agents nested deeper than {MAX_DEPTH} levels are refused")
    values[DEPTH_KEY] = depth + 1
    return RequestContext(values)


def _tool(name: str, agent: SubAgent, propagate_tripwire: bool) -> Tool:
    tool_name = f"{TOOL_PREFIX}{name}"

    async def execute(args: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        child = _child_context(context.request_context)
        output = await agent.stream(args["prompt"], request_context=child)
        texts: list[str] = []
        writer = context.writer
        async for chunk in output.full_stream:
            if chunk.type == "text-delta":
                texts.append(chunk.payload.text)
                if writer is not None:
                    await writer.custom(
                        {
                            "type": "data-sub-agent",
                            "data": {
                                "agent": name,
                                "toolCallId": context.tool_call_id,
                                "text": chunk.payload.text,
                            },
                            "transient": True,
                        }
                    )
            elif chunk.type == "error":
                error = chunk.payload.get("error")
                raise ToolError(f"agent {name!r} failed: {error}")
            elif chunk.type == "tripwire":
                payload = chunk.payload
                reason = str(payload.get("reason") or "stopped by a processor")
                if propagate_tripwire:
                    raise SubAgentTripWire(
                        reason,
                        agent=name,
                        metadata=payload.get("metadata"),
                        processor_id=payload.get("processor_id"),
                    )
                raise ToolError(f"agent {name!r} was stopped: {reason}")
            elif chunk.type in ("tool-call-approval", "tool-call-suspended"):
                waiting = chunk.payload.get("tool_name")
                raise ToolError(
                    f"agent {name!r} stopped: its call of {waiting!r} waits for a person "
                    f"({name} › {waiting}); a sub-agent's approval is not supported yet"
                )
        return {"text": "".join(texts)}

    return create_tool(
        id=tool_name,
        description=agent.description or f"Ask the {name} agent; it answers with text.",
        input_schema=INPUT_SCHEMA,
        execute=execute,
    )
