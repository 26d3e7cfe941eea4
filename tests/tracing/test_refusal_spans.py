"""A call refused by `process_tool_call` (`args.reject`, as `ToolCallLimit` does) is seen in the
trace: the refusing hook's span has the outcome `refused` and the reason, the tool's span names
who refused and why; neither is an error, and the run goes on."""

from __future__ import annotations

from typing import Any

from tests.tracing.helpers import by_name

from sluicegate import Agent, create_tool
from sluicegate.processors import ToolCallLimit
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step
from sluicegate.tracing import Telemetry


async def test_a_refused_call_shows_who_refused_it(telemetry: Telemetry) -> None:
    def execute(args: Any, context: Any) -> str:
        return "sent"

    send = create_tool(id="send_email", description="send", execute=execute)
    model = MockModel([tool_call_step(("c1", "send_email", {}), ("c2", "send_email", {})), text_step("ok")])
    limit = ToolCallLimit(limits={"send_email": 1}, on_limit="answer")
    agent = Agent("o", model=model, tools=[send], output_processors=[limit])
    result = await agent.generate("go")
    assert result.text == "ok"
    spans = by_name(telemetry.spans(), "processor tool-call-limit tool_call")
    assert len(spans) == 2
    refused = [s for s in spans if s.attributes["sluicegate.processor.outcome"] == "refused"]
    assert len(refused) == 1 and "error.type" not in refused[0].attributes
    assert "'send_email' is no longer available" in refused[0].attributes["sluicegate.tool.refusal_reason"]
    (tool_span,) = [
        s
        for s in by_name(telemetry.spans(), "execute_tool send_email")
        if s.attributes["gen_ai.tool.call.id"] == "c2"
    ]
    assert tool_span.attributes["sluicegate.tool.refused_by"] == "tool-call-limit"
    assert "no longer available" in tool_span.attributes["sluicegate.tool.refusal_reason"]
    assert "error.type" not in tool_span.attributes
