"""Human in the loop: approvals, declines, self-suspending tools, and the rules that keep a
suspended run safe (one decision per call, owner only, stored args only, typed refusals)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from sluicegate import Agent, RequestContext
from sluicegate.agent.resume import MAX_DECLINE_REASON_CHARS
from sluicegate.agent.suspension import UnserializableStateError
from sluicegate.errors import InvalidInputError
from sluicegate.memory import Memory
from sluicegate.processors import PIIDetector, Processor, RegexFilter
from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY
from sluicegate.storage import (
    InMemorySuspendedRunStore,
    SQLiteStore,
    SuspendedRunNotFoundError,
    ToolCallNotPendingError,
)
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step
from sluicegate.tools import ToolContext, create_tool, tool
from sluicegate.tools.tool import ToolInputError

SCHEMA = {"type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}


def lookup_tool(calls: list[Any], *, require_approval: bool = False) -> Any:
    async def execute(input: Any, context: ToolContext) -> Any:
        calls.append(input["word"])
        return {"word": input["word"], "definition": f"meaning of {input['word']}"}

    return create_tool(
        id="lookup",
        description="Look up",
        input_schema=SCHEMA,
        execute=execute,
        require_approval=require_approval,
    )


def transfer_tool(calls: list[Any]) -> Any:
    async def execute(input: Any, context: ToolContext) -> Any:
        calls.append(context.resume_data)
        if context.resume_data is None:
            await context.suspend({"question": f"send to {input['account']}?"})
            return None
        return {"sent": context.resume_data["confirmed"]}

    return create_tool(
        id="transfer",
        input_schema={"type": "object", "properties": {"account": {"type": "string"}}},
        suspend_schema={
            "type": "object",
            "properties": {"question": {"type": "string"}},
            "required": ["question"],
        },
        resume_schema={
            "type": "object",
            "properties": {"confirmed": {"type": "boolean"}},
            "required": ["confirmed"],
            "additionalProperties": False,
        },
        execute=execute,
    )


def agent_for(steps: list[Any], tools: list[Any], **kwargs: Any) -> Agent:
    return Agent("hitl", instructions="test", model=MockModel(steps), tools=tools, **kwargs)


async def chunks_of(output: Any) -> list[Any]:
    return [chunk async for chunk in output.full_stream]


def one_call(word: str = "sluice") -> list[Any]:
    return tool_call_step(("call_1", "lookup", {"word": word}))


# ---------------------------------------------------------------- approval and decline


async def test_approval_suspends_before_the_tool_runs_and_approve_runs_it_once() -> None:
    calls: list[Any] = []
    agent = agent_for([one_call(), text_step("done")], [lookup_tool(calls)])
    output = await agent.stream("hi", require_tool_approval=True)
    kinds = [c.type for c in await chunks_of(output)]
    assert kinds[-1] == "tool-call-approval"
    assert "finish" not in kinds and "step-finish" not in kinds
    assert await output.finish_reason == "suspended"
    assert calls == []
    resumed = await agent.approve_tool_call(run_id=output.run_id)
    assert resumed.run_id == output.run_id
    kinds = [c.type for c in await chunks_of(resumed)]
    assert kinds[0] == "tool-result" and kinds[-1] == "finish"
    assert await resumed.text == "done"
    assert calls == ["sluice"]
    assert await agent.list_suspended_runs() == []


async def test_decline_never_runs_the_tool_and_the_model_reads_the_reason() -> None:
    calls: list[Any] = []
    model = MockModel([one_call(), text_step("ok")])
    agent = Agent("hitl", model=model, tools=[lookup_tool(calls, require_approval=True)])
    first = await agent.generate("hi")
    assert first.finish_reason == "suspended"
    assert first.suspend_payload.tool_call_id == "call_1"
    result = await agent.decline_tool_call_generate(run_id=first.run_id, reason="not today")
    assert result.text == "ok" and calls == []
    tool_message = model.calls[1].prompt[-1]
    assert tool_message["content"][0]["output"] == {"type": "text", "value": "not today"}


async def test_require_tool_approval_function_decides_per_call_and_fails_closed() -> None:
    calls: list[Any] = []

    def only_gate(name: str, args: Any, context: RequestContext) -> bool:
        if args["word"] == "boom":
            raise RuntimeError("policy service down")
        return bool(args["word"] == "gate")

    steps = [
        tool_call_step(("a", "lookup", {"word": "sluice"}), ("b", "lookup", {"word": "boom"})),
        text_step("x"),
    ]
    agent = agent_for(steps, [lookup_tool(calls)])
    result = await agent.generate("hi", require_tool_approval=only_gate)
    assert calls == ["sluice"]  # ran; "boom" waits: a failing policy does not let a call through
    assert result.suspend_payload.tool_call_id == "b"


async def test_a_bad_require_tool_approval_value_is_rejected() -> None:
    agent = agent_for([text_step("x")], [])
    with pytest.raises(Exception, match="require_tool_approval"):
        await agent.generate("hi", require_tool_approval="yes")


# ---------------------------------------------------------------- self-suspending tools


async def test_a_tool_suspends_and_resumes_with_validated_data() -> None:
    calls: list[Any] = []
    agent = agent_for(
        [tool_call_step(("t", "transfer", {"account": "a-9"})), text_step("sent")], [transfer_tool(calls)]
    )
    output = await agent.stream("pay")
    chunks = await chunks_of(output)
    assert chunks[-1].type == "tool-call-suspended"
    assert chunks[-1].payload.suspend_payload == {"question": "send to a-9?"}
    with pytest.raises(ToolInputError, match="confirmed"):
        await agent.resume_stream({"confirmed": "yes"}, run_id=output.run_id)
    # the refused resume changed nothing: the run is still there, unclaimed
    [waiting] = await agent.list_suspended_runs()
    assert waiting.version == 1 and waiting.claimed_at is None
    resumed = await agent.resume_stream({"confirmed": True}, run_id=output.run_id)
    assert await resumed.text == "sent"
    assert calls == [None, {"confirmed": True}]


async def test_suspend_payload_is_checked_against_suspend_schema() -> None:
    async def execute(input: Any, context: ToolContext) -> Any:
        await context.suspend({"wrong": 1})

    bad = create_tool(
        id="bad",
        execute=execute,
        suspend_schema={"type": "object", "required": ["question"]},
    )
    agent = agent_for([tool_call_step(("t", "bad", {})), text_step("x")], [bad])
    result = await agent.generate("hi")
    assert result.finish_reason == "stop"  # the tool failed instead of suspending
    assert "question" in str(result.steps[0].tool_errors[0].payload.error)


async def test_tool_decorator_takes_the_options() -> None:
    @tool(require_approval=True)
    async def wipe(target: str) -> str:
        """Wipe a target."""
        return target

    assert wipe.require_approval is True


async def test_approve_is_refused_for_a_suspended_tool_and_resume_for_an_approval() -> None:
    agent = agent_for([tool_call_step(("t", "transfer", {"account": "x"}))], [transfer_tool([])])
    first = await agent.generate("pay")
    with pytest.raises(InvalidInputError, match="resume"):
        await agent.approve_tool_call(run_id=first.run_id)
    agent2 = agent_for([one_call()], [lookup_tool([], require_approval=True)])
    second = await agent2.generate("hi")
    with pytest.raises(InvalidInputError, match="approv"):
        await agent2.resume_stream({}, run_id=second.run_id)


# ---------------------------------------------------------------- safety


async def test_unknown_or_stale_tool_call_id_is_typed_and_changes_nothing() -> None:
    calls: list[Any] = []
    store = InMemorySuspendedRunStore()
    agent = agent_for([one_call(), text_step("done")], [lookup_tool(calls)], suspended_runs=store)
    first = await agent.generate("hi", require_tool_approval=True)
    before = await store.get_suspended_run(first.run_id)
    with pytest.raises(ToolCallNotPendingError):
        await agent.approve_tool_call(run_id=first.run_id, tool_call_id="call_x")
    with pytest.raises(SuspendedRunNotFoundError):
        await agent.approve_tool_call(run_id="no-such-run")
    after = await store.get_suspended_run(first.run_id)
    assert after == before and after is not None and after.claimed_at is None
    result = await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="call_1")
    assert result.text == "done"
    with pytest.raises(SuspendedRunNotFoundError):  # decided, and the run finished
        await agent.approve_tool_call(run_id=first.run_id, tool_call_id="call_1")
    assert calls == ["sluice"]


async def test_a_declined_call_never_executes_after_resume() -> None:
    calls: list[Any] = []
    steps = [
        tool_call_step(("call_1", "lookup", {"word": "drop"}), ("call_2", "lookup", {"word": "keep"})),
        text_step("end"),
    ]
    agent = agent_for(steps, [lookup_tool(calls)])
    first = await agent.generate("hi", require_tool_approval=True)
    with pytest.raises(ToolCallNotPendingError):  # call_2 is not the one asked about yet
        await agent.approve_tool_call(run_id=first.run_id, tool_call_id="call_2")
    second = await agent.decline_tool_call_generate(run_id=first.run_id, tool_call_id="call_1")
    assert second.suspend_payload.tool_call_id == "call_2"
    with pytest.raises(ToolCallNotPendingError):  # already decided: no second decision
        await agent.approve_tool_call(run_id=first.run_id, tool_call_id="call_1")
    result = await agent.approve_tool_call_generate(run_id=first.run_id, tool_call_id="call_2")
    assert result.text == "end"
    assert calls == ["keep"]


async def _concurrent_approvals(agents: list[Agent], run_id: str) -> list[Any]:
    async def approve(agent: Agent) -> Any:
        try:
            return await agent.approve_tool_call_generate(run_id=run_id)
        except SuspendedRunNotFoundError as exc:
            return exc

    return list(await asyncio.gather(*(approve(a) for a in agents)))


async def test_two_concurrent_approvals_in_memory_exactly_one_wins() -> None:
    calls: list[Any] = []
    agent = agent_for([one_call(), text_step("done"), text_step("again")], [lookup_tool(calls)])
    first = await agent.generate("hi", require_tool_approval=True)
    outcomes = await _concurrent_approvals([agent, agent], first.run_id)
    assert sum(isinstance(o, SuspendedRunNotFoundError) for o in outcomes) == 1
    assert calls == ["sluice"]


async def test_two_concurrent_approvals_on_sqlite_from_two_agents_exactly_one_wins(tmp_path: Path) -> None:
    path = str(tmp_path / "runs.db")
    calls: list[Any] = []
    first_agent = agent_for([one_call()], [lookup_tool(calls)], suspended_runs=SQLiteStore(path))
    first = await first_agent.generate("hi", require_tool_approval=True)
    others = [
        agent_for([text_step("done")], [lookup_tool(calls)], suspended_runs=SQLiteStore(path))
        for _ in range(3)
    ]
    outcomes = await _concurrent_approvals(others, first.run_id)
    assert sum(not isinstance(o, SuspendedRunNotFoundError) for o in outcomes) == 1
    assert calls == ["sluice"]


async def test_only_the_runs_resource_can_list_or_decide_it() -> None:
    calls: list[Any] = []
    agent = agent_for([one_call(), text_step("done")], [lookup_tool(calls)])

    def as_user(user: str | None) -> RequestContext:
        context = RequestContext()
        if user is not None:
            context.set(RESOURCE_ID_KEY, user)
        return context

    first = await agent.generate("hi", require_tool_approval=True, request_context=as_user("alice"))
    for intruder in ("bob", None):
        with pytest.raises(SuspendedRunNotFoundError) as refused:
            await agent.approve_tool_call(run_id=first.run_id, request_context=as_user(intruder))
        assert "no suspended run" in str(refused.value)  # the same words as for an unknown run
        with pytest.raises(SuspendedRunNotFoundError):
            await agent.decline_tool_call(run_id=first.run_id, request_context=as_user(intruder))
    assert await agent.list_suspended_runs(request_context=as_user("bob")) == []
    assert await agent.list_suspended_runs(resource_id="alice", request_context=as_user("bob")) == []
    [listed] = await agent.list_suspended_runs(request_context=as_user("alice"))
    assert listed.resource_id == "alice" and listed.tool_calls[0].tool_call_id == "call_1"
    result = await agent.approve_tool_call_generate(run_id=first.run_id, request_context=as_user("alice"))
    assert result.text == "done" and calls == ["sluice"]


async def test_the_approver_cannot_change_the_arguments() -> None:
    seen: list[Any] = []
    agent = agent_for([one_call("safe"), text_step("done")], [lookup_tool(seen)])
    output = await agent.stream("hi", require_tool_approval=True)
    chunks = await chunks_of(output)
    chunks[-1].payload.args["word"] = "rm -rf"  # what the client holds is not what runs
    with pytest.raises(TypeError, match="args"):
        await agent.approve_tool_call(run_id=output.run_id, args={"word": "evil"})
    await (await agent.approve_tool_call(run_id=output.run_id)).consume()
    assert seen == ["safe"]


async def test_a_secret_in_tool_arguments_is_redacted_in_the_approval_chunk() -> None:
    secret = "4111 1111 1111 1111"

    async def run(approve: bool) -> tuple[list[Any], list[Any]]:
        seen: list[Any] = []
        agent = agent_for(
            [one_call(secret), text_step("done")],
            [lookup_tool(seen)],
            output_processors=[RegexFilter(presets=["pii"], strategy="redact", phase="output")],
        )
        output = await agent.stream("hi", require_tool_approval=approve)
        chunks = await chunks_of(output)
        if approve:
            await (await agent.approve_tool_call(run_id=output.run_id)).consume()
        return chunks, seen

    chunks, seen = await run(approve=True)
    approval = chunks[-1]
    assert approval.type == "tool-call-approval"
    assert secret not in json.dumps(approval.to_dict())
    _, seen_without_approval = await run(approve=False)
    assert seen == seen_without_approval  # the tool gets what it gets in a run without approval


async def test_pseudonymized_arguments_reach_the_tool_restored_after_approval() -> None:
    secret = "4111 1111 1111 1111"
    seen: list[Any] = []

    def echo_token(options: Any) -> Any:
        token = re.search(r"<[A-Z_]+_\d+>", json.dumps(options.prompt))
        assert token is not None
        return tool_call_step(("call_1", "lookup", {"word": token.group(0)}))

    pseudo = PIIDetector(strategy="pseudonymize")
    agent = agent_for(
        [echo_token, text_step("done")],
        [lookup_tool(seen)],
        input_processors=[pseudo],
        output_processors=[pseudo],
    )
    context = RequestContext()
    context.set(THREAD_ID_KEY, "t1")
    context.set(RESOURCE_ID_KEY, "u1")
    output = await agent.stream(f"my card is {secret}", require_tool_approval=True, request_context=context)
    approval = (await chunks_of(output))[-1]
    assert approval.payload.args == {"word": "<CREDIT_CARD_1>"}  # the person sees the token
    await agent.approve_tool_call_generate(run_id=output.run_id, request_context=context)
    assert seen == [secret]  # process_tool_call restored it for the tool alone


async def test_a_decline_reason_is_capped_and_a_refused_decline_changes_nothing() -> None:
    calls: list[Any] = []
    store = InMemorySuspendedRunStore()
    agent = agent_for([one_call(), text_step("done")], [lookup_tool(calls)], suspended_runs=store)
    first = await agent.generate("hi", require_tool_approval=True)
    before = await store.get_suspended_run(first.run_id)
    with pytest.raises(InvalidInputError, match="reason"):
        await agent.decline_tool_call(run_id=first.run_id, reason="x" * 1_000_000)
    with pytest.raises(InvalidInputError, match="reason"):
        await agent.decline_tool_call(run_id=first.run_id, reason=42)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="run_id"):
        await agent.approve_tool_call(run_id="")
    assert await store.get_suspended_run(first.run_id) == before
    ok = await agent.decline_tool_call_generate(run_id=first.run_id, reason="y" * MAX_DECLINE_REASON_CHARS)
    assert ok.text == "done" and calls == []


# ---------------------------------------------------------------- storage, processes, memory


async def test_another_agent_instance_resumes_from_the_same_sqlite_file(tmp_path: Path) -> None:
    path = str(tmp_path / "runs.db")
    calls: list[Any] = []
    first_agent = agent_for([one_call()], [lookup_tool(calls)], suspended_runs=SQLiteStore(path))
    first = await first_agent.generate("hi", require_tool_approval=True)
    second_model = MockModel([text_step("from elsewhere")])
    second_agent = Agent(
        "hitl",
        instructions="test",
        model=second_model,
        tools=[lookup_tool(calls)],
        suspended_runs=SQLiteStore(path),
    )
    result = await second_agent.approve_tool_call_generate(run_id=first.run_id)
    assert result.text == "from elsewhere" and result.run_id == first.run_id
    assert calls == ["sluice"]
    prompt = second_model.calls[0].prompt
    assert prompt[0] == {"role": "system", "content": "test"}
    assert prompt[-1]["role"] == "tool"
    assert [s.finish_reason for s in result.steps] == ["tool-calls", "stop"]
    assert result.usage.total_tokens == sum(s.usage.total_tokens for s in result.steps)


SRC = str(Path(__file__).resolve().parents[2] / "src")
SECOND_PROCESS = """
import asyncio, json, sys
from sluicegate import Agent
from sluicegate.storage import SQLiteStore
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step
from sluicegate.tools import create_tool

