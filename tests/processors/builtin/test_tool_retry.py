"""ToolRetry: transient failures retried with a stable idempotency key, backoff capped and
jittered, `retry_on` as types or a predicate, the last failure as the call's error result."""

from __future__ import annotations

from typing import Any

import pytest

from sluicegate import Agent, create_tool
from sluicegate.errors import UnknownOptionError
from sluicegate.processors import ToolRetry
from sluicegate.processors.builtin.tool_retry import RetryPolicy
from sluicegate.testing import MockModel, text_step, tool_call_step


class Flaky:
    """Fails with `errors` in turn, then answers; records each attempt's idempotency key."""

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.keys: list[str | None] = []

    async def __call__(self, args: Any, context: Any) -> str:
        self.keys.append(context.idempotency_key)
        if self.errors:
            raise self.errors.pop(0)
        return "charged"


def agent_with(tool_fn: Flaky, retry: ToolRetry, *, wrap: bool = False) -> tuple[Agent, MockModel]:
    tool = create_tool(id="charge", description="charge a card", execute=tool_fn)
    model = MockModel([tool_call_step(("call-1", "charge", {})), text_step("done")])
    if wrap:
        return Agent(name="a", model=model, tools=[retry.wrap(tool)]), model
    return Agent(name="a", model=model, tools=[tool], input_processors=[retry]), model


async def test_a_transient_failure_is_retried_with_the_same_idempotency_key(collect: Any) -> None:
    flaky = Flaky(ConnectionError("reset"), TimeoutError("slow"))
    agent, _ = agent_with(flaky, ToolRetry(max_retries=2, backoff=0))
    chunks = await collect(await agent.stream("pay"))
    results = [c for c in chunks if c.type == "tool-result"]
    assert len(results) == 1 and results[0].payload.result == "charged"
    assert len(flaky.keys) == 3 and len(set(flaky.keys)) == 1 and flaky.keys[0]
    assert flaky.keys[0].endswith(":call-1")
    notices = [c for c in chunks if c.type == "data-tool-retry"]
    assert [n.data["attempt"] for n in notices] == [2, 3]


async def test_the_last_failure_is_the_calls_error_result() -> None:
    flaky = Flaky(ConnectionError("one"), ConnectionError("two"), ConnectionError("three"))
    agent, model = agent_with(flaky, ToolRetry(max_retries=1, backoff=0))
    result = await agent.generate("pay")
    assert len(flaky.keys) == 2
    errors = result.steps[0].tool_errors
    assert len(errors) == 1 and str(errors[0].payload.error) == "two"
    assert result.text == "done" and len(model.calls) == 2


async def test_retry_on_types_and_predicates() -> None:
    not_listed = Flaky(ValueError("bad"))
    agent, _ = agent_with(not_listed, ToolRetry(max_retries=3, backoff=0, retry_on=[ConnectionError]))
    assert (await agent.generate("pay")).steps[0].tool_errors and len(not_listed.keys) == 1

    listed = Flaky(ConnectionError("reset"))
    agent, _ = agent_with(listed, ToolRetry(max_retries=3, backoff=0, retry_on=ConnectionError))
    assert (await agent.generate("pay")).steps[0].tool_results and len(listed.keys) == 2

    judged = Flaky(RuntimeError("HTTP 503"), RuntimeError("HTTP 400"))
    retry = ToolRetry(max_retries=5, backoff=0, retry_on=lambda error: "503" in str(error))
    agent, _ = agent_with(judged, retry)
    result = await agent.generate("pay")
    assert len(judged.keys) == 2 and str(result.steps[0].tool_errors[0].payload.error) == "HTTP 400"


async def test_a_failing_predicate_stops_retrying_and_keeps_the_tools_error() -> None:
    def broken(error: BaseException) -> bool:
        raise KeyError("oops")

    flaky = Flaky(ConnectionError("reset"))
    agent, _ = agent_with(flaky, ToolRetry(max_retries=3, backoff=0, retry_on=broken))
    result = await agent.generate("pay")
    assert len(flaky.keys) == 1 and str(result.steps[0].tool_errors[0].payload.error) == "reset"


