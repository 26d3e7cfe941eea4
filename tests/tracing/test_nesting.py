"""Spans that tools and processors create nest under theirs; cancelled runs still end their
span."""

from __future__ import annotations

import asyncio
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import StatusCode
from tests.tracing.helpers import by_name

from sluicegate import Agent, create_tool
from sluicegate.processors import Processor
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step
from sluicegate.tracing import Telemetry, TracingContext, state


def _tracer() -> trace.Tracer:
    return state.tracer_provider().get_tracer("app")  # type: ignore[no-any-return]


async def test_tool_and_processor_spans_nest_under_theirs(telemetry: Telemetry) -> None:
    async def lookup(input: Any, context: Any) -> str:
        with _tracer().start_as_current_span("db query"):
            return "ok"

    seen: list[TracingContext] = []

    class Annotating(Processor):
        id = "annotating"

        def process_input(self, args: Any) -> None:
            seen.append(args.tracing_context)
            args.tracing_context.current_span.set_attribute("app.checked", True)
            with _tracer().start_as_current_span("policy lookup"):
                pass

    tool = create_tool(id="lookup", description="d", input_schema={"type": "object"}, execute=lookup)
    agent = Agent(
        "nesting",
        model=MockModel([tool_call_step(("c1", "lookup", {})), text_step("done")]),
        tools=[tool],
        input_processors=[Annotating()],
    )
    result = await agent.generate("go")
    spans = telemetry.spans()
    (query,) = by_name(spans, "db query")
    (tool_span,) = by_name(spans, "execute_tool lookup")
    assert query.parent.span_id == tool_span.context.span_id
    (policy,) = by_name(spans, "policy lookup")
    (processor_span,) = by_name(spans, "processor annotating input")
    assert policy.parent.span_id == processor_span.context.span_id
    assert processor_span.attributes["app.checked"] is True
    assert seen[0].trace_id == result.trace_id
    # the agent's generator leaves no context attached behind it
    assert not trace.get_current_span().get_span_context().is_valid


async def test_a_run_inside_an_application_span_is_its_child(telemetry: Telemetry) -> None:
    with _tracer().start_as_current_span("http request") as request:
        result = await Agent("child", model=MockModel([text_step("hi")])).generate("x")
    spans = telemetry.spans()
    (run,) = by_name(spans, "invoke_agent child")
    assert run.parent.span_id == request.get_span_context().span_id
    assert result.trace_id == format(request.get_span_context().trace_id, "032x")


async def test_an_aborted_run_ends_its_spans(telemetry: Telemetry) -> None:
    started = asyncio.Event()

    async def slow(input: Any, context: Any) -> str:
        started.set()
        await asyncio.sleep(30)
        return "late"

    signal = asyncio.Event()
    tool = create_tool(id="slow", description="d", input_schema={"type": "object"}, execute=slow)
    agent = Agent("abortable", model=MockModel([tool_call_step(("c1", "slow", {}))]), tools=[tool])
    output = await agent.stream("go", abort_signal=signal)

    async def abort_when_started() -> None:
        await started.wait()
        signal.set()

    aborter = asyncio.ensure_future(abort_when_started())
    chunks = [c.type async for c in output.full_stream]
    await aborter
    assert chunks[-1] == "abort"
    for _ in range(3):  # the cancelled tool task finishes on the loop's next turns
        await asyncio.sleep(0)
    spans = telemetry.spans()
    (run,) = by_name(spans, "invoke_agent abortable")
    (tool_span,) = by_name(spans, "execute_tool slow")
    assert tool_span.status.status_code is StatusCode.ERROR
    assert tool_span.attributes["error.type"] == "CancelledError"
    assert run.end_time is not None
    assert run.attributes["sluicegate.finish_reason"] == "abort"
