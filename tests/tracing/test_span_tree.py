"""The span tree of a run with an API error recovered by an error processor, a tool loop with a
tool-result processor, an input guardrail that redacts, an output guardrail that retries once
and a stream guardrail that redacts: structure, attributes and outcomes, exactly."""

from __future__ import annotations

import re

from opentelemetry.trace import SpanKind, StatusCode
from tests.tracing.helpers import by_name, outline
from tests.tracing.scenario import PROMPT, build_agent

from sluicegate.tracing import Telemetry


def proc(pid: str, phase: str, outcome: str, step: int, **extra: object) -> tuple[str, dict[str, object]]:
    attrs: dict[str, object] = {
        "sluicegate.processor.id": pid,
        "sluicegate.processor.phase": phase,
        "sluicegate.processor.outcome": outcome,
        "sluicegate.step_number": step,
    }
    for key, value in extra.items():
        attrs[
            {
                "seen": "sluicegate.stream.chunks_seen",
                "dropped": "sluicegate.stream.chunks_dropped",
                "modified": "sluicegate.stream.chunks_modified",
                "reason": "sluicegate.tripwire.reason",
                "retry": "sluicegate.tripwire.retry",
            }[key]
        ] = value
    return (f"processor {pid} {phase}", attrs)


def stream(step: int, outcome: str, seen: int, dropped: int, modified: int) -> tuple[str, dict[str, object]]:
    return proc("pii-output", "output_stream", outcome, step, seen=seen, dropped=dropped, modified=modified)


def leaf(node: tuple[str, dict[str, object]]) -> tuple[str, dict[str, object], list[object]]:
    return (node[0], node[1], [])


def chat(step: int) -> tuple[str, dict[str, object], list[object]]:
    return ("chat mock-model-id", {"sluicegate.step_number": step}, [])


EXPECTED = [
    (
        "invoke_agent support",
        {},
        [
            leaf(proc("pii-input", "input", "modified", 0)),
            chat(0),  # 429
            leaf(stream(0, "pass", seen=2, dropped=0, modified=0)),  # step-start, step-finish
            leaf(proc("retry-429", "api_error", "retry", 0)),
            chat(1),  # the tool call
            leaf(stream(1, "pass", seen=4, dropped=0, modified=0)),
            leaf(proc("no-drafts", "output_step", "pass", 1)),
            (
                "execute_tool weather",
                {"sluicegate.step_number": 1},
                [
                    leaf(proc("pii-output", "tool_result", "pass", 1)),
                    leaf(proc("stamp-tool-result", "tool_result", "modified", 1)),
                ],
            ),
            # the output filter gives the tool the model's arguments (tool_arguments="shown")
            leaf(proc("pii-output", "tool_call", "pass", 1)),
            chat(2),  # the draft
            # text-start is held with the text (dropped), then released with it unchanged: held
            leaf(stream(2, "held", seen=5, dropped=1, modified=1)),
            leaf(proc("no-drafts", "output_step", "retry", 2, reason="answer was a draft", retry=True)),
            chat(3),  # the answer, with an e-mail address the stream guardrail redacts
            # step-start, text-start, 4 deltas (one held back), text-end, step-finish, finish
            leaf(stream(3, "modified", seen=9, dropped=2, modified=3)),
            leaf(proc("no-drafts", "output_step", "pass", 3)),
            leaf(proc("pii-output", "output_result", "pass", 3)),
        ],
    )
]


