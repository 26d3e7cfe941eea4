"""Server-side caches: a small async key-value interface and two backends.

`ServerCache` is what `ResponseCache` (and anything else that wants a shared cache) talks to;
`InMemoryServerCache` suits one process and tests, `RedisCache` suits several processes.
`RedisCache` is imported on first use, so the Redis client library loads only when needed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sluicegate.cache.base import ServerCache
from sluicegate.cache.memory import InMemoryServerCache

if TYPE_CHECKING:
    from sluicegate.cache.redis import RedisCache


def __getattr__(name: str) -> Any:
    if name == "RedisCache":
        from sluicegate.cache.redis import RedisCache

        globals()["RedisCache"] = RedisCache
        return RedisCache
    raise AttributeError(f"module 'sluicegate.cache' has no attribute {name!r}")


__all__ = ["InMemoryServerCache", "RedisCache", "ServerCache"]
