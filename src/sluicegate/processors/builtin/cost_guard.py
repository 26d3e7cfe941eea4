"""`CostGuardProcessor`: stop (or flag) an agent once its spend passes a budget.

Each model call reserves its estimated cost in a `UsageStore` before it is made and is settled
to the priced real usage afterwards, so a budget can span one run, a thread or a resource (a
user), over a rolling window, and holds under concurrent requests.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import re
import sys
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol, runtime_checkable

from sluicegate.budget import (
    USAGE_SINKS_KEY,
    Reservation,
    UsageSink,
    checked_amounts,
    checked_idempotency_key,
    checked_settlement,
    usage_sinks,
)
from sluicegate.clock import utc_now
from sluicegate.processors.args import (
    ProcessLLMRequestArgs,
    ProcessLLMResponseArgs,
    ProcessorViolation,
)
from sluicegate.processors.base import Processor
from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY
from sluicegate.stream.usage import Usage
from sluicegate.tokens import model_id_of, resolve_encoding

log = logging.getLogger(__name__)

DEFAULT_OUTPUT_TOKENS = 256
"""Output tokens reserved for (and the cap of) a call whose request sets no `max_output_tokens`."""

NO_LIMIT = sys.float_info.max
"""The limit of a reservation that is never refused (a `"warn"` budget's, a sub-agent's charge):
finite, as a durable run's store calls cross the workflow boundary as JSON, which has no
infinity."""

Scope = Literal["run", "thread", "resource"]
Strategy = Literal["block", "warn"]


@runtime_checkable
class UsageStore(Protocol):
    """Where spend is kept between runs. `key` is `"thread:<id>"` or `"resource:<id>"`."""

    async def record(self, key: str, cost: float, usage: dict[str, int], at: datetime) -> None: ...

    async def total(self, key: str, since: datetime | None) -> float: ...


@runtime_checkable
class ReservingUsageStore(UsageStore, Protocol):
    """A `UsageStore` that can hold budget atomically: `reserve` checks the spend and records
    the estimate in one step, so concurrent requests cannot all pass the same check.

    The built-in stores also take `reserve(..., idempotency_key=...)`: called again with the
    key of a reservation they hold, they answer that reservation instead of making another
    (durable runs pass one, so a retried reservation is charged once); `settle` is idempotent."""

    async def reserve(
        self,
        key: str,
        amount: float,
        *,
        limit: float,
        since: datetime | None,
        usage: dict[str, int],
        at: datetime,
    ) -> Reservation: ...

    async def settle(self, key: str, reservation_id: str, cost: float, usage: dict[str, int]) -> None: ...


class InMemoryUsageStore:
    """A `ReservingUsageStore` in this process's memory (lost on restart)."""

    def __init__(self) -> None:
        self._entries: dict[str, dict[int, tuple[datetime, float, dict[str, int]]]] = defaultdict(dict)
        self._granted: dict[tuple[str, str], Reservation] = {}
        """Reservations made with an idempotency key, by (key, idempotency key)."""
        self._lock = asyncio.Lock()
        self._next_id = 0

    def _add(self, key: str, cost: float, usage: dict[str, int], at: datetime) -> int:
        self._next_id += 1
        self._entries[key][self._next_id] = (at, cost, dict(usage))
        return self._next_id

    def _total(self, key: str, since: datetime | None) -> float:
        entries = self._entries.get(key)
        if not entries:
            return 0.0
        return sum(cost for at, cost, _ in entries.values() if since is None or at >= since)

    async def record(self, key: str, cost: float, usage: dict[str, int], at: datetime) -> None:
        async with self._lock:
            self._add(key, cost, usage, at)

    async def total(self, key: str, since: datetime | None) -> float:
        async with self._lock:
            return self._total(key, since)

    async def reserve(
        self,
        key: str,
        amount: float,
        *,
        limit: float,
        since: datetime | None,
        usage: dict[str, int],
        at: datetime,
        idempotency_key: str | None = None,
    ) -> Reservation:
        amount, limit = checked_amounts(amount, limit)
        idempotency_key = checked_idempotency_key(idempotency_key)
        async with self._lock:
            if idempotency_key is not None:
                granted = self._granted.get((key, idempotency_key))
                if granted is not None:
                    return granted
            spent = self._total(key, since)
            if spent >= limit:
                return Reservation(None, spent)
            reservation = Reservation(str(self._add(key, amount, usage, at)), spent)
            if idempotency_key is not None:
                self._granted[(key, idempotency_key)] = reservation
            return reservation

    async def settle(self, key: str, reservation_id: str, cost: float, usage: dict[str, int]) -> None:
        row, cost = checked_settlement(reservation_id, cost)
        async with self._lock:
            entries = self._entries.get(key, {})
            entry = entries.get(row)
            if entry is not None:
                entries[row] = (entry[0], cost, dict(usage))


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


