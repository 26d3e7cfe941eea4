"""A step rejected by `abort(retry=True)` in `process_output_step` keeps why it was rejected."""

from __future__ import annotations

from typing import Any

from sluicegate import Agent
from sluicegate.agent.results import StepResult, Tripwire
from sluicegate.errors import APICallError
from sluicegate.processors import ProcessAPIErrorResult, Processor
from sluicegate.server.serialize import output_json
from sluicegate.testing import MockModel, text_step


class QualityGate(Processor):
    """Rejects the first answer it sees, with metadata; records the steps each call saw."""

    id = "quality-gate"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[list[StepResult]] = []

    def process_output_step(self, args: Any) -> None:
        self.seen.append(list(args.steps))
        if args.retry_count == 0:
            args.abort("Response quality too low, please improve", retry=True, metadata={"score": 0.2})


def _agent(model: MockModel, gate: Processor) -> Agent:
    return Agent("a", model=model, output_processors=[gate], max_processor_retries=3)


async def test_the_rejected_step_carries_the_tripwire_and_the_accepted_one_none() -> None:
    gate = QualityGate()
    model = MockModel([text_step("bad response"), text_step("improved response")])
    result = await _agent(model, gate).generate("Hello")

    assert result.text == "improved response"
    assert result.tripwire is None
    rejected, accepted = result.steps
    assert rejected.finish_reason == "retry"
    assert rejected.tripwire == Tripwire(
        "Response quality too low, please improve",
        retry=True,
        metadata={"score": 0.2},
        processor_id="quality-gate",
    )
    assert accepted.finish_reason == "stop"
    assert accepted.tripwire is None
    # The next attempt's processors see the rejection in `steps`.
    assert gate.seen[1][0].tripwire == rejected.tripwire


async def test_a_streamed_run_reports_the_same_steps() -> None:
    model = MockModel([text_step("bad response"), text_step("improved response")])
    output = await _agent(model, QualityGate()).stream("Hello")
    steps = await output.steps
    assert [s.tripwire.processor_id if s.tripwire else None for s in steps] == ["quality-gate", None]


async def test_the_server_json_lists_the_tripwire_on_the_rejected_step_only() -> None:
    model = MockModel([text_step("bad response"), text_step("improved response")])
    body = output_json(await _agent(model, QualityGate()).generate("Hello"))
    rejected, accepted = body["steps"]
    assert rejected["tripwire"] == {
        "reason": "Response quality too low, please improve",
        "retry": True,
        "metadata": {"score": 0.2},
        "processorId": "quality-gate",
    }
    assert "tripwire" not in accepted
    assert "tripwire" not in body


class RetryOnError(Processor):
    id = "retry-on-error"

    def process_api_error(self, args: Any) -> ProcessAPIErrorResult:
        return ProcessAPIErrorResult(retry=True)


async def test_a_step_retried_after_an_api_error_carries_no_tripwire() -> None:
    model = MockModel([APICallError("overloaded", status_code=400), text_step("recovered")])
    result = await Agent("a", model=model, error_processors=[RetryOnError()]).generate("Hello")
    assert [s.finish_reason for s in result.steps] == ["retry", "stop"]
    assert [s.tripwire for s in result.steps] == [None, None]


async def test_a_rejected_input_step_adds_no_step() -> None:
    class InputGate(Processor):
        id = "input-gate"

        def process_input_step(self, args: Any) -> None:
            if args.retry_count == 0:
                args.abort("not yet", retry=True)

    model = MockModel([text_step("answer")])
    result = await Agent("a", model=model, input_processors=[InputGate()], max_processor_retries=3).generate(
        "Hello"
    )
    assert len(model.calls) == 1
    assert [(s.finish_reason, s.tripwire) for s in result.steps] == [("stop", None)]
