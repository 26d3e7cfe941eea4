"""PrefillErrorHandler end to end: the provider rejects a trailing assistant turn, the handler
appends a `continue` user message, the retry succeeds, and the reminder is persisted."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.errors import APICallError
from sluicegate.models.base import CallOptions
from sluicegate.processors import PrefillErrorHandler
from sluicegate.processors.builtin.prefill_error_handler import CONTINUE_TEXT, is_prefill_error
from sluicegate.testing import MockModel, text_step

from .conftest import PersistedRecorder

PREFILL = (
    "This model does not support assistant message prefill. The conversation must end with a user message."
)
HISTORY = [{"role": "user", "content": "Write a haiku"}, {"role": "assistant", "content": "Autumn moonlight"}]


def anthropic_rejection(message: str = PREFILL) -> APICallError:
    body = {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return APICallError(
        message,
        url="https://api.anthropic.com/v1/messages",
        status_code=400,
        response_body=json.dumps(body),
        is_retryable=False,
    )


def rejects_trailing_assistant(options: CallOptions) -> Any:
    if options.prompt[-1]["role"] == "assistant":
        return anthropic_rejection()
    return text_step("a worm digs silently")


async def test_appends_continue_and_retries_once(recorder: PersistedRecorder) -> None:
    model = MockModel([rejects_trailing_assistant, rejects_trailing_assistant], provider="anthropic.messages")
    agent = Agent(
        name="poet",
        instructions="Write poems.",
        model=model,
        output_processors=[recorder],
        error_processors=[PrefillErrorHandler()],
    )
    result = await agent.generate(HISTORY)
    assert result.text == "a worm digs silently"
    assert len(model.calls) == 2
    assert model.calls[0].prompt[-1]["role"] == "assistant"
    assert model.calls[1].prompt[-1] == {"role": "user", "content": [{"type": "text", "text": CONTINUE_TEXT}]}
    # The reminder is part of the conversation that is persisted, between the history and the answer.
    roles_and_text = [
        (m["role"], "".join(p.get("text", "") for p in m["content"]["parts"])) for m in recorder.messages
    ]
    assert roles_and_text == [
        ("user", "Write a haiku"),
        ("assistant", "Autumn moonlight"),
        ("user", CONTINUE_TEXT),
        ("assistant", "a worm digs silently"),
    ]
    assert recorder.messages[2]["content"]["metadata"] == {
        "systemReminder": {"type": "anthropic-prefill-processor-retry"}
    }
    assert [s.finish_reason for s in result.steps] == ["retry", "stop"]


async def test_gives_up_when_the_retry_is_rejected_too() -> None:
    model = MockModel([anthropic_rejection(), anthropic_rejection(), text_step("never")])
    agent = Agent(name="poet", instructions="x", model=model, error_processors=[PrefillErrorHandler()])
    with pytest.raises(APICallError, match="prefill"):
        await agent.generate(HISTORY)
    assert len(model.calls) == 2


async def test_other_errors_are_left_alone() -> None:
    model = MockModel([APICallError("context length exceeded", status_code=400), text_step("never")])
    agent = Agent(name="poet", instructions="x", model=model, error_processors=[PrefillErrorHandler()])
    with pytest.raises(APICallError, match="context length"):
        await agent.generate(HISTORY)
    assert len(model.calls) == 1


async def test_stream_recovers_too() -> None:
    model = MockModel([rejects_trailing_assistant, rejects_trailing_assistant])
    agent = Agent(name="poet", instructions="x", model=model, error_processors=[PrefillErrorHandler()])
    output = await agent.stream(HISTORY)
    chunks = [c async for c in output.full_stream]
    assert "error" not in [c.type for c in chunks]
    assert "".join(c.payload.text for c in chunks if c.type == "text-delta") == "a worm digs silently"


@pytest.mark.parametrize(
    "message",
    [
        PREFILL,
        "assistant response prefill is incompatible with enable_thinking",
        "Requests ending with a model turn are not supported",
    ],
)
def test_recognises_the_known_rejections(message: str) -> None:
    assert is_prefill_error(anthropic_rejection(message))
    assert is_prefill_error(RuntimeError(message))


def test_reads_the_response_body_when_the_message_is_generic() -> None:
    error = APICallError(
        "Bad Request", status_code=400, response_body=json.dumps({"error": {"message": PREFILL}})
    )
    assert is_prefill_error(error)
    assert not is_prefill_error(APICallError("Bad Request", status_code=400, response_body="{}"))