def lookup_price(pricing: Mapping[str, ModelPrice], model_id: str | None) -> ModelPrice | None:
    """The price of the longest key `model_id` starts with (the whole id, then its last path
    segment: `openai/gpt-4o` is priced as `gpt-4o`)."""
    if not model_id:
        return None
    lowered = model_id.lower()
    for candidate in (lowered, lowered.rsplit("/", 1)[-1]):
        best = max((key for key in pricing if candidate.startswith(key)), key=len, default=None)
        if best is not None:
            return pricing[best]
    return None


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
    """A spending budget: every model call reserves its estimated cost before it is made.

    - `max_cost`: the budget in US dollars.
    - `scope`: `"run"` (this request; default), `"thread"` or `"resource"` (across requests,
      from the memory thread/resource of the request; falls back to the run without one).
    - `window`: only spend this recent counts (`"30d"`, `"24h"`, a `timedelta`; default all).
    - `pricing`: `{model_id: {"input": $/1M, "output": $/1M, "cached_input": ...}}` merged over
      `DEFAULT_PRICING`; the longest matching model-id prefix wins. Unpriced models cost 0 (with a
      warning).
    - `strategy`: `"block"` aborts the run once the budget is reached; `"warn"` lets it go on and
      reports through `on_violation` (once per request).
    - `on_violation`: called with a `ProcessorViolation` whose `detail` holds the usage.
    - `store`: a `UsageStore` (default `InMemoryUsageStore()`; `SQLiteStore` and `PostgresStore`
      work too).
    - `default_output_tokens`: the output reserved for, and the cap of, a call whose request sets
      no `max_output_tokens` (default 256).

    Before each model call (`process_llm_request`) the guard counts the prompt's tokens with the
    model's tokenizer, adds the output limit the call is sent with, and reserves that cost
    atomically in the store: the reservation is refused once the spend (open reservations
    included) reached `max_cost`. The call is capped at the output its reservation covers
    (`max_output_tokens_for`), so N concurrent requests overshoot the budget by at most one
    call's reservation, whatever the model answers. Usage with a negative, NaN or infinite
    count is not priced (the reservation stands; logged and reported on the step). The
    reservation is written as a usage record, so a run that is cancelled, fails or loses its
    client before the provider reports usage is charged the estimate; when the usage arrives
    (`process_llm_response`) the record is settled to the real cost (to 0 for a cached replay).
    A run cancelled while reserving is charged if its reservation reached the store (see
    docs/security.md). A store without `reserve` (a custom `UsageStore`) falls back to
    check-then-record, which is not atomic.

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
        default_output_tokens: int = DEFAULT_OUTPUT_TOKENS,
    ) -> None:
        super().__init__()
        if max_cost is None or max_cost < 0:
            raise ValueError("max_cost must be a non-negative amount")
        if scope not in ("run", "thread", "resource"):
            raise ValueError(f"scope must be 'run', 'thread' or 'resource', got {scope!r}")
        if strategy not in ("block", "warn"):
            raise ValueError(f"strategy must be 'block' or 'warn', got {strategy!r}")
        if not isinstance(default_output_tokens, int) or default_output_tokens < 1:
            raise ValueError("default_output_tokens must be a positive integer")
        self.max_cost = max_cost
        self.scope: Scope = scope
        self.window = parse_window(window)
        self.pricing: dict[str, ModelPrice] = {
            **DEFAULT_PRICING,
            **{k.lower(): _as_price(v) for k, v in (pricing or {}).items()},
        }
        self.strategy: Strategy = strategy
        self.store: UsageStore = store if store is not None else InMemoryUsageStore()
        self.default_output_tokens = default_output_tokens
        if on_violation is not None:
            self.on_violation = on_violation
        self._unpriced_warned: set[str] = set()

    def price_for(self, model_id: str | None) -> ModelPrice | None:
        return lookup_price(self.pricing, model_id)

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

    def _since(self) -> datetime | None:
        return utc_now() - self.window if self.window is not None else None

    def estimate(
        self, model: Any, prompt: list[dict[str, Any]], tools: list[dict[str, Any]], max_output: int | None
    ) -> Usage:
        """The expected usage of one call: the prompt's tokens counted with the model's
        tokenizer, plus `max_output` (or `default_output_tokens`). Never zero."""
        output = max_output if max_output is not None and max_output > 0 else self.default_output_tokens
        return Usage(estimate_input_tokens(model_id_of(model), prompt, tools), output)

    def max_output_tokens_for(self, state: dict[str, Any]) -> int | None:
        """The output the current call's reservation covers: the runner caps the call at it
        right after `process_llm_request`, so no answer can cost more than was reserved."""
        cap = state.get("output_cap")
        return cap if isinstance(cap, int) else None

    async def process_llm_request(self, args: ProcessLLMRequestArgs) -> None:
        state = args.state
        state["output_cap"] = None
        self.offer_usage_sink(state, args.request_context)
        guess = self.estimate(args.model, args.prompt, args.tools, args.max_output_tokens)
        amount = self.cost_of(model_id_of(args.model), guess)
        usage = {
            "input_tokens": guess.input_tokens,
            "output_tokens": guess.output_tokens,
            "total_tokens": guess.total_tokens,
            "reserved": 1,
        }
        key = self._scope_key(args.request_context)
        if self.scope == "thread" and key is not None:
            await self._check_thread_owner(args)
        limit = self.max_cost if self.strategy == "block" else NO_LIMIT
        if key is None:
            spent = state.get("run_cost", 0.0)
            reservation = Reservation(None if spent >= limit else "run", spent)
        elif isinstance(self.store, ReservingUsageStore):
            reservation = await self.store.reserve(
                key, amount, limit=limit, since=self._since(), usage=usage, at=utc_now()
            )
        else:
            spent = await self.store.total(key, self._since())
            reservation = Reservation(None if spent >= limit else "unreserved", spent)
            if reservation.id is not None:
                await self.store.record(key, amount, usage, utc_now())
        if reservation.id is None:
            await self._violation(args, reservation.spent, key)  # aborts (block strategy)
            return
        state["output_cap"] = guess.output_tokens
        state["reservation"] = (key, reservation.id, amount)
        state["run_cost"] = state.get("run_cost", 0.0) + amount
        if self.strategy == "warn" and reservation.spent >= self.max_cost:
            await self._violation(args, reservation.spent, key)

    def offer_usage_sink(self, state: dict[str, Any], request_context: Any) -> None:
        """Offer this run's budget to be charged for its sub-agents' spend (`UsageSink`): the
        run's own request context gets a new tuple (the caller's object is never changed). Made
        before the run's first model call, and again by a resumed run (`budget.OffersUsageSink`)."""
        if state.get("offered"):
            return
        state["offered"] = True
        context = request_context
        key = self._scope_key(context)

        async def charge(model_id: str | None, usage: Any) -> None:
            if not isinstance(usage, Usage) or usage_problem(usage) is not None:
                return
            cost = self.cost_of(model_id, usage)
            if not math.isfinite(cost):
                return
            state["run_cost"] = state.get("run_cost", 0.0) + cost
            state["input_tokens"] = state.get("input_tokens", 0) + usage.input_tokens
            state["output_tokens"] = state.get("output_tokens", 0) + usage.output_tokens
            if key is not None:
                record = {
                    "input_tokens": usage.input_tokens,
                    "output_tokens": usage.output_tokens,
                    "total_tokens": usage.total_tokens,
                }
                if isinstance(self.store, ReservingUsageStore):
                    # A reservation that is never refused: in a durable run it carries the
                    # run's next reservation key, so a retried store call is charged once.
                    await self.store.reserve(
                        key, cost, limit=NO_LIMIT, since=None, usage=record, at=utc_now()
                    )
                else:
                    await self.store.record(key, cost, record, utc_now())

        sinks = usage_sinks(context.get(USAGE_SINKS_KEY))
        context.set(USAGE_SINKS_KEY, (*sinks, UsageSink(charge)))

    async def _check_thread_owner(self, args: ProcessLLMRequestArgs) -> None:
        """With a memory store as the usage store, a thread budget is only spent by the thread's
        own resource (`ThreadAccessError` otherwise), as the memory processors check."""
        from sluicegate.storage.base import MemoryStore

        if isinstance(self.store, MemoryStore):
            from sluicegate.memory.ownership import readable_context

            await readable_context(self.store, args.request_context, args.state)

    def suspend_state(self, state: dict[str, Any]) -> dict[str, Any]:
        """What a run's spend so far must keep over a suspension (human in the loop): without it
        a `scope="run"` budget would start again from zero on every approval."""
        return {key: state[key] for key in _CARRIED if key in state}

    async def _violation(self, args: Any, spent: float, key: str | None) -> None:
        state = args.state
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
        state = args.state
        held = state.pop("reservation", None)
        if args.from_cache:
            usage = Usage()  # a replayed response cost nothing
            cost = 0.0
        else:
            reported = next(
                (_usage_of(chunk) for chunk in reversed(args.chunks) if chunk.type == "finish"), None
            )
            if reported is None:
                return  # no usage reported: the reservation stands as the charge
            usage = reported
            problem = usage_problem(usage)
            cost = self.cost_of(model_id_of(args.model), usage) if problem is None else math.nan
            if problem is None and not math.isfinite(cost):
                problem = f"its usage prices at ${cost}"
            if problem is not None:
                self._untrusted_usage(args, problem)
                return  # unknown usage: the reservation stands as the charge
            cap = state.get("output_cap")
            if isinstance(cap, int) and usage.output_tokens > cap:
                self._report(
                    args,
                    f"the provider reported {usage.output_tokens} output tokens for a call capped at "
                    f"{cap}; charged as reported, which exceeds the reservation",
                )
            state["input_tokens"] = state.get("input_tokens", 0) + usage.input_tokens
            state["output_tokens"] = state.get("output_tokens", 0) + usage.output_tokens
        reserved = held[2] if held is not None else 0.0
        state["run_cost"] = state.get("run_cost", 0.0) - reserved + cost
        if held is None or held[0] is None:
            return
        key, reservation_id, _ = held
        record = {
            "input_tokens": usage.input_tokens,
            "output_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
        }
        if isinstance(self.store, ReservingUsageStore):
            await self.store.settle(key, reservation_id, cost, record)
        elif cost != reserved:
            await self.store.record(key, cost - reserved, record, utc_now())

    def _untrusted_usage(self, args: ProcessLLMResponseArgs, problem: str) -> None:
        self._report(
            args,
            f"model {model_id_of(args.model)!r} reported unusable usage ({problem}); "
            "the reservation stands as the call's charge",
        )

    def _report(self, args: ProcessLLMResponseArgs, message: str) -> None:
        """Log a problem with a call's usage and report it on the step's warnings."""
        log.warning("CostGuardProcessor: %s", message)
        args.warnings.append({"type": "other", "message": f"cost guard: {message}"})


