"""Message shapes, MessageList sources/views/formats, and the Mastra JSON round trip."""

from __future__ import annotations

from unittest.mock import ANY

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluicegate.errors import InvalidMessageError
from sluicegate.messages import Message, MessageList
from sluicegate.processors.runner import signal_message

STORED = {
    "id": "m1",
    "role": "assistant",
    "createdAt": "2025-01-02T03:04:05.678Z",
    "threadId": "t1",
    "resourceId": "u1",
    "content": {
        "format": 2,
        "parts": [
            {"type": "step-start"},
            {"type": "reasoning", "text": "thinking", "details": []},
            {"type": "text", "text": "Let me look."},
            {
                "type": "tool-invocation",
                "toolInvocation": {
                    "state": "result",
                    "toolCallId": "c1",
                    "toolName": "weather",
                    "args": {"city": "Paris"},
                    "result": {"forecast": "sunny"},
                },
            },
            {"type": "data-progress", "data": {"pct": 50}},
            {"type": "file", "data": "https://x/y.png", "mimeType": "image/png"},
        ],
        "content": "Let me look.",
        "metadata": {"custom": 1},
        "providerMetadata": {"openai": {"id": "r1"}},
    },
}


def test_stored_json_round_trips_exactly():
    assert Message.from_dict(STORED).to_dict() == STORED


def test_text_joins_text_parts_and_falls_back_to_legacy_content():
    message = Message.from_dict(STORED)
    assert message.text == "Let me look."
    legacy = Message.from_dict(
        {"id": "x", "role": "user", "content": {"format": 2, "parts": [], "content": "old"}}
    )
    assert legacy.text == "old"


def test_parts_answer_attribute_access_in_both_spellings():
    part = Message.from_dict(STORED).content.parts[3]
    assert part.type == "tool-invocation"
    assert part.tool_invocation["toolCallId"] == "c1"
    assert part.toolInvocation is part["toolInvocation"]


@pytest.mark.parametrize(
    "value",
    [
        "hello",
        {"role": "user", "content": "hello"},
        {"role": "user", "content": [{"type": "text", "text": "hello"}]},
        Message.text_message("user", "hello"),
    ],
)
def test_every_input_shape_becomes_a_message(value):
    [message] = Message.coerce_many(value)
    assert message.role == "user"
    assert message.text == "hello"
    assert not isinstance(message.content, str)


@pytest.mark.parametrize("bad", [42, {"role": "robot", "content": "x"}, {"role": "user", "content": 3}])
def test_bad_input_is_a_typed_error(bad):
    with pytest.raises(InvalidMessageError):
        Message.coerce_many(bad)


def test_sources_and_views():
    ml = MessageList()
    ml.add({"role": "user", "content": "remembered"}, "memory")
    ml.add("question", "input")
    ml.add({"role": "assistant", "content": "answer"}, "response")
    ml.add({"role": "user", "content": "ctx"}, "context")
    assert [m.text for m in ml.get.all.db()] == ["remembered", "question", "answer", "ctx"]
    assert [m.text for m in ml.get.input.db()] == ["question"]
    assert [m.text for m in ml.get.response.db()] == ["answer"]
    assert [m.text for m in ml.get.remembered.db()] == ["remembered"]
    assert ml.get.input.model() == [{"role": "user", "content": [{"type": "text", "text": "question"}]}]
    [part] = ml.get.response.ui()[0]["parts"]
    assert part == {"type": "text", "text": "answer", "providerMetadata": {"mastra": {"createdAt": ANY}}}


def test_bad_source_is_rejected():
    with pytest.raises(InvalidMessageError):
        MessageList().add("x", "elsewhere")  # type: ignore[arg-type]


def test_system_messages_are_kept_apart_and_lead_the_prompt():
    ml = MessageList()
    ml.add("hi")
    ml.add_system("be brief")
    ml.add_system({"role": "system", "content": "be kind"})
    ml.add({"role": "system", "content": "from input"})
    assert ml.get_system_messages() == [
        {"role": "system", "content": "be brief"},
        {"role": "system", "content": "be kind"},
        {"role": "system", "content": "from input"},
    ]
    assert [m["role"] for m in ml.get.all.model()] == ["system", "system", "system", "user"]
    assert [m.role for m in ml.get.all.db()] == ["user"]
    with pytest.raises(InvalidMessageError):
        ml.add_system({"role": "user", "content": "no"})


