"""One trace per durable run: the spans made inside its activities nest under the run span."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry import metrics, trace
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.trace import NoOpTracerProvider
from temporalio.client import Client

from sluicegate import Agent, Sluicegate, tool
from sluicegate.durable.temporal import TemporalRuns, create_worker
from sluicegate.models.base import CallOptions, StreamResult
from sluicegate.testing import MockModel, text_step, tool_call_step
from sluicegate.tools import ToolContext
from sluicegate.tracing import Telemetry, configure

pytestmark = pytest.mark.integration


@pytest.fixture
def telemetry(monkeypatch: pytest.MonkeyPatch) -> Iterator[Telemetry]:
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: NoOpTracerProvider())
    monkeypatch.setattr(metrics, "get_meter_provider", lambda: NoOpMeterProvider())
    setup = configure(in_memory=True, set_global=False)
    yield setup
    setup.shutdown()


class TracedModel:
    """A model whose provider call traces itself (as an instrumented HTTP client would)."""

    specification_version = "v2"
    provider = "mock"
    model_id = "traced"

    def __init__(self, inner: MockModel, telemetry: Telemetry) -> None:
        self.inner = inner
        self.tracer = telemetry.tracer_provider.get_tracer("provider")

    async def do_stream(self, options: CallOptions) -> StreamResult:
        with self.tracer.start_as_current_span("POST /chat"):
            return await self.inner.do_stream(options)

    async def do_generate(self, options: CallOptions) -> Any:
        raise NotImplementedError


def _ancestors(span: Any, by_id: dict[int, Any]) -> list[str]:
    names = []
    parent = span.parent
    while parent is not None and parent.span_id in by_id:
        span = by_id[parent.span_id]
        names.append(span.name)
        parent = span.parent
    return names


@pytest.mark.parametrize("cached", [True, False], ids=["cached", "replayed"])
async def test_a_durable_runs_spans_share_one_trace_under_the_run_span(
    temporal_server: Any, telemetry: Telemetry, cached: bool
) -> None:
    """`replayed`: the worker keeps no run in memory, so each workflow task replays the run
    from its history (as a worker that takes over a run does); its spans are made once."""
    tracer = telemetry.tracer_provider.get_tracer("app")

    @tool
    async def lookup(city: str, context: ToolContext) -> str:
        """The weather in a city."""
        with tracer.start_as_current_span("weather api"):
            return "sunny"

    model = TracedModel(
        MockModel([tool_call_step(("c1", "lookup", {"city": "Oslo"})), text_step("sunny in Oslo")]), telemetry
    )
    agent = Agent("weather", model=model, tools=[lookup])
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    async with create_worker(
        client,
        Sluicegate(agents={agent.id: agent}),
        task_queue=queue,
        **({} if cached else {"max_cached_workflows": 0}),
    ):
        runs = TemporalRuns(client, task_queue=queue, settings={"heartbeatTimeout": 2})
        run_id = await runs.start(agent, "weather in Oslo?")
        result = await asyncio.wait_for(runs.result(run_id), 30)
    assert result["text"] == "sunny in Oslo"

    spans = telemetry.spans()
    by_id = {s.context.span_id: s for s in spans}
    names = [s.name for s in spans]
    assert names.count("invoke_agent weather") == 1, names
    assert len({s.context.span_id for s in spans}) == len(spans), "a span was exported twice"
    assert len({s.context.trace_id for s in spans}) == 1, telemetry.span_tree()
    (run_span,) = [s for s in spans if s.name == "invoke_agent weather"]
    assert run_span.attributes["sluicegate.run_id"] == run_id
    chats = [s for s in spans if s.name.startswith("chat ")]
    assert len(chats) == 2
    for name in ("chat traced", "execute_tool lookup"):
        assert "invoke_agent weather" in _ancestors(next(s for s in spans if s.name == name), by_id)
    # Made inside the activities, in the worker's activity tasks:
    provider = next(s for s in spans if s.name == "POST /chat")
    assert _ancestors(provider, by_id)[:2] == ["chat traced", "invoke_agent weather"]
    (api,) = [s for s in spans if s.name == "weather api"]
    assert _ancestors(api, by_id) == ["execute_tool lookup", "invoke_agent weather"]
