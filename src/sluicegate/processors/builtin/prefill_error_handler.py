"""`PrefillErrorHandler`: recover from "assistant message prefill" rejections.

Some models (Anthropic's newer Claude models, Anthropic with thinking enabled, Gemini 3) reject
a request whose conversation ends with an assistant message, reading it as a response prefill.
This processor appends a user `continue` reminder and retries once. Every agent runs it as its
last error processor unless built with `auto_error_processors=False`.
"""

from __future__ import annotations

import re

from sluicegate.errors import APICallError
from sluicegate.messages import Message, MessageContent, Part
from sluicegate.processors.args import ProcessAPIErrorArgs, ProcessAPIErrorResult
from sluicegate.processors.base import Processor

PREFILL_ERROR_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"does not support assistant message prefill", re.IGNORECASE),
    re.compile(r"assistant response prefill is incompatible with enable[_\s-]?thinking", re.IGNORECASE),
    re.compile(r"requests ending with a model turn are not supported", re.IGNORECASE),
)
CONTINUE_TEXT = "<system-reminder>continue</system-reminder>"
REMINDER_TYPE = "anthropic-prefill-processor-retry"
RETRY_NOTICE = "Retrying after Anthropic prefill error"


def is_prefill_error(error: BaseException | None) -> bool:
    """Whether the error message (or an APICallError's response body) is a prefill rejection."""
    if error is None:
        return False
    candidates = [str(error)]
    if isinstance(error, APICallError) and isinstance(error.response_body, str):
        candidates.append(error.response_body)
    return any(pattern.search(text) for text in candidates if text for pattern in PREFILL_ERROR_PATTERNS)


class PrefillErrorHandler(Processor):
    """Appends a `continue` user message after a prefill rejection, then retries once.

    Agents add one automatically (as the last error processor); list it yourself to choose its
    position, or pass `auto_error_processors=False` to go without:

    ```python
    from sluicegate import Agent
    from sluicegate.processors import PrefillErrorHandler

    agent = Agent(name="a", instructions="...", model="anthropic/claude-sonnet-4-5",
                  error_processors=[PrefillErrorHandler()])
    ```

    On a retry it streams a transient `data-system-reminder` chunk
    (`{"message": "Retrying after Anthropic prefill error", "reminderType": ...}`) so a live UI
    can show what is happening. The reminder is added to the message list as input, so it is
    persisted with the conversation (metadata `systemReminder.type ==
    "anthropic-prefill-processor-retry"`).
    """

    id = "prefill-error-handler"
    name = "Prefill Error Handler"

    async def process_api_error(self, args: ProcessAPIErrorArgs) -> ProcessAPIErrorResult | None:
        if args.retry_count > 0 or not is_prefill_error(args.error):
            return None
        if args.writer is not None:
            await args.writer.custom(
                {
                    "type": "data-system-reminder",
                    "data": {"message": RETRY_NOTICE, "reminderType": REMINDER_TYPE},
                    "transient": True,
                }
            )
        reminder = Message(
            role="user",
            content=MessageContent(
                parts=[Part(type="text", text=CONTINUE_TEXT)],
                content=CONTINUE_TEXT,
                metadata={"systemReminder": {"type": REMINDER_TYPE}},
            ),
        )
        args.message_list.add(reminder, "input")
        return ProcessAPIErrorResult(retry=True)
