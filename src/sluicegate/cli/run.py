"""`sluicegate run`, `chat`, `approve`, `decline`, `resume` and `agents`: an app's agents from
the terminal.

A run that stops before a tool call waits on a person: `run` says so, prints the run id and the
commands that decide it, and exits with `WAITING` (4), so a script can tell it from an answer
(0), an error (1), a usage or configuration mistake (2) and a guardrail's block (3). The
decision commands load the same app in a new process, so the waiting run must be kept where
that process can read it: the agent's memory storage (`Memory(storage=SQLiteStore(...))`) or
`Agent(suspended_runs=...)`; a run kept in memory ends with the process that started it.
"""

from __future__ import annotations

import json
import shlex
import sys
import uuid
from dataclasses import dataclass, field
from typing import Any

from sluicegate.agent import Agent
from sluicegate.cli.terminal import color
from sluicegate.errors import ConfigurationError
from sluicegate.registry import Sluicegate
from sluicegate.request_context import RESOURCE_ID_KEY, RequestContext
from sluicegate.storage.suspended_runs import InMemorySuspendedRunStore, SuspendedRun

OK, FAILED, USAGE, BLOCKED, WAITING = 0, 1, 2, 3, 4


@dataclass
class Pending:
    """One call a run stopped before: what it needs (`approval` or `input`)."""

    tool_call_id: str
    tool_name: str
    needs: str


@dataclass
class Outcome:
    """What one streamed run came to, for the exit status and the chat's history."""

    status: int = OK
    text: str = ""
    run_id: str = ""
    pending: list[Pending] = field(default_factory=list)


def split_agent_target(target: str) -> tuple[str, str | None]:
    """`app.py:agent` -> ("app.py", "agent"); `app.py` -> ("app.py", None)."""
    file, sep, name = target.rpartition(":")
    if sep and file and name and "/" not in name and not name.endswith(".py"):
        return file, name
    return target, None


def pick_agent(registry: Sluicegate, app: str, agent_id: str | None) -> Agent:
    """The agent `agent_id` names (registry key, id or name), or the app's only agent."""
    if agent_id is None:
        if len(registry.agents) == 1:
            return next(iter(registry.agents.values()))
        raise ConfigurationError(
            f"{app} has {len(registry.agents)} agents; name one as {app}:AGENT "
            f"(agents: {', '.join(registry.agents)})"
        )
    agent = registry.get_agent(agent_id)
    if agent is None:
        raise ConfigurationError(f"no agent {agent_id!r} in {app}; agents: {', '.join(registry.agents)}")
    return agent


def memory_option(agent: Agent, thread: str | None, resource: str | None) -> dict[str, Any]:
    """`--thread` / `--resource` as the run's `memory` option (both needed, and memory)."""
    if thread is None and resource is None:
        return {}
    if agent.memory is None:
        raise ConfigurationError(f"agent {agent.id!r} has no memory: --thread and --resource need one")
    if not thread or not resource:
        raise ConfigurationError("--thread and --resource go together (the conversation and whose it is)")
    return {"memory": {"thread": thread, "resource": resource}}


async def print_stream(output: Any) -> Outcome:
    """Stream a run to the terminal: text as it comes, tool calls and results dimmed, a block or
    an error in red, and the calls the run stopped before."""
    outcome = Outcome(run_id=output.run_id)
    pieces: list[str] = []
    async for chunk in output.full_stream:
        kind = chunk.type
        payload = chunk.payload
        if kind == "text-delta":
            pieces.append(payload.text)
            sys.stdout.write(payload.text)
            sys.stdout.flush()
        elif kind == "tool-call":
            print(color(f"\n[tool {payload.tool_name}({json.dumps(payload.args, default=str)})]", "2"))
        elif kind == "tool-result":
            print(color(f"[result {json.dumps(payload.result, default=str)}]", "2"))
        elif kind in ("tool-call-approval", "tool-call-suspended"):
            needs = "approval" if kind == "tool-call-approval" else "input"
            outcome.pending.append(Pending(payload.tool_call_id, payload.tool_name, needs))
            args = json.dumps(payload.args, default=str)
            asked = (
                "" if needs == "approval" else f"; it asks {json.dumps(payload.suspend_payload, default=str)}"
            )
            print(color(f"\n[waiting] {payload.tool_name}({args}) needs {needs}{asked}", "1;33"))
        elif kind == "tripwire":
            who = getattr(payload, "processor_id", None) or "a processor"
            retry = " (retry requested)" if getattr(payload, "retry", False) else ""
            print(color(f"\n[tripwire] {who}: {payload.reason}{retry}", "1;31"))
            outcome.status = BLOCKED
        elif kind == "error":
            error = getattr(payload, "error", None)
            print(color(f"\n[error] {getattr(error, 'message', error)}", "1;31"), file=sys.stderr)
            outcome.status = FAILED
        elif kind.startswith("data-"):
            print(color(f"\n[{kind}] {json.dumps(chunk.data, default=str)}", "2"))
    print()
    outcome.text = "".join(pieces)
    if outcome.pending and outcome.status == OK:
        outcome.status = WAITING
    return outcome


