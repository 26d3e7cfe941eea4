"""`RedisCircuitBreaker`: the circuit breaker's state on Redis, shared by every process.

One process's failures count for all of them, so a fleet pays for a dead provider once per
cooldown window, not once per process. Per model (keys under `prefix`): `:fails` counts
failures in a fixed window (it expires `window` seconds after the first), `:open` exists while
the model is skipped, `:tripped` until a call succeeds again, `:probe` while one run tries the
model after its cooldown. Each operation is one Lua script call (one round trip, atomic).

Redis failing never fails a run (the breaker saves time, it guards nothing): the model is
tried as if the circuit were closed, and a WARNING is logged once per outage.
"""

from __future__ import annotations

import logging
from typing import Any

from sluicegate._redis import LoopRedis
from sluicegate.errors import MissingExtraError

try:
    from redis.asyncio import Redis
    from redis.exceptions import RedisError
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingExtraError("redis", extra="redis", feature="RedisCircuitBreaker") from exc

from sluicegate.models.circuit_breaker import (
    DEFAULT_COOLDOWN,
    DEFAULT_FAILURES,
    DEFAULT_WINDOW,
    CircuitBreaker,
)

log = logging.getLogger("sluicegate.models")

_ALLOWS = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
if redis.call('EXISTS', KEYS[2]) == 0 then return 1 end
if redis.call('SET', KEYS[3], '1', 'NX', 'PX', ARGV[1]) then return 1 end
return 0
"""
# KEYS: open, tripped, probe. ARGV: cooldown ms.

_FAILED = """
if redis.call('EXISTS', KEYS[3]) == 1 then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
  redis.call('PEXPIRE', KEYS[3], ARGV[4])
  redis.call('DEL', KEYS[4])
  return 0
end
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
if n >= tonumber(ARGV[3]) then
  redis.call('DEL', KEYS[1])
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[2])
  redis.call('SET', KEYS[3], '1', 'PX', ARGV[4])
  return 1
end
return 0
"""
# KEYS: fails, open, tripped, probe. ARGV: window ms, cooldown ms, failures, tripped ttl ms.

_SUCCEEDED = """
local tripped = redis.call('EXISTS', KEYS[3])
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
return tripped
"""


class RedisCircuitBreaker(CircuitBreaker):
    """A `CircuitBreaker` whose state lives on the Redis server at `url`.

    Like `RedisCache`, it keeps one client per running event loop; pass `client=` to use one
    you manage. Timeouts default to a quarter second: a breaker that stalls costs what it saves.

    Example::

        breaker = RedisCircuitBreaker(url="redis://localhost:6379/0", failures=3, cooldown=30)
        agent = Agent(..., model=["openai/gpt-5", "anthropic/claude-x"], circuit_breaker=breaker)
    """

    def __init__(
        self,
        url: str = "redis://localhost:6379/0",
        *,
        failures: int = DEFAULT_FAILURES,
        window: float = DEFAULT_WINDOW,
        cooldown: float = DEFAULT_COOLDOWN,
        prefix: str = "sluicegate:breaker:",
        client: Redis | None = None,
        socket_timeout: float = 0.25,
        socket_connect_timeout: float = 0.25,
    ) -> None:
        super().__init__(failures=failures, window=window, cooldown=cooldown)
        self.url = url
        self.prefix = prefix
        self._clients = LoopRedis(
            url, client=client, socket_timeout=socket_timeout, socket_connect_timeout=socket_connect_timeout
        )
        self._scripts: dict[str, Any] = {}
        self._scripts_client: Redis | None = None
        self._outage = False

    def _redis(self) -> Redis:
        client = self._clients.client()
        if client is not self._scripts_client:  # a new loop's client: register the scripts again
            self._scripts, self._scripts_client = {}, client
        return client

    async def _run(self, script: str, keys: list[str], args: list[int]) -> int | None:
        """The script's result, or None when Redis could not be asked (logged once per outage)."""
        try:
            client = self._redis()
            registered = self._scripts.get(script)
            if registered is None:
                registered = self._scripts[script] = client.register_script(script)
            result = int(await registered(keys=keys, args=args))
        except (RedisError, OSError) as exc:
            if not self._outage:
                self._outage = True
                log.warning("circuit breaker: Redis at %s failed (%s); every model is tried", self.url, exc)
            return None
        if self._outage:
            self._outage = False
            log.warning("circuit breaker: Redis at %s answers again", self.url)
        return result

    def _keys(self, key: str, *names: str) -> list[str]:
        return [f"{self.prefix}{key}:{name}" for name in names]

    def _ms(self, seconds: float) -> int:
        return max(1, round(seconds * 1000))

    async def allows(self, key: str) -> bool:
        result = await self._run(
            _ALLOWS, self._keys(key, "open", "tripped", "probe"), [self._ms(self.cooldown)]
        )
        return result != 0

    async def failed(self, key: str) -> None:
        tripped_ttl = self._ms(2 * self.cooldown + self.window)
        opened = await self._run(
            _FAILED,
            self._keys(key, "fails", "open", "tripped", "probe"),
            [self._ms(self.window), self._ms(self.cooldown), self.failures, tripped_ttl],
        )
        if opened == 1:
            log.warning(
                "%s failed %d times in %.0f s: skipped for %.0f s (circuit breaker, on Redis)",
                key,
                self.failures,
                self.window,
                self.cooldown,
            )

    async def succeeded(self, key: str) -> None:
        if await self._run(_SUCCEEDED, self._keys(key, "fails", "open", "tripped", "probe"), []) == 1:
            log.warning("%s answered again: the circuit breaker lets every call through", key)

    async def close(self) -> None:
        """Close the client this breaker created (a client passed in stays open)."""
        await self._clients.aclose()

    def __repr__(self) -> str:
        return (
            f"RedisCircuitBreaker(prefix={self.prefix!r}, failures={self.failures}, "
            f"window={self.window}, cooldown={self.cooldown})"
        )
