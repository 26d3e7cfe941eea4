"""`Message`: one message in Mastra's stored (db) shape.

`content` is never a string: it is a `MessageContent` whose `parts` carry the text, tool calls,
reasoning and files. `Message.from_dict` / `to_dict` read and write Mastra's JSON, and
`Message.coerce` accepts every input shape the agent takes (a string, a chat dict with string or
part-list content, a `Message`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Literal

from sluicegate.clock import now_ms, utc_now
from sluicegate.errors import InvalidMessageError
from sluicegate.ids import new_uuid
from sluicegate.messages.part import Part, as_part, stamped

Role = Literal["user", "assistant", "system", "tool"]
ROLES: frozenset[str] = frozenset(("user", "assistant", "system", "tool"))


def new_id() -> str:
    return str(new_uuid())


def parse_datetime(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, (int, float)):
        return datetime.fromtimestamp(value / 1000 if value > 1e11 else value, UTC)
    if isinstance(value, str):
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    raise InvalidMessageError(f"createdAt must be a datetime, a timestamp or an ISO string, got {value!r}")


@lru_cache(maxsize=1024)
def format_datetime(value: datetime) -> str:
    """ISO 8601 with milliseconds and a `Z`, as JavaScript's `toISOString()` writes it.

    Remembered for recent values: a run writes the same messages' times again at every step
    (`strftime` is most of a message's `to_dict`); equal datetimes are the same instant."""
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


@dataclass
class MessageContent:
    """The body of a stored message: format 2, a list of parts, the legacy flat string."""

    parts: list[Part] = field(default_factory=list)
    content: str | None = None
    metadata: dict[str, Any] | None = None
    format: int = 2
    extra: dict[str, Any] = field(default_factory=dict)
    """Other keys of Mastra's content object (providerMetadata, ...), kept for the round trip."""

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"format": self.format, "parts": [dict(p) for p in self.parts]}
        if self.content is not None:
            data["content"] = self.content
        if self.metadata is not None:
            data["metadata"] = self.metadata
        data.update(self.extra)
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MessageContent:
        known = {"format", "parts", "content", "metadata"}
        return cls(
            parts=[as_part(p) for p in data.get("parts") or []],
            content=data.get("content"),
            metadata=data.get("metadata"),
            format=data.get("format", 2),
            extra={k: v for k, v in data.items() if k not in known},
        )


@dataclass(eq=False)
class Message:
    """A conversation message as Mastra stores it (`MastraDBMessage`)."""

    role: Role
    content: MessageContent
    id: str = field(default_factory=new_id)
    created_at: datetime = field(default_factory=utc_now)
    thread_id: str | None = None
    resource_id: str | None = None
    type: str | None = None

    @property
    def text(self) -> str:
        """The text parts joined; the legacy `content.content` string when there are none."""
        text = "".join(p.get("text", "") for p in self.content.parts if p.get("type") == "text")
        if not text and isinstance(self.content.content, str):
            return self.content.content
        return text

    @property
    def parts(self) -> list[Part]:
        return self.content.parts

    def copy(self) -> Message:
        return Message.from_dict(json.loads(json.dumps(self.to_dict(), default=str)))

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "role": self.role,
            "createdAt": format_datetime(self.created_at),
            "content": self.content.to_dict(),
        }
        if self.thread_id is not None:
            data["threadId"] = self.thread_id
        if self.resource_id is not None:
            data["resourceId"] = self.resource_id
        if self.type is not None:
            data["type"] = self.type
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Message:
        """Read Mastra's stored JSON shape."""
        role = data.get("role")
        if role not in ROLES:
            raise InvalidMessageError(f"message role must be one of {sorted(ROLES)}, got {role!r}")
        content = data.get("content")
        if not isinstance(content, dict):
            raise InvalidMessageError("a stored message's content must be an object with `parts`")
        return cls(
            id=data.get("id") or new_id(),
            role=role,
            content=MessageContent.from_dict(content),
            created_at=parse_datetime(data["createdAt"]) if data.get("createdAt") else utc_now(),
            thread_id=data.get("threadId"),
            resource_id=data.get("resourceId"),
            type=data.get("type"),
        )

    @classmethod
    def text_message(cls, role: Role, text: str, **kwargs: Any) -> Message:
        return cls(
            role=role,
            content=MessageContent(parts=[Part(type="text", text=text, createdAt=now_ms())], content=text),
            **kwargs,
        )

    @classmethod
    def coerce(cls, value: Any) -> Message:
        """A `Message` from any accepted input shape."""
        if isinstance(value, Message):
            return value
        if isinstance(value, str):
            return cls.text_message("user", value)
        if isinstance(value, dict):
            return _from_chat_dict(value)
        raise InvalidMessageError(
            f"a message must be a str, a dict with role and content, or a Message; got {type(value).__name__}"
        )

    @classmethod
    def coerce_many(cls, value: Any) -> list[Message]:
        if value is None:
            return []
        if isinstance(value, (str, dict, Message)):
            return [cls.coerce(value)]
        if isinstance(value, Iterable):
            return [cls.coerce(item) for item in value]
        raise InvalidMessageError(
            f"messages must be a message or a list of messages, got {type(value).__name__}"
        )


