"""The exceptions sluicegate raises.

Every error a user can trigger is a `SluicegateError` subclass that names what was wrong, so
callers can catch the family or one member. `APICallError` mirrors the AI SDK's error of the
same name: provider adapters raise it, and `process_api_error` hooks receive it unchanged.
What leaves the process (HTTP answers, SSE chunks, spans, logs) is its `public_message`
(status, provider, code): the provider's own text can echo the prompt (see `public_error`).
`TripWire` is not an error in the usual sense: it is how `abort()` stops a run.
"""

from __future__ import annotations

import re
from typing import Any


class SluicegateError(Exception):
    """Base class of the errors sluicegate raises on bad input or configuration."""

    @property
    def message(self) -> str:
        return str(self)


class ConfigurationError(SluicegateError):
    """An agent, processor or model was configured in a way that cannot work."""


class UnknownOptionError(ConfigurationError, TypeError):
    """A processor was given a keyword option it does not take; the message names the closest
    valid one. A `TypeError` too, as Python's own unexpected-keyword error is."""


class UnknownModelError(ConfigurationError):
    """A model string names a provider sluicegate does not know."""


class MissingAPIKeyError(ConfigurationError):
    """A provider was chosen but its API key is not in the environment."""


class InvalidMessageError(SluicegateError, ValueError):
    """A message could not be read in any of the accepted shapes."""


class InvalidInputError(SluicegateError, ValueError):
    """The input of a call (messages, thread or resource ids) was refused before anything ran:
    no model was called and nothing was stored. The message says what is wrong and where."""


class AccessDeniedError(SluicegateError, PermissionError):
    """A request reached for data that belongs to another thread or resource.

    Processors' hooks let it through unwrapped (it is not a processor failure), so callers can
    catch the exact subclass."""


class MessageOwnershipError(AccessDeniedError):
    """A message id that already belongs to another thread (or resource) was sent or saved.

    Message ids may come from the client, so a stored message is never moved or rewritten by a
    write from another thread: the write is refused instead, before any model call."""

    def __init__(self, message_id: str, thread_id: str | None, *, reason: str | None = None) -> None:
        super().__init__(
            reason
            or (
                f"message id {message_id!r} is already used by another conversation; "
                f"it cannot be written into thread {thread_id!r} (send a new id or none)"
            )
        )
        self.message_id = message_id
        self.thread_id = thread_id

    def __str__(self) -> str:
        return str(self.args[0])


class IdentityMismatchError(AccessDeniedError):
    """A call named a resource or thread other than the one its request is bound to.

    Authentication middleware binds a request by setting `RESOURCE_ID_KEY` (and optionally
    `THREAD_ID_KEY`) in the request context; a `memory=` option (or a request body) that names
    a different id is refused rather than silently redirected, because it is either a bug in the
    caller or an attempt to reach another user's data."""

    def __init__(self, kind: str, given: str) -> None:
        super().__init__(
            f"{kind} {given!r} is not the {kind} this request is authenticated for; "
            "omit it or name the authenticated one"
        )
        self.kind = kind
        self.given = given

    def __str__(self) -> str:
        return str(self.args[0])


class StorageError(SluicegateError):
    """A storage backend could not do what was asked (the message names the store and the cause)."""


class ProcessorError(SluicegateError):
    """A processor hook raised something other than `TripWire`, or returned a value it may not."""

    def __init__(self, message: str, *, processor_id: str, hook: str) -> None:
        super().__init__(message)
        self.processor_id = processor_id
        self.hook = hook


class UnknownResultKeyError(ProcessorError, ConfigurationError):
    """A hook returned a dict with a key its result does not have (a typo would otherwise
    change nothing): a processor's return it may not give, and a mistake in its code."""


class ProcessorTimeoutError(ProcessorError):
    """A processor hook did not finish within its `processor_timeout` (see `Agent`)."""

    def __init__(self, message: str, *, processor_id: str, hook: str, timeout: float) -> None:
        super().__init__(message, processor_id=processor_id, hook=hook)
        self.timeout = timeout