async def execute(input, context):
    return {"ran_in": "second process", "word": input["word"]}

async def main():
    tool = create_tool(id="lookup", input_schema={"type": "object"}, execute=execute)
    agent = Agent("hitl", instructions="test", model=MockModel([text_step("ok")]), tools=[tool],
                  suspended_runs=SQLiteStore(sys.argv[1]))
    result = await agent.approve_tool_call_generate(run_id=sys.argv[2])
    print(json.dumps({"text": result.text, "result": result.steps[0].tool_results[0].payload.result}))

asyncio.run(main())
"""


async def test_a_second_process_resumes_the_run(tmp_path: Path) -> None:
    path = str(tmp_path / "runs.db")
    agent = agent_for([one_call()], [lookup_tool([])], suspended_runs=SQLiteStore(path))
    first = await agent.generate("hi", require_tool_approval=True)
    done = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-c", SECOND_PROCESS, path, first.run_id],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": SRC},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"text": "ok", "result": {"ran_in": "second process", "word": "sluice"}}


async def test_memory_on_sqlite_stores_a_resumed_runs_messages_once(tmp_path: Path) -> None:
    storage = SQLiteStore(str(tmp_path / "memory.db"))
    memory = Memory(storage=storage)
    calls: list[Any] = []
    agent = agent_for([one_call(), text_step("done")], [lookup_tool(calls)], memory=memory)
    first = await agent.generate("hi", require_tool_approval=True, memory={"thread": "t1", "resource": "u1"})
    assert agent.suspended_run_store is storage  # the memory's database keeps the run
    assert await storage.list_messages("t1") == []  # nothing stored while the run waits
    context = RequestContext()
    context.set(RESOURCE_ID_KEY, "u1")
    await agent.approve_tool_call_generate(run_id=first.run_id, request_context=context)
    messages = await storage.list_messages("t1")
    ids = [m.id for m in messages]
    assert len(ids) == len(set(ids))
    # the same messages as the same conversation without an approval, each stored once
    plain = agent_for([one_call(), text_step("done")], [lookup_tool([])], memory=memory)
    await plain.generate("hi", memory={"thread": "t2", "resource": "u1"})
    baseline = await storage.list_messages("t2")
    assert [(m.role, m.text) for m in messages] == [(m.role, m.text) for m in baseline]
    assert len(messages) == 3  # user, assistant (tool call + result), assistant (answer)


async def test_suspended_run_ttl_sets_when_the_run_expires() -> None:
    store = InMemorySuspendedRunStore()
    agent = agent_for(
        [one_call()], [lookup_tool([])], suspended_runs=store, suspended_run_ttl=timedelta(hours=2)
    )
    first = await agent.generate("hi", require_tool_approval=True)
    stored = await store.get_suspended_run(first.run_id)
    assert stored is not None and stored.expires_at - stored.suspended_at == timedelta(hours=2)
    with pytest.raises(Exception, match="suspended_run_ttl"):
        agent_for([], [], suspended_run_ttl=timedelta(0))
    with pytest.raises(Exception, match="suspended_runs"):
        agent_for([], [], suspended_runs=object())


class Budget(Processor):
    """Carries its spend over a suspension (`suspend_state`); counts steps in `state`."""

    id = "budget"

    def __init__(self, export: Any = None) -> None:
        super().__init__()
        self.export = export
        self.seen: list[int] = []

    def process_input_step(self, args: Any) -> Any:
        args.state["steps"] = args.state.get("steps", 0) + 1
        self.seen.append(args.state["steps"])
        return None

    def suspend_state(self, state: dict[str, Any]) -> Any:
        return self.export(state) if self.export is not None else {"steps": state["steps"]}


async def test_processor_state_carried_over_a_suspension_when_the_processor_asks() -> None:
    budget = Budget()
    agent = agent_for([one_call(), text_step("done")], [lookup_tool([])], input_processors=[budget])
    first = await agent.generate("hi", require_tool_approval=True)
    await agent.approve_tool_call_generate(run_id=first.run_id)
    assert budget.seen == [1, 2]  # without suspend_state the resumed stream would start at 1


async def test_unserializable_processor_state_fails_loudly_naming_the_processor() -> None:
    budget = Budget(export=lambda state: {"lock": asyncio.Lock()})
    agent = agent_for([one_call()], [lookup_tool([])], input_processors=[budget])
    with pytest.raises(UnserializableStateError, match="'budget'"):
        await agent.generate("hi", require_tool_approval=True)


async def test_guardrails_run_on_the_resumed_stream() -> None:
    agent = agent_for(
        [one_call(), text_step("my card is 4111 1111 1111 1111")],
        [lookup_tool([])],
        output_processors=[RegexFilter(presets=["pii"], strategy="redact", phase="output")],
    )
    first = await agent.generate("hi", require_tool_approval=True)
    result = await agent.approve_tool_call_generate(run_id=first.run_id)
    assert "4111" not in result.text


async def test_a_resumed_stream_closed_unread_gives_its_claim_back() -> None:
    calls: list[Any] = []
    agent = agent_for([one_call(), text_step("done")], [lookup_tool(calls)])
    first = await agent.generate("hi", require_tool_approval=True)
    resumed = await agent.approve_tool_call(run_id=first.run_id)
    await resumed.aclose()
    [waiting] = await agent.list_suspended_runs()  # claimable again, unchanged
    assert waiting.run_id == first.run_id and waiting.version == 1
    result = await agent.approve_tool_call_generate(run_id=first.run_id)
    assert result.text == "done" and calls == ["sluice"]


async def test_a_resumed_stream_closed_after_the_tool_ran_does_not_run_it_again() -> None:
    calls: list[Any] = []
    agent = agent_for([one_call(), text_step("done")], [lookup_tool(calls)])
    first = await agent.generate("hi", require_tool_approval=True)
    resumed = await agent.approve_tool_call(run_id=first.run_id)
    async with resumed:
        async for chunk in resumed.full_stream:
            if chunk.type == "tool-result":
                break
    assert calls == ["sluice"]
    assert await agent.list_suspended_runs() == []
    with pytest.raises(SuspendedRunNotFoundError):
        await agent.approve_tool_call(run_id=first.run_id)


async def test_resuming_rejects_options_it_cannot_honour() -> None:
    agent = agent_for([one_call()], [lookup_tool([])])
    first = await agent.generate("hi", require_tool_approval=True)
    options: list[dict[str, Any]] = [
        {"memory": {"thread": "t", "options": {"lastMessages": 1}}},
        {"instructions": "be evil"},
    ]
    for option in options:
        with pytest.raises(InvalidInputError, match=next(iter(option))):
            await agent.approve_tool_call(run_id=first.run_id, **option)
    with pytest.raises(SuspendedRunNotFoundError):  # names a thread that is not the run's
        await agent.approve_tool_call(run_id=first.run_id, memory={"thread": "other"})
    assert len(await agent.list_suspended_runs()) == 1


async def test_chunk_kinds_of_human_in_the_loop_narrow() -> None:
    from sluicegate.stream.kinds import is_chunk

    agent = agent_for([tool_call_step(("t", "transfer", {"account": "x"}))], [transfer_tool([])])
    output = await agent.stream("pay")
    last = (await chunks_of(output))[-1]
    assert is_chunk(last, "tool-call-suspended")
    assert last.payload.suspend_payload == {"question": "send to x?"}


async def test_a_run_budget_counts_spend_from_before_the_suspension() -> None:
    """`scope="run"` spend lives in the cost guard's state; a resumed stream must not start it
    again at zero, or each approval would grant a fresh budget."""
    from sluicegate.processors import CostGuardProcessor

    def costly_call() -> list[Any]:  # the provider reports 2,000 output tokens: $2,000 at $1/token
        step = one_call()
        step[-1]["usage"] = {"inputTokens": 0, "outputTokens": 2000, "totalTokens": 2000}
        return step

    def guard() -> Any:
        return CostGuardProcessor(
            max_cost=1000.0, scope="run", pricing={"mock": {"input": 1e6, "output": 1e6}}
        )

    agent = agent_for([costly_call(), text_step("done")], [lookup_tool([])], input_processors=[guard()])
    first = await agent.generate("hi", require_tool_approval=True, model_settings={"max_output_tokens": 1})
    stored = await agent.list_suspended_runs()
    assert stored and first.finish_reason == "suspended"
    result = await agent.approve_tool_call_generate(run_id=first.run_id)
    assert result.tripwire is not None, "the resumed run spent a budget the first stream had used up"

    fresh = agent_for([text_step("done")], [], input_processors=[guard()])
    assert (await fresh.generate("hi", model_settings={"max_output_tokens": 1})).tripwire is None


async def test_steps_keep_their_model_and_tripwire_over_a_suspension() -> None:
    """The snapshot carries each step's `model` and a rejected step's `tripwire`, and the held
    step is reported with the model that served it."""

    class RejectFirst(Processor):
        id = "reject-first"

        def process_output_step(self, args: Any) -> Any:
            if args.step_number == 0:
                args.abort("too short", retry=True, metadata={"n": 1})
            return None

    agent = agent_for(
        [text_step("no"), one_call(), text_step("done")],
        [lookup_tool([])],
        output_processors=[RejectFirst()],
        max_processor_retries=1,
    )
    first = await agent.generate("hi", require_tool_approval=True)
    assert first.finish_reason == "suspended"
    result = await agent.approve_tool_call_generate(run_id=first.run_id)
    rejected, held, final = result.steps
    assert rejected.tripwire is not None and rejected.tripwire.reason == "too short"
    assert rejected.tripwire.processor_id == "reject-first" and rejected.tripwire.metadata == {"n": 1}
    assert held.tripwire is None and final.tripwire is None
    assert held.model == final.model == "mock-provider/mock-model-id"


async def test_expired_suspended_runs_are_swept_when_a_run_suspends() -> None:
    """Nothing else calls `purge_expired_suspended_runs`: a suspending run sweeps the store at
    most once per `PURGE_EVERY`, so expired runs do not pile up."""
    from datetime import UTC, datetime

    from sluicegate.agent import hold
    from sluicegate.storage.suspended_runs import PendingToolCall, SuspendedRun

    store = InMemorySuspendedRunStore()
    long_ago = datetime(2020, 1, 1, tzinfo=UTC)
    await store.save_suspended_run(
        SuspendedRun(
            run_id="old",
            agent_id="hitl",
            resource_id=None,
            thread_id=None,
            pending=(PendingToolCall(tool_call_id="c", tool_name="lookup", args={}, kind="approval"),),
            snapshot={},
            suspended_at=long_ago,
            expires_at=long_ago.replace(year=2021),
        )
    )
    hold._last_purge.pop(store, None)
    agent = agent_for([one_call(), one_call()], [lookup_tool([])], suspended_runs=store)
    await agent.generate("hi", require_tool_approval=True)
    assert await store.purge_expired_suspended_runs() == 0  # the suspension already swept it
    assert store in hold._last_purge