def how_to_decide(app: str, agent: Agent, outcome: Outcome) -> str:
    """What to type to decide a waiting run (or why it cannot be decided from another command)."""
    target = shlex.quote(f"{app}:{agent.id}")
    run = shlex.quote(outcome.run_id)
    lines = [f"run {outcome.run_id} is waiting on a person. Decide it with:"]
    if any(p.needs == "approval" for p in outcome.pending):
        lines.append(f"  sluicegate approve {target} {run}")
        lines.append(f'  sluicegate decline {target} {run} --reason "why not"')
    if any(p.needs == "input" for p in outcome.pending):
        lines.append(
            f"  sluicegate resume {target} {run} '{{\"confirmed\": true}}'   # the tool's resume data, JSON"
        )
    if isinstance(agent.suspended_run_store, InMemorySuspendedRunStore):
        lines.append(
            f"(agent {agent.id!r} keeps waiting runs in this process only, so this one ends with it: give it "
            "Memory(storage=SQLiteStore(...)) or suspended_runs= to decide it from another command)"
        )
    return "\n".join(lines)


async def run_once(
    registry: Sluicegate,
    app: str,
    agent_id: str | None,
    prompt: str,
    thread: str | None,
    resource: str | None,
) -> int:
    agent = pick_agent(registry, app, agent_id)
    output = await agent.stream(prompt, **memory_option(agent, thread, resource))
    outcome = await print_stream(output)
    if outcome.status == WAITING:
        print(color(how_to_decide(app, agent, outcome), "1;33"), file=sys.stderr)
    return outcome.status


async def _stored(agent: Agent, run_id: str) -> SuspendedRun:
    stored = await agent.suspended_run_store.get_suspended_run(run_id)
    if stored is None or stored.agent_id != agent.id:
        raise ConfigurationError(
            f"no run {run_id!r} of agent {agent.id!r} is waiting (unknown, decided, expired, or kept in "
            "the memory of the process that started it)"
        )
    return stored


async def find_waiting_agent(registry: Sluicegate, app: str, agent_id: str | None, run_id: str) -> Agent:
    """The agent whose waiting run `run_id` is (the one named, else the app's agents searched)."""
    if agent_id is not None:
        return pick_agent(registry, app, agent_id)
    for agent in registry.agents.values():
        stored = await agent.suspended_run_store.get_suspended_run(run_id)
        if stored is not None and stored.agent_id == agent.id:
            return agent
    raise ConfigurationError(
        f"no agent of {app} has a waiting run {run_id!r} (unknown, decided, expired, or kept in the "
        "memory of the process that started it)"
    )


async def decide(
    registry: Sluicegate,
    app: str,
    agent_id: str | None,
    run_id: str,
    verb: str,
    *,
    tool_call_id: str | None = None,
    reason: str | None = None,
    resume_data: Any = None,
) -> int:
    """Approve, decline or resume a waiting run as its owner (the operator runs the app itself),
    and stream the rest of the run."""
    agent = await find_waiting_agent(registry, app, agent_id, run_id)
    stored = await _stored(agent, run_id)
    owner = RequestContext({RESOURCE_ID_KEY: stored.resource_id} if stored.resource_id else {})
    options: dict[str, Any] = {"run_id": run_id, "tool_call_id": tool_call_id, "request_context": owner}
    if verb == "approve":
        output = await agent.approve_tool_call(**options)
    elif verb == "decline":
        output = await agent.decline_tool_call(reason=reason, **options)
    else:
        output = await agent.resume_stream(resume_data, **options)
    outcome = await print_stream(output)
    if outcome.status == WAITING:
        print(color(how_to_decide(app, agent, outcome), "1;33"), file=sys.stderr)
    return outcome.status