async def test_only_the_named_tools_are_retried() -> None:
    flaky = Flaky(ConnectionError("reset"))
    agent, _ = agent_with(flaky, ToolRetry(max_retries=3, backoff=0, tools=["other"]))
    assert (await agent.generate("pay")).steps[0].tool_errors and len(flaky.keys) == 1


async def test_a_wrapped_tool_retries_without_the_processor() -> None:
    flaky = Flaky(ConnectionError("reset"))
    agent, _ = agent_with(flaky, ToolRetry(max_retries=1, backoff=0), wrap=True)
    assert (await agent.generate("pay")).steps[0].tool_results and len(flaky.keys) == 2


async def test_a_wrapped_tool_keeps_its_schema_and_approval() -> None:
    inner = create_tool(
        id="t",
        description="d",
        input_schema={"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]},
        execute=Flaky(),
        require_approval=True,
    )
    wrapped = ToolRetry(backoff=0).wrap(inner)
    assert wrapped.to_v2() == inner.to_v2() and wrapped.require_approval
    assert wrapped.validate({"n": 1}) == {"n": 1}
    with pytest.raises(Exception, match="invalid input"):
        wrapped.validate({"n": "x"})
    assert ToolRetry(backoff=0).wrap(wrapped) is wrapped


def test_backoff_grows_to_its_cap_and_jitter_stays_within_it() -> None:
    fixed = RetryPolicy(
        max_retries=9, backoff=0.5, backoff_factor=2.0, max_backoff=3.0, jitter=False, retry_on=Exception
    )
    assert [fixed.delay(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert fixed.delay(10_000) == 3.0
    jittered = RetryPolicy(
        max_retries=9, backoff=0.5, backoff_factor=2.0, max_backoff=3.0, jitter=True, retry_on=Exception
    )
    draws = [jittered.delay(3) for _ in range(200)]
    assert all(1.0 <= d <= 2.0 for d in draws) and len(set(draws)) > 1
    assert all(1.5 <= jittered.delay(50) <= 3.0 for _ in range(50))


@pytest.mark.parametrize(
    ("options", "error", "match"),
    [
        ({"max_retries": -1}, ValueError, "max_retries"),
        ({"max_retries": True}, ValueError, "max_retries"),
        ({"backoff": -1}, ValueError, "backoff must be"),
        ({"max_backoff": float("inf")}, ValueError, "max_backoff must be"),
        ({"backoff_factor": 0.5}, ValueError, "backoff_factor"),
        ({"jitter": "yes"}, TypeError, "jitter"),
        ({"retry_on": "ConnectionError"}, TypeError, "retry_on"),
        ({"retry_on": [ValueError, 3]}, TypeError, "retry_on"),
        ({"retry_on": []}, TypeError, "retry_on"),
        ({"tools": "charge"}, TypeError, "tools"),
        ({"retries": 3}, UnknownOptionError, "retries"),
    ],
)
def test_options_are_checked(options: dict[str, Any], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        ToolRetry(**options)


async def test_a_call_limit_counts_a_retried_call_once() -> None:
    from sluicegate.processors import ToolCallLimit

    flaky = Flaky(ConnectionError("reset"), ConnectionError("reset"))
    tool = create_tool(id="charge", description="charge a card", execute=flaky)
    model = MockModel(
        [tool_call_step(("c1", "charge", {})), tool_call_step(("c2", "charge", {})), text_step("done")]
    )
    agent = Agent(
        name="a",
        model=model,
        tools=[tool],
        input_processors=[ToolRetry(max_retries=2, backoff=0)],
        output_processors=[ToolCallLimit(limits={"charge": 1}, on_limit="answer")],
    )
    result = await agent.generate("pay", max_steps=4)
    assert len(flaky.keys) == 3  # one call, three attempts
    assert result.steps[0].tool_results and not result.steps[1].tool_results
    refused = [m for m in model.calls[-1].prompt if m["role"] == "tool"][-1]["content"][0]
    assert refused["toolCallId"] == "c2" and "no longer available" in refused["output"]["value"]