def test_add_replaces_by_id_and_remove_by_ids():
    ml = MessageList()
    first = ml.add({"id": "a", "role": "user", "content": "one"})[0]
    ml.add({"id": "b", "role": "user", "content": "two"})
    ml.add({"id": "a", "role": "user", "content": "one, edited"})
    assert [m.text for m in ml.get.all.db()] == ["one, edited", "two"]
    assert first.id == "a"
    removed = ml.remove_by_ids(["a"])
    assert [m.id for m in removed] == ["a"]
    assert [m.id for m in ml.get.all.db()] == ["b"]


def test_tool_result_messages_fold_into_the_assistant_call():
    ml = MessageList()
    ml.add(
        {
            "role": "assistant",
            "content": [
                {"type": "tool-call", "toolCallId": "c1", "toolName": "w", "input": '{"city": "Rome"}'}
            ],
        },
        "response",
    )
    ml.add(
        {
            "role": "tool",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "c1",
                    "toolName": "w",
                    "output": {"type": "json", "value": {"t": 20}},
                }
            ],
        },
        "response",
    )
    assert len(ml) == 1
    assert ml.get.all.model() == [
        {
            "role": "assistant",
            "content": [
                {"type": "tool-call", "toolCallId": "c1", "toolName": "w", "input": {"city": "Rome"}}
            ],
        },
        {
            "role": "tool",
            "content": [
                {
                    "type": "tool-result",
                    "toolCallId": "c1",
                    "toolName": "w",
                    "output": {"type": "json", "value": {"t": 20}},
                }
            ],
        },
    ]


def test_model_format_splits_steps_and_drops_unanswered_calls():
    message = Message.from_dict(STORED)
    message.content.parts.append({"type": "step-start"})  # type: ignore[arg-type]
    message.content.parts.append(  # type: ignore[arg-type]
        {
            "type": "tool-invocation",
            "toolInvocation": {"state": "call", "toolCallId": "c2", "toolName": "w", "args": {}},
        }
    )
    prompt = MessageList([message]).get.all.model()
    assert [m["role"] for m in prompt] == ["assistant", "tool"]
    assert [p["type"] for p in prompt[0]["content"]] == ["reasoning", "text", "tool-call", "file"]


def test_ui_format_hides_signals_but_raw_history_keeps_them():
    ml = MessageList()
    ml.add("hello")
    ml.add(signal_message({"type": "reactive", "contents": "final step", "attributes": {"step": 5}}))
    assert len(ml.get.all.db()) == 2
    assert len(ml.get.all.ui()) == 1
    assert (
        ml.get.all.model()[-1]["content"][0]["text"]
        == '<system-reminder step="5">final step</system-reminder>'
    )


def test_reconcile_removes_missing_adds_new_and_keeps_order():
    ml = MessageList()
    ml.add({"id": "a", "role": "user", "content": "a"})
    ml.add({"id": "b", "role": "assistant", "content": "b"}, "response")
    new = Message.text_message("user", "c")
    ml.reconcile([ml.get.all.db()[1], new])
    assert [m.text for m in ml.get.all.db()] == ["b", "c"]
    assert ml.source_of("b") == "response"
    assert ml.source_of(new) == "input"


def test_list_round_trips_through_json():
    ml = MessageList()
    ml.add("q")
    ml.add({"role": "assistant", "content": "a"}, "response")
    ml.add_system("sys", tag="memory")
    again = MessageList.from_dict(ml.to_dict())
    assert again.to_dict() == ml.to_dict()


@given(st.text(), st.sampled_from(["user", "assistant"]))
def test_any_text_round_trips(text, role):
    message = Message.text_message(role, text)
    again = Message.from_dict(message.to_dict())
    assert again.text == text
    assert again.to_dict() == message.to_dict()


def test_format_datetime_writes_utc_milliseconds_for_equal_instants_in_any_zone() -> None:
    from datetime import UTC, datetime, timedelta, timezone

    from sluicegate.messages.message import format_datetime

    at = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    shifted = at.astimezone(timezone(timedelta(hours=2)))
    assert format_datetime(at) == "2026-01-02T03:04:05.678Z"
    assert format_datetime(shifted) == "2026-01-02T03:04:05.678Z"  # the same instant, remembered or not
    assert format_datetime(at + timedelta(milliseconds=1)) == "2026-01-02T03:04:05.679Z"
