"""How the Responses API and A2A adapters start and continue runs: in this process through
`agents.start_stream` and the agent's decisions, or, under `sluicegate serve --temporal`, as
workflows read back from the run log (`durable_routes`), so durable runs speak both protocols.

Either way the adapter reads the run's chunks after the output processors; only where they
come from differs."""

from __future__ import annotations

import asyncio
from typing import Any

from fastapi import Request

from sluicegate.agent import Agent
from sluicegate.request_context import RESOURCE_ID_KEY
from sluicegate.server.agents import start_stream
from sluicegate.server.bodies import AgentCallBody, ToolDecisionBody, request_context_from
from sluicegate.server.hitl_routes import decision_error
from sluicegate.server.identity import bind_context
from sluicegate.server.settings import durable_runs


async def start(
    agent: Agent, body: AgentCallBody, request: Request, *, abort_signal: asyncio.Event | None = None
) -> Any:
    """The started run's output (`full_stream`, `run_id`). A durable run takes no
    `abort_signal`: it outlives its request, and Temporal stops it."""
    if durable_runs():
        from sluicegate.server.durable_routes import start_observed

        output, _ = await start_observed(request, agent, body)
        return output
    output, _, _ = await start_stream(agent, body, request, abort_signal=abort_signal)
    return output


async def decide(
    request: Request,
    agent: Agent,
    *,
    run_id: str,
    tool_call_id: str,
    approve: bool,
    reason: str | None,
    resource: str | None,
    request_context: dict[str, Any] | None = None,
    abort_signal: asyncio.Event | None = None,
) -> Any:
    """The waiting run continued by a decision on its pending call, made for `resource` (the
    resource the run is bound to); the rest of its output."""
    if durable_runs():
        from sluicegate.server.durable_routes import decided_output, decision

        decide = decision("approve" if approve else "decline", run_id, tool_call_id, reason=reason)
        return await decided_output(request, agent, run_id, resource, decide)
    context = bind_context(request, request_context_from(request_context))
    if resource is not None:
        context.set(RESOURCE_ID_KEY, resource)
    try:
        if approve:
            return await agent.approve_tool_call(
                run_id=run_id, tool_call_id=tool_call_id, request_context=context, abort_signal=abort_signal
            )
        return await agent.decline_tool_call(
            run_id=run_id,
            tool_call_id=tool_call_id,
            reason=reason,
            request_context=context,
            abort_signal=abort_signal,
        )
    except Exception as exc:
        raise decision_error(exc, agent, ToolDecisionBody(runId=run_id, toolCallId=tool_call_id)) from exc
