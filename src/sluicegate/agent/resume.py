"""What `Agent.approve_tool_call`, `decline_tool_call`, `resume_stream` and
`list_suspended_runs` do: find the stored run, check the request, claim it, rebuild the run.

Everything that can be refused is refused before the claim (the checks are `decisions`'), so a
bad request (a tool call that is not pending, resume data the tool's `resume_schema` rejects, a
decline reason over `MAX_DECLINE_REASON_CHARS`, another resource's run) raises a typed error and
leaves the stored run as it was. The claim is the store's: of two concurrent approvals of one
call, exactly one gets the run; the other gets `SuspendedRunNotFoundError`.

Ownership: a run started with a resource can be listed and decided only by a call that names the
same resource, and a run started without one only by a call that names none. A call names itself
with `memory={"thread": ..., "resource": ...}` (as the call that started the run did) or with
`RESOURCE_ID_KEY` in its request context (what authentication sets; the two must agree, see
`reserved_keys`); a thread it names must be the run's. Any other caller gets the same
`SuspendedRunNotFoundError` as for a run that does not exist, so nothing tells it the run is
there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from sluicegate.agent.decisions import MAX_DECLINE_REASON_CHARS, Decision, check_id, decide
from sluicegate.agent.reserved_keys import apply_reserved_keys
from sluicegate.errors import InvalidInputError, SluicegateError
from sluicegate.request_context import RESOURCE_ID_KEY, RequestContext

if TYPE_CHECKING:
    from sluicegate.agent.ports import ModelCaller, ToolRunner
    from sluicegate.agent.run import AgentRun
    from sluicegate.storage.suspended_runs import SuspendedRun, SuspendedRunStore
    from sluicegate.tools import Tool


class ResumableAgent(Protocol):
    """What resuming reads of an `Agent` (which imports this module, so not `Agent` itself)."""

    id: str
    tools: dict[str, Tool]

    @property
    def suspended_run_store(self) -> SuspendedRunStore: ...

    async def prepare_run(
        self,
        messages: Any,
        options: dict[str, Any],
        *,
        resumed: tuple[SuspendedRun, Decision] | None = None,
        models: ModelCaller | None = None,
        tool_runner: ToolRunner | None = None,
    ) -> AgentRun: ...


__all__ = ["MAX_DECLINE_REASON_CHARS", "Caller", "caller_of", "list_runs", "resumed_run"]

NOT_FOUND_HINT = (
    "a run started for a resource is found only by a call naming that resource: "
    "memory={'thread': ..., 'resource': ...} or RESOURCE_ID_KEY in request_context"
)


class Caller:
    """Who a decision or listing call says it is: the resource and thread it names."""

    __slots__ = ("resource", "thread")

    def __init__(self, resource: str | None, thread: str | None) -> None:
        self.resource = resource
        self.thread = thread

    def finds(self, stored: SuspendedRun) -> bool:
        """Whether this caller may see and decide `stored`."""
        if stored.resource_id != self.resource:
            return False
        return self.thread is None or stored.thread_id == self.thread


def caller_of(options: dict[str, Any]) -> Caller:
    """The caller a call's `memory=` and `request_context` name (`memory` is taken out of
    `options`: the resumed run keeps its own). `IdentityMismatchError` when they disagree."""
    context = options.get("request_context")
    if context is not None and not isinstance(context, RequestContext):
        raise SluicegateError("request_context must be a sluicegate.RequestContext")
    memory = options.pop("memory", None)
    if memory is None:
        resource = context.get(RESOURCE_ID_KEY) if context is not None else None
        return Caller(resource if isinstance(resource, str) else None, None)
    if not isinstance(memory, dict) or not set(memory) <= {"thread", "resource"}:
        raise InvalidInputError(
            'memory must be {"thread": ..., "resource": ...} when resuming: the run keeps the '
            "memory settings it was started with; memory names the caller only"
        )
    named = apply_reserved_keys(memory, context) if context is not None else memory
    thread = named.get("thread")
    thread = thread.get("id") if isinstance(thread, dict) else thread
    check_id(thread, "memory.thread", optional=True)
    check_id(named.get("resource"), "memory.resource", optional=True)
    return Caller(named.get("resource"), thread)


async def resumed_run(
    agent: ResumableAgent,
    action: str,
    *,
    run_id: Any,
    tool_call_id: Any,
    options: dict[str, Any],
    reason: Any = None,
    resume_data: Any = None,
    models: ModelCaller | None = None,
    tool_runner: ToolRunner | None = None,
) -> AgentRun:
    """The run to continue, claimed; see the module docstring for what is refused. `models`,
    `tool_runner`: the run's ports (see `Agent.prepare_run`)."""
    from sluicegate.storage.errors import SuspendedRunNotFoundError
    from sluicegate.storage.suspended_runs import resolve_tool_call

    for name in ("instructions", "max_input_chars"):
        if name in options:
            raise InvalidInputError(
                f"{name} cannot be given when resuming: the suspended run keeps its conversation, "
                "thread and resource"
            )
    check_id(run_id, "run_id")
    check_id(tool_call_id, "tool_call_id", optional=True)
    options = dict(options)
    caller = caller_of(options)
    resource = caller.resource
    store = agent.suspended_run_store
    stored = await store.get_suspended_run(run_id)
    if stored is None or stored.agent_id != agent.id or not caller.finds(stored):
        raise SuspendedRunNotFoundError(run_id, "unknown", hint=NOT_FOUND_HINT)
    if stored.claimed_at is not None:
        raise SuspendedRunNotFoundError(run_id, "claimed")
    call = resolve_tool_call(stored, tool_call_id)  # unknown or ambiguous id: the store's errors
    tool = agent.tools.get(call.tool_name) if action == "resume" else None
    if action == "resume" and tool is None:
        extra = options.get("tools")
        tool = (extra or {}).get(call.tool_name) if isinstance(extra, dict) else None
    decision = decide(
        action,  # type: ignore[arg-type]
        call,
        tool_call_id=call.tool_call_id,
        reason=reason,
        resume_data=resume_data,
        tool=tool,
    )
    claimed = await store.claim_suspended_run(run_id, call.tool_call_id, resource_id=resource)
    try:
        return await agent.prepare_run(
            None, options, resumed=(claimed, decision), models=models, tool_runner=tool_runner
        )
    except BaseException:
        await store.release_suspended_run(run_id, version=claimed.version)
        raise


async def list_runs(
    agent: ResumableAgent,
    store: SuspendedRunStore,
    *,
    thread_id: Any,
    resource_id: Any,
    options: dict[str, Any],
) -> list[SuspendedRun]:
    """The agent's waiting runs this caller could decide (the rule of `resumed_run`): the
    resource it names with `memory=`, its request context or `resource_id`, and only runs
    started without one when it names none."""
    check_id(thread_id, "thread_id", optional=True)
    check_id(resource_id, "resource_id", optional=True)
    options = dict(options)
    context = options.get("request_context")
    if isinstance(context, RequestContext) and context.get(RESOURCE_ID_KEY) is not None:
        resource_id = None  # the context's identity wins over the argument, as for `memory=`
    if resource_id is not None or thread_id is not None:
        memory = dict(options.get("memory") or {})
        for key, value in (("resource", resource_id), ("thread", thread_id)):
            if value is not None:
                if memory.get(key) not in (None, value):
                    raise InvalidInputError(f"{key}_id and memory.{key} name different {key}s")
                memory[key] = value
        options["memory"] = memory
    caller = caller_of(options)
    runs = await store.list_suspended_runs(agent.id, thread_id=caller.thread, resource_id=caller.resource)
    return [run for run in runs if caller.finds(run)]
