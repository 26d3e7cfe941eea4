"""The studio's span buffer and timeline, on spans made here with the agreed attributes."""

from __future__ import annotations

import json

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider

from sluicegate.server.traces import (
    AGENT_ID,
    PROCESSOR_ID,
    PROCESSOR_OUTCOME,
    PROCESSOR_PHASE,
    SERVER_APP,
    TRIPWIRE_REASON,
    TRIPWIRE_RETRY,
    RecentSpans,
    install_recent_spans,
    span_from_record,
    stored_span,
    timeline,
)


def _provider(recent: RecentSpans) -> trace.Tracer:
    provider = TracerProvider()
    provider.add_span_processor(recent)
    return provider.get_tracer("test")


def _run(tracer: trace.Tracer, name: str = "POST stream support", **extra: object) -> str:
    with tracer.start_as_current_span("POST /api/agents/{agentId}/stream"):  # the framework's span
        with (
            tracer.start_as_current_span(name, attributes={AGENT_ID: "support", **extra}) as run,
            tracer.start_as_current_span("invoke_agent support"),
        ):
            for pid, outcome in (("pii", "modified"), ("judge", "retry"), ("judge", "abort")):
                attributes = {
                    PROCESSOR_ID: pid,
                    PROCESSOR_PHASE: "output_step",
                    PROCESSOR_OUTCOME: outcome,
                }
                if outcome in ("retry", "abort"):
                    attributes |= {TRIPWIRE_REASON: "too rude", TRIPWIRE_RETRY: outcome == "retry"}
                with tracer.start_as_current_span(f"processor {pid} output_step", attributes=attributes):
                    pass
            with tracer.start_as_current_span("chat echo-1"):
                pass
        return format(run.get_span_context().trace_id, "032x")


def test_timeline_reads_processor_decisions() -> None:
    recent = RecentSpans()
    trace_id = _run(_provider(recent))
    view = timeline(recent.spans(trace_id))
    assert [s["name"] for s in view["spans"]][:2] == ["POST stream support", "invoke_agent support"]
    assert all(not s["name"].startswith("POST /api") for s in view["spans"])  # framework span left out
    assert [(d["processorId"], d["outcome"], d["reason"], d["retry"]) for d in view["processors"]] == [
        ("pii", "modified", None, False),
        ("judge", "retry", "too rude", True),
        ("judge", "abort", "too rude", False),
    ]
    kinds = {s["name"]: s["kind"] for s in view["spans"]}
    assert kinds["chat echo-1"] == "model" and kinds["invoke_agent support"] == "agent"
    assert all(s["startMs"] >= 0 and s["durationMs"] >= 0 for s in view["spans"])


async def test_timeline_shows_who_refused_a_call_and_why() -> None:
    from sluicegate import Agent, create_tool
    from sluicegate.processors import ToolCallLimit
    from sluicegate.testing import MockModel, text_step, tool_call_step
    from sluicegate.tracing import configure

    telemetry = configure(in_memory=True, set_global=False)
    try:
        send = create_tool(id="send_email", description="send", execute=lambda args, context: "sent")
        model = MockModel(
            [tool_call_step(("c1", "send_email", {}), ("c2", "send_email", {})), text_step("ok")]
        )
        limit = ToolCallLimit(limits={"send_email": 1}, on_limit="answer")
        await Agent("o", model=model, tools=[send], output_processors=[limit]).generate("go")
        view = timeline(list(telemetry.spans()))
    finally:
        telemetry.shutdown()
    refused = [d for d in view["processors"] if d["outcome"] == "refused"]
    assert len(refused) == 1 and refused[0]["processorId"] == "tool-call-limit"
    assert "no longer available" in refused[0]["reason"] and "refused the call" in refused[0]["label"]


def test_buffer_keeps_only_recent_runs() -> None:
    recent = RecentSpans(capacity=3)
    tracer = _provider(recent)
    ids = [_run(tracer) for _ in range(5)]
    with tracer.start_as_current_span("GET /studio"):  # not a run: not kept
        pass
    assert recent.trace_ids() == list(reversed(ids[2:]))
    assert recent.spans(ids[0]) == []


def test_buffer_ignores_runs_of_other_apps() -> None:
    mine = RecentSpans(app_key="a")
    tracer = _provider(mine)
    other = _run(tracer, **{SERVER_APP: "b"})
    own = _run(tracer, **{SERVER_APP: "a"})
    assert mine.trace_ids() == [own]
    assert mine.spans(other) == []


def user(content: object) -> dict[str, object]:
    return {"role": "user", "content": content}


