"""Sub-agents: `Agent(agents={"researcher": researcher})` gives the model one tool per agent,
named and shaped as Mastra 1.71 does: `agent-researcher`, input `{"prompt": ...}`, a result
carrying the sub-agent's `text`.

The sub-agent runs in process with its own processors, model and tools. Its text streams as
the tool's live data (`data-sub-agent` chunks), its run's spans nest under the parent's tool
span (the tool runs inside it), and its tripwire is the tool's error result, which the parent's
model reads, unless the parent says `propagate_tripwire=True`: then the parent run ends with
that tripwire. The sub-agent works for the same resource but not in the parent's thread (it
has no memory of the parent's conversation unless the prompt gives it). What its model calls
cost is charged, once the tool ends, to every `CostGuardProcessor` of the runs above it
(`budget.UsageSink`). A call inside it that waits for a person (an approval, or a tool that
suspends) suspends the parent run too: the parent's `tool-call-suspended` names the path
(`researcher › delete_record`, deeper levels joined the same way); resuming the parent with
`{"approved": true}` (or `false`, with a `reason`), or with the inner tool's resume data,
continues the sub-agent's run from the stored snapshot, and both go on.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable

from sluicegate.budget import USAGE_SINKS_KEY, usage_sinks
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

    async def approve_tool_call(
        self, *, run_id: str, tool_call_id: str | None = None, **options: Any
    ) -> Any: ...

    async def decline_tool_call(
        self, *, run_id: str, tool_call_id: str | None = None, reason: str | None = None, **options: Any
    ) -> Any: ...

    async def resume_stream(
        self, resume_data: Any, *, run_id: str, tool_call_id: str | None = None, **options: Any
    ) -> Any: ...


TOOL_PREFIX = "agent-"
"""A sub-agent's tool is named `agent-<name>` (Mastra's naming)."""
DEPTH_KEY = "sluicegate__subAgentDepth"
"""How deep in sub-agents a run is (set on the sub-agent's request context)."""
MAX_DEPTH = 5
"""Sub-agents calling sub-agents deeper than this are refused (a cycle would never end)."""
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_DROPPED_KEYS = (THREAD_ID_KEY, MEMORY_CONTEXT_KEY)
"""The parent's thread stays the parent's: the sub-agent does not read or write it."""

RESUME_SCHEMA: dict[str, Any] = {"type": "object"}
"""An approval down the line resumes with `{"approved": bool, "reason"?: str}`; a suspended
call with the data its own tool takes."""
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
    # A caller's value that is not a count is refused as too deep; a negative one counts as 0.
    depth = max(depth, 0) if isinstance(depth, int) and not isinstance(depth, bool) else MAX_DEPTH
    if depth >= MAX_DEPTH:
        raise ToolError(f"sub-agents nested deeper than {MAX_DEPTH} levels are refused")
    values[DEPTH_KEY] = depth + 1
    return RequestContext(values)


def _tool(name: str, agent: SubAgent, propagate_tripwire: bool) -> Tool:
    tool_name = f"{TOOL_PREFIX}{name}"

    async def execute(args: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        child = _child_context(context.request_context)
        waited = _waited(name, context)
        if waited is None:
            output = await agent.stream(args["prompt"], request_context=child)
            charged = 0
        else:
            output = await _decided(agent, name, waited, context.resume_data, child)
            charged = int(waited["charged"])
        text, failure, waiting = await _relay(name, output, context, propagate_tripwire)
        charged = await _charge(output, context, charged)  # what it spent counts, whatever its outcome
        if failure is not None:
            raise failure
        if waiting is not None:
            # The sub-agent waits on a person: so does this run, naming the path to the call.
            await context.suspend({**waiting, "agent": name, "runId": output.run_id, "charged": charged})
            return {}
        return {"text": text}

    return create_tool(
        id=tool_name,
        description=agent.description or f"Ask the {name} agent; it answers with text.",
        input_schema=INPUT_SCHEMA,
        resume_schema=RESUME_SCHEMA,
        execute=execute,
    )


def _waited(name: str, context: ToolContext) -> dict[str, Any] | None:
    """What this call suspended with, when it is resumed: the sub-agent's waiting run. Read
    from the run's stored snapshot (`suspended_with`), never from what the caller sent."""
    if context.resume_data is None:
        return None
    waited = context.suspended_with
    if (
        not isinstance(waited, dict)
        or waited.get("agent") != name
        or not isinstance(waited.get("runId"), str)
        or not isinstance(waited.get("toolCallId"), str)
        or waited.get("kind") not in ("approval", "suspend")
        or not isinstance(waited.get("charged"), int)
    ):
        raise ToolError(f"agent {name!r}: this call was not waiting on the sub-agent; nothing to resume")
    return waited


async def _decided(
    agent: SubAgent, name: str, waited: dict[str, Any], decision: Any, child: RequestContext
) -> Any:
    """The sub-agent's waiting run, continued with the caller's decision: an approval's
    `{"approved": bool, "reason"?}`, or, for a call that suspended, the data it resumes with."""
    run_id, call_id = waited["runId"], waited["toolCallId"]
    if waited["kind"] == "suspend":
        return await agent.resume_stream(decision, run_id=run_id, tool_call_id=call_id, request_context=child)
    approved = decision.get("approved") if isinstance(decision, dict) else None
    if not isinstance(approved, bool):
        raise ToolError(f"agent {name!r} waits for an approval: resume with {{'approved': true or false}}")
    if approved:
        return await agent.approve_tool_call(run_id=run_id, tool_call_id=call_id, request_context=child)
    reason = decision.get("reason") if isinstance(decision.get("reason"), str) else None
    return await agent.decline_tool_call(
        run_id=run_id, tool_call_id=call_id, reason=reason, request_context=child
    )


async def _charge(output: Any, context: ToolContext, charged: int) -> int:
    """The sub-agent's model calls after the first `charged` steps, charged to the cost guards
    of the runs above it (once each: a guard of the sub-agent's own charges its run's calls
    itself); how many steps are charged now."""
    steps = await output.steps
    sinks = usage_sinks(context.request_context.get(USAGE_SINKS_KEY) if context.request_context else None)
    for step in steps[charged:]:
        for sink in sinks:
            await sink.charge(step.model or None, step.usage)
    return len(steps)


async def _relay(
    name: str, output: Any, context: ToolContext, propagate_tripwire: bool
) -> tuple[str, Exception | None, dict[str, Any] | None]:
    """The sub-agent's stream to its end: its text out live as it comes, and what its end
    makes of the tool (its text, the failure the tool raises, or the call it waits on)."""
    texts: list[str] = []
    failure: Exception | None = None
    waiting: dict[str, Any] | None = None
    writer = context.writer
    async for chunk in output.full_stream:
        kind = chunk.type
        if kind == "text-delta":
            texts.append(chunk.payload.text)
            if writer is not None:
                data = {"agent": name, "toolCallId": context.tool_call_id, "text": chunk.payload.text}
                await writer.custom({"type": "data-sub-agent", "data": data, "transient": True})
        elif failure is not None or waiting is not None:
            continue
        elif kind == "error":
            failure = ToolError(f"agent {name!r} failed: {chunk.payload.get('error')}")
        elif kind == "tripwire":
            payload = chunk.payload
            reason = str(payload.get("reason") or "stopped by a processor")
            failure = (
                SubAgentTripWire(
                    reason,
                    agent=name,
                    metadata=payload.get("metadata"),
                    processor_id=payload.get("processor_id"),
                )
                if propagate_tripwire
                else ToolError(f"agent {name!r} was stopped: {reason}")
            )
        elif kind in ("tool-call-approval", "tool-call-suspended"):
            waiting = _waiting(name, chunk)
    return "".join(texts), failure, waiting


def _waiting(name: str, chunk: Any) -> dict[str, Any]:
    """The call a sub-agent waits on, for the parent's suspension: its id, tool, kind and the
    path a person reads (`researcher › delete_record`, deeper levels joined the same way)."""
    payload = chunk.payload
    tool = str(payload.get("tool_name") or "")
    inner = payload.get("suspend_payload")
    inner_path = inner.get("path") if isinstance(inner, dict) and isinstance(inner.get("path"), str) else None
    waiting: dict[str, Any] = {
        "toolCallId": str(payload.get("tool_call_id") or ""),
        "toolName": tool,
        "kind": "approval" if chunk.type == "tool-call-approval" else "suspend",
        "path": f"{name} › {inner_path or tool}",
        "args": payload.get("args"),
    }
    if chunk.type == "tool-call-suspended":
        waiting["suspendPayload"] = inner
    return waiting
