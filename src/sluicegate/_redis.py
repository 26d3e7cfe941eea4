"""A `redis.asyncio` client per running event loop, shared by the Redis-backed parts (the
response cache, the run log, the circuit breaker).

A `redis.asyncio` client is bound to the event loop it first ran on, so an application that
calls `generate_sync` repeatedly (a new loop each time) needs a new client per loop. Passing
`client=` uses a client the caller manages instead. Callers import `redis` themselves first, so
a missing extra is reported by the feature that needs it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from redis.asyncio import Redis


class LoopRedis:
    """The client for the running loop: made on first use in each loop from `url`."""

    def __init__(
        self,
        url: str,
        *,
        client: Redis | None = None,
        socket_timeout: float = 1.0,
        socket_connect_timeout: float = 1.0,
    ) -> None:
        self.url = url
        self.socket_timeout = socket_timeout
        self.socket_connect_timeout = socket_connect_timeout
        self.owned = client is None
        """Whether the clients are made here (and so closed here), not passed in."""
        self._client = client
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def current(self) -> Redis | None:
        """The last client handed out (or the one passed in), without making one."""
        return self._client

    def client(self) -> Redis:
        if not self.owned:
            assert self._client is not None
            return self._client
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            from redis.asyncio import Redis

            self._client = Redis.from_url(
                self.url,
                socket_timeout=self.socket_timeout,
                socket_connect_timeout=self.socket_connect_timeout,
            )
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the client made here for the running loop (a client passed in stays open; one
        made in another, finished loop cannot be closed from this one and is dropped)."""
        if self.owned and self._client is not None:
            client, loop = self._client, self._loop
            self._client, self._loop = None, None
            if loop is asyncio.get_running_loop():
                await client.aclose()