def text(value: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": value}]


def test_rows_carry_what_the_inspector_shows() -> None:
    recent = RecentSpans()
    tracer = _provider(recent)
    with tracer.start_as_current_span("invoke_agent support", attributes={AGENT_ID: "support"}) as run:
        with tracer.start_as_current_span(
            "processor pii output_stream",
            attributes={
                PROCESSOR_ID: "pii",
                PROCESSOR_PHASE: "output_stream",
                PROCESSOR_OUTCOME: "held",
                "sluicegate.stream.chunks_seen": 9,
                "sluicegate.stream.chunks_dropped": 3,
                "sluicegate.stream.chunks_modified": 1,
                "sluicegate.stream.held_chars": 7,
                "sluicegate.stream.held_ms": 1.5,
                "sluicegate.hook.duration_ms": 0.2,
            },
        ) as stream:
            stream.add_event(
                "sluicegate.redaction",
                {"sluicegate.redaction.kind": "email", "sluicegate.redaction.count": 2},
            )
        with tracer.start_as_current_span(
            "processor pii input",
            attributes={
                PROCESSOR_ID: "pii",
                PROCESSOR_PHASE: "input",
                PROCESSOR_OUTCOME: "modified",
                "sluicegate.content.before": json.dumps(
                    {
                        "messages": [
                            {
                                "role": "user",
                                "content": {"format": 2, "parts": [{"type": "text", "text": "a@b.co"}]},
                            }
                        ]
                    }
                ),
                "sluicegate.content.after": json.dumps(
                    [{"role": "user", "content": {"parts": [{"type": "text", "text": "[EMAIL]"}]}}]
                ),
            },
        ):
            pass
        with tracer.start_as_current_span(
            "chat gpt-4o-mini",
            attributes={
                "gen_ai.request.model": "gpt-4o-mini",
                "gen_ai.usage.input_tokens": 12,
                "gen_ai.usage.output_tokens": 3,
                "sluicegate.usage.cost_usd": 0.0000036,
                "gen_ai.input.messages": json.dumps(
                    [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
                ),
                "gen_ai.output.messages": json.dumps(
                    [{"role": "assistant", "parts": [{"type": "text", "content": "hello"}]}]
                ),
            },
        ):
            pass
        with tracer.start_as_current_span(
            "execute_tool weather",
            attributes={
                "gen_ai.tool.name": "weather",
                "gen_ai.tool.call.arguments": '{"city":"Paris"}',
                "gen_ai.tool.call.result": '{"forecast":"sunny"}',
            },
        ):
            pass
    view = timeline(recent.spans(format(run.get_span_context().trace_id, "032x")))
    rows = {row["name"]: row for row in view["spans"]}
    stream_row = rows["processor pii output_stream"]
    assert stream_row["decision"]["label"] == "pii · output_stream: held"
    assert stream_row["detail"]["held"] == {"chars": 7, "ms": 1.5}
    assert stream_row["detail"]["chunks"] == {"seen": 9, "dropped": 3, "modified": 1}
    assert stream_row["detail"]["redactions"] == {"email": 2}
    assert stream_row["detail"]["hookMs"] == 0.2
    change = rows["processor pii input"]["detail"]["change"]
    assert change == {"before": "user: a@b.co", "after": "user: [EMAIL]"}
    model = rows["chat gpt-4o-mini"]["detail"]
    assert (model["inputTokens"], model["outputTokens"], model["costUsd"]) == (12, 3, 0.0000036)
    assert (model["prompt"], model["answer"]) == ("user: hi", "assistant: hello")
    tool = rows["execute_tool weather"]["detail"]
    assert json.loads(tool["arguments"]) == {"city": "Paris"} and json.loads(tool["result"]) == {
        "forecast": "sunny"
    }
    # nothing captured: no content keys at all
    assert "change" not in stream_row["detail"]


def test_a_stored_span_reads_back_as_the_span_it_was() -> None:
    recent = RecentSpans()
    trace_id = _run(_provider(recent))
    spans = recent.spans(trace_id)
    again = [span_from_record(stored.record) for stored in (stored_span(s) for s in spans) if stored]
    assert timeline([s for s in again if s is not None]) == timeline(spans)
    assert span_from_record({"name": "broken"}) is None


async def test_apps_share_one_span_processor_and_a_closed_app_leaves_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OpenTelemetry cannot remove a span processor: one per app would keep every app ever made."""
    provider = TracerProvider()
    monkeypatch.setattr(trace, "get_tracer_provider", lambda: provider)
    apps = [install_recent_spans(10) for _ in range(5)]
    monkeypatch.undo()
    processors = provider._active_span_processor._span_processors
    assert len(processors) == 1
    tracer = provider.get_tracer("test")
    trace_id = _run(tracer)
    assert all(app.spans(trace_id) for app in apps)
    await apps[0].aclose()
    later = _run(tracer)
    assert apps[0].spans(later) == [] and apps[1].spans(later)
