"""`ToolRetry`: run a tool again when it fails transiently.

The processor wraps the step's tools (`process_input_step`) in `RetryingTool`, which calls the
real tool's `execute` again after a failure that `retry_on` accepts, waiting with exponential
backoff (capped, optionally jittered) in between. Every attempt gets the same `ToolContext`, so
`context.idempotency_key` (`run_id:tool_call_id`) is the same across attempts: a tool with side
effects passes it on and takes effect once. What the last attempt raises is the call's error
result, as without retries.
"""

from __future__ import annotations

import asyncio
import logging
import random
import weakref
from collections.abc import Callable, Sequence
from typing import Any, cast

from sluicegate.processors.args import ProcessInputStepArgs, ProcessInputStepResult
from sluicegate.processors.base import Processor
from sluicegate.tools import Tool, ToolContext

log = logging.getLogger(__name__)

RetryOn = type[BaseException] | Sequence[type[BaseException]] | Callable[[BaseException], bool]
RETRY_NOTICE = "data-tool-retry"
"""The data chunk written before each new attempt (the type durable runs use for theirs)."""


class RetryPolicy:
    """How often and how long to wait: attempt `n` (1 for the first retry) waits
    `min(max_backoff, backoff * backoff_factor ** (n - 1))` seconds, with `jitter` a uniform
    draw between half of that and all of it (never above the cap)."""

    def __init__(
        self,
        *,
        max_retries: int,
        backoff: float,
        backoff_factor: float,
        max_backoff: float,
        jitter: bool,
        retry_on: RetryOn,
    ) -> None:
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValueError(f"max_retries must be a non-negative int, got {max_retries!r}")
        for what, value in (("backoff", backoff), ("max_backoff", max_backoff)):
            if (
                isinstance(value, bool)
                or not isinstance(value, (int, float))
                or not 0 <= value < float("inf")
            ):
                raise ValueError(f"{what} must be a non-negative number of seconds, got {value!r}")
        if (
            isinstance(backoff_factor, bool)
            or not isinstance(backoff_factor, (int, float))
            or not (1 <= backoff_factor < float("inf"))
        ):
            raise ValueError(f"backoff_factor must be a number of at least 1, got {backoff_factor!r}")
        if not isinstance(jitter, bool):
            raise TypeError(f"jitter must be True or False, got {jitter!r}")
        self.max_retries = max_retries
        self.backoff = float(backoff)
        self.backoff_factor = float(backoff_factor)
        self.max_backoff = float(max_backoff)
        self.jitter = jitter
        self.retries = _predicate(retry_on)

    def delay(self, attempt: int) -> float:
        """Seconds to wait before retry number `attempt` (1-based)."""
        exponent = min(attempt - 1, 1024)  # the cap is reached long before; no overflow
        try:
            delay = self.backoff * self.backoff_factor**exponent
        except OverflowError:
            delay = self.max_backoff
        delay = min(self.max_backoff, delay)
        return random.uniform(delay / 2, delay) if self.jitter else delay


def _predicate(retry_on: RetryOn) -> Callable[[BaseException], bool]:
    if isinstance(retry_on, type) and issubclass(retry_on, BaseException):
        kinds: tuple[type[BaseException], ...] = (retry_on,)
    elif isinstance(retry_on, Sequence) and not isinstance(retry_on, (str, bytes)):
        kinds = tuple(retry_on)
        if not kinds or not all(isinstance(k, type) and issubclass(k, BaseException) for k in kinds):
            raise TypeError(
                "retry_on must be exception types (a type or a non-empty sequence) or a predicate"
            )
    elif callable(retry_on):
        predicate = cast(Callable[[BaseException], object], retry_on)
        return lambda error: bool(predicate(error))
    else:
        raise TypeError(f"retry_on must be exception types or a predicate, got {retry_on!r}")
    return lambda error: isinstance(error, kinds)


def _retries(policy: RetryPolicy, error: Exception) -> bool:
    """Whether `retry_on` accepts `error`; a predicate that raises does not (logged): the
    tool's own error stays the call's result."""
    try:
        return policy.retries(error)
    except Exception:
        log.warning("ToolRetry's retry_on raised; not retrying", exc_info=True)
        return False


