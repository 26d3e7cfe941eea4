from __future__ import annotations

from typing import Any

import pytest

from sluicegate import Agent, RequestContext, create_tool
from sluicegate.errors import ConfigurationError
from sluicegate.processors import ToolSearchProcessor
from sluicegate.request_context import THREAD_ID_KEY
from sluicegate.testing import MockModel, text_step, tool_call_step


def make(name: str, description: str, *params: str) -> Any:
    schema = {"type": "object", "properties": {p: {"type": "string"} for p in params}}
    return create_tool(
        id=name, description=description, input_schema=schema, execute=lambda i, c: {"tool": name}
    )


LIBRARY = [
    make("get_weather", "Current weather forecast for a city", "city"),
    make("send_email", "Send an email message", "recipient", "subject"),
    make("create_issue", "Open an issue in a GitHub repository", "repository", "title"),
    make("convert_currency", "Convert an amount between currencies", "amount", "iso_code"),
    make("get_time", "The current time", "timezone"),
]


def test_ranked_search_over_names_descriptions_and_parameters() -> None:
    processor = ToolSearchProcessor(tools=LIBRARY)
    assert processor.search("weather")[0]["name"] == "get_weather"
    assert processor.search("github issue")[0]["name"] == "create_issue"
    assert processor.search("iso_code")[0]["name"] == "convert_currency"  # parameter names are indexed
    assert processor.search("nothing-like-this") == []


def test_top_k_and_min_score() -> None:
    assert len(ToolSearchProcessor(tools=LIBRARY, top_k=1).search("get current")) == 1
    assert len(ToolSearchProcessor(tools=LIBRARY).search("get current")) > 1
    assert ToolSearchProcessor(tools=LIBRARY, min_score=100).search("weather") == []


def test_reserved_and_unknown_names_are_rejected() -> None:
    with pytest.raises(ConfigurationError):
        ToolSearchProcessor(tools=[make("load_tool", "x")])
    with pytest.raises(ConfigurationError):
        ToolSearchProcessor(tools=LIBRARY, always_loaded=["nope"])


async def test_search_load_use_within_a_request() -> None:
    model = MockModel(
        [
            tool_call_step(("c1", "search_tools", {"query": "weather"})),
            tool_call_step(("c2", "load_tool", {"toolName": "get_weather"})),
            tool_call_step(("c3", "get_weather", {"city": "Oslo"})),
            text_step("done"),
        ]
    )
    agent = Agent(name="s", model=model, input_processors=[ToolSearchProcessor(tools=LIBRARY)])
    result = await agent.generate("weather in Oslo?", max_steps=6)
    assert [sorted(c.tool_names()) for c in model.calls] == [
        ["load_tool", "search_tools"],
        ["load_tool", "search_tools"],
        ["get_weather", "load_tool", "search_tools"],
        ["get_weather", "load_tool", "search_tools"],
    ]
    results = {c.payload.tool_name: c.payload.result for c in result.tool_results}
    assert results["search_tools"]["results"][0]["name"] == "get_weather"
    assert results["get_weather"] == {"tool": "get_weather"}
    assert any("search_tools" in m["content"] for m in model.calls[0].prompt if m["role"] == "system")


async def test_always_loaded_and_agent_tools_stay_available() -> None:
    own = make("own_tool", "the agent's own tool")
    model = MockModel([text_step("hi")])
    agent = Agent(
        name="s",
        model=model,
        tools=[own],
        input_processors=[ToolSearchProcessor(tools=LIBRARY, always_loaded=["get_time"])],
    )
    await agent.generate("hello")
    assert sorted(model.calls[0].tool_names()) == ["get_time", "load_tool", "own_tool", "search_tools"]


async def test_loaded_tools_persist_per_thread_only() -> None:
    processor = ToolSearchProcessor(tools=LIBRARY)

    def context(thread: str) -> RequestContext:
        ctx = RequestContext()
        ctx.set(THREAD_ID_KEY, thread)
        return ctx

    first = MockModel([tool_call_step(("c1", "load_tool", {"toolNames": ["send_email"]})), text_step("ok")])
    await Agent(name="s", model=first, input_processors=[processor]).generate(
        "load", request_context=context("t1"), max_steps=3
    )
    same = MockModel([text_step("ok")])
    await Agent(name="s", model=same, input_processors=[processor]).generate(
        "again", request_context=context("t1")
    )
    other = MockModel([text_step("ok")])
    await Agent(name="s", model=other, input_processors=[processor]).generate(
        "again", request_context=context("t2")
    )
    anonymous = MockModel([text_step("ok")])
    await Agent(name="s", model=anonymous, input_processors=[processor]).generate("again")
    assert "send_email" in same.calls[0].tool_names()
    assert "send_email" not in other.calls[0].tool_names()
    assert "send_email" not in anonymous.calls[0].tool_names()


def test_ttl_expires_thread_state() -> None:
    processor = ToolSearchProcessor(tools=LIBRARY, ttl=1)
    names = processor.loaded_names("t", {})
    names.add("get_time")
    import time

    time.sleep(0.01)
    assert processor.loaded_names("t", {}) == set()
    keep = ToolSearchProcessor(tools=LIBRARY, ttl=0)
    keep.loaded_names("t", {}).add("get_time")
    time.sleep(0.01)
    assert keep.loaded_names("t", {}) == {"get_time"}
