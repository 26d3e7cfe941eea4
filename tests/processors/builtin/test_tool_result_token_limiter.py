from __future__ import annotations

import json
import re
from typing import Any

import pytest

from sluicegate import Agent, create_tool
from sluicegate.errors import ConfigurationError
from sluicegate.processors import ProcessToolResultArgs, ToolResultTokenLimiter
from sluicegate.request_context import RequestContext
from sluicegate.testing import MockModel, text_step, tool_call_step
from sluicegate.tokens import get_encoding

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}
LONG = " ".join(f"line {i}: the quick brown fox jumps over the lazy dog" for i in range(300))
MARKER = re.compile(r"\n\[truncated: showing ([\d,]+) of ([\d,]+) tokens\]$")


def tokens(text: str, encoding: str = "o200k_base") -> int:
    return len(get_encoding(encoding).encode_ordinary(text))


def tool_result(limiter: ToolResultTokenLimiter, result: Any, **fields: Any) -> Any:
    args = ProcessToolResultArgs(
        abort=lambda *a, **k: None,  # type: ignore[arg-type,return-value]
        request_context=RequestContext(),
        tool_name="t",
        tool_call_id="c1",
        result=result,
        **fields,
    )
    out = limiter.process_tool_result(args)
    return result if out is None else out.result


def tool_chunks(chunks: list[Any]) -> list[Any]:
    return [c.payload.result for c in chunks if c.type == "tool-result"]


def prompt_results(prompt: list[dict[str, Any]]) -> list[Any]:
    return [p["output"] for m in prompt if m["role"] == "tool" for p in m["content"]]


async def test_a_long_result_is_cut_everywhere_with_a_marker(collect: Any) -> None:
    search = create_tool(id="search", description="s", input_schema=SCHEMA, execute=lambda i, c: LONG)
    model = MockModel([tool_call_step(("c1", "search", {"q": "x"})), text_step("done")])
    agent = Agent(name="a", model=model, tools=[search], output_processors=[ToolResultTokenLimiter(100)])
    chunks = await collect(await agent.stream("go"))
    [streamed] = tool_chunks(chunks)
    match = MARKER.search(streamed)
    assert match is not None and match.group(2) == f"{tokens(LONG):,}"
    assert tokens(streamed) <= 100
    assert LONG.startswith(streamed[: match.start()])
    assert int(match.group(1).replace(",", "")) == tokens(streamed[: match.start()])
    assert prompt_results(model.calls[1].prompt) == [{"type": "text", "value": streamed}]


async def test_the_history_keeps_the_cut_result() -> None:
    search = create_tool(id="search", description="s", input_schema=SCHEMA, execute=lambda i, c: LONG)
    model = MockModel([tool_call_step(("c1", "search", {"q": "x"})), text_step("done")])
    agent = Agent(name="a", model=model, tools=[search], output_processors=[ToolResultTokenLimiter(80)])
    result = await agent.generate("go")
    invocations = [
        p["toolInvocation"]
        for m in result.response.messages
        for p in m.content.parts
        if p.get("type") == "tool-invocation"
    ]
    assert [MARKER.search(inv["result"]) is not None for inv in invocations] == [True]
    assert tokens(invocations[0]["result"]) <= 80


def test_a_result_within_the_limit_is_left_as_it_is() -> None:
    limiter = ToolResultTokenLimiter(64)
    short = {"rows": [1, 2, 3]}
    assert tool_result(limiter, short) is short
    exact = " ".join(["word"] * 64)
    assert tokens(exact) == 64
    assert tool_result(limiter, exact) is exact


def test_a_non_string_result_is_measured_and_cut_as_json() -> None:
    rows = {"rows": [{"id": i, "name": f"item {i}"} for i in range(200)]}
    cut = tool_result(ToolResultTokenLimiter(120), rows)
    assert isinstance(cut, str)
    text = json.dumps(rows, separators=(",", ":"), ensure_ascii=False)
    match = MARKER.search(cut)
    assert match is not None and match.group(2) == f"{tokens(text):,}"
    assert text.startswith(cut[: match.start()]) and tokens(cut) <= 120


def test_provider_executed_results_are_left_alone() -> None:
    assert tool_result(ToolResultTokenLimiter(64), LONG, provider_executed=True) is LONG


def test_the_encoding_option_decides_the_count() -> None:
    text = "Привет, как дела? 你好世界 " * 200
    for name in ("cl100k_base", "o200k_base"):
        cut = tool_result(ToolResultTokenLimiter(100, encoding=name), text)
        match = MARKER.search(cut)
        assert match is not None and match.group(2) == f"{tokens(text, name):,}"
        assert tokens(cut, name) <= 100
    assert tokens(text, "cl100k_base") != tokens(text, "o200k_base")


@pytest.mark.parametrize(
    ("options", "named"),
    [
        ({"limit": 63}, "limit"),
        ({"limit": 0}, "limit"),
        ({"limit": True}, "limit"),
        ({"limit": "2000"}, "limit"),
        ({}, "limit"),
        ({"limit": 100, "encoding": "no-such-encoding"}, "encoding"),
        ({"limit": 100, "encoding": 7}, "encoding"),
        ({"limit": 100, "max_tokens": 5}, "max_tokens"),
    ],
)
def test_bad_or_unknown_options_are_rejected_by_name(options: dict[str, Any], named: str) -> None:
    with pytest.raises(ConfigurationError, match=named):
        ToolResultTokenLimiter(**options)
