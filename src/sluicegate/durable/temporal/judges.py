"""LLM judges of a durable run: each judge call from workflow code is an activity.

A guardrail that asks a model for a verdict outside the stream (`process_input`,
`process_input_step`, `process_output_step`, `process_output_result`, ...) runs in the
workflow. Its `DetectorModel` is given a stand-in (`ActivityJudge`) whose `do_generate` is the
activity `sluicegate.<agent id>.judge.<processor id>`: the worker that runs it calls the real
judge model once, and the model's answer is recorded in the run's history. The verdict is read
and acted on in the workflow (a tripwire, a redaction), so a replay answers from the history and
the judge is called once per decision, whatever crashes. Judges of output *stream* guardrails
run inside the model activity and are not touched here.

The provider client does not retry (a judge's `do_generate` never does): Temporal's retry policy
does, the model's (`modelAttempts`). A call that fails for good reaches the guardrail as the
model's error, so its `error_strategy` decides as in one process (`"block"` fails closed); a
misconfigured judge (no API key, unknown model) stays a `ConfigurationError`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from temporalio import activity, workflow
from temporalio.exceptions import ActivityError

from sluicegate import errors
from sluicegate.durable.temporal import names
from sluicegate.durable.temporal.failures import (
    ActivityRefusedError,
    from_activity_error,
    to_application_error,
)
from sluicegate.durable.temporal.heartbeats import beating
from sluicegate.durable.temporal.payloads import checked, json_value
from sluicegate.durable.temporal.stores import durable_processors
from sluicegate.durable.temporal.trace_context import attached, inject
from sluicegate.guardrails.detector import DetectorModel, judges_of, with_judge_models
from sluicegate.models.base import CallOptions, GenerateResult
from sluicegate.processors.base import implements, processor_id

if TYPE_CHECKING:
    from sluicegate.agent import Agent

WORKFLOW_HOOKS = (
    "process_input",
    "process_input_step",
    "process_llm_request",
    "process_llm_response",
    "process_output_step",
    "process_output_result",
    "process_tool_call",
    "process_tool_result",
    "process_api_error",
)
"""The hooks that run in workflow code (`process_output_stream` runs in the model activity)."""


@dataclass(frozen=True)
class ActivityOptions:
    """How the workflow schedules a judge or embedding activity (from the run's settings)."""

    start_to_close_timeout: Any
    heartbeat_timeout: Any
    retry_policy: Any

    def kwargs(self) -> dict[str, Any]:
        return {
            "start_to_close_timeout": self.start_to_close_timeout,
            "heartbeat_timeout": self.heartbeat_timeout,
            "retry_policy": self.retry_policy,
        }


def judges_in_workflow(processor: Any) -> bool:
    """Whether `processor` asks a judge model from a hook that runs in workflow code."""
    return bool(judges_of(processor)) and any(implements(processor, hook) for hook in WORKFLOW_HOOKS)


class ActivityJudge:
    """A judge's model inside the workflow: each `do_generate` is the judge activity. It names
    the configured model's provider and id (the wire schema depends on the provider)."""

    specification_version = "v2"

    def __init__(
        self,
        agent_id: str,
        array: str,
        pid: str,
        attribute: str,
        detector: DetectorModel[Any],
        options: ActivityOptions,
    ) -> None:
        self._activity = names.judge_activity(agent_id, pid)
        self._locator = [array, pid, attribute]
        self._options = options
        self._pid = pid
        config = detector.model_config
        if isinstance(config, str):
            self.provider, _, self.model_id = config.partition("/")
        else:
            self.provider = str(getattr(config, "provider", "durable"))
            self.model_id = str(getattr(config, "model_id", type(config).__name__))

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        call = checked(
            f"the call of judge {self._pid!r} (its prompt)",
            inject({"locator": self._locator, "options": vars(options)}),
        )
        try:
            answer = await workflow.execute_activity(self._activity, call, **self._options.kwargs())
        except ActivityError as exc:
            raise _judge_error(from_activity_error(exc)) from None
        return GenerateResult(**answer)

    async def do_stream(self, options: CallOptions) -> Any:
        raise NotImplementedError("a judge is asked with do_generate")


def _judge_error(exc: BaseException) -> BaseException:
    """A misconfigured judge stays a `ConfigurationError` (never a pass, whatever the guardrail's
    `error_strategy`); any other failure is the model's error, which the strategy decides on."""
    if isinstance(exc, ActivityRefusedError):
        kind = getattr(errors, exc.error, None)
        if isinstance(kind, type) and issubclass(kind, errors.ConfigurationError):
            return errors.ConfigurationError(str(exc))
    return exc


def judged_processor(processor: Any, agent_id: str, array: str, options: ActivityOptions) -> Any:
    """`processor` as the workflow runs it: a copy whose judges are asked through the activity,
    or `processor` itself when it asks none from workflow code."""
    if not judges_in_workflow(processor):
        return processor
    pid = processor_id(processor)

    def model_for(attribute: str, detector: DetectorModel[Any]) -> Any:
        return ActivityJudge(agent_id, array, pid, attribute, detector, options)

    return with_judge_models(processor, model_for)


# ---------------------------------------------------------------------- the worker's side


def judged_processor_ids(agent: Agent[Any]) -> list[str]:
    """The ids of the agent's processors that ask a judge from workflow code: one activity each."""
    return sorted({processor_id(p) for p in durable_processors(agent) if judges_in_workflow(p)})


def find_judge(agent: Agent[Any], locator: list[str]) -> DetectorModel[Any]:
    """The real detector a judge call names (`[array, processor id, attribute]`), on this worker."""
    if len(locator) == 3:
        array, pid, attribute = locator
        processors = getattr(agent, array, None) if array.endswith("_processors") else None
        for processor in processors if isinstance(processors, (list, tuple)) else ():
            if processor_id(processor) == pid:
                detector = judges_of(processor).get(attribute)
                if detector is not None:
                    return detector
    raise LookupError(f"agent {agent.id!r} has no judge {locator!r} on this worker")


def judge_activity(lookup: Callable[[str], Agent[Any]], agent_id: str, pid: str) -> Callable[..., Any]:
    """The activity asking processor `pid`'s real judge model (see the module docstring)."""

    async def judge_call(call: dict[str, Any]) -> dict[str, Any]:
        try:
            with attached(call):
                detector = find_judge(lookup(agent_id), list(call["locator"]))
                with beating():
                    result = await detector.model.do_generate(CallOptions(**call["options"]))
        except Exception as exc:
            raise to_application_error(exc) from exc
        # What the guardrail reads (the request echoed back, often the whole prompt, is not kept).
        answer: dict[str, Any] = checked(
            f"the answer of judge {pid!r}",
            {
                "content": json_value(result.content),
                "finish_reason": result.finish_reason,
                "usage": json_value(result.usage),
                "provider_metadata": json_value(result.provider_metadata),
                "warnings": json_value(list(result.warnings)),
            },
        )
        return answer

    return activity.defn(name=names.judge_activity(agent_id, pid))(judge_call)
