"""Fallback model lists in durable runs: each model is its own model activity, with its index
in the input and its own retry policy, and the run's chunks and result match the same agent's
run in one process."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from temporalio.client import Client

from sluicegate import Agent, Sluicegate, tool
from sluicegate.durable.temporal import TemporalRuns, create_worker, names
from sluicegate.errors import APICallError
from sluicegate.models import retries
from sluicegate.models.registry import register_provider
from sluicegate.processors import Processor
from sluicegate.stream.chunk import Chunk, text_delta
from sluicegate.testing import MockModel, text_step, tool_call_step

pytestmark = pytest.mark.integration

FAST = {"heartbeatTimeout": 2, "retryInterval": 0.05}


@pytest.fixture(autouse=True)
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    """The in-process runs' client backoff, short (the durable ones use `retryInterval`)."""
    monkeypatch.setattr(retries, "INITIAL_DELAY_MS", 1.0)


def _server_error() -> APICallError:
    return APICallError("Internal server error", status_code=503, is_retryable=True)


def _bad_request() -> APICallError:
    return APICallError("bad request", status_code=400, is_retryable=False)


def _mid_stream(text: str, error: APICallError) -> list[dict[str, Any]]:
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t1"},
        {"type": "text-delta", "id": "t1", "delta": text},
        {"type": "error", "error": error},
    ]


def _named(steps: list[Any], name: str) -> MockModel:
    return MockModel(steps, provider="mock", model_id=name)


def _shown(chunks: list[Chunk[Any]]) -> list[Any]:
    """What a client sees: each chunk's type, a text delta's text, a fallback notice's data."""
    out: list[Any] = []
    for c in chunks:
        if c.type == "text-delta":
            out.append(("text", c.payload.text))
        elif c.type == "data-model-fallback":
            out.append((c.type, c.data["failedModel"], c.data["nextModel"], c.data["statusCode"]))
        else:
            out.append(c.type)
    return out


async def _in_process(agent: Agent[Any]) -> tuple[list[Any], str, str | None]:
    output = await agent.stream("hi")
    chunks = [c async for c in output.full_stream]
    return _shown(chunks), await output.text, await output.finish_reason


async def _durable(
    temporal_server: Any, agent: Agent[Any]
) -> tuple[list[Any], dict[str, Any], list[tuple[str, int, int]]]:
    """The run's chunks and result, and its model activities: (name, modelIndex, attempts)."""
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    async with create_worker(client, Sluicegate(agents={agent.id: agent}), task_queue=queue):
        runs = TemporalRuns(client, task_queue=queue, settings=FAST)
        run_id = await runs.start(agent, "hi")
        result = await asyncio.wait_for(runs.result(run_id), 60)
        out = await runs.observe(agent, run_id)
        chunks = [c async for c in out.full_stream]
        history = await client.get_workflow_handle(run_id).fetch_history()
    scheduled: dict[int, tuple[str, int]] = {}
    attempts: dict[int, int] = {}
    for event in history.events:
        if event.HasField("activity_task_scheduled_event_attributes"):
            attrs = event.activity_task_scheduled_event_attributes
            call = json.loads(attrs.input.payloads[0].data)
            scheduled[event.event_id] = (attrs.activity_type.name, call.get("modelIndex", -1))
        for field in ("activity_task_started_event_attributes",):
            if event.HasField(field):
                started = getattr(event, field)
                attempts[started.scheduled_event_id] = started.attempt
    models = [
        (name, index, attempts.get(event_id, 0))
        for event_id, (name, index) in sorted(scheduled.items())
        if name == names.model_activity(agent.id)
    ]
    return _shown(chunks), result, models


class HoldText(Processor):
    """Holds every text delta back until the step's end (or the model's failure) flushes it."""

    id = "hold-text"

    def process_output_stream(self, args: Any) -> Any:
        if args.part.type != "text-delta":
            return args.part
        args.state.setdefault("held", []).append([args.part.payload.id, args.part.payload.text])
        return None

    def flush_output_stream(self, args: Any) -> list[Chunk[Any]]:
        held, args.state["held"] = args.state.get("held", []), []
        return [text_delta(args.part.run_id if args.part else "", i, t) for i, t in held]


def _pair(make: Callable[[], list[Any]]) -> tuple[list[Any], list[Any]]:
    """The same fallback list twice: one for the run in one process, one for the durable run."""
    return make(), make()


async def test_a_model_failing_with_retryable_5xx_falls_over_after_its_own_retries(
    temporal_server: Any,
) -> None:
    def make() -> list[Any]:
        return [
            {"model": _named([_server_error()] * 5, "primary"), "max_retries": 1},
            MockModel([text_step("from the second model")], provider="mock", model_id="secondary"),
        ]

    local, durable = _pair(make)
    shown, text, reason = await _in_process(Agent("fallback-5xx", model=local))
    assert len(local[0]["model"].calls) == 2 and len(local[1].calls) == 1

    agent = Agent("fallback-5xx", model=durable)
    d_shown, result, models = await _durable(temporal_server, agent)
    assert d_shown == shown
    assert (result["text"], result["finishReason"]) == (text, reason) == ("from the second model", "stop")
    # The first entry's `max_retries` 1 is Temporal's policy for its call: two attempts.
    assert len(durable[0]["model"].calls) == 2 and len(durable[1].calls) == 1
    name = names.model_activity("fallback-5xx")
    assert models == [(name, 0, 2), (name, 1, 1)]
    stored = [m["content"]["parts"] for m in result["messages"] if m["role"] == "assistant"]
    assert json.dumps(stored).count("from the second model") == 1


