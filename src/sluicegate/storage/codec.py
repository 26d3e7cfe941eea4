"""Turning messages into storage rows and back, shared by the backends."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sluicegate.errors import MessageOwnershipError
from sluicegate.messages.message import Message, MessageContent
from sluicegate.storage.errors import MessageWithoutThreadError


def dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


def content_json(message: Message) -> str:
    return dumps(message.content.to_dict())


def require_threads(messages: Sequence[Message]) -> None:
    for message in messages:
        if not message.thread_id:
            raise MessageWithoutThreadError(f"message {message.id!r} has no thread_id; set it before saving")


def unique_by_id(messages: Sequence[Message]) -> list[Message]:
    """One message per id (the last one given wins), in first-seen order: a batch upsert may
    touch each row once."""
    by_id: dict[str, Message] = {}
    for message in messages:
        by_id[message.id] = message
    return list(by_id.values())


def check_ownership(
    messages: Sequence[Message],
    existing: Iterable[tuple[str, str, str | None]],
    thread_owners: Iterable[tuple[str, str]],
) -> None:
    """Refuse a write that would move or rewrite another thread's message, or put a message into
    a thread owned by another resource.

    `existing` holds `(id, thread_id, resource_id)` of the stored rows with the incoming ids;
    `thread_owners` holds `(thread_id, resource_id)` of the incoming messages' threads.
    Raises `MessageOwnershipError`; the caller's transaction then writes nothing."""
    incoming = {m.id: m for m in messages}
    for message_id, thread_id, resource_id in existing:
        message = incoming[message_id]
        if thread_id != message.thread_id or (
            resource_id is not None and message.resource_id is not None and resource_id != message.resource_id
        ):
            raise MessageOwnershipError(message_id, message.thread_id)
    owners = dict(thread_owners)
    for message in messages:
        owner = owners.get(str(message.thread_id))
        if owner is not None and message.resource_id is not None and owner != message.resource_id:
            raise MessageOwnershipError(
                message.id,
                message.thread_id,
                reason=f"thread {message.thread_id!r} belongs to another resource than "
                f"{message.resource_id!r}; message {message.id!r} cannot be saved into it",
            )


def message_from_row(
    *,
    id: str,
    thread_id: str,
    resource_id: str | None,
    role: str,
    type: str | None,
    content: dict[str, Any],
    created_at: datetime,
) -> Message:
    return Message(
        id=id,
        role=role,  # type: ignore[arg-type]
        content=MessageContent.from_dict(content),
        created_at=created_at,
        thread_id=thread_id,
        resource_id=resource_id,
        type=type,
    )
