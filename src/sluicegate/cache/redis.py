"""`RedisCache`: a `ServerCache` on Redis, shared by every process that uses the same server.

Keys are namespaced with `prefix`, so `clear()` removes this cache's entries only (never
`FLUSHDB`). Timeouts default to one second: a cache that stalls is worse than a miss.
"""

from __future__ import annotations

from typing import Any

from sluicegate._redis import LoopRedis
from sluicegate.errors import MissingExtraError

try:
    from redis.asyncio import Redis
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingExtraError("redis", extra="redis", feature="RedisCache") from exc

from sluicegate.cache.base import ServerCache, check_ttl, decode_value, encode_value


class RedisCache(ServerCache):
    """A cache on the Redis server at `url`.

    A `redis.asyncio` client is bound to the event loop it first ran on, so the cache keeps
    one client per running loop (an application calling `generate_sync` repeatedly gets a new
    loop each time). Pass `client=` to use a client you manage instead.

    Example::

        cache = RedisCache(url="redis://localhost:6379/0")
        agent = Agent(..., input_processors=[ResponseCache(cache=cache, ttl=600)])
    """

    def __init__(
        self,
        url: str = "redis://localhost:6379/0",
        *,
        prefix: str = "sluicegate:cache:",
        client: Redis | None = None,
        socket_timeout: float = 1.0,
        socket_connect_timeout: float = 1.0,
        scan_batch: int = 500,
    ) -> None:
        self.url = url
        self.prefix = prefix
        self._scan_batch = scan_batch
        self._clients = LoopRedis(
            url, client=client, socket_timeout=socket_timeout, socket_connect_timeout=socket_connect_timeout
        )

    def _redis(self) -> Redis:
        return self._clients.client()

    async def get(self, key: str) -> Any:
        raw = await self._redis().get(self.prefix + key)
        return None if raw is None else decode_value(raw)

    async def set(self, key: str, value: Any, ttl: float | None = None) -> None:
        seconds = check_ttl(ttl)
        text = encode_value(value)
        milliseconds = None if seconds is None else max(1, round(seconds * 1000))
        await self._redis().set(self.prefix + key, text, px=milliseconds)

    async def delete(self, key: str) -> bool:
        return bool(await self._redis().delete(self.prefix + key))

    async def clear(self) -> None:
        client = self._redis()
        batch: list[bytes] = []
        async for name in client.scan_iter(match=_escape_glob(self.prefix) + "*", count=self._scan_batch):
            batch.append(name)
            if len(batch) >= self._scan_batch:
                await client.unlink(*batch)
                batch.clear()
        if batch:
            await client.unlink(*batch)

    async def close(self) -> None:
        """Close the client this cache created (a client passed in stays open)."""
        await self._clients.aclose()

    def __repr__(self) -> str:
        return f"RedisCache(url={_redact(self.url)!r}, prefix={self.prefix!r})"


def _redact(url: str) -> str:
    """The URL without its password, for reprs and logs."""
    scheme, sep, rest = url.partition("://")
    credentials, at, host = rest.rpartition("@")
    if not sep or not at or ":" not in credentials:
        return url
    return f"{scheme}://{credentials.split(':', 1)[0]}:***@{host}"


def _escape_glob(text: str) -> str:
    """Escape Redis glob metacharacters so a prefix matches only itself."""
    return "".join("\\" + char if char in "*?[]\\" else char for char in text)
