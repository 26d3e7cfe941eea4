from __future__ import annotations

import json
from typing import Any

from sluicegate import Agent, create_tool
from sluicegate.processors import ToolCallFilter
from sluicegate.testing import MockModel, text_step, tool_call_step

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}
search = create_tool(
    id="search",
    description="search",
    input_schema=SCHEMA,
    execute=lambda i, c: {"raw": "SECRET_RAW_RESULT"},
    to_model_output=lambda r: {"type": "text", "value": "Compact search summary"},
)
weather = create_tool(id="weather", description="weather", input_schema=SCHEMA, execute=lambda i, c: "sunny")


def history() -> list[Any]:
    def pair(call_id: str, name: str, output: Any) -> list[Any]:
        return [
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool-call",
                        "toolCallId": call_id,
                        "toolName": name,
                        "input": {"q": "SECRET_QUERY"},
                    }
                ],
            },
            {
                "role": "tool",
                "content": [
                    {"type": "tool-result", "toolCallId": call_id, "toolName": name, "output": output}
                ],
            },
        ]

    return [
        {"role": "user", "content": "earlier"},
        *pair("h1", "search", {"type": "json", "value": "old-search"}),
        *pair("h2", "weather", {"type": "text", "value": "old-weather"}),
        {"role": "assistant", "content": "ok"},
    ]


def call_ids(prompt: list[dict[str, Any]]) -> set[str]:
    return {
        p["toolCallId"]
        for m in prompt
        if isinstance(m["content"], list)
        for p in m["content"]
        if p.get("type") in ("tool-call", "tool-result")
    }


async def run(
    processor: ToolCallFilter, steps: list[Any], messages: list[Any] | None = None
) -> tuple[MockModel, Any]:
    model = MockModel(steps)
    agent = Agent(name="f", model=model, tools=[search, weather], input_processors=[processor])
    result = await agent.generate([*(messages or []), {"role": "user", "content": "now"}], max_steps=5)
    return model, result


async def test_default_removes_all_history_tool_calls_but_keeps_the_runs_own() -> None:
    model, result = await run(
        ToolCallFilter(), [tool_call_step(("r1", "weather", {"q": "x"})), text_step("done")], history()
    )
    assert call_ids(model.calls[0].prompt) == set()
    assert call_ids(model.calls[1].prompt) == {"r1"}
    # Only the model's view changed: the stored history keeps every invocation.
    stored = [
        p for m in result.response.messages for p in m.content.parts if p.get("type") == "tool-invocation"
    ]
    assert [p["toolInvocation"]["toolCallId"] for p in stored] == ["r1"]


async def test_exclude_only_named_tools() -> None:
    model, _ = await run(ToolCallFilter(exclude=["search"]), [text_step("done")], history())
    assert call_ids(model.calls[0].prompt) == {"h2"}


async def test_filter_after_tool_steps_keeps_only_recent_tool_steps() -> None:
    steps = [
        tool_call_step(("r1", "weather", {"q": "a"})),
        tool_call_step(("r2", "weather", {"q": "b"})),
        text_step("done"),
    ]
    model, _ = await run(ToolCallFilter(filter_after_tool_steps=1), steps, history())
    assert call_ids(model.calls[0].prompt) == {"h2"}
    assert call_ids(model.calls[2].prompt) == {"r2"}
    model0, _ = await run(
        ToolCallFilter(filter_after_tool_steps=0),
        [tool_call_step(("r1", "weather", {"q": "a"})), text_step("done")],
    )
    assert call_ids(model0.calls[1].prompt) == set()


async def test_preserve_model_output_keeps_only_the_compact_form() -> None:
    steps = [tool_call_step(("r1", "search", {"q": "SECRET_QUERY"})), text_step("done")]
    model, _ = await run(ToolCallFilter(filter_after_tool_steps=0, preserve_model_output=True), steps)
    prompt = json.dumps(model.calls[1].prompt)
    assert "search result:\\nCompact search summary" in prompt
    assert "SECRET_RAW_RESULT" not in prompt and "SECRET_QUERY" not in prompt
    assert all(m["role"] != "tool" for m in model.calls[1].prompt)
    plain, _ = await run(ToolCallFilter(filter_after_tool_steps=0), steps)
    assert "Compact search summary" not in json.dumps(plain.calls[1].prompt)


async def test_persisted_messages_are_not_mutated() -> None:
    steps = [tool_call_step(("r1", "search", {"q": "q"})), text_step("done")]
    _, result = await run(ToolCallFilter(filter_after_tool_steps=0, preserve_model_output=True), steps)
    invocation = next(
        p["toolInvocation"]
        for m in result.response.messages
        for p in m.content.parts
        if p.get("type") == "tool-invocation"
    )
    assert invocation["result"] == {"raw": "SECRET_RAW_RESULT"} and invocation["args"] == {"q": "q"}
