"""MCP tools are ordinary tools to the agent: what the model sends passes `process_tool_call`
before it leaves, what a server returns passes `process_tool_result` before the model reads it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from tests.mcp.helpers import fixture_server

from sluicegate import Agent
from sluicegate.mcp import MCPClient
from sluicegate.processors import (
    PIIDetector,
    Processor,
    PromptInjectionDetector,
    RegexFilter,
    ToolResultTokenLimiter,
)
from sluicegate.processors.args import ProcessToolCallArgs, ProcessToolCallResult
from sluicegate.testing import MockModel, text_step, tool_call_step
from sluicegate.tools import Tool

pytestmark = pytest.mark.integration

EMAIL, CARD = "jane.roe@example.com", "4111 1111 1111 1111"


@pytest.fixture
async def tools() -> AsyncIterator[dict[str, Tool]]:
    async with MCPClient(servers={"fx": fixture_server()}) as mcp:
        yield await mcp.list_tools()


def lookup(*then: list[Any]) -> MockModel:
    return MockModel([tool_call_step(("c1", "fx_lookup_customer", {"name": "Jane"})), *then])


def prompt_text(model: MockModel) -> str:
    return str(model.calls[-1].prompt)


@pytest.mark.parametrize(
    "guard",
    [PIIDetector(), RegexFilter(presets=["pii"], strategy="redact")],
    ids=["pii-detector", "regex-filter"],
)
async def test_what_a_server_returns_is_redacted_before_the_model_reads_it(
    tools: dict[str, Tool], guard: Processor
) -> None:
    model = lookup(text_step("noted"))
    output = await Agent(name="crm", model=model, tools=tools, output_processors=[guard]).stream("who?")
    chunks = [c async for c in output.full_stream]
    seen = prompt_text(model)
    assert "Customer record" in seen  # the result arrived
    assert EMAIL not in seen and CARD not in seen
    result = next(c for c in chunks if c.type == "tool-result")
    assert EMAIL not in str(result.payload.result) and CARD not in str(result.payload.result)


async def test_prompt_injection_in_a_result_is_judged(tools: dict[str, Tool]) -> None:
    model = lookup(text_step("obeyed"))
    agent = Agent(
        name="crm",
        model=model,
        tools=tools,
        output_processors=[PromptInjectionDetector(check_tool_results=True)],
    )
    result = await agent.generate("who?")
    assert result.tripwire is not None and result.tripwire.processor_id == "prompt-injection-detector"
    assert len(model.calls) == 1  # the model never read the planted instructions


async def test_tool_result_limits_apply(tools: dict[str, Tool]) -> None:
    model = MockModel([tool_call_step(("c1", "fx_big", {"megabytes": 1})), text_step("ok")])
    agent = Agent(name="a", model=model, tools=tools, output_processors=[ToolResultTokenLimiter(limit=300)])
    await agent.generate("go")
    assert len(prompt_text(model)) < 20_000  # a 1 MB answer cut to ~300 tokens


class Rewrite(Processor):
    id = "rewrite"

    def process_tool_call(self, args: ProcessToolCallArgs) -> ProcessToolCallResult | None:
        if args.tool_name == "fx_echo":
            return ProcessToolCallResult(args={"text": args.args["text"].replace(EMAIL, "[EMAIL]")})
        return None


async def test_arguments_pass_process_tool_call_before_they_leave(tools: dict[str, Tool]) -> None:
    model = MockModel([tool_call_step(("c1", "fx_echo", {"text": f"mail {EMAIL}"})), text_step("ok")])
    agent = Agent(name="a", model=model, tools=tools, output_processors=[Rewrite()])
    result = await agent.generate("go")
    assert result.tool_results[0].payload.result == {"result": "mail [EMAIL]"}  # what the server got


async def test_a_blocking_guard_stops_pii_before_it_reaches_the_server(tools: dict[str, Tool]) -> None:
    model = MockModel([tool_call_step(("c1", "fx_echo", {"text": f"mail {EMAIL}"})), text_step("ok")])
    agent = Agent(name="a", model=model, tools=tools, output_processors=[PIIDetector(strategy="block")])
    result = await agent.generate("go")
    assert result.tripwire is not None and result.tool_results == []  # the server was never called
