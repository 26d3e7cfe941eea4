"""Telling signal messages apart from the conversation.

A signal (`args.send_signal(...)` in `process_input`) and a system reminder (the `continue`
that `PrefillErrorHandler` adds) are stored with the thread because the model must see them
again next turn, but they are not something a person said or was told.
"""

from __future__ import annotations

from sluicegate.messages.message import Message


def is_signal_message(message: Message) -> bool:
    """Whether `message` is a stored signal or system reminder (by its content metadata)."""
    metadata = message.content.metadata
    return isinstance(metadata, dict) and ("signal" in metadata or "systemReminder" in metadata)
