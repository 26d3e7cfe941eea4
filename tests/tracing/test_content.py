"""Content capture: off by default; when on, only what processors let through. Redacted values
never reach an exported span."""

from __future__ import annotations

import json

from tests.tracing.helpers import all_text, by_name
from tests.tracing.scenario import ANSWER_EMAIL, PROMPT, USER_EMAIL, build_agent

from sluicegate.tracing import Telemetry


async def test_by_default_no_prompt_completion_or_redacted_value_is_exported(telemetry: Telemetry) -> None:
    agent, model = build_agent()
    result = await agent.generate(PROMPT)
    text = all_text(telemetry.spans())
    assert USER_EMAIL not in text
    assert ANSWER_EMAIL not in text
    for fragment in ("What is the weather", "Paris?", "Write to me", "Sunny in Paris", "draft: maybe"):
        assert fragment not in text
    assert '"forecast"' not in text and "sunny" not in text
    assert result.text not in text
    # the model did see the redacted prompt (so the values were really there to leak)
    assert USER_EMAIL not in json.dumps(model.calls[-1].prompt)
    for span in telemetry.spans():
        for key in span.attributes:
            assert key not in (
                "gen_ai.input.messages",
                "gen_ai.output.messages",
                "gen_ai.tool.call.arguments",
                "gen_ai.tool.call.result",
            )


async def test_captured_content_is_what_processors_let_through(telemetry_with_content: Telemetry) -> None:
    agent, _ = build_agent()
    await agent.generate(PROMPT)
    spans = telemetry_with_content.spans()
    text = all_text(spans)
    assert USER_EMAIL not in text
    assert ANSWER_EMAIL not in text

    chats = by_name(spans, "chat mock-model-id")
    prompt = json.loads(chats[-1].attributes["gen_ai.input.messages"])
    user_text = json.dumps([m for m in prompt if m["role"] == "user"])
    assert "What is the weather in Paris? Write to me at [EMAIL]" in user_text
    completion = json.loads(chats[-1].attributes["gen_ai.output.messages"])
    assert completion == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "Sunny in Paris. Ask [EMAIL] for more."}],
            "finish_reason": "stop",
        }
    ]
    (tool,) = by_name(spans, "execute_tool weather")
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"city": "Paris"}
    assert json.loads(tool.attributes["gen_ai.tool.call.result"]) == {
        "city": "Paris",
        "forecast": "sunny",
        "checked": True,
    }


async def test_a_blocked_value_in_a_tripwire_reason_is_not_invented(telemetry: Telemetry) -> None:
    """A blocking guardrail's tripwire reason is exported; the built-in ones name the rule,
    not the matched text."""
    from sluicegate import Agent
    from sluicegate.processors import RegexFilter
    from sluicegate.testing import MockModel
    from sluicegate.testing.mock_model import text_step

    guard = RegexFilter(presets=["pii"], strategy="block", phase="input")
    agent = Agent("blocking", model=MockModel([text_step("no")]), input_processors=[guard])
    result = await agent.generate(f"my address is {USER_EMAIL}")
    assert result.tripwire is not None
    spans = telemetry.spans()
    assert USER_EMAIL not in all_text(spans)
    (span,) = by_name(spans, "processor regex-filter input")
    assert span.attributes["sluicegate.processor.outcome"] == "abort"
    assert span.attributes["sluicegate.tripwire.reason"] == result.tripwire.reason
