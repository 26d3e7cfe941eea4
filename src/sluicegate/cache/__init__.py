"""Server-side caches: a small async key-value interface and two backends.

`ServerCache` is what `ResponseCache` (and anything else that wants a shared cache) talks to;
`InMemoryServerCache` suits one process and tests, `RedisCache` suits several processes.
"""

from __future__ import annotations

from sluicegate.cache.base import ServerCache
from sluicegate.cache.memory import InMemoryServerCache
from sluicegate.cache.redis import RedisCache

__all__ = ["InMemoryServerCache", "RedisCache", "ServerCache"]
