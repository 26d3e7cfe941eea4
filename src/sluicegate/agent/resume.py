"""What `Agent.approve_tool_call`, `decline_tool_call`, `resume_stream` and
`list_suspended_runs` do: find the stored run, check the request, claim it, rebuild the run.

Everything that can be refused is refused before the claim, so a bad request (a tool call that
is not pending, resume data the tool's `resume_schema` rejects, a decline reason over
`MAX_DECLINE_REASON_CHARS`, another resource's run) raises a typed error and leaves the stored
run as it was. The claim is the store's: of two concurrent approvals of one call, exactly one
gets the run; the other gets `SuspendedRunNotFoundError`.

Ownership: a run started with a resource (`RESOURCE_ID_KEY` in the request context, as
`memory=` sets it) can be listed and decided only by a call whose request context names the same
resource; a run started without one only by a call that names none. Any other caller gets the
same `SuspendedRunNotFoundError` as for a run that does not exist, so nothing tells it the run
is there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from sluicegate.agent.hold import DEFAULT_DECLINE_REASON, Decision
from sluicegate.errors import InvalidInputError, SluicegateError
from sluicegate.request_context import RESOURCE_ID_KEY, RequestContext

if TYPE_CHECKING:
    from sluicegate.agent.run import AgentRun
    from sluicegate.storage.suspended_runs import SuspendedRun, SuspendedRunStore
    from sluicegate.tools import Tool


class ResumableAgent(Protocol):
    """What resuming reads of an `Agent` (which imports this module, so not `Agent` itself)."""

    id: str
    tools: dict[str, Tool]

    @property
    def suspended_run_store(self) -> SuspendedRunStore: ...

    async def _prepare(
        self, messages: Any, options: dict[str, Any], *, resumed: tuple[SuspendedRun, Decision] | None = None
    ) -> AgentRun: ...


MAX_DECLINE_REASON_CHARS = 4000
"""The longest decline reason accepted: it becomes the tool result the model reads."""

_MAX_ID_CHARS = 1024


def caller_resource(options: dict[str, Any]) -> str | None:
    context = options.get("request_context")
    if context is None:
        return None
    if not isinstance(context, RequestContext):
        raise SluicegateError("request_context must be a sluicegate.RequestContext")
    resource = context.get(RESOURCE_ID_KEY)
    return resource if isinstance(resource, str) else None


def _check_id(value: Any, name: str, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, str) or not value or len(value) > _MAX_ID_CHARS:
        raise InvalidInputError(f"{name} must be a non-empty string of at most {_MAX_ID_CHARS} characters")


def decline_reason(reason: Any) -> str:
    if reason is None:
        return DEFAULT_DECLINE_REASON
    if not isinstance(reason, str):
        raise InvalidInputError(f"reason must be a string, got {type(reason).__name__}")
    if len(reason) > MAX_DECLINE_REASON_CHARS:
        raise InvalidInputError(
            f"reason is {len(reason)} characters; at most {MAX_DECLINE_REASON_CHARS} are accepted"
        )
    return reason


async def resumed_run(
    agent: ResumableAgent,
    action: str,
    *,
    run_id: Any,
    tool_call_id: Any,
    options: dict[str, Any],
    reason: Any = None,
    resume_data: Any = None,
) -> AgentRun:
    """The run to continue, claimed; see the module docstring for what is refused."""
    from sluicegate.storage.errors import SuspendedRunNotFoundError
    from sluicegate.storage.suspended_runs import resolve_tool_call

    for name in ("memory", "instructions", "max_input_chars"):
        if name in options:
            raise InvalidInputError(
                f"{name} cannot be given when resuming: the suspended run keeps its conversation, "
                "thread and resource"
            )
    _check_id(run_id, "run_id")
    _check_id(tool_call_id, "tool_call_id", optional=True)
    text = decline_reason(reason) if action == "decline" else DEFAULT_DECLINE_REASON
    resource = caller_resource(options)
    store = agent.suspended_run_store
    stored = await store.get_suspended_run(run_id)
    if stored is None or stored.agent_id != agent.id or stored.resource_id != resource:
        raise SuspendedRunNotFoundError(run_id, "unknown")
    if stored.claimed_at is not None:
        raise SuspendedRunNotFoundError(run_id, "claimed")
    call = resolve_tool_call(stored, tool_call_id)
    if action == "approve" and call.kind != "approval":
        raise InvalidInputError(
            f"tool call {call.tool_call_id!r} suspended itself and waits for resume data: "
            "use resume_stream(resume_data, ...) or decline_tool_call"
        )
    if action == "resume" and call.kind != "suspend":
        raise InvalidInputError(
            f"tool call {call.tool_call_id!r} waits for an approval: "
            "use approve_tool_call or decline_tool_call"
        )
    if action == "resume":
        tool = agent.tools.get(call.tool_name)
        if tool is None:
            extra = options.get("tools")
            tool = (extra or {}).get(call.tool_name) if isinstance(extra, dict) else None
        if tool is not None:
            resume_data = tool.validate_resume_data(resume_data)  # ToolInputError names the problem
    decision = Decision(action, call.tool_call_id, text, resume_data)
    claimed = await store.claim_suspended_run(run_id, call.tool_call_id, resource_id=resource)
    try:
        return await agent._prepare(None, options, resumed=(claimed, decision))
    except BaseException:
        await store.release_suspended_run(run_id, version=claimed.version)
        raise


async def list_runs(
    agent: ResumableAgent, store: SuspendedRunStore, *, thread_id: Any, resource_id: Any, request_context: Any
) -> list[SuspendedRun]:
    """The agent's waiting runs. A request context naming a resource narrows to it (as
    `memory=` is narrowed: the context's identity wins over a resource_id argument)."""
    _check_id(thread_id, "thread_id", optional=True)
    _check_id(resource_id, "resource_id", optional=True)
    bound = caller_resource({"request_context": request_context})
    if bound is not None:
        resource_id = bound
    return await store.list_suspended_runs(agent.id, thread_id=thread_id, resource_id=resource_id)
