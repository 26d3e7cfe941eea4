"""A circuit breaker for fallback models: a model that keeps failing is skipped for a while.

Without it every request pays for a dead primary (a connect timeout, a slow 500) before its
fallback answers. With it, a model that failed `failures` times within `window` seconds is
"open": runs go straight to the next model for `cooldown` seconds. Then one run (only one)
tries it again: success closes the circuit, failure opens it for another `cooldown`. So a dead
provider costs one failed call per cooldown window, not one per request.

Only failures another attempt might not repeat count: retryable `APICallError`s (5xx, 429,
connection failures, timeouts), before or inside the stream; a 400 says something about the
request, not the model. The last model of a list is always tried, open or not: a request is
never failed without asking any model.

`CircuitBreaker` keeps its state in the process; `RedisCircuitBreaker`
(`sluicegate.models.redis_circuit_breaker`) shares it between processes. Keys are
`provider/model_id`, so agents sharing one breaker share what they learnt about a model.
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

from sluicegate.errors import APICallError, ConfigurationError

log = logging.getLogger("sluicegate.models")

DEFAULT_FAILURES = 3
DEFAULT_WINDOW = 60.0
DEFAULT_COOLDOWN = 30.0


def counts_as_failure(error: BaseException) -> bool:
    """Whether a failed call says the model (its provider) is unwell."""
    return isinstance(error, APICallError) and error.is_retryable


def _positive(name: str, value: object, *, integer: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, int if integer else (int, float)):
        kind = "a positive integer" if integer else "a positive number of seconds"
        raise ConfigurationError(f"CircuitBreaker {name} must be {kind}, got {value!r}")
    if not (math.isfinite(value) and value > 0):
        kind = "a positive integer" if integer else "a positive number of seconds"
        raise ConfigurationError(f"CircuitBreaker {name} must be {kind}, got {value!r}")


@dataclass(slots=True)
class _Circuit:
    failures: deque[float] = field(default_factory=deque)
    open_until: float | None = None
    """Set once the circuit tripped; until a call succeeds it stays tripped."""
    probe_until: float | None = None
    """While a run tries the tripped model again, no other run does (until this time)."""


class CircuitBreaker:
    """Skip a model that failed `failures` times in `window` seconds, for `cooldown` seconds.

    Off unless an agent is given one (`Agent(..., circuit_breaker=CircuitBreaker())`); one
    instance can serve many agents. The state lives in this process."""

    def __init__(
        self,
        *,
        failures: int = DEFAULT_FAILURES,
        window: float = DEFAULT_WINDOW,
        cooldown: float = DEFAULT_COOLDOWN,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        _positive("failures", failures, integer=True)
        _positive("window", window)
        _positive("cooldown", cooldown)
        self.failures = failures
        self.window = float(window)
        self.cooldown = float(cooldown)
        self._clock = clock
        self._circuits: dict[str, _Circuit] = {}

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(failures={self.failures}, window={self.window}, cooldown={self.cooldown})"
        )

    async def allows(self, key: str) -> bool:
        """Whether `key` may be called now. A tripped model whose cooldown is over lets exactly
        one caller through (the probe) until that call's outcome is recorded."""
        circuit = self._circuits.get(key)
        if circuit is None or circuit.open_until is None:
            return True
        now = self._clock()
        if now < circuit.open_until:
            return False
        if circuit.probe_until is not None and now < circuit.probe_until:
            return False
        circuit.probe_until = now + self.cooldown
        return True

    async def failed(self, key: str) -> None:
        now = self._clock()
        circuit = self._circuits.setdefault(key, _Circuit())
        if circuit.open_until is not None:  # the probe failed: closed to everyone again
            circuit.open_until = now + self.cooldown
            circuit.probe_until = None
            return
        failures = circuit.failures
        failures.append(now)
        while failures and failures[0] <= now - self.window:
            failures.popleft()
        if len(failures) >= self.failures:
            failures.clear()
            circuit.open_until = now + self.cooldown
            log.warning(
                "%s failed %d times in %.0f s: skipped for %.0f s (circuit breaker)",
                key,
                self.failures,
                self.window,
                self.cooldown,
            )

    async def succeeded(self, key: str) -> None:
        circuit = self._circuits.pop(key, None)
        if circuit is not None and circuit.open_until is not None:
            log.warning("%s answered again: the circuit breaker lets every call through", key)
