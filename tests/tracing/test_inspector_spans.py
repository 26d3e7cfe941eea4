"""What the studio's inspector reads off the spans: held versus modified stream processors,
redactions by kind, before/after content (only with capture_changes) and model cost."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from tests.tracing.helpers import by_name

from sluicegate import Agent
from sluicegate.errors import ConfigurationError
from sluicegate.processors import PIIDetector
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step
from sluicegate.tracing import Telemetry, configure


@pytest.fixture
def telemetry_with_changes() -> Iterator[Telemetry]:
    setup = configure(in_memory=True, capture_content=True, capture_changes=True, set_global=False)
    yield setup
    setup.shutdown()


def agent_for(answer: str, *, model_id: str = "mock-model-id") -> Agent:
    return Agent(
        "a",
        model=MockModel([text_step(answer, pieces=8)], model_id=model_id),
        input_processors=[PIIDetector(llm="never", strategy="redact")],
        output_processors=[PIIDetector(llm="never", strategy="redact")],
    )


def stream_span(telemetry: Telemetry) -> dict[str, object]:
    (span,) = by_name(telemetry.spans(), "processor pii-detector output_stream")
    return {**span.attributes, "events": [(e.name, dict(e.attributes or {})) for e in span.events]}


async def test_a_hold_back_that_only_regrouped_the_text_is_held_not_modified(telemetry: Telemetry) -> None:
    # digits that might start a phone number are held until they cannot
    result = await agent_for("It costs 555 dollars, not 1234 thanks").generate("hi")
    assert result.text == "It costs 555 dollars, not 1234 thanks"
    span = stream_span(telemetry)
    assert span["sluicegate.processor.outcome"] == "held"
    assert span["sluicegate.stream.chunks_dropped"] > 0  # the chunks were regrouped...
    assert span["sluicegate.stream.held_chars"] > 0  # ...by holding text back for a while
    assert span["sluicegate.stream.held_ms"] >= 0
    assert span["events"] == []
    assert "sluicegate.content.before" not in span


async def test_a_redaction_is_modified_with_its_kind_counted(telemetry: Telemetry) -> None:
    result = await agent_for("Mail bob@example.com or eve@example.org now").generate("hi")
    assert "bob@example.com" not in result.text
    span = stream_span(telemetry)
    assert span["sluicegate.processor.outcome"] == "modified"
    assert span["events"] == [
        ("sluicegate.redaction", {"sluicegate.redaction.kind": "email", "sluicegate.redaction.count": 2})
    ]
    # content is not recorded without capture_changes
    assert "sluicegate.content.before" not in span and "sluicegate.content.after" not in span


async def test_an_input_hook_redaction_is_counted_on_its_span(telemetry: Telemetry) -> None:
    await agent_for("fine").generate("my mail is x@y.com")
    (span,) = by_name(telemetry.spans(), "processor pii-detector input")
    assert span.attributes["sluicegate.processor.outcome"] == "modified"
    assert [(e.name, dict(e.attributes or {})) for e in span.events] == [
        ("sluicegate.redaction", {"sluicegate.redaction.kind": "email", "sluicegate.redaction.count": 1})
    ]


async def test_capture_content_alone_records_no_before_and_after(telemetry_with_content: Telemetry) -> None:
    await agent_for("Mail bob@example.com now").generate("my mail is x@y.com")
    for span in telemetry_with_content.spans():
        assert "sluicegate.content.before" not in span.attributes
        assert "sluicegate.content.after" not in span.attributes


async def test_capture_changes_records_what_a_processor_changed(telemetry_with_changes: Telemetry) -> None:
    await agent_for("Mail bob@example.com now").generate("my mail is x@y.com")
    span = stream_span(telemetry_with_changes)
    assert span["sluicegate.content.before"] == "Mail bob@example.com now"
    assert span["sluicegate.content.after"] == "Mail b*b@*******.com now"
    (hook,) = by_name(telemetry_with_changes.spans(), "processor pii-detector input")
    before = json.loads(hook.attributes["sluicegate.content.before"])
    after = json.loads(hook.attributes["sluicegate.content.after"])
    assert "x@y.com" in json.dumps(before) and "x@y.com" not in json.dumps(after)
    # a processor that changed nothing carries no content
    (result_span,) = by_name(telemetry_with_changes.spans(), "processor pii-detector output_result")
    assert result_span.attributes["sluicegate.processor.outcome"] == "pass"
    assert "sluicegate.content.before" not in result_span.attributes


async def test_a_priced_model_call_carries_its_cost(telemetry: Telemetry) -> None:
    await agent_for("fine", model_id="gpt-4o-mini").generate("hi")
    (chat,) = by_name(telemetry.spans(), "chat gpt-4o-mini")
    assert chat.attributes["gen_ai.usage.input_tokens"] == 10
    assert chat.attributes["gen_ai.usage.output_tokens"] == 5
    assert chat.attributes["sluicegate.usage.cost_usd"] == pytest.approx((10 * 0.15 + 5 * 0.6) / 1e6)


async def test_an_unpriced_model_call_has_no_cost(telemetry: Telemetry) -> None:
    await agent_for("fine").generate("hi")
    (chat,) = by_name(telemetry.spans(), "chat mock-model-id")
    assert "sluicegate.usage.cost_usd" not in chat.attributes


def test_capture_changes_needs_capture_content() -> None:
    with pytest.raises(ConfigurationError, match="capture_changes"):
        configure(in_memory=True, capture_changes=True, set_global=False)


async def test_an_input_hook_change_keeps_the_system_prompt_on_both_sides(
    telemetry_with_changes: Telemetry,
) -> None:
    """The hook returns the messages without the system prompt, which the runner keeps: "after"
    shows it too, so the inspector's diff does not strike it through as deleted."""
    from sluicegate.server.traces import readable

    agent = Agent(
        "a",
        instructions="You are the support desk.",
        model=MockModel([text_step("fine")]),
        input_processors=[PIIDetector(llm="never", strategy="redact")],
    )
    await agent.generate("my mail is x@y.com")
    (hook,) = by_name(telemetry_with_changes.spans(), "processor pii-detector input")
    before = readable(hook.attributes["sluicegate.content.before"])
    after = readable(hook.attributes["sluicegate.content.after"])
    assert before is not None and after is not None
    assert "system: You are the support desk." in before.splitlines()
    assert "system: You are the support desk." in after.splitlines()
    assert "x@y.com" in before and "x@y.com" not in after
