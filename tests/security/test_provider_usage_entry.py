"""Provider token counts are checked where they enter (`Usage.from_v2`): a negative, NaN or
infinite count must not reach run totals, span attributes or JSON bodies, where it crashed
tracing (`int(inf)`) and made result bodies invalid JSON."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.stream.usage import Usage
from sluicegate.testing import MockModel, text_step


@pytest.mark.parametrize("bad", [-5, math.nan, math.inf, "12", True])
def test_unusable_counts_read_as_zero_and_are_named(bad: Any) -> None:
    usage = Usage.from_v2({"inputTokens": 10, "outputTokens": bad, "totalTokens": 15})
    assert usage.input_tokens == 10
    assert usage.output_tokens == 0
    assert usage.unusable == f"output_tokens is {bad!r}"


def test_good_counts_are_kept_and_not_flagged() -> None:
    usage = Usage.from_v2({"inputTokens": 10, "outputTokens": 5.0, "cachedInputTokens": 3})
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (10, 5, 15)
    assert usage.cached_input_tokens == 3
    assert usage.unusable is None
    assert "unusable" not in usage.to_dict()


@pytest.mark.parametrize("bad", [math.nan, math.inf, -1e9])
async def test_a_run_with_unusable_usage_reports_finite_json(bad: float) -> None:
    step = text_step("ok")
    step[-1]["usage"] = {"inputTokens": bad, "outputTokens": bad, "totalTokens": bad}
    agent = Agent(name="a", instructions="i", model=MockModel([step]))
    result = await agent.generate("hi")
    assert result.text == "ok"
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.total_tokens) == (0, 0, 0)
    finish = result.steps[-1].usage
    assert finish.unusable and "input_tokens" in finish.unusable
    json.dumps(result.usage.to_dict(), allow_nan=False)
