"""Message parts: plain JSON dicts that also answer attribute access.

Parts keep Mastra's stored JSON shape (camelCase keys such as `toolInvocation`), so storage and
the wire need no conversion. Attribute access accepts the snake_case spelling too:
`part.tool_invocation` reads `part["toolInvocation"]`.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from sluicegate.clock import now_ms


@lru_cache(maxsize=512)
def to_camel(name: str) -> str:
    """`tool_call_id` -> `toolCallId`."""
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


@lru_cache(maxsize=512)
def to_snake(name: str) -> str:
    """`toolCallId` -> `tool_call_id`."""
    out: list[str] = []
    for char in name:
        if char.isupper():
            out.append("_")
            out.append(char.lower())
        else:
            out.append(char)
    return "".join(out)


class Part(dict[str, Any]):
    """One content part of a message (`text`, `tool-invocation`, `reasoning`, `file`, ...)."""

    __slots__ = ()

    def __getattr__(self, name: str) -> Any:
        if name in self:
            return self[name]
        camel = to_camel(name)
        if camel in self:
            return self[camel]
        raise AttributeError(f"message part of type {self.get('type')!r} has no field {name!r}")

    def __setattr__(self, name: str, value: Any) -> None:
        camel = to_camel(name)
        self[camel if camel in self or name not in self else name] = value

    def __delattr__(self, name: str) -> None:
        try:
            del self[name if name in self else to_camel(name)]
        except KeyError:
            raise AttributeError(name) from None


def stamped(part: Part) -> Part:
    """`part` with a `createdAt` (now) unless it has one: a part made or received now is dated
    once, where it is made (a stored part keeps its own)."""
    if "createdAt" not in part:
        part["createdAt"] = now_ms()
    return part


def as_part(value: Any) -> Part:
    """A `Part` for a dict (nested dicts are left as they are)."""
    return value if isinstance(value, Part) else Part(value)
