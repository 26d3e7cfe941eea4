"""A run that `max_steps` ends while the model still wants tools says so: a WARNING, a warning
on the `finish` chunk, and `steps_exhausted` on every form of the result."""

from __future__ import annotations

import logging

import pytest

from sluicegate import Agent, Sluicegate, tool
from sluicegate.testing import MockModel, text_step, tool_call_step


@tool
def lookup(order_id: str) -> str:
    """Look an order up.

    Args:
        order_id: The order number.
    """
    return f"{order_id}: shipped"


def _looping_model(calls: int) -> MockModel:
    return MockModel([tool_call_step((f"c{i}", "lookup", {"order_id": "A-1"})) for i in range(calls)])


def _agent(model: MockModel) -> Agent:
    return Agent("looper", model=model, tools=[lookup])


async def test_generate_reports_and_logs_the_exhausted_steps(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="sluicegate.agent")
    result = await _agent(_looping_model(3)).generate("where is A-1?", max_steps=3)
    assert result.steps_exhausted is True
    assert (result.text, result.finish_reason, len(result.steps)) == ("", "tool-calls", 3)
    assert len(result.tool_results) == 3  # the tools ran; the model never answered with them
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("max_steps=3" in m and "still wanted tools (lookup)" in m for m in warned), warned


async def test_a_run_that_answers_on_its_last_step_is_not_exhausted(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="sluicegate.agent")
    model = MockModel([tool_call_step(("c1", "lookup", {"order_id": "A-1"})), text_step("Shipped.")])
    result = await _agent(model).generate("where is A-1?", max_steps=2)
    assert (result.steps_exhausted, result.text) == (False, "Shipped.")
    assert not [r for r in caplog.records if "max_steps" in r.getMessage()]


async def test_a_plain_answer_is_not_exhausted_at_max_steps_1() -> None:
    result = await _agent(MockModel([text_step("Hi.")])).generate("hi", max_steps=1)
    assert result.steps_exhausted is False


async def test_the_stream_says_so_in_its_result_and_its_finish_chunk() -> None:
    output = await _agent(_looping_model(2)).stream("where is A-1?", max_steps=2)
    chunks = [chunk async for chunk in output.full_stream]
    assert await output.steps_exhausted is True
    finish = [c for c in chunks if c.type == "finish"][-1]
    warnings = finish.to_dict()["payload"]["stepResult"]["warnings"]
    assert warnings and warnings[0]["type"] == "other" and "max_steps=2" in warnings[0]["message"]


def test_the_sync_stream_reports_it_too() -> None:
    output = _agent(_looping_model(2)).stream_sync("where is A-1?", max_steps=2)
    assert output.steps_exhausted is True


def test_the_http_body_carries_steps_exhausted() -> None:
    pytest.importorskip("fastapi", reason="the server extra is not installed")
    from fastapi.testclient import TestClient

    from sluicegate.server import ServerSettings, create_app

    exhausted = _agent(_looping_model(2))
    answered = Agent("plain", model=MockModel([text_step("Hi.")]))
    app = create_app(Sluicegate(agents=[exhausted, answered]), ServerSettings())
    with TestClient(app) as client:
        body = client.post(
            "/api/agents/looper/generate",
            json={"messages": [{"role": "user", "content": "where is A-1?"}], "maxSteps": 2},
        ).json()
        assert (body["stepsExhausted"], body["finishReason"], body["text"]) == (True, "tool-calls", "")
        plain = client.post(
            "/api/agents/plain/generate", json={"messages": [{"role": "user", "content": "hi"}]}
        )
        assert plain.json()["stepsExhausted"] is False
