"""`ResponseCache`: answer a model call from a cache when the exact same request was seen before.

The processor works on the resolved request (after memory and earlier processors), so two users
whose memories differ never share an entry, and each step of a tool loop is its own entry.
`process_llm_request` looks the step up and, on a hit, hands the cached chunks to the loop,
which replays them instead of calling the model; `process_llm_response` writes a completed,
successful step. A cache that fails (Redis down, a corrupt entry) is logged and bypassed: the
agent answers uncached rather than failing.
"""

from __future__ import annotations

import dataclasses
import enum
import hashlib
import inspect
import json
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Final, TypeAlias

from sluicegate.cache.base import ServerCache, check_ttl
from sluicegate.processors.args import ProcessLLMRequestArgs, ProcessLLMRequestResult, ProcessLLMResponseArgs
from sluicegate.processors.base import Processor
from sluicegate.request_context import AGENT_ID_KEY, RESOURCE_ID_KEY, RequestContext
from sluicegate.stream.chunk import Chunk, TextPayload
from sluicegate.stream.payload import Payload
from sluicegate.stream.usage import Usage

logger = logging.getLogger(__name__)

RESPONSE_CACHE_CONTEXT_KEY: Final = "sluicegate__responseCache"
"""Request-context key holding per-call overrides; set it with `ResponseCache.context()`."""
DEFAULT_TTL_SECONDS: Final = 300.0
"""Five minutes, as in Mastra (and OpenRouter's reference implementation)."""
DEFAULT_AGENT_ID: Final = "sluicegate-response-cache"
KEY_PREFIX: Final = "sluicegate:agent-response:"
ENTRY_VERSION: Final = 2
"""2: a tool-call step is stored with its tools' results (version 1 entries replayed calls only)."""

_CACHEABLE_FINISH_REASONS = frozenset(("stop", "length", "tool-calls"))
_FAILURE_CHUNK_TYPES = frozenset(("error", "tripwire", "abort"))
_DELTA_TYPES = frozenset(("text-delta", "reasoning-delta"))
_STATE_KEY = "__response_cache_pending__"
_AWAITING_RESULTS_KEY = "__response_cache_awaiting_results__"


class _Unset(enum.Enum):
    UNSET = "UNSET"


UNSET: Final = _Unset.UNSET
"""Marks an option that was not given (so `scope=None`, "share", stays distinguishable)."""


@dataclass(frozen=True, slots=True)
class ModelIdentity:
    """Which model answers: different models give different answers, so each has its own entries."""

    provider: str | None = None
    model_id: str | None = None
    specification_version: str | None = None

    @classmethod
    def of(cls, model: Any) -> ModelIdentity:
        def text(name: str) -> str | None:
            value = getattr(model, name, None)
            return value if isinstance(value, str) else None

        return cls(text("provider"), text("model_id"), text("specification_version"))


@dataclass(frozen=True, slots=True)
class ResponseCacheKeyInputs:
    """Everything that changes the model's answer at one step; the default key hashes all of it.

    `tools` and `tool_choice` are included because they change the answer: a model offered a
    different tool set (a `ToolSearchProcessor` step, `active_tools`) or forced to call a tool
    (`tool_choice="required"`) answers differently, and a replayed call to a tool the request
    no longer offers would break the loop.
    """

    agent_id: str
    step_number: int
    scope: str | None
    model: ModelIdentity
    prompt: list[dict[str, Any]]
    tools: list[dict[str, Any]] = field(default_factory=list)
    tool_choice: Any = None


KeyFunction: TypeAlias = Callable[[ResponseCacheKeyInputs], str | Awaitable[str]]
"""A custom key: receives the inputs the default key would hash; may be sync or async."""


def build_response_cache_key(inputs: ResponseCacheKeyInputs | None = None, /, **overrides: Any) -> str:
    """The deterministic cache key: a SHA-256 of the canonical JSON of `inputs`.

    Fields can be overridden by keyword, which lets a custom key reuse the default while
    changing one input::

        ResponseCache(cache=cache, key=lambda inputs: build_response_cache_key(inputs, scope="global"))

    The key reads `sluicegate:agent-response:<agent id>[:<scope digest>]:<digest>`; the scope
    digest lets an operator find (or drop) one tenant's entries without storing the tenant id.
    """
    if inputs is None:
        inputs = ResponseCacheKeyInputs(**overrides)
    elif overrides:
        inputs = dataclasses.replace(inputs, **overrides)
    model = inputs.model
    payload = {
        "agent": inputs.agent_id,
        "step": inputs.step_number,
        "scope": inputs.scope or "",
        "model": [model.provider, model.model_id, model.specification_version],
        "prompt": inputs.prompt,
        "tools": inputs.tools,
        "toolChoice": inputs.tool_choice,
    }
    digest = hashlib.sha256(canonical_json(payload).encode()).hexdigest()
    scope_tag = f":{hashlib.sha256(inputs.scope.encode()).hexdigest()[:8]}" if inputs.scope else ""
    return f"{KEY_PREFIX}{inputs.agent_id}{scope_tag}:{digest}"


