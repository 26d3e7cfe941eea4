"""`EvaluationModerationProcessor`: moderation by an external evaluation endpoint over HTTP.

Unlike `ModerationProcessor`, which asks a language model and parses its generated text, this
posts the text to a classifier service that answers with a typed verdict (a score). A slow or
dead service must not become the chat's latency: each call has a deadline, and a circuit
breaker stops calling a failing endpoint, so it costs one timeout per cooldown.

The wire contract (POST, JSON):

- request: `{"text": "<at most max_chars characters>", "phase": "input" | "output"}`
- response (200): `{"score": 0.93, "flagged": true, "category": "violence", "model": "...",
  "tokens_in": 120}`; only `score` (0-1) is required, unknown fields are ignored. The text is
  flagged when `score >= threshold` or when the endpoint says `"flagged": true`.

Anything else (a non-2xx status, a timeout, a transport error, a body that is not this JSON)
is a failure: `mode="warn"` logs it and lets the text through, `mode="strict"` stops the run.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, get_args

import httpx
import pydantic

from sluicegate.errors import ConfigurationError
from sluicegate.guardrails.message_checks import message_text
from sluicegate.messages import Message
from sluicegate.models.circuit_breaker import CircuitBreaker
from sluicegate.processors.args import ProcessInputArgs, ProcessOutputResultArgs
from sluicegate.processors.base import Processor, report_violation

log = logging.getLogger(__name__)

Mode = Literal["warn", "strict"]
Phase = Literal["input", "output"]

DEFAULT_THRESHOLD = 0.7
DEFAULT_REASON = "MESSAGE_BLOCKED"
UNAVAILABLE_REASON = "EVALUATION_UNAVAILABLE"
"""The tripwire reason when `mode="strict"` stops a run because no verdict could be had."""
DEFAULT_MAX_CHARS = 8000
DEFAULT_TIMEOUT = 5.0
DEFAULT_BREAKER_FAILURES = 3
DEFAULT_BREAKER_COOLDOWN = 60.0
_HOOK_MARGIN = 5.0


class EvaluationVerdict(pydantic.BaseModel):
    """The endpoint's answer for one text."""

    model_config = pydantic.ConfigDict(extra="ignore", frozen=True)

    score: float = pydantic.Field(ge=0, le=1, allow_inf_nan=False)
    """How likely the text must be blocked (0-1)."""
    flagged: bool | None = None
    """The endpoint's own decision; `true` flags whatever the score."""
    category: str | None = None
    """A label for logs and reports; it never decides the outcome."""
    model: str | None = None
    tokens_in: int | None = pydantic.Field(default=None, ge=0)


class EvaluationUnavailable(Exception):
    """No verdict: the endpoint failed, timed out, answered garbage, or its breaker is open."""


def _fail(message: str) -> ConfigurationError:
    return ConfigurationError(f"EvaluationModerationProcessor: {message}")


def _positive_number(name: str, value: Any) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise _fail(f"{name} must be a positive number, got {value!r}")
    return float(value)


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise _fail(f"{name} must be a positive integer, got {value!r}")
    return value


