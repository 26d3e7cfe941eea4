"""One trace per durable run: the spans made inside its activities nest under the run span."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
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


def _echo_agent(name: str, answers: int = 1) -> Agent:
    return Agent(name, model=MockModel([text_step("hello") for _ in range(answers)]))


@pytest.mark.parametrize("cached", [True, False], ids=["cached", "replayed"])
async def test_a_durable_run_continues_the_span_current_where_it_is_started(
    temporal_server: Any, telemetry: Telemetry, cached: bool
) -> None:
    """The caller's span is the parent of the run's `invoke_agent`, on every replay alike."""
    agent = Agent(
        "helper",
        model=MockModel([tool_call_step(("c1", "lookup", {"city": "Oslo"})), text_step("done")]),
        tools=[_lookup],
    )
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    caller_tracer = telemetry.tracer_provider.get_tracer("caller")
    async with create_worker(
        client,
        Sluicegate(agents={agent.id: agent}),
        task_queue=queue,
        **({} if cached else {"max_cached_workflows": 0}),
    ):
        runs = TemporalRuns(client, task_queue=queue, settings={"heartbeatTimeout": 2})
        with caller_tracer.start_as_current_span("handle request") as caller:
            run_id = await runs.start(agent, "weather in Oslo?")
        assert (await asyncio.wait_for(runs.result(run_id), 30))["text"] == "done"

    spans = telemetry.spans()
    (run_span,) = [s for s in spans if s.name == "invoke_agent helper"]
    assert run_span.parent is not None and run_span.parent.span_id == caller.get_span_context().span_id
    assert {s.context.trace_id for s in spans} == {caller.get_span_context().trace_id}
    assert len({s.context.span_id for s in spans}) == len(spans), "a span was exported twice"
    by_id = {s.context.span_id: s for s in spans}
    tool_span = next(s for s in spans if s.name == "execute_tool lookup")
    assert _ancestors(tool_span, by_id) == ["invoke_agent helper", "handle request"]


@tool
async def _lookup(city: str) -> str:
    """The weather in a city."""
    return "sunny"


async def test_the_stream_route_continues_the_traceparent_header(
    temporal_server: Any, telemetry: Telemetry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`serve --temporal`: the run's `invoke_agent` is a child of the request's `traceparent`;
    a malformed header is ignored (W3C) and the run starts a trace of its own."""
    from sluicegate.server.app import create_app
    from sluicegate.server.settings import ServerSettings

    app = Sluicegate(agents={"echo": _echo_agent("echo", answers=2)})
    queue = f"q-{uuid.uuid4()}"
    monkeypatch.setenv("SLUICEGATE_TEMPORAL", temporal_server.target)
    monkeypatch.setenv("SLUICEGATE_TEMPORAL_TASK_QUEUE", queue)
    client = await Client.connect(temporal_server.target)
    trace_id, parent_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    async with (
        create_worker(client, app, task_queue=queue),
        httpx.AsyncClient(
            transport=httpx.ASGITransport(app=create_app(app, ServerSettings())),
            base_url="http://test",
            timeout=60,
        ) as http,
    ):
        sent = await http.post(
            "/api/agents/echo/stream",
            json={"messages": "hi"},
            headers={"traceparent": f"00-{trace_id}-{parent_id}-01", "tracestate": "vendor=1"},
        )
        malformed = await http.post(
            "/api/agents/echo/stream", json={"messages": "hi"}, headers={"traceparent": "00-nonsense-01"}
        )
    assert sent.status_code == malformed.status_code == 200, (sent.text, malformed.text)
    assert sent.text.count('"type":"finish"') == malformed.text.count('"type":"finish"') == 1
    runs = [s for s in telemetry.spans() if s.name == "invoke_agent echo"]
    by_run = {s.attributes["sluicegate.run_id"]: s for s in runs}
    continued = by_run[sent.headers["x-sluicegate-workflow-id"]]
    assert continued.parent is not None
    assert (continued.context.trace_id, continued.parent.span_id) == (int(trace_id, 16), int(parent_id, 16))
    assert continued.context.trace_state.get("vendor") == "1"
    fresh = by_run[malformed.headers["x-sluicegate-workflow-id"]]
    assert fresh.parent is None and fresh.context.trace_id != int(trace_id, 16)


@pytest.mark.parametrize(
    "bad", [{"traceparent": "00-zz-01"}, {"traceparent": "00-" + "0" * 32 + "-" + "1" * 16 + "-01"}, {"x": 1}]
)
async def test_start_refuses_a_trace_context_that_is_not_one(bad: Any) -> None:
    from sluicegate.errors import InvalidInputError

    runs = TemporalRuns(client=None, task_queue="unused")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="trace_context"):
        await runs.start(_echo_agent("echo"), "hi", trace_context=bad)


async def test_a_sub_agents_spans_nest_under_the_parents_tool_span(
    temporal_server: Any, telemetry: Telemetry
) -> None:
    """The sub-agent runs inside the tool activity, in its `execute_tool` span's context: one
    trace, one tree, as in one process."""
    researcher = Agent("researcher", model=MockModel([text_step("found it")]))
    boss = Agent(
        "boss",
        model=MockModel([tool_call_step(("c1", "agent-researcher", {"prompt": "look"})), text_step("done")]),
        agents={"researcher": researcher},
    )
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    async with create_worker(client, Sluicegate(agents={boss.id: boss}), task_queue=queue):
        runs = TemporalRuns(client, task_queue=queue, settings={"heartbeatTimeout": 2})
        run_id = await runs.start(boss, "go")
        result = await asyncio.wait_for(runs.result(run_id), 30)
    assert result["text"] == "done"
    spans = telemetry.spans()
    by_id = {s.context.span_id: s for s in spans}
    assert len({s.context.trace_id for s in spans}) == 1, telemetry.span_tree()
    (sub_run,) = [s for s in spans if s.name == "invoke_agent researcher"]
    assert _ancestors(sub_run, by_id) == ["execute_tool agent-researcher", "invoke_agent boss"]
