"""A resumed run's output is the whole answer, as Mastra's: the text and steps written before
the suspension are part of what `approve_tool_call` (and the `_generate` form) returns."""

from __future__ import annotations

import copy
import dataclasses
from typing import Any

from sluicegate import Agent
from sluicegate.storage import InMemorySuspendedRunStore
from sluicegate.storage.suspended_runs import SuspendedRun
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step
from sluicegate.tools import ToolContext, create_tool


async def _lookup(input: Any, context: ToolContext) -> Any:
    return {"found": True}


def _agent(store: InMemorySuspendedRunStore) -> Agent:
    tool = create_tool(id="lookup", input_schema={"type": "object"}, execute=_lookup, require_approval=True)
    model = MockModel(
        [
            tool_call_step(("c1", "lookup", {"q": "x"}), text="Before approval. "),
            text_step("After approval."),
        ]
    )
    return Agent("a", model=model, tools=[tool], suspended_runs=store)


async def test_the_generate_form_carries_the_text_and_steps_from_before_the_suspension() -> None:
    agent = _agent(InMemorySuspendedRunStore())
    first = await agent.generate("look it up")
    assert first.finish_reason == "suspended"
    result = await agent.approve_tool_call_generate(run_id=first.run_id)
    assert result.text == "Before approval. After approval."
    assert [step.text for step in result.steps] == ["Before approval. ", "After approval."]


async def test_the_stream_form_has_every_step_and_the_text_it_streamed() -> None:
    """Mastra 1.71's stream `text` after a resume is what that stream emitted (the recorded
    conformance scenario approval_resume_processors); its steps are the whole run's."""
    agent = _agent(InMemorySuspendedRunStore())
    first = await agent.generate("look it up")
    output = await agent.approve_tool_call(run_id=first.run_id)
    assert await output.text == "After approval."
    assert [step.text for step in await output.steps] == ["Before approval. ", "After approval."]


class _PreviousVersion(InMemorySuspendedRunStore):
    """Stores snapshots as the version before `accepted_text` was kept wrote them."""

    async def save_suspended_run(self, run: SuspendedRun) -> None:
        old = copy.deepcopy(run.snapshot)
        old.pop("accepted_text", None)
        await super().save_suspended_run(dataclasses.replace(run, snapshot=old))


async def test_a_snapshot_stored_by_the_previous_version_still_loads_whole() -> None:
    store = _PreviousVersion()
    agent = _agent(store)
    first = await agent.generate("look it up")
    stored = await store.get_suspended_run(first.run_id)
    assert stored is not None and "accepted_text" not in stored.snapshot
    result = await agent.approve_tool_call_generate(run_id=first.run_id)
    assert result.text == "Before approval. After approval."
