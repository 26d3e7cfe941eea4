"""The records memory keeps besides messages: threads and resources.

Both read and write Mastra's JSON shape (`to_dict` / `from_dict`), so a thread listed by a Mastra
client looks the same as one of Mastra's own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sluicegate.clock import utc_now as utc_now  # re-exported: the storage modules read it here
from sluicegate.messages.message import format_datetime, parse_datetime


def to_micros(value: datetime) -> int:
    """A timezone-aware datetime as integer microseconds since the epoch (SQLite's sort key)."""
    aware = value if value.tzinfo else value.replace(tzinfo=UTC)
    delta = aware - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(value: int) -> datetime:
    return datetime.fromtimestamp(value // 1_000_000, UTC).replace(microsecond=value % 1_000_000)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _datetime_or_now(data: dict[str, Any], key: str) -> datetime:
    """`data[key]` parsed, or now when it is missing or empty."""
    value = data.get(key)
    return parse_datetime(value) if value else utc_now()


@dataclass
class Thread:
    """A conversation: it belongs to one resource (a user, an account) for its whole life."""

    id: str
    resource_id: str
    title: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: datetime = field(default_factory=utc_now)
    updated_at: datetime = field(default_factory=utc_now)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "resourceId": self.resource_id,
            "title": self.title,
            "metadata": dict(self.metadata),
            "createdAt": format_datetime(self.created_at),
            "updatedAt": format_datetime(self.updated_at),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Thread:
        return cls(
            id=data["id"],
            resource_id=data["resourceId"],
            title=data.get("title") or "",
            metadata=dict(data.get("metadata") or {}),
            created_at=_datetime_or_now(data, "createdAt"),
            updated_at=_datetime_or_now(data, "updatedAt"),
        )


@dataclass
class Resource:
    """What memory knows about one resource across its threads: the resource-scoped working memory."""

    id: str
    working_memory: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: datetime = field(default_factory=utc_now)
    updated_at: datetime = field(default_factory=utc_now)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "workingMemory": self.working_memory,
            "metadata": dict(self.metadata),
            "createdAt": format_datetime(self.created_at),
            "updatedAt": format_datetime(self.updated_at),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Resource:
        return cls(
            id=data["id"],
            working_memory=data.get("workingMemory"),
            metadata=dict(data.get("metadata") or {}),
            created_at=_datetime_or_now(data, "createdAt"),
            updated_at=_datetime_or_now(data, "updatedAt"),
        )


@dataclass(frozen=True)
class MessageInclude:
    """Ask for one stored message plus up to `before` / `after` neighbours in its thread."""

    id: str
    before: int = 0
    after: int = 0


PseudonymChange = Callable[[tuple[bytes, int] | None], bytes | None]
"""What `update_pseudonyms` applies under the row's lock: given the stored `(sealed, version)`
(None when nothing is stored yet), the bytes to store next, or None to leave it as it is."""