def estimate_input_tokens(
    model_id: str | None, prompt: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> int:
    """Tokens of a V2 prompt and its tool definitions, counted with the model's tokenizer
    (4 tokens of framing per message, as chat formats add)."""
    pieces: list[str] = []
    for message in prompt:
        content = message.get("content")
        if isinstance(content, str):
            pieces.append(content)
        elif isinstance(content, list):
            for part in content:
                text = part.get("text") if isinstance(part, dict) else None
                pieces.append(text if isinstance(text, str) else json.dumps(part, default=str))
    if tools:
        pieces.append(json.dumps(tools, default=str))
    text = "\n".join(pieces)
    try:
        counted = len(resolve_encoding(None, model_id).encode_ordinary(text))
    except Exception:  # no tokenizer files: a conservative character estimate
        counted = -(-len(text) // 3)
    return counted + 4 * len(prompt) + 1


_CARRIED = ("run_cost", "input_tokens", "output_tokens", "warned")
"""The state keys a run's spend lives in (the held reservation is settled before a run suspends)."""

_COUNTS = ("input_tokens", "output_tokens", "total_tokens", "cached_input_tokens", "reasoning_tokens")


def usage_problem(usage: Usage) -> str | None:
    """Why a provider's usage cannot be priced (a count that is negative, NaN, infinite or not a
    number), or None. Such usage is treated as unknown: pricing it could refund spend (negative),
    poison a budget's sum (NaN) or lock a key for good (infinite). `Usage.from_v2` already reads
    such counts as 0 and says why in `usage.unusable`."""
    unusable = getattr(usage, "unusable", None)
    if unusable:
        return str(unusable)
    for name in _COUNTS:
        value = getattr(usage, name, None)
        if value is None and name in ("cached_input_tokens", "reasoning_tokens"):
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{name} is {value!r}"
        if not math.isfinite(value) or value < 0:
            return f"{name} is {value!r}"
    return None


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