def canonical_json(value: Any) -> str:
    """JSON with sorted keys and no whitespace, so equal values always give equal text.

    Values JSON cannot hold get a stable stand-in: bytes become their length and digest (a
    file part is identified, not embedded), datetimes their ISO form, models their dump.
    """
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_stand_in)
    except (TypeError, ValueError):
        # Non-string dict keys of mixed types cannot be sorted by `json`; normalise them first.
        return json.dumps(
            _normalise(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_stand_in
        )


def _stand_in(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        data = bytes(value)
        return f"binary:{len(data)}:{hashlib.sha256(data).hexdigest()}"
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Payload):
        return value.to_dict()
    if isinstance(value, set | frozenset):
        return sorted(canonical_json(item) for item in value)
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if hasattr(value, "to_dict"):
        return value.to_dict()
    return f"{type(value).__qualname__}:{value}"


def _normalise(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _normalise(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_normalise(v) for v in value]
    return value


# --------------------------------------------------------------------------- entries


def encode_chunks(chunks: list[Chunk]) -> list[dict[str, Any]]:
    """Chunks as stored: `Chunk.to_dict()` without the run id (it belongs to the run that wrote
    the entry; a replay runs under its own) and without `from` when it is the default."""
    out: list[dict[str, Any]] = []
    append = out.append
    for chunk in chunks:
        payload = chunk.payload
        if chunk.type in _DELTA_TYPES and type(payload) is TextPayload and chunk.from_ == "AGENT":
            append({"type": chunk.type, "payload": {"id": payload.id, "text": payload.text}})
            continue
        data = chunk.to_dict()
        del data["runId"]
        if data.get("from") == "AGENT":
            del data["from"]
        append(data)
    return out


def decode_chunks(raw: list[Any]) -> list[Chunk]:
    """Stored chunks back as `Chunk`s (`Chunk.from_dict`, with a fast path for text deltas and
    `output.usage` restored as a `Usage`). Raises on a malformed entry."""
    out: list[Chunk] = []
    append = out.append
    for data in raw:
        kind = data["type"]
        payload = data.get("payload")
        if kind in _DELTA_TYPES and "from" not in data and len(payload) == 2:
            append(Chunk(kind, "", TextPayload(payload["id"], payload["text"])))
            continue
        chunk = Chunk.from_dict(data)
        output: Any = getattr(chunk.payload, "output", None)
        usage = getattr(output, "usage", None)
        if isinstance(usage, Payload) and not isinstance(usage, Usage):
            output.usage = Usage.from_v2(usage.to_dict())
        append(chunk)
    return out


def is_cacheable(chunks: list[Chunk]) -> bool:
    """A step worth replaying: no error, tripwire or abort chunk, and a successful finish."""
    finished = False
    for chunk in chunks:
        if chunk.type in _FAILURE_CHUNK_TYPES:
            return False
        if chunk.type == "finish":
            reason = getattr(getattr(chunk.payload, "step_result", None), "reason", None)
            if reason is None:
                reason = getattr(chunk.payload, "finish_reason", None)
            if reason not in _CACHEABLE_FINISH_REASONS:
                return False
            finished = True
    return finished


# --------------------------------------------------------------------------- overrides


@dataclass(frozen=True, slots=True)
class ResponseCacheOverrides:
    """Per-call settings carried in a request context; fields left `UNSET` keep the processor's."""

    key: str | KeyFunction | _Unset = UNSET
    scope: str | _Unset | None = UNSET
    bust: bool | _Unset = UNSET

    def __post_init__(self) -> None:
        if self.key is not UNSET:
            _check_key(self.key)
        if self.scope is not UNSET:
            _check_scope(self.scope)
        if self.bust is not UNSET and not isinstance(self.bust, bool):
            raise TypeError(f"bust must be a bool, got {self.bust!r}")


def _check_key(key: Any) -> None:
    if isinstance(key, str):
        if not key:
            raise ValueError("key must not be empty")
    elif not callable(key):
        raise TypeError(f"key must be a string or a callable, got {key!r}")


def _check_scope(scope: Any) -> None:
    if scope is not None and not isinstance(scope, str):
        raise TypeError(f"scope must be a string or None, got {scope!r}")


# --------------------------------------------------------------------------- processor


class ResponseCache(Processor):
    """Replays a cached model response when a step's resolved request was answered before.

    Add it to `input_processors`; each step of a run is looked up (and, when it completes
    successfully, written) under a key derived from the agent id, step number, scope, model
    identity, resolved prompt, tools and tool choice (see `build_response_cache_key`). `scope`
    defaults to the request's resource id (set by memory), so users never share entries;
    `scope=None` shares them (public content only). `key` (a string, or a sync or async
    function of `ResponseCacheKeyInputs`) replaces the derived key; a function that raises falls
    back to it. A string key is suffixed with the step number after step 0, so a tool loop
    under one custom key still caches each step separately. `bust=True` skips the read but
    still writes. Backend errors are logged as warnings and the step runs uncached.

    A tool-call step is stored once its tools have returned (when the next step starts), with
    their results; a hit replays the calls *and* their results, and the tools are not run again
    (their side effects do not repeat). A step whose tools failed is not stored.

    Example::

        from sluicegate import Agent
        from sluicegate.cache import InMemoryServerCache
        from sluicegate.processors import ResponseCache

        cache = ResponseCache(cache=InMemoryServerCache(), ttl=600)
        agent = Agent(name="search", model="openai/gpt-5", input_processors=[cache])
        await agent.generate("What is a sluice gate?")   # calls the model, stores the answer
        await agent.generate("What is a sluice gate?")   # replayed from the cache
        await agent.generate("What is a sluice gate?",   # force a refresh
                             request_context=ResponseCache.context(bust=True))
    """

    id = "response-cache"
    name = "Response cache"
    description = "Answers repeated model calls from a cache."

    def __init__(
        self,
        *,
        cache: ServerCache,
        ttl: float | None = DEFAULT_TTL_SECONDS,
        agent_id: str | None = None,
        scope: str | _Unset | None = UNSET,
        key: str | KeyFunction | None = None,
        bust: bool = False,
    ) -> None:
        super().__init__()
        if not (callable(getattr(cache, "get", None)) and callable(getattr(cache, "set", None))):
            raise TypeError(f"cache must be a ServerCache (with async get and set), got {cache!r}")
        if agent_id is not None and (not isinstance(agent_id, str) or not agent_id):
            raise TypeError(f"agent_id must be a non-empty string or None, got {agent_id!r}")
        if scope is not UNSET:
            _check_scope(scope)
        if key is not None:
            _check_key(key)
        if not isinstance(bust, bool):
            raise TypeError(f"bust must be a bool, got {bust!r}")
        self.cache = cache
        self.ttl = check_ttl(ttl)
        self.agent_id = agent_id
        self.scope = scope
        self.key = key
        self.bust = bust

    # ------------------------------------------------------------------ per-call overrides

    @staticmethod
    def context(
        *,
        key: str | KeyFunction | _Unset = UNSET,
        scope: str | _Unset | None = UNSET,
        bust: bool | _Unset = UNSET,
    ) -> RequestContext:
        """A new request context carrying per-call overrides (`cache`, `ttl` and `agent_id` stay
        on the processor: they are not safe to vary per call)."""
        return ResponseCache.apply_context(RequestContext(), key=key, scope=scope, bust=bust)

    @staticmethod
    def apply_context(
        request_context: RequestContext,
        *,
        key: str | KeyFunction | _Unset = UNSET,
        scope: str | _Unset | None = UNSET,
        bust: bool | _Unset = UNSET,
    ) -> RequestContext:
        """Set per-call overrides on an existing context (replacing earlier ones); returns it."""
        request_context.set(
            RESPONSE_CACHE_CONTEXT_KEY, ResponseCacheOverrides(key=key, scope=scope, bust=bust)
        )
        return request_context

    # ------------------------------------------------------------------ hooks

    async def process_llm_request(  # the base types hooks as sync
        self, args: ProcessLLMRequestArgs
    ) -> ProcessLLMRequestResult | None:
        state = args.state
        state.pop(_STATE_KEY, None)
        awaiting = state.pop(_AWAITING_RESULTS_KEY, None)
        if awaiting is not None:
            await self._write_with_results(awaiting, args.message_list)
        overrides = args.request_context.get(RESPONSE_CACHE_CONTEXT_KEY)
        if not isinstance(overrides, ResponseCacheOverrides):
            overrides = ResponseCacheOverrides()
        try:
            key = await self._derive_key(args, overrides)
        except Exception as error:  # e.g. a prompt holding a circular reference
            logger.warning(
                "response cache key derivation failed (%s: %s); answering uncached",
                type(error).__name__,
                error,
            )
            return None
        bust = self.bust if overrides.bust is UNSET else overrides.bust
        if not bust:
            try:
                entry = await self.cache.get(key)
            except Exception as error:
                logger.warning(
                    "response cache read failed (%s: %s); answering uncached", type(error).__name__, error
                )
                return None
            if entry is not None:
                chunks = self._restore(entry, key)
                if chunks:
                    return ProcessLLMRequestResult(response=chunks)
        state[_STATE_KEY] = key
        return None

    async def process_llm_response(self, args: ProcessLLMResponseArgs) -> None:
        key = args.state.pop(_STATE_KEY, None)
        if args.from_cache or not args.accepted or key is None or not is_cacheable(args.chunks):
            return
        calls = [c for c in args.chunks if c.type == "tool-call" and not c.payload.get("provider_executed")]
        if calls:  # stored when the results are known: see process_llm_request
            args.state[_AWAITING_RESULTS_KEY] = (key, list(args.chunks), calls)
            return
        await self._write(key, args.chunks)

    async def _write(self, key: str, chunks: list[Chunk]) -> None:
        try:
            entry = {"version": ENTRY_VERSION, "chunks": encode_chunks(chunks)}
            await self.cache.set(key, entry, self.ttl)
        except Exception as error:
            logger.warning(
                "response cache write failed (%s: %s); the response is not cached",
                type(error).__name__,
                error,
            )

    async def _write_with_results(self, awaiting: Any, message_list: Any) -> None:
        """Store a tool-call step with the results its tools returned (now in the history), the
        result chunks right after the step's chunks. Nothing is stored if a tool failed."""
        key, chunks, calls = awaiting
        invocations: dict[str, dict[str, Any]] = {}
        if message_list is not None:
            for message in message_list.get.all.db():
                for part in message.content.parts:
                    invocation = part.get("toolInvocation") if part.get("type") == "tool-invocation" else None
                    if isinstance(invocation, dict) and invocation.get("state") == "result":
                        invocations[str(invocation.get("toolCallId"))] = invocation
        results: list[Chunk] = []
        for call in calls:
            invocation = invocations.get(call.payload.tool_call_id)
            if invocation is None or invocation.get("isError"):
                return
            payload = Payload(
                tool_call_id=call.payload.tool_call_id,
                tool_name=call.payload.tool_name,
                args=call.payload.args,
                result=invocation.get("result"),
                is_error=False,
            )
            results.append(Chunk("tool-result", call.run_id, payload))
        finish_at = next((i for i, c in enumerate(chunks) if c.type == "finish"), len(chunks))
        await self._write(key, [*chunks[:finish_at], *results, *chunks[finish_at:]])

    # ------------------------------------------------------------------ helpers

    def key_inputs(
        self, args: ProcessLLMRequestArgs, overrides: ResponseCacheOverrides | None = None
    ) -> ResponseCacheKeyInputs:
        """The inputs the key of this request is derived from."""
        context = args.request_context
        scope: Any = overrides.scope if overrides is not None else UNSET
        if scope is UNSET:
            scope = self.scope
        if scope is UNSET:
            resource = context.get(RESOURCE_ID_KEY)
            scope = resource if isinstance(resource, str) and resource else None
        agent_id = self.agent_id
        if agent_id is None:
            published = context.get(AGENT_ID_KEY)
            agent_id = published if isinstance(published, str) and published else DEFAULT_AGENT_ID
        return ResponseCacheKeyInputs(
            agent_id=agent_id,
            step_number=args.step_number,
            scope=scope,
            model=ModelIdentity.of(args.model),
            prompt=args.prompt,
            tools=list(args.tools or ()),
            tool_choice=args.tool_choice,
        )

    async def _derive_key(self, args: ProcessLLMRequestArgs, overrides: ResponseCacheOverrides) -> str:
        inputs = self.key_inputs(args, overrides)
        custom = self.key if overrides.key is UNSET else overrides.key
        if isinstance(custom, str):
            return custom if inputs.step_number == 0 else f"{custom}:step:{inputs.step_number}"
        if custom is not None:
            try:
                result = custom(inputs)
                if inspect.isawaitable(result):
                    result = await result
                if not isinstance(result, str) or not result:
                    raise TypeError(f"the key function returned {result!r}, not a non-empty string")
                return result
            except Exception as error:
                logger.warning(
                    "response cache key function failed (%s: %s); using the default key",
                    type(error).__name__,
                    error,
                )
        return build_response_cache_key(inputs)

    @staticmethod
    def _restore(entry: Any, key: str) -> list[Chunk] | None:
        try:
            if entry.get("version") != ENTRY_VERSION:
                return None
            return decode_chunks(entry["chunks"])
        except Exception as error:
            logger.warning(
                "response cache entry %s is unreadable (%s: %s); answering uncached",
                key,
                type(error).__name__,
                error,
            )
            return None
