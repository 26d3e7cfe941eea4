"""One place decides: `agent.decisions` (which calls wait, whether a decision is valid), and a
caller that names itself with `memory=` when it approves from another process."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sluicegate import Agent, RequestContext
from sluicegate.agent.decisions import (
    MAX_DECLINE_REASON_CHARS,
    StaleToolCallError,
    WrongDecisionError,
    decide,
)
from sluicegate.errors import IdentityMismatchError, InvalidInputError
from sluicegate.memory import Memory
from sluicegate.request_context import RESOURCE_ID_KEY
from sluicegate.storage import SQLiteStore, SuspendedRunNotFoundError
from sluicegate.storage.suspended_runs import PendingToolCall
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step
from sluicegate.tools import ToolContext, create_tool

ADA = {"thread": "t-1", "resource": "ada"}


def pending(kind: str = "approval") -> PendingToolCall:
    return PendingToolCall(tool_call_id="c1", tool_name="refund", args={}, kind=kind)  # type: ignore[arg-type]


def test_a_decision_names_the_pending_call_of_its_kind_with_a_bounded_reason() -> None:
    assert decide("approve", pending()).tool_call_id == "c1"
    assert decide("decline", pending("suspend"), reason="no").reason == "no"
    with pytest.raises(StaleToolCallError, match="not the pending one"):
        decide("approve", pending(), tool_call_id="c0")
    with pytest.raises(WrongDecisionError, match="waits for resume data"):
        decide("approve", pending("suspend"))
    with pytest.raises(WrongDecisionError, match="waits for an approval"):
        decide("resume", pending(), resume_data={})
    decide("decline", pending(), reason="x" * MAX_DECLINE_REASON_CHARS)
    with pytest.raises(InvalidInputError, match="at most"):
        decide("decline", pending(), reason="x" * (MAX_DECLINE_REASON_CHARS + 1))
    with pytest.raises(InvalidInputError, match="must be a string"):
        decide("decline", pending(), reason=7)


def test_the_workflow_validates_with_the_same_rule() -> None:
    pytest.importorskip("temporalio")
    from temporalio.exceptions import ApplicationError

    from sluicegate.durable.temporal.workflow import AgentWorkflow

    flow = AgentWorkflow()
    flow._waiting = pending()  # the call the run waits on
    flow._durable = type("Durable", (), {"agent": type("A", (), {"tools": {}})()})()  # type: ignore[assignment]
    flow._decline_valid("c1", "x" * MAX_DECLINE_REASON_CHARS)
    with pytest.raises(ApplicationError) as too_long:
        flow._decline_valid("c1", "x" * (MAX_DECLINE_REASON_CHARS + 1))
    assert too_long.value.type == "InvalidInput"
    with pytest.raises(ApplicationError) as stale:
        flow._approve_valid("c0")
    assert stale.value.type == "StaleToolCall"
    with pytest.raises(ApplicationError) as wrong:
        flow._resume_valid("c1", {})
    assert wrong.value.type == "WrongDecision"


async def _refund(input: Any, context: ToolContext) -> Any:
    return {"refunded": input["order"]}


def _agent(db: Path, *steps: Any) -> Agent:
    tool = create_tool(id="refund", input_schema={"type": "object"}, execute=_refund, require_approval=True)
    return Agent(
        "support", model=MockModel(list(steps)), tools=[tool], memory=Memory(storage=SQLiteStore(str(db)))
    )


async def test_approving_from_another_process_by_naming_the_resource(tmp_path: Path) -> None:
    db = tmp_path / "support.db"
    first = _agent(db, tool_call_step(("c1", "refund", {"order": "o-7"})))
    suspended = await first.generate("Refund o-7", memory=ADA)
    later = _agent(db, text_step("Refunded."))

    listed = await later.list_suspended_runs(thread_id="t-1", resource_id="ada")
    assert [run.run_id for run in listed] == [suspended.run_id]
    assert await later.list_suspended_runs() == []  # names nobody: could not decide it either
    assert await later.list_suspended_runs(memory=ADA) == listed

    with pytest.raises(SuspendedRunNotFoundError, match="found only by a call naming that resource"):
        await later.approve_tool_call(run_id=suspended.run_id)
    for other in ({"thread": "t-1", "resource": "bob"}, {"thread": "t-2", "resource": "ada"}):
        with pytest.raises(SuspendedRunNotFoundError):
            await later.approve_tool_call(run_id=suspended.run_id, memory=other)
    with pytest.raises(IdentityMismatchError):
        await later.approve_tool_call(
            run_id=suspended.run_id, memory=ADA, request_context=RequestContext({RESOURCE_ID_KEY: "bob"})
        )
    with pytest.raises(InvalidInputError, match="memory"):
        await later.approve_tool_call(run_id=suspended.run_id, memory={**ADA, "options": {"lastMessages": 1}})

    result = await later.approve_tool_call_generate(run_id=suspended.run_id, memory=ADA)
    assert result.text.endswith("Refunded.")
    assert await later.list_suspended_runs(memory=ADA) == []


async def test_a_resource_in_memory_decides_decline_and_resume_too(tmp_path: Path) -> None:
    db = tmp_path / "support.db"
    first = _agent(db, tool_call_step(("c1", "refund", {"order": "o-7"})))
    suspended = await first.generate("Refund o-7", memory=ADA)
    later = _agent(db, text_step("Not refunded."))
    output = await later.decline_tool_call(run_id=suspended.run_id, memory={"resource": "ada"}, reason="no")
    assert (await output.text).endswith("Not refunded.")
