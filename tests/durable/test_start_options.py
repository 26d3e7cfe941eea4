"""`TemporalRuns.start`'s per-call `tool_choice` and `max_processor_retries`: JSON options,
checked as a call in one process checks them, before anything reaches Temporal."""

from __future__ import annotations

from typing import Any

import pytest

from sluicegate.durable.temporal.runs import check_tuning
from sluicegate.errors import InvalidInputError


@pytest.mark.parametrize(
    "choice",
    [
        None,
        "auto",
        "none",
        "required",
        {"type": "tool", "tool_name": "lookup"},
        {"type": "tool", "toolName": "x"},
    ],
)
def test_the_tool_choices_a_call_takes_are_taken(choice: Any) -> None:
    check_tuning(choice, 2)


@pytest.mark.parametrize(
    ("choice", "retries", "named"),
    [
        ("sometimes", None, "tool_choice"),
        ({"type": "tool"}, None, "tool_name"),
        ({"type": "tool", "tool_name": 3}, None, "tool_choice"),
        ({"type": "tool", "tool_name": "x", "extra": object()}, None, "tool_choice"),
        (None, -1, "max_processor_retries"),
        (None, True, "max_processor_retries"),
        (None, "2", "max_processor_retries"),
    ],
)
def test_a_bad_option_is_refused_by_name(choice: Any, retries: Any, named: str) -> None:
    with pytest.raises(InvalidInputError, match=named):
        check_tuning(choice, retries)