def _from_chat_dict(data: dict[str, Any]) -> Message:
    """Chat-style dicts: `{"role", "content": str | [parts]}` (AI SDK model or UI shape),
    or Mastra's stored shape (content is an object with `parts`)."""
    role = data.get("role")
    if role not in ROLES:
        raise InvalidMessageError(f"message role must be one of {sorted(ROLES)}, got {role!r}")
    content = data.get("content", data.get("parts"))
    if isinstance(content, dict):
        return Message.from_dict(data)
    common: dict[str, Any] = {"id": data.get("id") or new_id()}
    if data.get("createdAt") or data.get("created_at"):
        common["created_at"] = parse_datetime(data.get("createdAt") or data.get("created_at"))
    if data.get("threadId"):
        common["thread_id"] = data["threadId"]
    if data.get("resourceId"):
        common["resource_id"] = data["resourceId"]
    if isinstance(content, str):
        message = Message.text_message(role, content, **common)
    elif isinstance(content, list):
        parts = [stamped(_part_from_chat(p)) for p in content]
        flat = "".join(p.get("text", "") for p in parts if p.get("type") == "text")
        message = Message(role=role, content=MessageContent(parts=parts, content=flat or None), **common)
    elif content is None:
        message = Message(role=role, content=MessageContent(), **common)
    else:
        raise InvalidMessageError(
            f"message content must be a str or a list of parts, got {type(content).__name__}"
        )
    if data.get("metadata") is not None:
        message.content.metadata = dict(data["metadata"])
    return message


def _part_from_chat(part: Any) -> Part:
    """AI SDK model/UI parts -> Mastra stored parts."""
    if isinstance(part, str):
        return Part(type="text", text=part)
    if not isinstance(part, dict) or "type" not in part:
        raise InvalidMessageError(f"a content part must be a dict with a `type`, got {part!r}")
    kind = part["type"]
    if kind == "tool-call":
        args = part.get("input", part.get("args"))
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                pass
        return Part(
            type="tool-invocation",
            toolInvocation={
                "state": "call",
                "toolCallId": part["toolCallId"],
                "toolName": part["toolName"],
                "args": args if args is not None else {},
            },
        )
    if kind == "tool-result":
        output = part.get("output", part.get("result"))
        return Part(
            type="tool-invocation",
            toolInvocation={
                "state": "result",
                "toolCallId": part["toolCallId"],
                "toolName": part["toolName"],
                "args": part.get("input", {}),
                "result": model_output_value(output),
            },
        )
    if kind == "image":
        return Part(
            type="file",
            data=part.get("image"),
            mimeType=part.get("mediaType", part.get("mimeType", "image/*")),
        )
    if kind == "file":
        return Part(
            type="file",
            data=part.get("data", part.get("url")),
            mimeType=part.get("mediaType", part.get("mimeType")),
        )
    if kind.startswith("tool-") and "toolCallId" in part and kind != "tool-invocation":
        # An AI SDK v5 UI tool part: `tool-<name>` with state/input/output.
        state = "result" if part.get("state") == "output-available" else "call"
        invocation: dict[str, Any] = {
            "state": state,
            "toolCallId": part["toolCallId"],
            "toolName": kind[5:],
            "args": part.get("input", {}),
        }
        if state == "result":
            invocation["result"] = part.get("output")
        return Part(type="tool-invocation", toolInvocation=invocation)
    return Part(part)


def model_output_value(output: Any) -> Any:
    """The plain value of an AI SDK tool-result `output` (`{"type": "json", "value": ...}`)."""
    if (
        isinstance(output, dict)
        and output.get("type") in ("json", "text", "error-text", "error-json")
        and "value" in output
    ):
        return output["value"]
    return output
