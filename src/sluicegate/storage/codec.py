"""Turning messages into storage rows and back, shared by the backends."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

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
