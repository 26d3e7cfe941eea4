"""Tools as a Python developer writes them: sync functions off the event loop and concurrent,
`Args:` docstrings as parameter descriptions, the decorated function still callable, failed
calls reported in the results, and no library documentation links in what the model reads."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Any

import pydantic
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluicegate import Agent, create_tool, tool
from sluicegate.errors import ToolError
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step
from sluicegate.tools import Tool, ToolContext
from sluicegate.tools.docstring import parse_docstring


async def test_two_blocking_tools_of_one_step_run_concurrently_off_the_loop() -> None:
    # Each tool blocks until the other has started: run one after the other (or on the event
    # loop thread) they would deadlock and the barrier would time out.
    barrier = threading.Barrier(2, timeout=10)
    loop_thread = threading.get_ident()
    threads: list[int] = []

    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        threads.append(threading.get_ident())
        barrier.wait()
        return key.upper()

    model = MockModel(
        [tool_call_step(("c1", "lookup", {"key": "a"}), ("c2", "lookup", {"key": "b"})), text_step("done")]
    )
    result = await Agent("a", model=model, tools=[lookup]).generate("x")
    assert [r.payload.result for r in result.tool_results] == ["A", "B"]
    assert loop_thread not in threads and len(set(threads)) == 2
    assert not barrier.broken


async def test_a_sync_create_tool_execute_runs_in_a_worker_thread() -> None:
    seen: list[int] = []

    def execute(input: Any, context: Any) -> str:
        seen.append(threading.get_ident())
        return "ok"

    echo = create_tool(id="echo", execute=execute)
    model = MockModel([tool_call_step(("c1", "echo", {})), text_step("done")])
    await Agent("a", model=model, tools=[echo]).generate("x")
    assert seen and seen[0] != threading.get_ident()


async def test_async_tools_stay_on_the_loop() -> None:
    loop = asyncio.get_running_loop()
    seen: list[bool] = []

    @tool
    async def probe() -> str:
        """Check the loop."""
        seen.append(asyncio.get_running_loop() is loop)
        return "ok"

    await Agent(
        "a", model=MockModel([tool_call_step(("c1", "probe", {})), text_step("x")]), tools=[probe]
    ).generate("x")
    assert seen == [True]


def test_args_section_becomes_parameter_descriptions() -> None:
    @tool
    def get_weather(city: str, unit: str = "C") -> str:
        """Current weather for a city.

        Args:
            city: The city name, e.g. "Paris".
            unit (str): Temperature unit:
                "C" or "F".

        Returns:
            A short description.
        """
        return f"{city} {unit}"

    schema = get_weather.json_schema()
    assert get_weather.description == "Current weather for a city."
    assert schema["properties"]["city"]["description"] == 'The city name, e.g. "Paris".'
    assert schema["properties"]["unit"]["description"] == 'Temperature unit: "C" or "F".'
    assert schema["required"] == ["city"]
    assert "description" not in schema  # no class docstring of the generated model


def test_sphinx_params_and_a_plain_docstring() -> None:
    doc = parse_docstring("Add.\n\n:param a: first\n:param int b: second\n:returns: the sum")
    assert doc.description == "Add."
    assert doc.params == {"a": "first", "b": "second"}
    assert parse_docstring("Just text.\n\nMore text.").description == "Just text.\n\nMore text."


def test_a_decorated_function_stays_callable() -> None:
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    @tool(id="mul", description="Multiply")
    async def multiply(a: int, b: int) -> int:
        return a * b

    assert add(2, 3) == 5
    assert asyncio.run(multiply(2, 3)) == 6
    assert add.__name__ == "add" and add.id == "add" and multiply.id == "mul"


async def test_failed_tool_calls_are_in_the_results_and_steps() -> None:
    @tool
    def explode() -> str:
        """Always fails."""
        raise RuntimeError("boom")

    @tool
    def fine() -> str:
        """Works."""
        return "ok"

    model = MockModel([tool_call_step(("c1", "explode", {}), ("c2", "fine", {})), text_step("sorry")])
    result = await Agent("a", model=model, tools=[explode, fine]).generate("x")
    assert [e.payload.tool_name for e in result.tool_errors] == ["explode"]
    assert str(result.tool_errors[0].payload.error) == "boom"
    assert result.steps[0].tool_errors == result.tool_errors
    assert [r.payload.tool_name for r in result.tool_results] == ["fine"]  # as in Mastra


class Booking(pydantic.BaseModel):
    nights: int


async def test_no_documentation_links_reach_the_model() -> None:
    @tool
    def book(booking: Booking) -> str:
        """Book a room."""
        return "booked"

    @tool
    def parse(raw: str) -> int:
        """Parse a booking."""
        return Booking.model_validate_json(raw).nights  # raises a pydantic ValidationError

    model = MockModel(
        [
            tool_call_step(("c1", "book", {"booking": {"nights": "many"}}), ("c2", "parse", {"raw": "{}"})),
            text_step("ok"),
        ]
    )
    await Agent("a", model=model, tools=[book, parse]).generate("x")
    seen = json.dumps(model.calls[1].prompt) + json.dumps(model.calls[0].tools)
    assert "http" not in seen
    assert "nights" in json.dumps(model.calls[1].prompt)  # the errors themselves are there


@settings(max_examples=200, deadline=None)
@given(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters=":\r"), max_size=40),
    st.dictionaries(
        st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True),
        st.from_regex(r"[A-Za-z][A-Za-z0-9 ,.]{0,30}", fullmatch=True),
        max_size=4,
    ),
)
def test_any_google_docstring_splits_into_summary_and_params(summary: str, params: dict[str, str]) -> None:
    lines = [summary.strip() or "Summary.", "", "Args:"]
    lines += [f"    {name}: {text}" for name, text in params.items()]
    lines += ["", "Returns:", "    something"]
    doc = parse_docstring("\n".join(lines))
    assert "Args:" not in doc.description and "Returns:" not in doc.description
    assert doc.params == {name: text.strip() for name, text in params.items() if text.strip()}


def test_a_pydantic_schema_is_generated_once_and_each_caller_gets_its_own_copy(monkeypatch: Any) -> None:
    class Args(pydantic.BaseModel):
        city: str
        days: int = 3

    class Other(pydantic.BaseModel):
        zip: str

    generated: list[str] = []
    real = pydantic.BaseModel.model_json_schema.__func__  # type: ignore[attr-defined]

    def counting(cls: type[pydantic.BaseModel], *args: Any, **kwargs: Any) -> dict[str, Any]:
        generated.append(cls.__name__)
        return real(cls, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(pydantic.BaseModel, "model_json_schema", classmethod(counting))
    forecast = create_tool(id="forecast", input_schema=Args, execute=lambda args, ctx: "sunny")

    first = forecast.json_schema()
    first["properties"]["city"]["description"] = "edited by one request's processor"
    second = forecast.json_schema()
    assert generated == ["Args"]  # every step asks; pydantic builds it once
    assert "description" not in second["properties"]["city"]  # one caller's edit stays its own
    assert second == Args.model_json_schema()

    forecast.input_schema = Other  # a schema swapped after creation is the one sent
    assert set(forecast.json_schema()["properties"]) == {"zip"}


def test_a_tool_says_whether_it_reads_its_context() -> None:
    """A durable run sends the conversation to a tool's activity only when the tool reads its
    context: `@tool` knows from the function's parameters; any other tool is taken to read it."""
    from sluicegate.processors.builtin.tool_retry import RetryingTool, RetryPolicy

    @tool
    def plain(n: int) -> int:
        """Plain."""
        return n

    @tool
    def reading(n: int, context: ToolContext) -> int:
        """Reads."""
        return len(context.messages)

    made = create_tool(id="made", description="Made", execute=lambda args, context: None)
    assert (plain.reads_context, reading.reads_context, made.reads_context) == (False, True, True)
    policy = RetryPolicy(
        max_retries=1, backoff=0, backoff_factor=1, max_backoff=0, jitter=False, retry_on=Exception
    )
    assert RetryingTool(plain, policy).reads_context is False
    assert RetryingTool(reading, policy).reads_context is True
    with pytest.raises(ToolError, match="reads_context must be True or False, got 'no'"):
        Tool(id="odd", execute=lambda args, context: None, reads_context="no")  # type: ignore[arg-type]
