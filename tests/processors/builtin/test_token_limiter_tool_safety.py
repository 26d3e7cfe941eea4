"""TokenLimiter keeps the run's own tool traffic (Mastra #24110) and counts the prompt as the
model receives it, after `ToolCallFilter` (Mastra #24111)."""

from __future__ import annotations

from typing import Any

from sluicegate import Agent, create_tool
from sluicegate.errors import TripWire
from sluicegate.messages import MessageList
from sluicegate.processors import (
    ProcessInputStepArgs,
    ProcessLLMRequestArgs,
    TokenLimiter,
    TokenLimiterProcessor,
    ToolCallFilter,
)
from sluicegate.request_context import RequestContext
from sluicegate.testing import MockModel, text_step, tool_call_step

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}}


def report_tool(rows: int) -> Any:
    return create_tool(
        id="report", description="report", input_schema=SCHEMA, execute=lambda i, c: "row " * rows
    )


def has_result(prompt: list[dict[str, Any]]) -> bool:
    return any(
        p.get("type") == "tool-result" for m in prompt if isinstance(m["content"], list) for p in m["content"]
    )


def looping_model(steps: int) -> MockModel:
    """Asks for the report until it sees a result, as a model that lost its tool result does."""

    def step(options: Any) -> list[Any]:
        if has_result(options.prompt):
            return text_step("done")
        return tool_call_step((f"call-{len(model.calls)}", "report", {"q": "x"}))

    model = MockModel([step] * steps)
    return model


def chat(n: int) -> list[dict[str, Any]]:
    return [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"earlier message {i} about the weather"}
        for i in range(n)
    ]


def texts(prompt: list[dict[str, Any]]) -> list[str]:
    return [
        p["text"]
        for m in prompt
        if isinstance(m["content"], list)
        for p in m["content"]
        if p["type"] == "text"
    ]


async def test_the_runs_tool_result_reaches_the_next_call_while_history_is_trimmed() -> None:
    model = looping_model(4)
    agent = Agent(name="t", model=model, tools=[report_tool(60)], input_processors=[TokenLimiter(limit=140)])
    result = await agent.generate([*chat(12), {"role": "user", "content": "get the report"}])
    assert result.tripwire is None and result.text == "done"
    assert len(model.calls) == 2
    second = model.calls[1].prompt
    assert has_result(second)
    assert texts(second)[0] != "earlier message 0 about the weather"  # history made room


async def test_tool_traffic_too_big_for_the_budget_stops_the_run_instead_of_looping() -> None:
    """Mastra #24110: the limiter dropped the result the model had just asked for, and the model
    asked again until it ran out of steps."""
    model = looping_model(5)
    agent = Agent(name="t", model=model, tools=[report_tool(400)], input_processors=[TokenLimiter(limit=150)])
    result = await agent.generate([*chat(6), {"role": "user", "content": "get the report"}], max_steps=5)
    assert len(model.calls) == 1  # never re-asked for the tool
    assert result.tripwire is not None
    assert "current run's tool calls and results alone exceed" in result.tripwire.reason
    assert result.tripwire.metadata["current_run_tokens"] > 150
    assert result.tripwire.retry is False


def run_llm_request(
    limiter: TokenLimiterProcessor, prompts: list[list[dict[str, Any]]], *, as_input: bool = True
) -> list[dict[str, Any]]:
    """The prompt the limiter sends for the last of `prompts` (one per step of one request)."""
    state: dict[str, Any] = {}
    common: dict[str, Any] = {"abort": _abort, "request_context": RequestContext(), "state": state}
    fitted: list[dict[str, Any]] = []
    for prompt in prompts:
        if as_input:
            limiter.process_input_step(ProcessInputStepArgs(**common, message_list=MessageList()))
        result = limiter.process_llm_request(
            ProcessLLMRequestArgs(**common, prompt=prompt, message_list=MessageList())
        )
        fitted = prompt if result is None or result.prompt is None else result.prompt
    return fitted


def _abort(reason: str | None = None, **kwargs: Any) -> None:
    raise TripWire(reason or "", metadata=kwargs.get("metadata"))


def call(call_id: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool-call", "toolCallId": call_id, "toolName": "report", "input": {"q": "x"}}],
    }


def result(call_id: str, words: int = 30) -> dict[str, Any]:
    return {
        "role": "tool",
        "content": [
            {
                "type": "tool-result",
                "toolCallId": call_id,
                "toolName": "report",
                "output": {"type": "text", "value": "row " * words},
            }
        ],
    }