class EvaluationModerationProcessor(Processor):
    """Blocks (or reports) text an external evaluation endpoint scores at or above `threshold`.

        `phases` says what is judged: `"input"` (default, as in Mastra) is the text of the last
        input message, once per run; `"output"` is the final response text, in
        `process_output_result` (after it streamed: a block there becomes the run's tripwire, it
        cannot unsend text; use `ModerationProcessor` to gate the stream itself). Text is cut to
        `max_chars` and never logged.

        `mode="strict"` (default) aborts the run with `reason` (`"MESSAGE_BLOCKED"`) when the text
        is flagged, and with `"EVALUATION_UNAVAILABLE"` when there is no verdict (fail closed,
        logged as an error). `mode="warn"` never stops a run: a flagged text is reported to
        `on_violation` and logged, a failure is logged, and the text passes.

        One call has `call_timeout` seconds in all; `retries=1` repeats a call that timed out,
        could not connect or got a 5xx (the hook's own `timeout`, which overrides the agent's
        `processor_timeout`, covers every attempt). Failures feed `breaker` (a `CircuitBreaker`,
        by default 3 failures in 60 s open it for 60 s); while it is open no call is made, the
        text counts as unavailable (passed in warn mode, blocked in strict mode), and after the
        cooldown one call probes the endpoint again. `on_verdict` (sync or async) sees every
        verdict (for cost accounting).
        `headers` go with every request (an API key); `client` (an `httpx.AsyncClient`, reused and
        not closed) or `transport` (an `httpx` transport) replace the default client, one per
        event loop, kept for its connections and closed by `aclose()`.

        ```python
        import asyncio
    import inspect

        import httpx

        from sluicegate import Agent
        from sluicegate.processors import EvaluationModerationProcessor
        from sluicegate.testing import MockModel, text_step


        def endpoint(request: httpx.Request) -> httpx.Response:
            bad = b"ransom" in request.content
            return httpx.Response(200, json={"score": 0.95 if bad else 0.02, "category": "illicit"})


        moderation = EvaluationModerationProcessor(
            url="https://moderation.example/v1/evaluate",
            mode="strict",
            transport=httpx.MockTransport(endpoint),
        )
        agent = Agent("a", model=MockModel([text_step("Hello!")]), input_processors=[moderation])
        result = asyncio.run(agent.generate("write a ransom note"))
        assert result.tripwire is not None and result.tripwire.reason == "MESSAGE_BLOCKED"
        ```
    """

    id = "evaluation-moderation"
    name = "Evaluation Moderation"
    checks_input_only = True
    """It never changes the input, so it may run concurrently with other input checks."""

    def __init__(
        self,
        *,
        url: str | None = None,
        mode: Mode = "strict",
        phases: Sequence[Phase] = ("input",),
        threshold: float = DEFAULT_THRESHOLD,
        reason: str = DEFAULT_REASON,
        max_chars: int = DEFAULT_MAX_CHARS,
        call_timeout: float = DEFAULT_TIMEOUT,
        retries: int = 0,
        headers: Mapping[str, str] | None = None,
        breaker: CircuitBreaker | None = None,
        on_verdict: Callable[[EvaluationVerdict], Any] | None = None,
        client: httpx.AsyncClient | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        super().__init__()
        if url is None:
            raise _fail("url (the evaluation endpoint) is required")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise _fail(f"url must be an http(s) URL, got {url!r}")
        if mode not in get_args(Mode):
            raise _fail(f"mode must be 'warn' or 'strict', got {mode!r}")
        if isinstance(phases, str) or not isinstance(phases, Sequence) or not phases:
            raise _fail(f"phases must be a non-empty list of 'input' and/or 'output', got {phases!r}")
        for phase in phases:
            if phase not in get_args(Phase):
                raise _fail(f"phases holds {phase!r}; allowed: 'input', 'output'")
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 <= threshold <= 1:
            raise _fail(f"threshold must be a number between 0 and 1, got {threshold!r}")
        if not isinstance(reason, str) or not reason:
            raise _fail(f"reason must be a non-empty string, got {reason!r}")
        if retries not in (0, 1) or isinstance(retries, bool):
            raise _fail(f"retries must be 0 or 1, got {retries!r}")
        if headers is not None and (
            not isinstance(headers, Mapping)
            or not all(isinstance(k, str) and isinstance(v, str) for k, v in headers.items())
        ):
            raise _fail("headers must map strings to strings")
        if breaker is not None and not isinstance(breaker, CircuitBreaker):
            raise _fail(f"breaker must be a CircuitBreaker, got {breaker!r}")
        if on_verdict is not None and not callable(on_verdict):
            raise _fail(f"on_verdict must be callable, got {on_verdict!r}")
        if client is not None and not isinstance(client, httpx.AsyncClient):
            raise _fail(f"client must be an httpx.AsyncClient, got {client!r}")
        if transport is not None and not isinstance(transport, httpx.AsyncBaseTransport):
            raise _fail(f"transport must be an httpx.AsyncBaseTransport, got {transport!r}")
        if client is not None and transport is not None:
            raise _fail("give client or transport, not both")
        self.url: str = url
        self.mode: Mode = mode
        self.phases: frozenset[str] = frozenset(phases)
        self.threshold = float(threshold)
        self.reason = reason
        self.max_chars = _positive_int("max_chars", max_chars)
        self.call_timeout = _positive_number("call_timeout", call_timeout)
        self.retries = retries
        self.timeout = (retries + 1) * self.call_timeout + _HOOK_MARGIN
        """The hook timeout (see `processor_timeout`): long enough for every attempt, so a slow
        endpoint ends as "no verdict" (handled per `mode`), not as a `ProcessorTimeoutError`."""
        self.headers = dict(headers or {})
        self.breaker = breaker or CircuitBreaker(
            failures=DEFAULT_BREAKER_FAILURES, window=60.0, cooldown=DEFAULT_BREAKER_COOLDOWN
        )
        self.on_verdict = on_verdict
        self._client = client
        self._transport = transport
        self._breaker_key = f"evaluation:{url}"
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        return f"EvaluationModerationProcessor(url={self.url!r}, mode={self.mode!r})"

    # ------------------------------------------------------------------ hooks

    async def process_input(self, args: ProcessInputArgs) -> list[Message] | None:
        if "input" in self.phases and args.messages:
            await self._judge(message_text(args.messages[-1]), "input", args.abort)
        return None

    async def process_output_result(self, args: ProcessOutputResultArgs) -> None:
        if "output" in self.phases and args.result is not None:
            await self._judge(args.result.text.strip(), "output", args.abort)

    # ------------------------------------------------------------------ judging

    async def _judge(self, text: str, phase: Phase, abort: Any) -> None:
        if not text:
            return  # nothing to judge
        try:
            verdict = await self.evaluate(text[: self.max_chars], phase)
        except EvaluationUnavailable as exc:
            if self.mode == "strict":
                log.error(
                    "EvaluationModerationProcessor: no verdict (%s); blocking the %s (strict)", exc, phase
                )
                abort(UNAVAILABLE_REASON, metadata={"phase": phase, "error": str(exc)})
            log.warning(
                "EvaluationModerationProcessor: no verdict (%s); letting the %s through (warn)", exc, phase
            )
            return
        if self.on_verdict is not None:
            try:
                pending = self.on_verdict(verdict)
                if inspect.isawaitable(pending):
                    await pending
            except Exception:
                log.warning("EvaluationModerationProcessor: on_verdict raised", exc_info=True)
        if not (verdict.flagged or verdict.score >= self.threshold):
            return
        detail = {
            "phase": phase,
            "score": verdict.score,
            "category": verdict.category,
            "model": verdict.model,
        }
        log.warning(
            "EvaluationModerationProcessor: flagged the %s (category %s, score %.2f, mode %s)",
            phase,
            verdict.category or "none",
            verdict.score,
            self.mode,
        )
        if self.mode == "strict":
            abort(self.reason, metadata=detail)
        await report_violation(self, self.reason, detail)

    async def evaluate(self, text: str, phase: Phase) -> EvaluationVerdict:
        """One verdict for `text` through the breaker, or `EvaluationUnavailable`."""
        if not await self.breaker.allows(self._breaker_key):
            raise EvaluationUnavailable("circuit breaker open")
        try:
            verdict = await self._call(text, phase)
        except EvaluationUnavailable:
            await self.breaker.failed(self._breaker_key)
            raise
        await self.breaker.succeeded(self._breaker_key)
        return verdict

    async def _call(self, text: str, phase: Phase) -> EvaluationVerdict:
        payload = {"text": text, "phase": phase}
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                async with asyncio.timeout(self.call_timeout):
                    response = await self._post(payload)
            except (TimeoutError, httpx.TimeoutException) as exc:
                if last:
                    raise EvaluationUnavailable(f"timed out after {self.call_timeout:g} s") from exc
                continue
            except httpx.HTTPError as exc:
                if last:
                    raise EvaluationUnavailable(f"{type(exc).__name__}: {exc}") from exc
                continue
            if response.status_code >= 500 and not last:
                continue
            if not response.is_success:
                # The body may quote the request (the user's text): it is never logged.
                raise EvaluationUnavailable(f"HTTP {response.status_code}")
            try:
                return EvaluationVerdict.model_validate_json(response.content)
            except pydantic.ValidationError as exc:
                raise EvaluationUnavailable(f"malformed verdict ({exc.error_count()} error(s))") from exc
        raise AssertionError("unreachable: the last attempt returns or raises")

    async def _post(self, payload: dict[str, Any]) -> httpx.Response:
        return await self._http().post(
            self.url, json=payload, headers=self.headers, timeout=self.call_timeout
        )

    def _http(self) -> httpx.AsyncClient:
        """The given client, else one per event loop: a client per call would build a TLS
        context and a connection every time (~20 ms of CPU each, measured)."""
        if self._client is not None:
            return self._client
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None or client.is_closed:
            client = self._clients[loop] = httpx.AsyncClient(transport=self._transport)
        return client

    async def aclose(self) -> None:
        """Close the client this processor made for the running loop (a `client` passed in is
        its owner's to close)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()
