"""With no tracer or meter provider, a run does no tracing work: no run trace, the untraced
per-chunk function, plain run ids and no chunk metadata."""

from __future__ import annotations

from opentelemetry import trace
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from sluicegate import Agent
from sluicegate.processors import Processor
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step
from sluicegate.tracing import state


class Echo(Processor):
    id = "echo"

    def process_output_stream(self, args: object) -> object:
        return args.part  # type: ignore[attr-defined]


async def test_an_untraced_run_has_no_trace_and_plain_chunks() -> None:
    assert not state.enabled()
    agent = Agent("plain", model=MockModel([text_step("hi")]), output_processors=[Echo()])
    output = await agent.stream("x")
    run = output._run
    assert run.trace is None
    assert type(run.run_id) is str
    # the per-chunk loop keeps no counters
    assert run.runner.stream_counts is None
    chunks = [c async for c in output.full_stream]
    assert output.trace_id == ""
    assert all(c.metadata is None and "metadata" not in c.to_dict() for c in chunks)
    assert all(type(c.run_id) is str for c in chunks)
    result = await Agent("plain", model=MockModel([text_step("hi")])).generate("x")
    assert result.trace_id == ""


async def test_an_untraced_run_inside_a_propagated_trace_reports_that_trace_id() -> None:
    parent = SpanContext(
        trace_id=0x0AF7651916CD43DD8448EB211C80319C,
        span_id=0xB7AD6B7169203331,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    with trace.use_span(NonRecordingSpan(parent)):
        output = await Agent("child", model=MockModel([text_step("hi")])).stream("x")
    assert output._run.trace is None
    assert output.trace_id == "0af7651916cd43dd8448eb211c80319c"
    chunks = [c async for c in output.full_stream]
    assert all(c.metadata == {"traceId": output.trace_id} for c in chunks)