class ToolError(SluicegateError):
    """A tool could not be built or called."""


class ToolCallRefused(ProcessorError):
    """What `args.reject(reason)` raises in a `process_tool_call` hook (raising it directly is
    the same): that one call is refused and the run goes on. The tool does not run, the model
    reads `message` as the call's error result, the client gets a `tool-output-denied` chunk
    naming `processor_id`. Raised from any other hook it ends the run as the `ProcessorError`
    it is."""

    def __init__(self, message: str, *, processor_id: str, hook: str = "process_tool_call") -> None:
        super().__init__(message, processor_id=processor_id, hook=hook)


class AbortError(SluicegateError):
    """`generate` was cancelled by its `abort_signal` (a stream ends with an `abort` chunk)."""


class StructuredOutputError(SluicegateError):
    """The model's answer did not match the `structured_output` schema, after every retry.

    `text` is the model's last answer and `errors` what was wrong with it (one line each), so
    the caller can log, repair or show it."""

    def __init__(self, message: str, *, text: str, errors: list[str], attempts: int = 1) -> None:
        super().__init__(message)
        self.text = text
        self.errors = errors
        self.attempts = attempts


class APICallError(SluicegateError):
    """A provider rejected a call, or the connection to it failed.

    `is_retryable` follows the AI SDK: 408, 409, 429 and 5xx responses and connection resets are
    retryable, other 4xx responses are not.
    """

    def __init__(
        self,
        message: str,
        *,
        url: str | None = None,
        status_code: int | None = None,
        response_body: str | None = None,
        is_retryable: bool = False,
        request_body_values: Any = None,
        response_headers: dict[str, str] | None = None,
        cause: BaseException | None = None,
        data: Any = None,
        provider: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.url = url
        self.status_code = status_code
        self.response_body = response_body
        self.is_retryable = is_retryable
        self.request_body_values = request_body_values
        self.response_headers = response_headers
        self.cause = cause
        self.data = data
        self.provider = provider
        """The provider that failed (`openai.chat`, ...); the agent loop fills it in when the
        adapter did not."""
        self.code = safe_code(code) or code_of(data)
        """The provider's error code or type (`server_error`, `rate_limit_error`), when it sent
        one that is a plain identifier."""
        if cause is not None:
            self.__cause__ = cause

    @property
    def name(self) -> str:
        return "AI_APICallError"

    @property
    def public_message(self) -> str:
        """What a client may read: status, provider and code, never the provider's own text
        (it can echo the prompt, account details or internal hosts)."""
        who = f"provider {self.provider}" if self.provider else "the model provider"
        if self.status_code is not None and self.status_code >= 400:
            what = f"{who} answered {self.status_code}"
        elif self.data is not None or self.status_code is not None:
            what = f"{who} reported an error"  # inside a 200 answer or its stream
        else:
            what = f"{who} could not be reached"
        return f"{what} (code: {self.code})" if self.code else what

    def log_text(self, *, details: bool = False) -> str:
        """`public_message`, and with `details` the provider's text and response body."""
        if not details:
            return self.public_message
        body = f"; response body: {self.response_body}" if self.response_body else ""
        return f"{self.public_message}: {self}{body}"

    def public_json(self, *, details: bool = False) -> dict[str, Any]:
        """The error as a client sees it: `message` is `public_message`; with `details` (an
        application's explicit opt-in) the provider's `detail` text and response body too."""
        out: dict[str, Any] = {
            "message": self.public_message,
            "name": self.name,
            "isRetryable": self.is_retryable,
        }
        for key, value in (
            ("provider", self.provider),
            ("statusCode", self.status_code),
            ("code", self.code),
        ):
            if value is not None:
                out[key] = value
        if details:
            out["detail"] = str(self)
            if self.response_body is not None:
                out["responseBody"] = self.response_body
        return out

    def __repr__(self) -> str:
        status = f"status_code={self.status_code!r}, is_retryable={self.is_retryable!r}"
        return f"APICallError({str(self)!r}, {status})"


_CODE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")


def safe_code(value: Any) -> str | None:
    """`value` as an error code when it is a plain identifier (or a number); anything else
    (free text a provider or a proxy put where a code belongs) is dropped."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str) and _CODE.fullmatch(value):
        return value
    return None


def code_of(body: Any) -> str | None:
    """The error code of a provider error body (`{"error": {...}}`, OpenAI Responses'
    `{"response": {"error": {...}}}`, or the error object itself): its `code`, `type` or
    `status` (Gemini's `RESOURCE_EXHAUSTED`), a name preferred to a number."""
    if not isinstance(body, dict):
        return None
    inner = body.get("error")
    if not isinstance(inner, dict):
        response = body.get("response")
        inner = response.get("error") if isinstance(response, dict) else None
    if not isinstance(inner, dict):
        inner = body
    found = [code for code in (safe_code(inner.get(key)) for key in ("code", "type", "status")) if code]
    named = [code for code in found if not code.isdigit()]
    chosen = named or found
    return chosen[0] if chosen else None


def public_error(error: BaseException, *, details: bool = False) -> dict[str, Any]:
    """An error as it may leave the process (an HTTP answer, an SSE `error` chunk): a provider
    error becomes its `public_json`; other errors keep their message and name, with the text
    of a provider error they wrap (a processor that called a model) replaced by its summary."""
    if isinstance(error, APICallError):
        return error.public_json(details=details)
    name = getattr(error, "name", None)
    message = str(error) if details else public_text(error)
    return {"message": message, "name": name if isinstance(name, str) else type(error).__name__}


def public_text(error: BaseException) -> str:
    """`str(error)`, with the text of every provider error in its cause chain replaced by that
    error's `public_message`."""
    message = str(error)
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, APICallError):
            raw = str(cause)
            message = message.replace(raw, cause.public_message) if raw else message
        cause = cause.__cause__ or cause.__context__
    return message


def retryable_status(status_code: int | None) -> bool:
    """The AI SDK's rule for which HTTP statuses are worth retrying."""
    return status_code is not None and (status_code in (408, 409, 429) or status_code >= 500)


class TripWire(Exception):
    """Raised by `abort()`: stops the run and ends the stream with a `tripwire` chunk.

    With `retry=True` from `process_output_step` or `process_input_step`, the agent replays the
    step with `reason` fed back to the model instead, if `max_processor_retries` allows.
    """

    def __init__(
        self,
        reason: str,
        *,
        retry: bool = False,
        metadata: Any = None,
        processor_id: str | None = None,
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        self.retry = retry
        self.metadata = metadata
        self.processor_id = processor_id

    @property
    def message(self) -> str:
        return self.reason


class SubAgentTripWire(TripWire):
    """A sub-agent's tripwire carried into its parent's run (`Agent(propagate_tripwire=True)`):
    raised by the sub-agent's tool, it ends the parent run with the sub-agent's reason. `agent`
    names the sub-agent."""

    def __init__(
        self, reason: str, *, agent: str, metadata: Any = None, processor_id: str | None = None
    ) -> None:
        super().__init__(reason, metadata=metadata, processor_id=processor_id)
        self.agent = agent


class MissingExtraError(ConfigurationError, ImportError):
    """An optional dependency is not installed; the message names the extra that brings it.

    An `ImportError` too, so `except ImportError` around an optional feature keeps working.
    """

    def __init__(self, module: str, *, extra: str, feature: str) -> None:
        super().__init__(
            f"{feature} needs the `{module}` package from the `{extra}` extra, which is not "
            f"installed: pip install 'sluicegate[{extra}]'"
        )
        self.name = module
        self.extra = extra
        self.feature = feature
