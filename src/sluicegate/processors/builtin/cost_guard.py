"""`CostGuardProcessor`: stop (or flag) an agent once its spend passes a budget.

Spend is priced from each step's token usage and recorded in a `UsageStore`, so a budget can
span one run, a thread or a resource (a user), over a rolling window.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol, runtime_checkable

from sluicegate.processors.args import ProcessInputStepArgs, ProcessLLMResponseArgs, ProcessorViolation
from sluicegate.processors.base import Processor
from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY
from sluicegate.stream.usage import Usage
from sluicegate.tokens import model_id_of

log = logging.getLogger(__name__)

Scope = Literal["run", "thread", "resource"]
Strategy = Literal["block", "warn"]


@runtime_checkable
class UsageStore(Protocol):
    """Where spend is kept between runs. `key` is `"thread:<id>"` or `"resource:<id>"`."""

    async def record(self, key: str, cost: float, usage: dict[str, int], at: datetime) -> None: ...

    async def total(self, key: str, since: datetime | None) -> float: ...


class InMemoryUsageStore:
    """A `UsageStore` in this process's memory (lost on restart)."""

    def __init__(self) -> None:
        self._entries: dict[str, list[tuple[datetime, float, dict[str, int]]]] = defaultdict(list)
        self._lock = asyncio.Lock()

    async def record(self, key: str, cost: float, usage: dict[str, int], at: datetime) -> None:
        async with self._lock:
            self._entries[key].append((at, cost, dict(usage)))

    async def total(self, key: str, since: datetime | None) -> float:
        async with self._lock:
            return sum(cost for at, cost, _ in self._entries.get(key, ()) if since is None or at >= since)


@dataclass(frozen=True)
class ModelPrice:
    """US dollars per million tokens."""

    input: float
    output: float
    cached_input: float | None = None

    def cost(self, usage: Usage) -> float:
        cached = usage.cached_input_tokens or 0
        fresh = max(0, usage.input_tokens - cached) if self.cached_input is not None else usage.input_tokens
        total = fresh * self.input + usage.output_tokens * self.output
        if self.cached_input is not None:
            total += cached * self.cached_input
        return total / 1_000_000


DEFAULT_PRICING: dict[str, ModelPrice] = {
    # OpenAI
    "gpt-5": ModelPrice(1.25, 10.0, 0.125),
    "gpt-5-mini": ModelPrice(0.25, 2.0, 0.025),
    "gpt-5-nano": ModelPrice(0.05, 0.4, 0.005),
    "gpt-4.1": ModelPrice(2.0, 8.0, 0.5),
    "gpt-4.1-mini": ModelPrice(0.4, 1.6, 0.1),
    "gpt-4.1-nano": ModelPrice(0.1, 0.4, 0.025),
    "gpt-4o": ModelPrice(2.5, 10.0, 1.25),
    "gpt-4o-mini": ModelPrice(0.15, 0.6, 0.075),
    "gpt-4-turbo": ModelPrice(10.0, 30.0),
    "gpt-4": ModelPrice(30.0, 60.0),
    "gpt-3.5-turbo": ModelPrice(0.5, 1.5),
    "o1": ModelPrice(15.0, 60.0, 7.5),
    "o1-mini": ModelPrice(1.1, 4.4, 0.55),
    "o3": ModelPrice(2.0, 8.0, 0.5),
    "o3-mini": ModelPrice(1.1, 4.4, 0.55),
    "o4-mini": ModelPrice(1.1, 4.4, 0.275),
    # Anthropic
    "claude-opus-4": ModelPrice(15.0, 75.0, 1.5),
    "claude-sonnet-4": ModelPrice(3.0, 15.0, 0.3),
    "claude-3-7-sonnet": ModelPrice(3.0, 15.0, 0.3),
    "claude-3-5-sonnet": ModelPrice(3.0, 15.0, 0.3),
    "claude-3-5-haiku": ModelPrice(0.8, 4.0, 0.08),
    "claude-haiku-4": ModelPrice(1.0, 5.0, 0.1),
    "claude-3-opus": ModelPrice(15.0, 75.0, 1.5),
    "claude-3-haiku": ModelPrice(0.25, 1.25, 0.03),
    # Google
    "gemini-2.5-pro": ModelPrice(1.25, 10.0),
    "gemini-2.5-flash": ModelPrice(0.3, 2.5),
    "gemini-2.0-flash": ModelPrice(0.1, 0.4),
    "gemini-1.5-pro": ModelPrice(1.25, 5.0),
    "gemini-1.5-flash": ModelPrice(0.075, 0.3),
}

_WINDOW = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|m|h|d|w)\s*$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_window(window: str | timedelta | None) -> timedelta | None:
    """`"30d"`, `"24h"`, `"90m"`, `"2w"`, `"45s"` or a `timedelta` -> a `timedelta` (None: all time)."""
    if window is None or isinstance(window, timedelta):
        return window
    match = _WINDOW.match(window)
    if not match:
        raise ValueError(f"window must look like '30d', '24h', '15m', '2w' or '45s', got {window!r}")
    return timedelta(**{_UNITS[match.group(2)]: float(match.group(1))})


def _as_price(value: ModelPrice | Mapping[str, float]) -> ModelPrice:
    if isinstance(value, ModelPrice):
        return value
    return ModelPrice(
        float(value["input"]),
        float(value["output"]),
        float(value["cached_input"]) if value.get("cached_input") is not None else None,
    )


