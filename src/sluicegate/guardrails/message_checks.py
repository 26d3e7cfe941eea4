"""The messages a guardrail checks: which ones (this request's input, this run's response),
their text, asking the detector about them, and rewriting or dropping them."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import Any, TypeVar

import pydantic

from sluicegate.messages import Message
from sluicegate.messages.part import Part

VerdictT = TypeVar("VerdictT", bound=pydantic.BaseModel)


def system_prompt_text(args: Any) -> str:
    """The request's system messages as one text (empty when there is no message list)."""
    message_list = getattr(args, "message_list", None)
    if message_list is None:
        return ""
    return "\n".join(str(m.get("content", "")) for m in message_list.get_system_messages())


def message_text(message: Message) -> str:
    """A message's text parts joined by spaces (the legacy string when there are none), trimmed."""
    texts = [
        p["text"] for p in message.content.parts if p.get("type") == "text" and isinstance(p.get("text"), str)
    ]
    text = " ".join(texts).strip()
    if not text and isinstance(message.content.content, str):
        text = message.content.content.strip()
    return text


def with_text(message: Message, text: str) -> Message:
    """A copy of `message` (same id, so it replaces the original) whose text is `text`.

    The text parts become one part with `text`, in the place of the first; other parts (files,
    tool invocations) are kept, unlike Mastra, which drops them.
    """
    parts: list[Part] = []
    placed = False
    for part in message.content.parts:
        if part.get("type") == "text":
            if not placed:
                parts.append(Part(type="text", text=text))
                placed = True
            continue
        parts.append(part)
    if not placed:
        parts.insert(0, Part(type="text", text=text))
    copy = Message(
        role=message.role,
        content=type(message.content)(
            parts=parts,
            content=text,
            metadata=dict(message.content.metadata) if message.content.metadata else message.content.metadata,
            format=message.content.format,
            extra=dict(message.content.extra),
        ),
        id=message.id,
        created_at=message.created_at,
        thread_id=message.thread_id,
        resource_id=message.resource_id,
        type=message.type,
    )
    return copy


def with_metadata(message: Message, key: str, value: Any) -> Message:
    """`message` with `content.metadata[key] = value` (set in place; the message is returned)."""
    metadata = dict(message.content.metadata or {})
    metadata[key] = value
    message.content.metadata = metadata
    return message


def input_ids(args: Any) -> set[str] | None:
    """Ids of the messages an input guardrail checks: this request's input (not remembered
    history, which was checked when it arrived); None means every message."""
    message_list = getattr(args, "message_list", None)
    if message_list is None:
        return None
    return {m.id for m in message_list.get.input.db()}


def response_ids(args: Any) -> set[str] | None:
    """Ids of the messages an output guardrail checks at the end: this run's response."""
    message_list = getattr(args, "message_list", None)
    if message_list is None:
        return None
    return {m.id for m in message_list.get.response.db()}


def to_check(
    messages: Iterable[Message], ids: set[str] | None, roles: Iterable[str] | None = None
) -> list[Message]:
    wanted_roles = set(roles) if roles is not None else None
    return [
        m
        for m in messages
        if m.role != "system"
        and (ids is None or m.id in ids)
        and (wanted_roles is None or m.role in wanted_roles)
    ]


async def flagged_text(
    text: str,
    detect: Callable[[str], Awaitable[VerdictT | None]],
    is_flagged: Callable[[VerdictT], bool],
) -> VerdictT | None:
    """The detector's verdict on `text` when it flags it; None for blank text (not asked), a
    verdict that flags nothing, or a failed detector that was allowed through."""
    if not text.strip():
        return None
    verdict = await detect(text)
    return verdict if verdict is not None and is_flagged(verdict) else None


async def flagged_messages(
    messages: Iterable[Message],
    detect: Callable[[str], Awaitable[VerdictT | None]],
    is_flagged: Callable[[VerdictT], bool],
) -> AsyncIterator[tuple[Message, str, VerdictT]]:
    """Each message with text that the detector flags, with its text and the verdict."""
    for message in messages:
        text = message_text(message)
        if not text:
            continue
        verdict = await detect(text)
        if verdict is not None and is_flagged(verdict):
            yield message, text, verdict


def replace_messages(messages: list[Message], replaced: Mapping[str, Message | None]) -> list[Message] | None:
    """`messages` with the ones named in `replaced` swapped (None drops them); None when
    nothing changed, so the runner leaves the list alone."""
    if not replaced:
        return None
    out: list[Message] = []
    for message in messages:
        if message.id not in replaced:
            out.append(message)
        elif (substitute := replaced[message.id]) is not None:
            out.append(substitute)
    return out
