"""Bad input is refused up front: an `InvalidInputError` (a `ValueError`) naming what is wrong and
where, with no model call and no thread row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluicegate import Agent, RequestContext
from sluicegate.errors import InvalidInputError
from sluicegate.memory import Memory
from sluicegate.messages import Message
from sluicegate.messages.validate import validate_input
from sluicegate.request_context import THREAD_ID_KEY
from sluicegate.storage import SQLiteStore
from sluicegate.testing import MockModel, text_step

BAD_INPUTS: list[tuple[str, Any, str]] = [
    ("none", None, "no input"),
    ("empty list", [], "empty"),
    ("empty string", "", "empty"),
    ("lone surrogate", "hi \ud800 there", "surrogate"),
    ("nul byte", "a\x00b", "NUL"),
    ("nul in a part", [{"role": "user", "content": [{"type": "text", "text": "a\x00"}]}], r"messages\[0\]"),
    ("part without text", {"role": "user", "content": [{"type": "text"}]}, "without a `text`"),
    ("garbage createdAt", {"role": "user", "content": "x", "createdAt": "yesterday-ish"}, "createdAt"),
    ("unknown part type", {"role": "user", "content": [{"type": "hologram", "text": "x"}]}, "hologram"),
    ("unknown role", {"role": "robot", "content": "x"}, "role"),
    ("not a message", 42, "int"),
    (
        "tool call without name",
        {"role": "assistant", "content": [{"type": "tool-call", "toolCallId": "c"}]},
        "toolName",
    ),
    ("id not a string", {"id": 7, "role": "user", "content": "x"}, r"\.id must be a string"),
    ("id with a NUL", {"id": "a\x00", "role": "user", "content": "x"}, r"\.id"),
    ("parts not a list", {"role": "user", "content": {"parts": "x"}}, "parts must be a list"),
]


@pytest.mark.parametrize(("label", "value", "match"), BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
async def test_bad_input_is_refused_before_the_model_or_the_store(
    tmp_path: Path, label: str, value: Any, match: str
) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    model = MockModel([text_step("paid")])
    agent = Agent(name="a", model=model, memory=Memory(storage=store))
    with pytest.raises(InvalidInputError, match=match) as caught:
        await agent.generate(value, memory={"thread": "t1", "resource": "u1"})
    assert isinstance(caught.value, ValueError)
    assert model.calls == []
    assert await store.get_thread("t1") is None
    await store.close()


@pytest.mark.parametrize("thread", ["", "   ", 7, "t\x00", "t\n1", "x" * 300, "\udc80"])
async def test_bad_thread_ids_are_refused(tmp_path: Path, thread: Any) -> None:
    store = SQLiteStore(tmp_path / "m.db")
    model = MockModel([text_step("paid")])
    agent = Agent(name="a", model=model, memory=Memory(storage=store))
    with pytest.raises(InvalidInputError, match="thread"):
        await agent.generate("hi", memory={"thread": thread, "resource": "u1"})
    assert model.calls == []
    assert await store.list_threads("u1") == []
    with pytest.raises(InvalidInputError):
        await agent.generate("hi", memory={"thread": "t1", "resource": thread if thread != "" else "\x00"})
    await store.close()


async def test_context_ids_are_checked_too() -> None:
    model = MockModel([text_step("paid")])
    with pytest.raises(InvalidInputError, match="request_context"):
        await Agent(name="a", model=model).generate("hi", request_context=RequestContext({THREAD_ID_KEY: 5}))
    assert model.calls == []


async def test_input_size_cap() -> None:
    model = MockModel([text_step("ok"), text_step("ok")])
    agent = Agent(name="a", model=model, max_input_chars=100)
    with pytest.raises(InvalidInputError, match="max_input_chars"):
        await agent.generate("x" * 101)
    with pytest.raises(InvalidInputError, match="max_input_chars"):
        await agent.generate([{"role": "user", "content": [{"type": "text", "text": "y" * 60}]}] * 2)
    assert model.calls == []
    await agent.generate("x" * 100)
    await agent.generate("x" * 500, max_input_chars=1000)
    assert len(model.calls) == 2
    with pytest.raises(Exception, match="max_input_chars"):
        Agent(name="a", model=model, max_input_chars=0)
    assert Agent(name="b", model=model).max_input_chars == 1_000_000


def test_good_input_shapes_still_pass() -> None:
    messages = validate_input(
        [
            "plain",
            {"role": "user", "content": "chat", "createdAt": "2025-01-01T00:00:00Z", "id": "browser-1"},
            {"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": "image", "image": "x"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool-call", "toolCallId": "c", "toolName": "t", "input": {}}],
            },
            {
                "role": "user",
                "parts": [{"type": "data-note", "data": {"a": 1}}, {"type": "text", "text": "ok"}],
            },
            Message.text_message("user", "object"),
        ]
    )
    assert [m.role for m in messages] == ["user", "user", "user", "assistant", "user", "user"]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec=None, blacklist_categories=()), max_size=50))
def test_any_text_is_either_accepted_or_an_invalid_input_error(text: str) -> None:
    try:
        [message] = validate_input(text)
    except InvalidInputError:
        return
    assert message.text == text
    message.text.encode("utf-8")
    assert "\x00" not in message.text