class CostGuardProcessor(Processor):
    """Checks the spend before every model call and records it after every step.

    - `max_cost`: the budget in US dollars.
    - `scope`: `"run"` (this request; default), `"thread"` or `"resource"` (across requests,
      from the memory thread/resource of the request context; falls back to the run without one).
    - `window`: only spend this recent counts (`"30d"`, `"24h"`, a `timedelta`; default all).
    - `pricing`: `{model_id: {"input": $/1M, "output": $/1M, "cached_input": ...}}` merged over
      `DEFAULT_PRICING`; the longest matching model-id prefix wins. Unpriced models cost 0 (with a
      warning).
    - `strategy`: `"block"` aborts the run once the budget is reached; `"warn"` lets it go on and
      reports through `on_violation` (once per request).
    - `on_violation`: called with a `ProcessorViolation` whose `detail` holds the usage.
    - `store`: a `UsageStore` (default `InMemoryUsageStore()`).

    Example::

        guard = CostGuardProcessor(max_cost=10.0, scope="resource", window="30d",
                                   on_violation=lambda v: alerts.send(v.message, v.detail))
        agent = Agent(name="a", model="openai/gpt-4o", input_processors=[guard])
    """

    id = "cost-guard"
    name = "Cost Guard"

    def __init__(
        self,
        *,
        max_cost: float,
        scope: Scope = "run",
        window: str | timedelta | None = None,
        pricing: Mapping[str, ModelPrice | Mapping[str, float]] | None = None,
        strategy: Strategy = "block",
        store: UsageStore | None = None,
        on_violation: Any = None,
    ) -> None:
        super().__init__()
        if max_cost is None or max_cost < 0:
            raise ValueError("max_cost must be a non-negative amount")
        if scope not in ("run", "thread", "resource"):
            raise ValueError(f"scope must be 'run', 'thread' or 'resource', got {scope!r}")
        if strategy not in ("block", "warn"):
            raise ValueError(f"strategy must be 'block' or 'warn', got {strategy!r}")
        self.max_cost = max_cost
        self.scope: Scope = scope
        self.window = parse_window(window)
        self.pricing: dict[str, ModelPrice] = {
            **DEFAULT_PRICING,
            **{k.lower(): _as_price(v) for k, v in (pricing or {}).items()},
        }
        self.strategy: Strategy = strategy
        self.store: UsageStore = store if store is not None else InMemoryUsageStore()
        if on_violation is not None:
            self.on_violation = on_violation
        self._unpriced_warned: set[str] = set()

    def price_for(self, model_id: str | None) -> ModelPrice | None:
        if not model_id:
            return None
        lowered = model_id.lower()
        for candidate in (lowered, lowered.rsplit("/", 1)[-1]):
            best = max((key for key in self.pricing if candidate.startswith(key)), key=len, default=None)
            if best is not None:
                return self.pricing[best]
        return None

    def cost_of(self, model_id: str | None, usage: Usage) -> float:
        price = self.price_for(model_id)
        if price is None:
            if model_id not in self._unpriced_warned:
                self._unpriced_warned.add(str(model_id))
                log.warning("CostGuardProcessor has no price for model %r; its usage counts as $0", model_id)
            return 0.0
        return price.cost(usage)

    def _scope_key(self, request_context: Any) -> str | None:
        if self.scope == "run" or request_context is None:
            return None
        value = request_context.get(THREAD_ID_KEY if self.scope == "thread" else RESOURCE_ID_KEY)
        return f"{self.scope}:{value}" if value else None

    async def process_input_step(self, args: ProcessInputStepArgs) -> None:
        state = args.state
        key = self._scope_key(args.request_context)
        if key is None:
            spent = state.get("run_cost", 0.0)
        else:
            since = datetime.now(UTC) - self.window if self.window is not None else None
            spent = await self.store.total(key, since)
        if spent < self.max_cost:
            return
        usage = {
            "cost": spent,
            "max_cost": self.max_cost,
            "input_tokens": state.get("input_tokens", 0),
            "output_tokens": state.get("output_tokens", 0),
            "run_cost": state.get("run_cost", 0.0),
        }
        detail = {
            "usage": usage,
            "scope": self.scope if key else "run",
            "scope_key": key,
            "window": str(self.window) if self.window is not None else None,
            "strategy": self.strategy,
        }
        message = f"Cost guard: spend ${spent:.4f} reached the limit of ${self.max_cost:.4f}"
        if self.strategy == "block":
            args.abort(message, metadata=detail)
        if state.get("warned"):
            return
        state["warned"] = True
        log.warning("%s", message)
        if self.on_violation is not None:
            try:
                result = self.on_violation(ProcessorViolation(self.id, message, detail))
                if asyncio.iscoroutine(result):
                    await result
            except Exception:  # on_violation must never break the pipeline
                log.debug("on_violation of %s raised", self.id, exc_info=True)

    async def process_llm_response(self, args: ProcessLLMResponseArgs) -> None:
        if args.from_cache:
            return  # a replayed response cost nothing
        usage = next((_usage_of(chunk) for chunk in reversed(args.chunks) if chunk.type == "finish"), None)
        if usage is None:
            return
        cost = self.cost_of(model_id_of(args.model), usage)
        state = args.state
        state["run_cost"] = state.get("run_cost", 0.0) + cost
        state["input_tokens"] = state.get("input_tokens", 0) + usage.input_tokens
        state["output_tokens"] = state.get("output_tokens", 0) + usage.output_tokens
        key = self._scope_key(args.request_context)
        if key is not None:
            await self.store.record(
                key,
                cost,
                {
                    "input_tokens": usage.input_tokens,
                    "output_tokens": usage.output_tokens,
                    "total_tokens": usage.total_tokens,
                },
                datetime.now(UTC),
            )


def _usage_of(chunk: Any) -> Usage | None:
    output = getattr(chunk.payload, "output", None)
    usage = getattr(output, "usage", None) if output is not None else None
    if usage is None:
        return None
    return (
        usage
        if isinstance(usage, Usage)
        else Usage.from_v2(usage if isinstance(usage, dict) else vars(usage))
    )
