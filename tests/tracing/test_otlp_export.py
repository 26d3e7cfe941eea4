"""OTLP/HTTP export to a receiver the test starts on 127.0.0.1, decoded from protobuf."""

from __future__ import annotations

from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from tests.tracing.otlp_receiver import OTLPReceiver
from tests.tracing.scenario import PROMPT, USER_EMAIL, build_agent

from sluicegate.tracing import configure


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in any_value.array_value.values)
    return getattr(any_value, kind) if kind else None


def _attributes(items: Any) -> dict[str, Any]:
    return {item.key: _value(item.value) for item in items}


async def test_spans_and_metrics_reach_an_otlp_http_receiver() -> None:
    with OTLPReceiver() as receiver:
        telemetry = configure(otlp_endpoint=receiver.endpoint, set_global=False, service_name="otlp-test")
        try:
            agent, _ = build_agent()
            result = await agent.generate(PROMPT)
            telemetry.force_flush()
        finally:
            telemetry.shutdown()

    headers = [h for p, h, _ in receiver.requests if p == "/v1/traces"]
    assert headers and all(h["content-type"] == "application/x-protobuf" for h in headers)
    spans = []
    for body in receiver.bodies("/v1/traces"):
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            assert _attributes(resource_spans.resource.attributes)["service.name"] == "otlp-test"
            for scope_spans in resource_spans.scope_spans:
                assert scope_spans.scope.name == "sluicegate"
                spans.extend(scope_spans.spans)
    by_id = {span.span_id: span for span in spans}
    names = sorted(span.name for span in spans)
    assert names.count("chat mock-model-id") == 4
    assert "execute_tool weather" in names
    assert "processor no-drafts output_step" in names
    (run,) = [s for s in spans if s.name == "invoke_agent support"]
    assert run.trace_id.hex() == result.trace_id
    assert run.parent_span_id == b""
    for span in spans:
        assert span.trace_id.hex() == result.trace_id
        if span is not run:
            parent = by_id[span.parent_span_id]
            assert parent.name in ("invoke_agent support", "execute_tool weather")
    retried = [_attributes(s.attributes) for s in spans if s.name == "processor no-drafts output_step"]
    assert {
        "sluicegate.processor.id": "no-drafts",
        "sluicegate.processor.phase": "output_step",
        "sluicegate.processor.outcome": "retry",
        "sluicegate.tripwire.reason": "answer was a draft",
        "sluicegate.tripwire.retry": True,
        "sluicegate.step_number": 2,
    }.items() <= retried[1].items()
    assert USER_EMAIL.encode() not in b"".join(receiver.bodies("/v1/traces"))

    metrics: dict[str, list[Any]] = {}
    for body in receiver.bodies("/v1/metrics"):
        request = ExportMetricsServiceRequest()
        request.ParseFromString(body)
        for resource_metrics in request.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    metrics.setdefault(metric.name, []).append(metric)
    (tripwires,) = metrics["sluicegate.processor.tripwires"][:1]
    points = [(_attributes(p.attributes), p.as_int) for p in tripwires.sum.data_points]
    assert points == [
        (
            {
                "sluicegate.processor.id": "no-drafts",
                "sluicegate.processor.phase": "output_step",
                "sluicegate.tripwire.retry": True,
            },
            1,
        )
    ]
    assert "gen_ai.client.operation.duration" in metrics
    assert "sluicegate.processor.hook.duration" in metrics
