"""Metrics by processor id: tripwires, violations, retries, detector calls, hook durations,
model latency and token usage."""

from __future__ import annotations

import json
from typing import Any

from tests.tracing.scenario import PROMPT, build_agent

from sluicegate import Agent
from sluicegate.processors import ModerationProcessor
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step
from sluicegate.tracing import Telemetry


def points(telemetry: Telemetry, name: str) -> list[tuple[dict[str, Any], Any]]:
    return sorted(telemetry.metrics().get(name, []), key=lambda p: sorted(p[0].items()))


async def test_run_metrics_by_processor_id(telemetry: Telemetry) -> None:
    agent, _ = build_agent()
    await agent.generate(PROMPT)
    assert points(telemetry, "sluicegate.processor.tripwires") == [
        (
            {
                "sluicegate.processor.id": "no-drafts",
                "sluicegate.processor.phase": "output_step",
                "sluicegate.tripwire.retry": True,
            },
            1,
        )
    ]
    assert points(telemetry, "sluicegate.processor.retries") == [
        ({"sluicegate.processor.id": "no-drafts", "sluicegate.processor.phase": "output_step"}, 1),
        ({"sluicegate.processor.id": "retry-429", "sluicegate.processor.phase": "api_error"}, 1),
    ]
    assert points(telemetry, "sluicegate.processor.violations") == [
        ({"sluicegate.processor.id": "no-drafts"}, 1),
    ]
    durations = {
        (a["sluicegate.processor.id"], a["sluicegate.processor.phase"]): value[0]
        for a, value in points(telemetry, "sluicegate.processor.hook.duration")
    }
    assert durations == {
        ("pii-input", "input"): 1,
        ("retry-429", "api_error"): 1,
        ("no-drafts", "output_step"): 3,
        ("stamp-tool-result", "tool_result"): 1,
        ("pii-output", "tool_result"): 1,
        ("pii-output", "tool_call"): 1,
        ("pii-output", "output_stream"): 4,  # one observation per step
        ("pii-output", "output_result"): 1,
    }
    latency = points(telemetry, "gen_ai.client.operation.duration")
    assert [(a.get("error.type"), value[0]) for a, value in latency] == [("APICallError", 1), (None, 3)]
    tokens = {a["gen_ai.token.type"]: value for a, value in points(telemetry, "gen_ai.client.token.usage")}
    assert tokens == {"input": (3, 60), "output": (3, 18)}


async def test_detector_calls_are_counted_by_the_guardrail_they_serve(telemetry: Telemetry) -> None:
    verdict = json.dumps({"flagged": False, "categories": {}, "reason": None})
    detector_model = MockModel([text_step(verdict), text_step(verdict)])
    guard = ModerationProcessor(model=detector_model)
    guard.id = "mod-guard"
    agent = Agent("checked", model=MockModel([text_step("hello")]), input_processors=[guard])
    await agent.generate("first message")
    assert points(telemetry, "sluicegate.detector.calls") == [({"sluicegate.processor.id": "mod-guard"}, 1)]
