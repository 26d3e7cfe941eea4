"""Each message part is dated once, where it is made (`createdAt`, epoch ms, as Mastra's stored
parts are), and the UI and model-message views carry that same time."""

from __future__ import annotations

import time

import pytest

from sluicegate import Agent
from sluicegate.agent.run_summary import model_messages
from sluicegate.errors import InvalidInputError
from sluicegate.messages import Message
from sluicegate.messages.convert import to_ui_message
from sluicegate.messages.validate import validate_input
from sluicegate.testing import MockModel, text_step

from .helpers import collect


def _ms() -> int:
    return time.time_ns() // 1_000_000


async def test_the_parts_of_a_run_are_dated_when_made_and_the_views_carry_that_time():
    agent = Agent(name="a", instructions="i", model=MockModel([text_step("one two three four", pieces=4)]))
    before = _ms()
    stream = await agent.stream("hello")
    chunks = await collect(stream)
    after = _ms()
    response = await stream.response
    assert sum(1 for c in chunks if c.type == "text-delta") > 1  # several deltas, one part
    [assistant] = response.messages
    parts = [p for p in assistant.content.parts if p["type"] == "text"]
    assert [p["text"] for p in parts] == ["one two three four"]
    created = parts[0]["createdAt"]
    assert isinstance(created, int) and before <= created <= after
    [ui_text] = [p for p in to_ui_message(assistant)["parts"] if p["type"] == "text"]
    assert ui_text["providerMetadata"] == {"mastra": {"createdAt": created}}
    [model] = model_messages([assistant])
    assert model["content"][0]["providerOptions"] == {"mastra": {"createdAt": created}}


def test_an_input_part_is_dated_when_received_and_keeps_a_date_it_brings():
    before = _ms()
    typed = Message.coerce("hi")
    listed = Message.coerce({"role": "user", "content": [{"type": "text", "text": "a"}]})
    brought = Message.coerce(
        {"role": "user", "content": [{"type": "text", "text": "b", "createdAt": 1_700_000_000_000}]}
    )
    after = _ms()
    for message in (typed, listed):
        assert before <= message.content.parts[0]["createdAt"] <= after
    assert brought.content.parts[0]["createdAt"] == 1_700_000_000_000


def test_a_stored_part_without_a_date_is_not_given_one_on_load():
    stored = Message.from_dict(
        {
            "id": "m1",
            "role": "assistant",
            "createdAt": "2026-01-02T03:04:05.000Z",
            "content": {"format": 2, "parts": [{"type": "text", "text": "old"}]},
        }
    )
    assert "createdAt" not in stored.content.parts[0]
    assert "providerMetadata" not in to_ui_message(stored)["parts"][0]
    [model] = model_messages([stored])  # the model view falls back on the message's own time
    assert model["content"][0]["providerOptions"] == {"mastra": {"createdAt": 1767323045000}}


@pytest.mark.parametrize("bad", ["2026-01-01", -1, 1.5, True, 10**20, {"at": 1}])
def test_a_part_date_that_is_not_epoch_milliseconds_is_a_typed_error_naming_it(bad: object) -> None:
    message = {"role": "user", "content": [{"type": "text", "text": "a", "createdAt": bad}]}
    with pytest.raises(InvalidInputError, match=r"messages\[0\]\.content\[0\]\.createdAt"):
        validate_input([message])