async def test_a_non_retryable_failure_moves_to_the_next_model_without_retrying(temporal_server: Any) -> None:
    def make() -> list[Any]:
        return [
            MockModel([_bad_request()] * 3, provider="mock", model_id="primary"),
            MockModel([text_step("second answers")], provider="mock", model_id="secondary"),
        ]

    local, durable = _pair(make)
    shown, text, _ = await _in_process(Agent("fallback-400", model=local))
    agent = Agent("fallback-400", model=durable)
    d_shown, result, models = await _durable(temporal_server, agent)
    assert d_shown == shown
    assert result["text"] == text == "second answers"
    assert len(durable[0].calls) == 1  # not retried: a 400 cannot change
    assert [(index, attempts) for _, index, attempts in models] == [(0, 1), (1, 1)]


async def test_a_retryable_failure_inside_the_stream_falls_over_with_a_notice(temporal_server: Any) -> None:
    def make() -> list[Any]:
        return [
            {
                "model": _named([_mid_stream("Half of", _server_error())], "primary"),
                "max_retries": 0,
            },
            MockModel([text_step("Whole answer")], provider="mock", model_id="secondary"),
        ]

    local, durable = _pair(make)
    shown, text, _ = await _in_process(Agent("fallback-mid", model=local))
    assert ("data-model-fallback", "mock/primary", "mock/secondary", 503) in shown
    agent = Agent("fallback-mid", model=durable)
    d_shown, result, _ = await _durable(temporal_server, agent)
    assert d_shown == shown
    assert result["text"] == text == "Whole answer"


async def test_what_a_stream_processor_held_of_the_failed_model_is_released_before_the_next(
    temporal_server: Any,
) -> None:
    def make() -> list[Any]:
        return [
            {
                "model": _named([_mid_stream("Half of", _server_error())] * 3, "primary"),
                "max_retries": 1,
            },
            MockModel([text_step("Whole answer")], provider="mock", model_id="secondary"),
        ]

    def holding() -> list[Any]:
        return [HoldText()]

    local, durable = _pair(make)
    shown, text, _ = await _in_process(Agent("fallback-held", model=local, output_processors=holding()))
    # In one process the failed model's held text is released with it, before the notice.
    held = shown.index(("text", "Half of"))
    assert held < shown.index(("data-model-fallback", "mock/primary", "mock/secondary", 503))
    agent = Agent("fallback-held", model=durable, output_processors=holding())
    d_shown, result, models = await _durable(temporal_server, agent)
    # The first attempt's held text dies with it (Temporal retries it: a client discards what
    # it showed, from the step's start the attempt published once its stream opened, at the
    # retry notice; the next attempt publishes the same start again); the last attempt's is
    # released before the step moves on, as in one process.
    notice = d_shown.index(names.RETRY_NOTICE)
    assert d_shown[:notice] == ["start", "step-start", "text-start"]  # the text was held
    assert d_shown[:1] + d_shown[notice + 1 :] == shown
    assert result["text"] == text == "Whole answer"
    assert [(index, attempts) for _, index, attempts in models] == [(0, 2), (1, 1)]


async def test_a_non_retryable_failure_inside_the_stream_does_not_fall_over(temporal_server: Any) -> None:
    filtered = APICallError("content filtered", status_code=400, is_retryable=False)

    def make() -> list[Any]:
        return [
            MockModel([_mid_stream("Some", filtered)], provider="mock", model_id="primary"),
            MockModel([text_step("never")], provider="mock", model_id="secondary"),
        ]

    local, durable = _pair(make)
    shown, _, reason = await _in_process(Agent("fallback-filtered", model=local))
    assert reason == "error" and local[1].calls == []
    agent = Agent("fallback-filtered", model=durable)
    d_shown, result, models = await _durable(temporal_server, agent)
    assert d_shown == shown
    assert result["finishReason"] == "error"
    assert durable[1].calls == [] and [index for _, index, _ in models] == [0]


async def test_the_run_stays_on_the_model_that_answered(temporal_server: Any) -> None:
    @tool
    async def lookup(q: str) -> str:
        """Look something up."""
        return "found"

    primary = MockModel([_server_error()], provider="mock", model_id="primary")
    secondary = MockModel(
        [tool_call_step(("c1", "lookup", {"q": "x"})), text_step("done")],
        provider="mock",
        model_id="secondary",
    )
    agent = Agent("fallback-stays", model=[{"model": primary, "max_retries": 0}, secondary], tools=[lookup])
    _, result, models = await _durable(temporal_server, agent)
    assert result["text"] == "done"
    assert len(primary.calls) == 1  # the second step goes to the model that served the first
    assert [index for _, index, _ in models] == [0, 1, 1]


async def test_string_entries_are_named_as_in_one_process(temporal_server: Any) -> None:
    failing = _mid_stream("Half", _server_error())
    register_provider("durable-fb-a", lambda model_id: _named([failing], model_id))
    register_provider("durable-fb-b", lambda model_id: _named([text_step("Whole")], model_id))

    def make() -> list[Any]:
        return [{"model": "durable-fb-a/first", "max_retries": 0}, "durable-fb-b/second"]

    shown, _, _ = await _in_process(Agent("fallback-strings", model=make()))
    assert ("data-model-fallback", "mock/first", "mock/second", 503) in shown
    d_shown, result, _ = await _durable(temporal_server, Agent("fallback-strings", model=make()))
    assert d_shown == shown and result["text"] == "Whole"
