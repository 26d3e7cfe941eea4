"""`ServerCache`: the async key-value interface every cache backend implements.

Values are JSON-serialisable (dicts, lists, strings, numbers, booleans, None), so an entry
written by one backend reads the same from any other, and a Redis shared by several processes
holds nothing Python-specific. TTLs are in seconds (fractions allowed); `None` keeps an entry
until it is evicted or deleted.
"""

from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from typing import Any


class ServerCache(ABC):
    """An async key-value cache. Subclass it to plug in another backend.

    Backend failures (a server that is down, a timeout) propagate as the backend's own
    exceptions; callers that must not fail because of a cache, such as `ResponseCache`,
    catch them.
    """

    @abstractmethod
    async def get(self, key: str) -> Any:
        """The value stored under `key`, or `None` when it is missing or expired."""

    @abstractmethod
    async def set(self, key: str, value: Any, ttl: float | None = None) -> None:
        """Store `value` (JSON-serialisable) under `key`, expiring after `ttl` seconds."""

    @abstractmethod
    async def delete(self, key: str) -> bool:
        """Remove `key`; whether it was there."""

    @abstractmethod
    async def clear(self) -> None:
        """Remove every entry this cache owns."""

    async def close(self) -> None:
        """Release connections; the default has none to release."""


def encode_value(value: Any) -> str:
    """The JSON text a backend stores; raises `TypeError` for values JSON cannot hold."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def decode_value(text: str | bytes) -> Any:
    return json.loads(text)


def check_ttl(ttl: float | None) -> float | None:
    """Reject TTLs that cannot mean "keep for this long" (zero, negative, NaN, infinite)."""
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, int | float) or not math.isfinite(ttl) or ttl <= 0:
        raise ValueError(f"ttl must be a positive number of seconds or None, got {ttl!r}")
    return float(ttl)
