"""Agents, processors, tools and run results as the JSON Mastra's server returns."""

from __future__ import annotations

import inspect
import json
from collections.abc import Mapping
from typing import Any

from sluicegate.agent import Agent
from sluicegate.agent.results import FullOutput
from sluicegate.agent.suspension import input_messages
from sluicegate.errors import public_error
from sluicegate.processors.base import HOOKS, implements, processor_id
from sluicegate.processors.workflow import ProcessorWorkflow
from sluicegate.registry import Sluicegate
from sluicegate.request_context import RequestContext
from sluicegate.server.wire_pending import mark_pending
from sluicegate.server.wire_steps import (
    APPROVAL_RESUME_SCHEMA,
    counted,
    generate_steps,
    model_metadata,
    model_of,
    run_usage,
)
from sluicegate.storage.suspended_runs import SuspendedRun
from sluicegate.stream.payload import to_json
from sluicegate.tools import Tool
from sluicegate.tools.tool import requires_approval

# Mastra's processor phases (the ones its API lists) and the hooks that provide them.
PHASE_HOOKS: dict[str, str] = {
    "input": "process_input",
    "inputStep": "process_input_step",
    "outputStream": "process_output_stream",
    "outputResult": "process_output_result",
    "outputStep": "process_output_step",
    "toolResult": "process_tool_result",
}


def superjson(value: Any) -> str:
    """A JSON schema as Mastra ships it: superjson-encoded (`{"json": ...}`) in a string."""
    return json.dumps({"json": value})


def schema_json(schema: Any) -> dict[str, Any] | None:
    """A tool's schema (a JSON-schema dict or a pydantic model) as JSON Schema; None without one."""
    if isinstance(schema, dict):
        return schema
    if schema is not None and hasattr(schema, "model_json_schema"):
        return dict(schema.model_json_schema())
    return None


def tool_json(tool: Tool) -> dict[str, Any]:
    out: dict[str, Any] = {"id": tool.id, "description": tool.description or ""}
    out["requireApproval"] = requires_approval(tool)
    out["inputSchema"] = superjson(tool.json_schema())
    output_schema = schema_json(getattr(tool, "output_schema", None))
    if output_schema is not None:
        out["outputSchema"] = superjson(output_schema)
    return out


def model_parts(agent: Agent) -> tuple[str, str]:
    """(provider, model id) of the agent's model (the first of fallback models)."""
    model: Any = agent.model
    if isinstance(model, (list, tuple)):  # fallback models: the first one is the agent's model
        model = model[0]["model"] if isinstance(model[0], dict) else model[0]
    if isinstance(model, str):
        provider, _, model_id = model.partition("/")
        return provider, model_id or model
    return str(getattr(model, "provider", "")), str(getattr(model, "model_id", ""))


async def _instructions(agent: Agent) -> str | list[str]:
    value: Any = agent.instructions
    if callable(value):
        try:
            value = value(RequestContext())
            if inspect.isawaitable(value):
                value = await value
        except Exception:
            return ""
    if value is None:
        return ""
    return value if isinstance(value, str) else [str(v) for v in value]


def _processor_refs(array: Any) -> list[dict[str, Any]]:
    if not isinstance(array, (list, tuple)):
        return []
    return [{"id": processor_id(p), "name": getattr(p, "name", None) or processor_id(p)} for p in array]


async def agent_json(key: str, agent: Agent) -> dict[str, Any]:
    """One agent, in the shape of Mastra's `GET /api/agents/:agentId`."""
    provider, model_id = model_parts(agent)
    return {
        "id": key,
        "name": agent.name,
        "description": agent.description or "",
        "instructions": await _instructions(agent),
        "tools": {tid: tool_json(t) for tid, t in agent.tools.items()},
        "agents": {},
        "workflows": {},
        "skills": [],
        "workspaceTools": [],
        "browserTools": [],
        "hasBrowser": False,
        "inputProcessors": _processor_refs(agent.input_processors),
        "outputProcessors": _processor_refs(agent.output_processors),
        "errorProcessors": _processor_refs(agent.error_processors),
        "provider": provider,
        "modelId": model_id,
        "modelVersion": "v2",
        "supportsMemory": agent.memory is not None,
        "defaultOptions": {"maxSteps": agent.default_options.get("max_steps", agent.default_max_steps)},
        "source": "code",
    }


def processor_phases(processor: Any) -> list[str]:
    return [phase for phase, hook in PHASE_HOOKS.items() if implements(processor, hook)]


def processor_hooks(processor: Any) -> list[str]:
    return [hook for hook in HOOKS if implements(processor, hook)]


def _workflow_fields(processor: Any) -> dict[str, Any]:
    """`isWorkflow`, and for a workflow its stages (`stepGraph`), which the studio draws."""
    if not isinstance(processor, ProcessorWorkflow):
        return {"isWorkflow": False}
    return {"isWorkflow": True, "stepGraph": processor.step_graph()}


def _doc(processor: Any) -> str:
    described = getattr(processor, "description", None)
    if described:
        return str(described)
    doc = inspect.getdoc(type(processor)) or ""
    return doc.split("\n\n", 1)[0].strip()


def processor_summary(registry: Sluicegate, pid: str, processor: Any) -> dict[str, Any]:
    uses = registry.processor_uses(pid)
    return {
        "id": pid,
        "name": getattr(processor, "name", None) or pid,
        "description": _doc(processor),
        "phases": processor_phases(processor),
        "hooks": processor_hooks(processor),
        "agentIds": sorted({u.agent_id for u in uses}),
        "configurations": [{"agentId": u.agent_id, "type": u.type} for u in uses if u.type != "error"],
        **_workflow_fields(processor),
    }


