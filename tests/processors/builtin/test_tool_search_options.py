"""`ToolSearchProcessor` takes Mastra's `search={"topK", "minScore"}` shape, and rejects what it
does not understand."""

from __future__ import annotations

from typing import Any

import pytest

from sluicegate.errors import ConfigurationError
from sluicegate.processors import ToolSearchProcessor
from sluicegate.tools import tool


@tool
def get_weather(city: str) -> str:
    """Current weather for a city."""
    return "sunny"


@tool
def get_time(zone: str) -> str:
    """Current time in a time zone."""
    return "noon"


@pytest.mark.parametrize("search", [{"top_k": 1, "min_score": 0.5}, {"topK": 1, "minScore": 0.5}])
def test_search_options_in_both_spellings(search: dict[str, Any]) -> None:
    processor = ToolSearchProcessor(tools=[get_weather, get_time], search=search)
    assert (processor.top_k, processor.min_score) == (1, 0.5)


def test_flat_keywords_still_work() -> None:
    processor = ToolSearchProcessor(tools=[get_weather], top_k=2, min_score=1)
    assert (processor.top_k, processor.min_score) == (2, 1.0)


@pytest.mark.parametrize(
    "options",
    [
        {"search": {"top_k": 1, "limit": 3}},  # an unknown key
        {"search": {"topk": 1}},  # a misspelling
        {"search": [("top_k", 1)]},
        {"search": {"top_k": 0}},
        {"search": {"top_k": "3"}},
        {"search": {"min_score": "high"}},
        {"search": {"top_k": 2}, "top_k": 3},  # both ways at once
        {"ttl": -1},
    ],
)
def test_options_it_does_not_understand_are_rejected(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        ToolSearchProcessor(tools=[get_weather], **options)