async def test_span_tree_structure_attributes_and_outcomes(telemetry: Telemetry) -> None:
    agent, _ = build_agent()
    result = await agent.generate(PROMPT)
    assert result.text == "Sunny in Paris. Ask [EMAIL] for more."
    spans = telemetry.spans()
    assert outline(spans) == EXPECTED

    # one trace, and it is the one on the result
    assert re.fullmatch(r"[0-9a-f]{32}", result.trace_id)
    assert {format(s.context.trace_id, "032x") for s in spans} == {result.trace_id}

    (run,) = by_name(spans, "invoke_agent support")
    assert run.kind is SpanKind.INTERNAL
    assert dict(run.attributes) == {
        "sluicegate.run_id": result.run_id,
        "sluicegate.agent.id": "support",
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.id": "support",
        "gen_ai.agent.name": "support",
        "gen_ai.request.model": "mock-model-id",
        "gen_ai.provider.name": "mock-provider",
        "gen_ai.system": "mock-provider",
        "gen_ai.usage.input_tokens": 60,
        "gen_ai.usage.output_tokens": 18,
        "sluicegate.steps": 4,
        "sluicegate.retries": 2,
        "sluicegate.finish_reason": "stop",
    }
    assert run.status.status_code is StatusCode.UNSET

    chats = by_name(spans, "chat mock-model-id")
    assert [c.kind for c in chats] == [SpanKind.CLIENT] * 4
    failed, tool_call, draft, answer = chats
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes["error.type"] == "APICallError"
    assert "gen_ai.response.finish_reasons" not in failed.attributes
    assert tool_call.attributes["gen_ai.response.finish_reasons"] == ("tool-calls",)
    assert dict(answer.attributes) == {
        "sluicegate.run_id": result.run_id,
        "sluicegate.agent.id": "support",
        "gen_ai.operation.name": "chat",
        "sluicegate.step_number": 3,
        "gen_ai.request.model": "mock-model-id",
        "gen_ai.provider.name": "mock-provider",
        "gen_ai.system": "mock-provider",
        "gen_ai.usage.input_tokens": 30,
        "gen_ai.usage.output_tokens": 9,
        "gen_ai.response.finish_reasons": ("stop",),
    }
    assert draft.attributes["gen_ai.usage.output_tokens"] == 4

    (tool,) = by_name(spans, "execute_tool weather")
    assert dict(tool.attributes) == {
        "sluicegate.run_id": result.run_id,
        "sluicegate.agent.id": "support",
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "weather",
        "gen_ai.tool.call.id": "call-1",
        "gen_ai.tool.type": "function",
        "sluicegate.step_number": 1,
    }
    assert tool.status.status_code is StatusCode.UNSET

    # every processor span carries the run, the agent, a hook duration and no content
    processor_spans = [s for s in spans if s.name.startswith("processor ")]
    assert len(processor_spans) == 13
    for span in processor_spans:
        assert span.attributes["sluicegate.run_id"] == result.run_id
        assert span.attributes["sluicegate.agent.id"] == "support"
        assert span.attributes["sluicegate.hook.duration_ms"] >= 0
    stamp = by_name(spans, "processor stamp-tool-result tool_result")[0]
    assert stamp.attributes["gen_ai.tool.name"] == "weather"
    assert stamp.attributes["gen_ai.tool.call.id"] == "call-1"
    retry = by_name(spans, "processor retry-429 api_error")[0]
    assert retry.attributes["sluicegate.api_error.type"] == "APICallError"
    final_stream = by_name(spans, "processor pii-output output_stream")[-1]
    assert final_stream.attributes["sluicegate.stream.chunks_timed"] == 9
    # stream spans span their step: they start with the step's model call
    assert final_stream.start_time >= answer.start_time
    assert final_stream.end_time >= answer.end_time


async def test_a_stream_run_puts_the_trace_id_on_every_chunk(telemetry: Telemetry) -> None:
    agent, _ = build_agent()
    output = await agent.stream(PROMPT)
    assert re.fullmatch(r"[0-9a-f]{32}", output.trace_id)
    chunks = [chunk async for chunk in output.full_stream]
    assert len(chunks) > 20
    expected = {"traceId": output.trace_id}
    assert all(chunk.metadata == expected for chunk in chunks)
    assert all(chunk.to_dict()["metadata"] == expected for chunk in chunks)
    # one shared value for the whole run, not one per chunk
    assert len({id(chunk.metadata) for chunk in chunks}) == 1
    spans = telemetry.spans()
    assert {format(s.context.trace_id, "032x") for s in spans} == {output.trace_id}


async def test_a_tripwire_ends_the_run_span_with_its_reason(telemetry: Telemetry) -> None:
    from sluicegate import Agent
    from sluicegate.processors import Processor
    from sluicegate.testing import MockModel
    from sluicegate.testing.mock_model import text_step

    class Blocker(Processor):
        id = "blocker"

        def process_input(self, args: object) -> None:
            args.abort("not allowed")  # type: ignore[attr-defined]

    agent = Agent("guarded", model=MockModel([text_step("never")]), input_processors=[Blocker()])
    result = await agent.generate("hello")
    assert result.tripwire is not None
    spans = telemetry.spans()
    assert outline(spans) == [
        (
            "invoke_agent guarded",
            {"sluicegate.tripwire.reason": "not allowed", "sluicegate.tripwire.retry": False},
            [
                (
                    "processor blocker input",
                    {
                        "sluicegate.processor.id": "blocker",
                        "sluicegate.processor.phase": "input",
                        "sluicegate.processor.outcome": "abort",
                        "sluicegate.step_number": 0,
                        "sluicegate.tripwire.reason": "not allowed",
                        "sluicegate.tripwire.retry": False,
                    },
                    [],
                )
            ],
        )
    ]
    (run,) = by_name(spans, "invoke_agent guarded")
    assert run.attributes["sluicegate.tripwire.processor_id"] == "blocker"
    assert run.attributes["sluicegate.finish_reason"] == "other"


async def test_an_unrecovered_model_error_fails_the_run_span(telemetry: Telemetry) -> None:
    from sluicegate import Agent
    from sluicegate.errors import APICallError
    from sluicegate.testing import MockModel

    agent = Agent("fragile", model=MockModel([APICallError("bad request", status_code=400)]))
    output = await agent.stream("hello")
    await output.consume()
    spans = telemetry.spans()
    (run,) = by_name(spans, "invoke_agent fragile")
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes["error.type"] == "APICallError"
    (chat_span,) = by_name(spans, "chat mock-model-id")
    assert chat_span.status.status_code is StatusCode.ERROR
    assert chat_span.parent.span_id == run.context.span_id