class RetryingTool(Tool):
    """`inner` with its `execute` retried by `policy`; everything else is `inner`'s."""

    def __init__(self, inner: Tool, policy: RetryPolicy) -> None:
        super().__init__(
            id=inner.id,
            description=inner.description,
            to_model_output=inner.to_model_output,
            provider_options=inner.provider_options,
            require_approval=inner.require_approval,
            reads_context=inner.reads_context,
        )
        self.inner = inner
        self.policy = policy
        self.input_schema = inner.input_schema
        self.output_schema = inner.output_schema
        self.suspend_schema = inner.suspend_schema
        self.resume_schema = inner.resume_schema

    def __getattr__(self, name: str) -> Any:
        # Only for names this object lacks (attributes of a Tool subclass, such as an MCP tool's).
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"RetryingTool({self.inner!r}, max_retries={self.policy.max_retries})"

    def json_schema(self) -> dict[str, Any]:
        return self.inner.json_schema()

    def to_v2(self, name: str | None = None) -> dict[str, Any]:
        return self.inner.to_v2(name)

    def validate(self, args: Any) -> Any:
        return self.inner.validate(args)

    def validate_resume_data(self, data: Any) -> Any:
        return self.inner.validate_resume_data(data)

    def validate_resume(self, data: Any, *, suspend_payload: Any = None) -> Any:
        return self.inner.validate_resume(data, suspend_payload=suspend_payload)

    def context_schema(self) -> Any:
        return self.inner.context_schema()

    async def execute(self, input: Any, context: ToolContext) -> Any:
        policy = self.policy
        attempt = 0
        while True:
            try:
                return await self.inner.execute(input, context)
            except Exception as error:
                if context.suspended or attempt >= policy.max_retries or not _retries(policy, error):
                    raise
                attempt += 1
                delay = policy.delay(attempt)
                log.info(
                    "tool %r failed (%s); retry %d in %.2fs", self.id, type(error).__name__, attempt, delay
                )
            await asyncio.sleep(delay)
            if context.writer is not None:
                await context.writer.custom(
                    {
                        "type": RETRY_NOTICE,
                        "data": {
                            "toolCallId": context.tool_call_id,
                            "toolName": context.tool_name or self.id,
                            "attempt": attempt + 1,
                        },
                    }
                )


class ToolRetry(Processor):
    """Retries of tools that fail transiently.

    - `max_retries`: attempts after the first (default 2; 0 turns retrying off).
    - `backoff`: seconds before the first retry (default 1.0), multiplied by `backoff_factor`
      (default 2.0) for each further one, capped at `max_backoff` (default 30.0).
    - `jitter`: draw each wait uniformly between half of it and all of it (default True), so
      calls that failed together do not retry together.
    - `retry_on`: exception types (a type or a sequence of them) or a predicate
      `(error) -> bool`; default `Exception` (any failure of `execute`; invalid arguments never
      reach `execute` and are not retried).
    - `tools`: the names of the tools to retry (default: every tool of the step).

    Place it in `input_processors`: `process_input_step` wraps the step's tools. A call that
    waited for approval runs after the resume with the agent's own tools: wrap those with
    `ToolRetry.wrap(tool)` to retry them too (a wrapped tool retries on every path, durable
    runs' tool activities included).
    """

    id = "tool-retry"
    name = "Tool Retry"

    def __init__(
        self,
        *,
        max_retries: int = 2,
        backoff: float = 1.0,
        backoff_factor: float = 2.0,
        max_backoff: float = 30.0,
        jitter: bool = True,
        retry_on: RetryOn = Exception,
        tools: Sequence[str] | None = None,
    ) -> None:
        super().__init__()
        self.policy = RetryPolicy(
            max_retries=max_retries,
            backoff=backoff,
            backoff_factor=backoff_factor,
            max_backoff=max_backoff,
            jitter=jitter,
            retry_on=retry_on,
        )
        if tools is not None and (
            isinstance(tools, str) or not all(isinstance(name, str) and name for name in tools)
        ):
            raise TypeError(f"tools must be a sequence of tool names, got {tools!r}")
        self.tools = frozenset(tools) if tools is not None else None
        self._wrapped: weakref.WeakKeyDictionary[Tool, RetryingTool] = weakref.WeakKeyDictionary()

    def wrap(self, tool: Tool) -> Tool:
        """`tool` with its `execute` retried by this processor's policy (the same object for the
        same tool; a tool already wrapped is returned as it is)."""
        if isinstance(tool, RetryingTool):
            return tool
        wrapped = self._wrapped.get(tool)
        if wrapped is None:
            wrapped = self._wrapped[tool] = RetryingTool(tool, self.policy)
        return wrapped

    def process_input_step(self, args: ProcessInputStepArgs) -> ProcessInputStepResult | None:
        if not args.tools or self.policy.max_retries == 0:
            return None
        tools = {
            name: self.wrap(tool) if self.tools is None or name in self.tools else tool
            for name, tool in args.tools.items()
        }
        return ProcessInputStepResult(tools=tools)
