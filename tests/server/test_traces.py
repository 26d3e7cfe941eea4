"""The studio's span buffer and timeline, on spans made here with the agreed attributes."""

from __future__ import annotations

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
