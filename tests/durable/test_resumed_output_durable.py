"""On Temporal too, the resumed run's result is the whole answer: the text written before the
approval and the text after it (see tests/agent/test_resumed_output.py for the in-process run)."""

from __future__ import annotations

from typing import Any

from tests.durable.test_temporal_runs import _chunks, _run

from sluicegate import Agent, tool
from sluicegate.durable.temporal import TemporalRuns
from sluicegate.testing import MockModel, text_step, tool_call_step


async def test_the_result_after_an_approval_carries_the_text_from_before_it(temporal_server: Any) -> None:
    @tool
    async def lookup(q: str) -> str:
        """Look something up."""
        return "found"

    model = MockModel(
        [tool_call_step(("c1", "lookup", {"q": "x"}), text="Before approval. "), text_step("After approval.")]
    )
    agent = Agent("looker", model=model, tools=[lookup])

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "look it up", require_tool_approval=True)
        first = await _chunks(runs, agent, run_id)
        assert first[-1].type == "tool-call-approval"
        resumed = await runs.approve_tool_call(run_id, "c1")
        await _chunks(runs, agent, run_id, offset=resumed["offset"])
        result = await runs.result(run_id)
        assert result["text"] == "Before approval. After approval."

    await _run(temporal_server, [agent], body)