def say(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


def call_ids(prompt: list[dict[str, Any]]) -> list[str]:
    return [
        p["toolCallId"]
        for m in prompt
        if isinstance(m["content"], list)
        for p in m["content"]
        if p.get("type") in ("tool-call", "tool-result")
    ]


def test_a_newer_message_that_does_not_fit_never_evicts_the_runs_tool_traffic() -> None:
    first = [say("user", "old"), say("assistant", "old answer"), say("user", "get the report")]
    later = [*first, call("c1"), result("c1"), say("assistant", "thinking out loud " * 40)]
    fitted = run_llm_request(TokenLimiter(limit=90), [first, later])
    assert call_ids(fitted) == ["c1", "c1"]  # the call and its result, together
    assert texts(fitted) == ["get the report"]


def test_history_tool_traffic_is_still_dropped_with_its_result() -> None:
    prompt = [say("user", "old"), call("h1"), result("h1", 200), say("user", "now")]
    fitted = run_llm_request(TokenLimiter(limit=60), [prompt])
    assert call_ids(fitted) == [] and texts(fitted) == ["now"]


def test_a_call_resumed_after_the_newest_user_message_is_kept() -> None:
    """A call answered in a later request (after an approval, say) is in the first prompt, yet it
    is the step the model is waiting on."""
    prompt = [
        *chat(10),
        say("user", "go ahead"),
        call("p1"),
        result("p1"),
        say("assistant", "thinking out loud " * 40),
    ]
    fitted = run_llm_request(TokenLimiter(limit=80), [prompt])
    assert call_ids(fitted) == ["p1", "p1"]
    assert texts(fitted) == ["go ahead"]


def test_the_runs_tool_traffic_before_a_newer_user_message_is_kept() -> None:
    first = [*chat(10), say("user", "get the report")]
    later = [
        *first,
        call("c1"),
        result("c1"),
        say("assistant", "thinking out loud " * 40),
        say("user", "a reminder injected mid-run"),
    ]
    fitted = run_llm_request(TokenLimiter(limit=90), [first, later])
    assert call_ids(fitted) == ["c1", "c1"]
    assert texts(fitted) == ["a reminder injected mid-run"]


def test_an_output_only_limiter_leaves_the_prompt_alone() -> None:
    prompt = [*chat(30), say("user", "now")]
    assert run_llm_request(TokenLimiter(limit=20), [prompt], as_input=False) is prompt


def test_the_runs_messages_are_never_removed() -> None:
    message_list = MessageList()
    message_list.add(chat(40), "memory")
    limiter = TokenLimiter(limit=40)
    state: dict[str, Any] = {}
    common: dict[str, Any] = {"abort": _abort, "request_context": RequestContext(), "state": state}
    limiter.process_input_step(ProcessInputStepArgs(**common, message_list=message_list))
    result = limiter.process_llm_request(
        ProcessLLMRequestArgs(**common, prompt=message_list.get.all.model(), message_list=message_list)
    )
    assert result is not None and result.prompt is not None and len(result.prompt) < 40
    assert len(message_list) == 40


# ---------------------------------------------------------------------- Mastra #24111


def big_history() -> list[Any]:
    return [
        say("user", "first question about the garden"),
        say("assistant", "first answer about the garden"),
        call("h1"),
        result("h1", 400),
        say("user", "second question about the garden"),
        say("assistant", "second answer about the garden"),
    ]


async def test_tool_traffic_that_tool_call_filter_removes_is_not_counted() -> None:
    """Mastra #24111: the limiter budgeted a tool result the filter would drop anyway, and
    evicted real history to make room for it."""
    model = MockModel([text_step("ok")])
    agent = Agent(
        name="t",
        model=model,
        input_processors=[ToolCallFilter(), TokenLimiter(limit=120)],
    )
    result = await agent.generate([*big_history(), {"role": "user", "content": "third question"}])
    assert result.tripwire is None
    prompt = model.calls[0].prompt
    assert call_ids(prompt) == []
    assert texts(prompt) == [
        "first question about the garden",
        "first answer about the garden",
        "second question about the garden",
        "second answer about the garden",
        "third question",
    ]


async def test_without_the_filter_the_same_history_is_trimmed() -> None:
    model = MockModel([text_step("ok")])
    agent = Agent(name="t", model=model, input_processors=[TokenLimiter(limit=120)])
    await agent.generate([*big_history(), {"role": "user", "content": "third question"}])
    assert texts(model.calls[0].prompt) == [
        "second question about the garden",
        "second answer about the garden",
        "third question",
    ]
