"""Per-request values that processors, tools and memory read.

The keys for the memory thread and resource are Mastra's, so a context filled by one side
reads the same on the other.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

RESOURCE_ID_KEY = "mastra__resourceId"
THREAD_ID_KEY = "mastra__threadId"
AGENT_ID_KEY = "sluicegate__agentId"
"""The id of the agent running the request (set by the agent; memory records it on new threads,
the response cache keys by it when not given an `agent_id`)."""


class RequestContext:
    """A string-keyed bag of values that lives for one `generate` or `stream` call."""

    __slots__ = ("_values",)

    def __init__(self, values: Mapping[str, Any] | None = None) -> None:
        self._values: dict[str, Any] = dict(values or {})

    def set(self, key: str, value: Any) -> None:
        self._values[key] = value

    def get(self, key: str, default: Any = None) -> Any:
        return self._values.get(key, default)

    def has(self, key: str) -> bool:
        return key in self._values

    def delete(self, key: str) -> bool:
        return self._values.pop(key, _MISSING) is not _MISSING

    def keys(self) -> list[str]:
        return list(self._values)

    def to_dict(self) -> dict[str, Any]:
        return dict(self._values)

    def __contains__(self, key: object) -> bool:
        return key in self._values

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __repr__(self) -> str:
        return f"RequestContext({self._values!r})"


_MISSING = object()
