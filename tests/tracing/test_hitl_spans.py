"""A traced run whose tool waits on a person: the tool span says so (there is no result yet),
with or without captured content; before, reading the missing result failed the run."""

from __future__ import annotations

from typing import Any

from tests.tracing.helpers import by_name

from sluicegate import Agent
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step
from sluicegate.tools import ToolContext, create_tool
from sluicegate.tracing import Telemetry


async def _lookup(input: Any, context: ToolContext) -> Any:
    return {"word": input["word"]}


def _agent() -> Agent[Any]:
    tool = create_tool(
        id="lookup",
        input_schema={"type": "object", "properties": {"word": {"type": "string"}}},
        execute=_lookup,
        require_approval=True,
    )
    steps = [tool_call_step(("call_1", "lookup", {"word": "sluice"})), text_step("done")]
    return Agent("a", model=MockModel(steps), tools=[tool])


async def test_a_waiting_tool_is_marked_on_its_span(telemetry_with_content: Telemetry) -> None:
    agent = _agent()
    first = await agent.generate("hi", require_tool_approval=True)
    assert first.finish_reason == "suspended" and first.error is None
    (span,) = by_name(telemetry_with_content.spans(), "execute_tool lookup")
    assert span.attributes["sluicegate.tool.waiting"] == "tool-call-approval"
    assert "gen_ai.tool.call.result" not in span.attributes
    result = await agent.approve_tool_call_generate(run_id=first.run_id)
    assert result.text == "done"
    spans = by_name(telemetry_with_content.spans(), "execute_tool lookup")
    assert any("gen_ai.tool.call.result" in s.attributes for s in spans)
