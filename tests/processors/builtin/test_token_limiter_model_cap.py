"""The output `TokenLimiter` also caps the model call's `max_output_tokens`, so the model stops
generating text that would be discarded."""

from __future__ import annotations

import pytest

from sluicegate import Agent
from sluicegate.processors import TokenLimiter
from sluicegate.testing import MockModel, text_step, tool_call_step
from sluicegate.tools import tool


async def test_the_model_is_asked_for_no_more_than_the_limit() -> None:
    model = MockModel([text_step("short")])
    agent = Agent("a", model=model, output_processors=[TokenLimiter(limit=50)])
    await agent.generate("hi")
    assert model.calls[0].max_output_tokens == 50 + 16


async def test_a_smaller_caller_setting_wins_and_the_cap_can_be_turned_off() -> None:
    model = MockModel([text_step("short")])
    agent = Agent("a", model=model, output_processors=[TokenLimiter(limit=50)])
    await agent.generate("hi", model_settings={"max_output_tokens": 20})
    assert model.calls[0].max_output_tokens == 20

    model = MockModel([text_step("short")])
    limiter = TokenLimiter(limit=50, cap_model_output=False)
    await Agent("a", model=model, output_processors=[limiter]).generate("hi")
    assert model.calls[0].max_output_tokens is None

    model = MockModel([text_step("short")])
    await Agent("a", model=model, output_processors=[TokenLimiter(limit=50, count_mode="part")]).generate(
        "hi"
    )
    assert model.calls[0].max_output_tokens is None


async def test_later_steps_get_what_is_left() -> None:
    @tool
    def lookup(query: str) -> str:
        """Look something up."""
        return "found"

    words = " ".join(["word"] * 30)
    model = MockModel([tool_call_step(("c1", "lookup", {"query": "x"}), text=words), text_step("done")])
    agent = Agent(
        "a", model=model, tools=[lookup], output_processors=[TokenLimiter(limit=100, output_token_margin=0)]
    )
    await agent.generate("hi")
    first, second = (call.max_output_tokens for call in model.calls)
    assert first == 100
    assert second is not None and second < 100 - 20


def test_bad_options_are_rejected() -> None:
    with pytest.raises(ValueError):
        TokenLimiter(limit=10, cap_model_output="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        TokenLimiter(limit=10, output_token_margin=-1)
