"""RefusalHandler: a refused step or call is retried once with the rephrasing instruction."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.errors import APICallError, ConfigurationError
from sluicegate.processors import RefusalHandler
from sluicegate.processors.builtin.refusal_handler import DEFAULT_TEXT_PATTERN
from sluicegate.testing import MockModel, text_step, tool_call_step


def refused_step(text: str = "", reason: str = "content-filter") -> list[dict[str, Any]]:
    step = text_step(text)
    step[-1] = {**step[-1], "finishReason": reason}
    return step


def texts(prompt: list[dict[str, Any]]) -> list[tuple[str, str]]:
    out = []
    for message in prompt:
        content = message["content"]
        if isinstance(content, str):
            out.append((message["role"], content))
        else:
            out.append((message["role"], " ".join(p.get("text", "") for p in content)))
    return out


def agent(model: MockModel, handler: RefusalHandler | None = None, **kwargs: Any) -> Agent:
    handler = handler or RefusalHandler()
    return Agent("a", model=model, output_processors=[handler], error_processors=[handler], **kwargs)


async def test_content_filter_finish_is_retried_once_with_the_instruction() -> None:
    model = MockModel([refused_step(), text_step("Here is how TLS handshakes work.")])
    result = await agent(model).generate("explain TLS")
    assert result.text == "Here is how TLS handshakes work."
    assert len(model.calls) == 2
    feedback = [text for role, text in texts(model.calls[1].prompt) if role == "system"]
    assert any("it was a refusal" in text for text in feedback)
    assert result.tripwire is None


async def test_a_second_refusal_is_the_answer_and_never_loops() -> None:
    model = MockModel([refused_step("I can't help with that."), refused_step("I can't help with that.")])
    result = await agent(model).generate("x")
    assert len(model.calls) == 2
    assert result.text == "I can't help with that."
    assert result.tripwire is None


async def test_refusal_text_without_a_refusal_finish_reason_is_detected() -> None:
    model = MockModel(
        [text_step("I'm sorry, but I can't assist with that."), text_step("Sure: step one ...")]
    )
    result = await agent(model).generate("x")
    assert result.text == "Sure: step one ..."
    assert len(model.calls) == 2


async def test_answers_are_left_alone() -> None:
    long_refusal_opening = "I can't help with the first part, but " + "here is the rest. " * 40
    for step in (
        text_step("Here is the code. I can't guarantee it compiles."),
        text_step(long_refusal_opening),
        tool_call_step(("c1", "lookup", {}), text="I can't answer without looking it up."),
    ):
        model = MockModel([step, text_step("unused")])
        handler = RefusalHandler()
        outcome: list[str] = []
        handler.on_violation = lambda v, seen=outcome: seen.append(v.message)
        await agent(model, handler).generate("x", max_steps=1)
        assert len(model.calls) == 1
        assert outcome == []


async def test_text_detection_can_be_turned_off_and_replaced() -> None:
    model = MockModel([text_step("I can't help with that."), text_step("unused")])
    result = await agent(model, RefusalHandler(text_patterns=[])).generate("x")
    assert len(model.calls) == 1 and result.text == "I can't help with that."

    model = MockModel([text_step("NOPE."), text_step("fine")])
    result = await agent(model, RefusalHandler(text_patterns=[r"^nope\b"])).generate("x")
    assert result.text == "fine"


def test_default_text_pattern_needs_refusal_as_the_opening_words() -> None:
    refusals = [
        "I can't help with that.",
        "Sorry, but I cannot assist with this request.",
        "I\u2019m unable to comply.",
        "I must decline that request.",
        "I'm sorry, I can't.",
    ]
    answers = ["Sure! I can't wait to help", "I cannot stress enough how important this is", "icannot"]
    assert all(DEFAULT_TEXT_PATTERN.search(text) for text in refusals)
    assert not any(DEFAULT_TEXT_PATTERN.search(text) for text in answers)


async def test_custom_instruction_reaches_the_model() -> None:
    model = MockModel([refused_step(reason="refusal"), text_step("ok")])
    await agent(model, RefusalHandler(instruction="rephrase neutrally")).generate("x")
    assert any("rephrase neutrally" in text for _, text in texts(model.calls[1].prompt))


def policy_error(code: str = "content_policy_violation") -> APICallError:
    body = json.dumps({"error": {"message": "Your request was rejected", "code": code}})
    return APICallError("rejected", status_code=400, response_body=body)


async def test_a_policy_error_is_retried_once_with_a_reminder_message() -> None:
    model = MockModel([policy_error(), text_step("answered")])
    result = await agent(model).generate("x")
    assert result.text == "answered"
    last_user = [text for role, text in texts(model.calls[1].prompt) if role == "user"][-1]
    assert last_user.startswith("<system-reminder>it was a refusal")


async def test_a_repeated_policy_error_propagates() -> None:
    model = MockModel([policy_error("cyber_policy"), policy_error("cyber_policy"), text_step("unused")])
    with pytest.raises(APICallError):
        await agent(model).generate("x")
    assert len(model.calls) == 2


async def test_other_errors_and_other_codes_are_not_refusals() -> None:
    handler = RefusalHandler()
    assert not handler.is_refusal_error(APICallError("boom", status_code=500))
    assert not handler.is_refusal_error(policy_error("invalid_request_error"))
    assert handler.is_refusal_error(
        APICallError("x", data={"error": {"innererror": {"code": "ResponsibleAIPolicyViolation"}}})
    )
    wrapped = RuntimeError("stream failed")
    wrapped.__cause__ = policy_error("content_filter")
    assert handler.is_refusal_error(wrapped)
    assert not RefusalHandler(error_codes=["other"]).is_refusal_error(policy_error())


async def test_one_retry_per_run_across_both_lanes() -> None:
    model = MockModel([policy_error(), refused_step("I can't help with that."), text_step("unused")])
    result = await agent(model).generate("x")
    assert len(model.calls) == 2
    assert result.text == "I can't help with that."


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"max_retries": 2}, "max_retries"),
        ({"instruction": ""}, "instruction"),
        ({"finish_reasons": "content-filter"}, "finish_reasons"),
        ({"text_patterns": "I can't"}, "text_patterns"),
        ({"text_patterns": ["("]}, "text_patterns"),
        ({"max_refusal_chars": 0}, "max_refusal_chars"),
        ({"error_codes": [1]}, "error_codes"),
    ],
)
def test_bad_options_are_configuration_errors(options: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigurationError, match=named):
        RefusalHandler(**options)
