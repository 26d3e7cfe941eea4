"""With fallback models, each model call has its own `chat <model>` span: the failed one
carries its error, the one that answered its usage, which is what the studio timeline shows."""

from __future__ import annotations

from opentelemetry.trace import StatusCode
from tests.tracing.helpers import by_name

from sluicegate import Agent
from sluicegate.errors import APICallError
from sluicegate.testing import MockModel, text_step
from sluicegate.tracing import Telemetry


async def test_every_model_call_has_a_span_naming_its_model(telemetry: Telemetry) -> None:
    down = APICallError("Internal server error", status_code=500, is_retryable=True)
    primary = MockModel([down], provider="openai", model_id="gpt-5")
    backup = MockModel([text_step("hello", input_tokens=7)], provider="anthropic", model_id="claude-x")
    await Agent("a", model=[primary, backup], max_retries=0).generate("hi")
    spans = telemetry.spans()
    (failed,) = by_name(spans, "chat gpt-5")
    (served,) = by_name(spans, "chat claude-x")
    assert failed.status.status_code is StatusCode.ERROR
    assert failed.attributes["gen_ai.provider.name"] == "openai"
    assert served.status.status_code is not StatusCode.ERROR
    assert served.attributes["gen_ai.provider.name"] == "anthropic"
    assert served.attributes["gen_ai.usage.input_tokens"] == 7
    assert failed.attributes["sluicegate.step_number"] == served.attributes["sluicegate.step_number"] == 0
