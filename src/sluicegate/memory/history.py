"""Helpers the memory processors share for putting remembered messages into a run and for
choosing which messages of a run may be stored."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sluicegate.messages.message import Message, MessageContent
from sluicegate.messages.message_list import MessageList

_INCOMPLETE_STATES = frozenset(("call", "partial-call"))


def without_incomplete_tool_calls(messages: Iterable[Message]) -> list[Message]:
    """Copies of the messages without tool calls that never got a result; an assistant message
    left with no parts is dropped. A dangling call in history makes providers reject the prompt."""
    kept: list[Message] = []
    for message in messages:
        if message.role != "assistant":
            kept.append(message)
            continue
        parts = [
            p
            for p in message.content.parts
            if not (
                p.get("type") == "tool-invocation"
                and (p.get("toolInvocation") or {}).get("state") in _INCOMPLETE_STATES
            )
        ]
        if len(parts) == len(message.content.parts):
            kept.append(message)
            continue
        if not parts:
            continue
        content = MessageContent(
            parts=parts,
            content=message.content.content,
            metadata=message.content.metadata,
            format=message.content.format,
            extra=dict(message.content.extra),
        )
        kept.append(
            Message(
                role=message.role,
                content=content,
                id=message.id,
                created_at=message.created_at,
                thread_id=message.thread_id,
                resource_id=message.resource_id,
                type=message.type,
            )
        )
    return kept


def add_remembered(message_list: MessageList, remembered: Sequence[Message]) -> list[Message]:
    """Add stored messages with source `memory`, ahead of the run's own messages and merged
    with what memory already added, in creation order. Ids already present are skipped."""
    present = {m.id for m in message_list.get.all.db()}
    new = [m for m in remembered if m.role != "system" and m.id not in present]
    if not new:
        return []
    current = message_list.get.all.db()
    earlier = [m for m in current if message_list.source_of(m) == "memory"]
    rest = [m for m in current if message_list.source_of(m) != "memory"]
    ordered = sorted([*earlier, *new], key=lambda m: m.created_at)
    message_list.reconcile([*ordered, *rest], default_source="memory")
    return new


def message_text(message: Message) -> str:
    """The text a message is searched by: its text parts, else its flat content string."""
    return message.text.strip()
