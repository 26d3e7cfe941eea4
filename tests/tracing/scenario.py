"""One run that meets every kind of span: an API error an error processor recovers, a tool
loop, an input guardrail that redacts, an output guardrail that retries once, and a stream
guardrail that redacts the answer."""

from __future__ import annotations

from typing import Any

from sluicegate import Agent, create_tool
from sluicegate.errors import APICallError
from sluicegate.processors import Processor, RegexFilter
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step

USER_EMAIL = "alice.secret@example.com"
ANSWER_EMAIL = "bob.hidden@example.org"
PROMPT = f"What is the weather in Paris? Write to me at {USER_EMAIL}"


async def weather(input: Any, context: Any) -> dict[str, Any]:
    return {"city": input["city"], "forecast": "sunny"}


class RetryOnRateLimit(Processor):
    """Error processor: retries a 429 once."""

    id = "retry-429"

    def process_api_error(self, args: Any) -> Any:
        if isinstance(args.error, APICallError) and args.error.status_code == 429:
            return {"retry": True}
        return None


class NoDrafts(Processor):
    """Output guardrail: rejects a step whose text is a draft, asking the model to retry."""

    id = "no-drafts"

    def process_output_step(self, args: Any) -> Any:
        if "draft" in args.text:
            args.abort("answer was a draft", retry=True)
        return None


class StampToolResult(Processor):
    """Tool-result processor: marks every tool result as checked."""

    id = "stamp-tool-result"

    def process_tool_result(self, args: Any) -> Any:
        return {"result": {**args.result, "checked": True}}


def build_agent() -> tuple[Agent, MockModel]:
    model = MockModel(
        [
            APICallError("rate limited", status_code=429, is_retryable=True),
            tool_call_step(("call-1", "weather", {"city": "Paris"})),
            text_step("draft: maybe sunny", input_tokens=20, output_tokens=4),
            text_step(
                f"Sunny in Paris. Ask {ANSWER_EMAIL} for more.", input_tokens=30, output_tokens=9, pieces=4
            ),
        ]
    )
    pii_in = RegexFilter(presets=["pii"], strategy="redact", phase="input")
    pii_in.id = "pii-input"
    pii_out = RegexFilter(presets=["pii"], strategy="redact", phase="output")
    pii_out.id = "pii-output"
    tool = create_tool(
        id="weather",
        description="Get the weather",
        input_schema={
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
        execute=weather,
    )
    agent = Agent(
        "support",
        model=model,
        tools=[tool],
        input_processors=[pii_in],
        output_processors=[NoDrafts(), pii_out, StampToolResult()],
        error_processors=[RetryOnRateLimit()],
        max_retries=0,  # the error processor, not the provider retry, recovers the 429
    )
    return agent, model