def processor_detail(registry: Sluicegate, pid: str, processor: Any) -> dict[str, Any]:
    uses = registry.processor_uses(pid)
    return {
        "id": pid,
        "name": getattr(processor, "name", None) or pid,
        "description": _doc(processor),
        "phases": processor_phases(processor),
        "hooks": processor_hooks(processor),
        "configurations": [
            {"agentId": u.agent_id, "agentName": u.agent_name, "type": u.type}
            for u in uses
            if u.type != "error"
        ],
        **_workflow_fields(processor),
    }


def _resume_schema(result: FullOutput, tools: Mapping[str, Any] | None) -> str | None:
    """What deciding or resuming the call a suspended run waits on takes, as a JSON string."""
    waiting = result.suspend_payload
    if waiting is None:
        return None
    if waiting.get("suspend_payload") is None:
        return APPROVAL_RESUME_SCHEMA
    tool = (tools or {}).get(waiting.get("tool_name"))
    schema = schema_json(getattr(tool, "resume_schema", None))
    return json.dumps(schema, separators=(",", ":")) if schema is not None else None


def output_json(
    result: FullOutput,
    *,
    error_details: bool = False,
    model: tuple[str, str] = ("", ""),
    tools: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A `generate` result as Mastra's server returns it (camelCase `FullOutput`, its model
    messages in `response.messages` and stored ones in `response.dbMessages`); a provider
    error in it is its public summary unless `error_details` (see `public_error`). `model`:
    the agent's (provider, model id), for steps whose model did not say; `tools`: the agent's,
    whose `resume_schema` a suspended call's entry names."""
    steps = counted(result.steps)
    usage = run_usage(result)
    total = usage if steps or result.finish_reason != "suspended" else {"totalTokens": 0}
    stored = [m.to_dict() for m in result.response.messages]
    mark_pending(stored, result, _resume_schema(result, tools))
    response: dict[str, Any] = {"dbMessages": stored}
    out_steps, messages = generate_steps(result, model)
    if steps:
        provider, model_id = model_of(steps[-1], model)
        response = {
            "modelMetadata": model_metadata(provider, model_id),
            "messages": messages,
            "uiMessages": to_json(result.response.ui_messages),
            "dbMessages": stored,
        }
    out: dict[str, Any] = {
        "text": result.text,
        "usage": usage,
        "steps": out_steps,
        "finishReason": result.finish_reason,
        "warnings": [w for s in steps for w in to_json(s.warnings)],
        "request": {},
        "reasoning": [{"type": "reasoning", "text": result.reasoning_text}] if result.reasoning_text else [],
        "reasoningText": result.reasoning_text,
        "toolCalls": [c.to_dict() for c in result.tool_calls],
        "toolResults": [c.to_dict() for c in result.tool_results],
        "sources": [],
        "files": [],
        "response": response,
        "totalUsage": total,
        "usedFallbackValue": False,
        "runId": result.run_id,
        "messages": [m.to_dict() for m in result.input_messages] + stored,
        "rememberedMessages": [m.to_dict() for m in result.remembered_messages],
        "object": to_json(result.object),
        "stepsExhausted": result.steps_exhausted,
    }
    if result.tripwire is not None:
        out["tripwire"] = result.tripwire.to_dict()
        if not result.tripwire.retry:  # as Mastra: no `retry` on a tripwire that asks for none
            del out["tripwire"]["retry"]
    if result.error is not None:
        out["error"] = public_error(result.error, details=error_details)
    if result.suspend_payload is not None:
        out["suspendPayload"] = to_json(result.suspend_payload)
        if result.suspend_payload.get("suspend_payload") is None:  # an approval: what deciding takes
            out["suspendPayload"]["resumeSchema"] = out["resumeSchema"] = APPROVAL_RESUME_SCHEMA
    trace_id = getattr(result, "trace_id", None)
    if trace_id:
        out["traceId"] = trace_id
    return out


def agent_output_json(result: FullOutput, agent: Agent) -> dict[str, Any]:
    """`output_json` for a run of `agent` (its error details setting and model)."""
    return output_json(
        result, error_details=agent.provider_error_details, model=model_parts(agent), tools=agent.tools
    )


def suspended_run_json(run: SuspendedRun) -> dict[str, Any]:
    """A run waiting on a person, as Mastra's `GET /api/agents/:agentId/suspended-runs` lists it."""
    out: dict[str, Any] = {
        "runId": run.run_id,
        "status": "suspended",
        "suspendedAt": run.suspended_at.isoformat(),
        "expiresAt": run.expires_at.isoformat(),
        "toolCalls": [
            {
                "toolCallId": call.tool_call_id,
                "toolName": call.tool_name,
                "args": call.args,
                "requiresApproval": call.kind == "approval",
                **({"suspendPayload": call.suspend_payload} if call.kind == "suspend" else {}),
            }
            for call in run.pending
        ],
        # not Mastra's: the user's messages that started it (not in the thread's storage yet)
        "messages": input_messages(run.snapshot),
    }
    if run.thread_id is not None:
        out["threadId"] = run.thread_id
    if run.resource_id is not None:
        out["resourceId"] = run.resource_id
    return out