def describe_agents(registry: Sluicegate) -> str:
    """One block per agent: its key, model, tools and processors."""
    blocks = []
    for key, agent in registry.agents.items():
        model = agent.model if isinstance(agent.model, str) else _name_of(agent.model)
        lines = [f"{key}" + (f" ({agent.name})" if agent.name != key else "") + f": model {model}"]
        if agent.description:
            lines.append(f"  {agent.description}")
        tools = list(agent.tools) if isinstance(agent.tools, dict) else []
        lines.append(f"  tools: {', '.join(tools) or 'none'}")
        for label, array in (("input", agent.input_processors), ("output", agent.output_processors)):
            if isinstance(array, (list, tuple)):
                names = ", ".join(str(getattr(p, "id", None) or type(p).__name__) for p in array)
            else:
                names = "chosen per request"
            lines.append(f"  {label} processors: {names or 'none'}")
        lines.append(f"  memory: {'yes' if agent.memory is not None else 'no'}")
        blocks.append("\n".join(lines))
    return "\n".join(blocks)


def _name_of(model: Any) -> str:
    if isinstance(model, (list, tuple)):
        return " -> ".join(m if isinstance(m, str) else _name_of(m) for m in model)
    provider = getattr(model, "provider", None)
    model_id = getattr(model, "model_id", None)
    if isinstance(provider, str) and isinstance(model_id, str):
        return f"{provider}/{model_id} ({type(model).__name__})"
    return type(model).__name__


async def chat(
    registry: Sluicegate, app: str, agent_id: str | None, thread: str | None, resource: str | None
) -> int:
    """A conversation: each line typed is a message, answered as a stream; a call that waits
    on a person is decided at the prompt. With memory the thread keeps the history (a new
    thread unless --thread); without it, this loop does. Ends at EOF or `/exit`."""
    agent = pick_agent(registry, app, agent_id)
    history: list[dict[str, str]] = []
    memory: dict[str, Any] = {}
    if agent.memory is not None:
        memory = memory_option(agent, thread or f"chat-{uuid.uuid4().hex[:8]}", resource or "cli")
        print(color(f"thread {memory['memory']['thread']} of {memory['memory']['resource']}", "2"))
    else:
        memory_option(agent, thread, resource)  # refuses --thread/--resource without memory
    print(color(f"chatting with {agent.id}; /exit or Ctrl-D to end", "2"))
    status = OK
    while True:
        line = _read("you> ")
        if line is None or line.strip() in ("/exit", "/quit"):
            return status
        if not line.strip():
            continue
        messages: Any = [*history, {"role": "user", "content": line}] if not memory else line
        outcome = await print_stream(await agent.stream(messages, **memory))
        while outcome.status == WAITING and outcome.pending:
            outcome = await _decide_at_prompt(agent, outcome)
        status = outcome.status
        if not memory:
            history += [{"role": "user", "content": line}, {"role": "assistant", "content": outcome.text}]


async def _decide_at_prompt(agent: Agent, outcome: Outcome) -> Outcome:
    stored = await _stored(agent, outcome.run_id)
    owner = RequestContext({RESOURCE_ID_KEY: stored.resource_id} if stored.resource_id else {})
    call = outcome.pending[0]
    options: dict[str, Any] = {
        "run_id": outcome.run_id,
        "tool_call_id": call.tool_call_id,
        "request_context": owner,
    }
    if call.needs == "approval":
        answer = (_read(f"approve {call.tool_name}? [y/N] ") or "").strip().lower()
        if answer in ("y", "yes"):
            return await print_stream(await agent.approve_tool_call(**options))
        reason = _read("reason (optional): ") or None
        return await print_stream(await agent.decline_tool_call(reason=reason, **options))
    while True:
        raw = _read(f"resume data for {call.tool_name} (JSON): ")
        if raw is None:
            return Outcome(status=WAITING, run_id=outcome.run_id)
        try:
            data = json.loads(raw)
        except ValueError as exc:
            print(f"not JSON: {exc}", file=sys.stderr)
            continue
        return await print_stream(await agent.resume_stream(data, **options))


def _read(prompt: str) -> str | None:
    try:
        return input(prompt)
    except EOFError:
        print()
        return None
