"""`InMemoryServerCache`: a bounded, TTL-aware LRU cache for one process.

Entries are stored as JSON text, not as the objects passed in: a caller that later mutates
what it stored (or what it read) cannot change the cached entry, and the in-memory backend
accepts and returns exactly what `RedisCache` does, so tests against one hold for the other.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from sluicegate.cache.base import ServerCache, check_ttl, decode_value, encode_value


class InMemoryServerCache(ServerCache):
    """Holds at most `max_entries` entries, evicting the least recently used first.

    Expired entries read as missing and are dropped when touched. `clock` (seconds, monotonic)
    is injectable so TTL behaviour can be tested without sleeping.

    Example::

        cache = InMemoryServerCache(max_entries=10_000)
        await cache.set("greeting", {"text": "hi"}, ttl=60)
        await cache.get("greeting")  # {"text": "hi"}
    """

    def __init__(self, *, max_entries: int = 1000, clock: Callable[[], float] = time.monotonic) -> None:
        if isinstance(max_entries, bool) or not isinstance(max_entries, int) or max_entries < 1:
            raise ValueError(f"max_entries must be a positive integer, got {max_entries!r}")
        self.max_entries = max_entries
        self._clock = clock
        # key -> (expires_at or None, JSON text); order is least to most recently used.
        self._entries: OrderedDict[str, tuple[float | None, str]] = OrderedDict()

    async def get(self, key: str) -> Any:
        entry = self._entries.get(key)
        if entry is None:
            return None
        expires_at, text = entry
        if expires_at is not None and self._clock() >= expires_at:
            del self._entries[key]
            return None
        self._entries.move_to_end(key)
        return decode_value(text)

    async def set(self, key: str, value: Any, ttl: float | None = None) -> None:
        seconds = check_ttl(ttl)
        text = encode_value(value)
        expires_at = None if seconds is None else self._clock() + seconds
        self._entries[key] = (expires_at, text)
        self._entries.move_to_end(key)
        while len(self._entries) > self.max_entries:
            self._entries.popitem(last=False)

    async def delete(self, key: str) -> bool:
        return self._entries.pop(key, None) is not None

    async def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        """Entries held, expired ones not yet dropped included."""
        return len(self._entries)

    def __repr__(self) -> str:
        return f"InMemoryServerCache(entries={len(self._entries)}, max_entries={self.max_entries})"
