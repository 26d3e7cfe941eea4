"""Processor workflows: compose processors with `then`, `parallel`, `branch` and `map`.

A committed workflow is itself a processor: put it in any processor array. For each hook that
one of its processors implements (`process_input`, `process_input_step`,
`process_output_stream`, `process_output_step`, `process_output_result`,
`process_tool_result`), the workflow runs its steps in order, passing a data dict between them:
`{"phase", "messages", "system_messages", "part", ...}` (for `process_tool_result`: `"result"`,
`"tool_name"`, `"tool_call_id"`, `"tool_args"`). A processor step calls its processor's hook on
that data and hands on the result.
After `parallel([...])` the data is keyed by branch (`"processor:<id>"`); `map` picks or merges.

    pipeline = (
        create_workflow(id="moderation-pipeline")
        .parallel([create_step(RegexFilter(presets=["pii"], strategy="redact")), create_step(Blocklist())])
        .map(lambda data: data["processor:regex-filter"])
        .commit()
    )
    agent = Agent("a", model=..., input_processors=[pipeline])

The LLM-request, LLM-response and API-error hooks are not run through workflows, so a processor
that implements one (`CostGuardProcessor`, `TokenLimiter`) is refused with a `ConfigurationError`:
put it in the agent's arrays directly.
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from sluicegate.errors import ConfigurationError, TripWire
from sluicegate.messages import MessageList
from sluicegate.processors.args import (
    STEP_FIELDS,
    ProcessInputStepResult,
    ProcessorViolation,
    ProcessToolResultResult,
    step_result_fields,
)
from sluicegate.processors.base import implements, make_abort, processor_id, report_violation
from sluicegate.processors.validation import check_processor

UNRUN_HOOKS = ("process_llm_request", "process_llm_response", "process_api_error")
"""Hooks a workflow cannot run: they belong to one model call, not to the data a workflow passes."""

WORKFLOW_HOOKS = (
    "process_input",
    "process_input_step",
    "process_output_stream",
    "process_output_step",
    "process_output_result",
    "process_tool_result",
)
_TOOL_RESULT_FIELDS = ("result", "tool_name", "tool_call_id", "tool_args")
_SNAKE_KEYS = {
    "systemMessages": "system_messages",
    "toolChoice": "tool_choice",
    "activeTools": "active_tools",
}
Data = dict[str, Any]
StepFunction = Callable[[Data], Data | Awaitable[Data]]
Condition = Callable[[Data], bool | Awaitable[bool]]


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


class Step:
    """One workflow step: a processor, or a function of the data."""

    def __init__(self, id: str, *, processor: Any = None, execute: StepFunction | None = None) -> None:
        skipped = [hook for hook in UNRUN_HOOKS if processor is not None and implements(processor, hook)]
        if skipped:
            # Refused, not skipped: a CostGuard or TokenLimiter in a workflow would otherwise
            # look placed while its reservation or trimming never happens.
            raise ConfigurationError(
                f"processor {processor_id(processor)!r} implements {', '.join(skipped)}, which processor "
                "workflows do not run; put it in the agent's processor arrays directly"
            )
        self.id = id
        self.processor = processor
        self.execute = execute

    @property
    def key(self) -> str:
        """The key of this step's output after `parallel`."""
        return f"processor:{self.id}" if self.processor is not None else self.id

    def describe(self) -> dict[str, Any]:
        """This step as a node of the workflow's graph."""
        if self.processor is None:
            return {"id": self.id, "kind": "function"}
        return {"id": self.id, "kind": "processor", "processorId": processor_id(self.processor)}

    def hooks(self) -> set[str]:
        if self.processor is None:
            return set()
        return {hook for hook in WORKFLOW_HOOKS if implements(self.processor, hook)}

    async def run(self, hook: str, data: Data, outer: Any) -> Data:
        if self.execute is not None:
            result = await _maybe_await(self.execute(data))
            if not isinstance(result, dict):
                raise ConfigurationError(
                    f"workflow step {self.id!r} must return a dict, got {type(result).__name__}"
                )
            return result
        if not implements(self.processor, hook):
            return data
        return await _run_processor(self.processor, hook, data, outer)


def create_step(processor: Any = None, *, id: str | None = None, execute: StepFunction | None = None) -> Step:
    """A step from a processor (`create_step(PIIDetector(...))`) or a function
    (`create_step(id="tag", execute=lambda data: {...})`)."""
    if processor is not None:
        pid = check_processor(processor, "create_step(processor)")
        return Step(id or pid, processor=processor)
    if execute is None or not id:
        raise ConfigurationError("create_step needs a processor, or an id and an execute function")
    return Step(id, execute=execute)


class _Node:
    kind = "node"

    async def run(self, hook: str, data: Data, outer: Any) -> Data:
        raise NotImplementedError

    def hooks(self) -> set[str]:
        return set()

    def steps(self) -> list[Step]:
        return []


class _Then(_Node):
    kind = "then"

    def __init__(self, step: Step) -> None:
        self.step = step

    def steps(self) -> list[Step]:
        return [self.step]

    async def run(self, hook: str, data: Data, outer: Any) -> Data:
        return await self.step.run(hook, data, outer)

    def hooks(self) -> set[str]:
        return self.step.hooks()


class _Parallel(_Node):
    kind = "parallel"

    def __init__(self, steps: Sequence[Step]) -> None:
        self.branches = list(steps)

    def steps(self) -> list[Step]:
        return list(self.branches)

    async def run(self, hook: str, data: Data, outer: Any) -> Data:
        results = await asyncio.gather(*(step.run(hook, _copy(data), outer) for step in self.branches))
        return {
            "__parallel__": True,
            **{step.key: result for step, result in zip(self.branches, results, strict=True)},
        }

    def hooks(self) -> set[str]:
        return set().union(*(step.hooks() for step in self.branches))


class _Branch(_Node):
    kind = "branch"

    def __init__(self, branches: Sequence[tuple[Condition, Step]]) -> None:
        self.branches = list(branches)

    def steps(self) -> list[Step]:
        return [step for _, step in self.branches]

    async def run(self, hook: str, data: Data, outer: Any) -> Data:
        for condition, step in self.branches:
            if await _maybe_await(condition(data)):
                return await step.run(hook, data, outer)
        return data

    def hooks(self) -> set[str]:
        return set().union(*(step.hooks() for _, step in self.branches))


class _Map(_Node):
    kind = "map"

    def __init__(self, fn: StepFunction) -> None:
        self.fn = fn

    async def run(self, hook: str, data: Data, outer: Any) -> Data:
        visible = {k: v for k, v in data.items() if k != "__parallel__"}
        result = await _maybe_await(self.fn(visible))
        if not isinstance(result, dict):
            raise ConfigurationError(f"a workflow map must return a dict, got {type(result).__name__}")
        return result


class ProcessorWorkflow:
    """A chain of steps that runs as one processor; build it with `create_workflow`."""

    def __init__(self, id: str, *, description: str | None = None) -> None:
        if not id:
            raise ConfigurationError("a workflow needs an id")
        self.id = id
        self.name = id
        self.description = description
        self.processor_index: int | None = None
        self.on_violation: Callable[[ProcessorViolation], Any] | None = None
        self._nodes: list[_Node] = []
        self._committed = False

    def _add(self, node: _Node) -> ProcessorWorkflow:
        if self._committed:
            raise ConfigurationError(f"workflow {self.id!r} is committed; build a new one to change it")
        self._nodes.append(node)
        return self

    def then(self, step: Step | Any) -> ProcessorWorkflow:
        return self._add(_Then(step if isinstance(step, Step) else create_step(step)))

    def parallel(self, steps: Sequence[Step | Any]) -> ProcessorWorkflow:
        return self._add(_Parallel([s if isinstance(s, Step) else create_step(s) for s in steps]))

    def branch(self, branches: Sequence[tuple[Condition, Step | Any]]) -> ProcessorWorkflow:
        return self._add(_Branch([(c, s if isinstance(s, Step) else create_step(s)) for c, s in branches]))

    def map(self, fn: StepFunction) -> ProcessorWorkflow:
        return self._add(_Map(fn))

    def step_graph(self) -> list[dict[str, Any]]:
        """The workflow's stages in order, for drawing it: each is `{"type": "then" | "parallel" |
        "branch" | "map", "steps": [...]}` (a branch's steps in the order their conditions are
        tried; a map has none)."""
        return [
            {"type": node.kind, "steps": [step.describe() for step in node.steps()]} for node in self._nodes
        ]

    def commit(self) -> ProcessorWorkflow:
        """Freeze the workflow and expose exactly the hooks its processors implement."""
        if not self._nodes:
            raise ConfigurationError(f"workflow {self.id!r} has no steps")
        self._committed = True
        hooks = set().union(*(node.hooks() for node in self._nodes))
        for hook in hooks:
            setattr(self, hook, _hook_runner(self, hook))
        return self

    def processors(self) -> list[Any]:
        """The processors of its steps, in order (what a run's pre-flight check looks into)."""
        steps = [step for node in self._nodes for step in node.steps()]
        return [step.processor for step in steps if step.processor is not None]

    async def run(self, hook: str, args: Any) -> Any:
        data = _data_from_args(hook, args)
        for node in self._nodes:
            data = await node.run(hook, data, args)
            if hook == "process_output_stream" and data.get("part") is None and "__parallel__" not in data:
                return None
        if "__parallel__" in data:
            data = next(v for k, v in data.items() if k != "__parallel__")
        return _result_from_data(hook, data, args)

    def __repr__(self) -> str:
        return f"ProcessorWorkflow(id={self.id!r})"


def create_workflow(
    *, id: str, description: str | None = None, input_schema: Any = None, output_schema: Any = None
) -> ProcessorWorkflow:
    """Start a processor workflow. `input_schema` / `output_schema` are accepted for parity with
    Mastra's `ProcessorStepSchema`; the data shape is fixed by the workflow."""
    return ProcessorWorkflow(id, description=description)


def _hook_runner(workflow: ProcessorWorkflow, hook: str) -> Callable[[Any], Awaitable[Any]]:
    async def run(args: Any) -> Any:
        return await workflow.run(hook, args)

    return run


def _copy(data: Data) -> Data:
    copied = dict(data)
    if isinstance(copied.get("messages"), list):
        copied["messages"] = list(copied["messages"])
    return copied


def _data_from_args(hook: str, args: Any) -> Data:
    data: Data = {"phase": hook}
    for name in ("messages", "system_messages", "part", "step_number", "text", "finish_reason", "tool_calls"):
        if hasattr(args, name):
            value = getattr(args, name)
            data[name] = list(value) if isinstance(value, list) else value
    if hook == "process_tool_result":
        for name in _TOOL_RESULT_FIELDS:
            data[name] = getattr(args, name)
    return data


def _result_from_data(hook: str, data: Data, args: Any) -> Any:
    if hook == "process_output_stream":
        return data.get("part")
    if hook == "process_tool_result":
        return {"result": data["result"]} if "result" in data else None
    result: dict[str, Any] = {}
    if "messages" in data:
        result["messages"] = data["messages"]
    if hook in ("process_input", "process_input_step") and "system_messages" in data:
        result["system_messages"] = data["system_messages"]
    if hook == "process_input_step":
        result.update({name: data[name] for name in STEP_FIELDS if data.get(name) is not None})
    if hook in ("process_output_step", "process_output_result"):
        return result.get("messages")
    return result


async def _run_processor(processor: Any, hook: str, data: Data, outer: Any) -> Data:
    """Call one processor's hook with the outer args, its own state and abort, and this data."""
    pid = processor_id(processor)
    changes: dict[str, Any] = {
        "state": outer.state.setdefault(f"__step__:{pid}", {}),
        "abort": make_abort(pid),
    }
    for name in ("messages", "system_messages", "part"):
        if name in data and hasattr(outer, name):
            changes[name] = data[name]
    for name in STEP_FIELDS:
        if data.get(name) is not None and hasattr(outer, name):
            changes[name] = data[name]
    if hook == "process_tool_result" and "result" in data:
        changes["result"] = data["result"]
    args = dataclasses.replace(outer, **changes)
    try:
        result = await _maybe_await(getattr(processor, hook)(args))
    except TripWire as tripwire:
        await report_violation(processor, tripwire.reason, tripwire.metadata)
        raise
    out = dict(data)
    message_list: MessageList | None = getattr(outer, "message_list", None)
    if hook == "process_output_stream":
        out["part"] = result
        return out
    if hook == "process_tool_result":
        if isinstance(result, ProcessToolResultResult):
            out["result"] = result.result
        elif isinstance(result, dict) and "result" in result:
            out["result"] = result["result"]
        return out
    if isinstance(result, (ProcessInputStepResult, dict)):
        result = step_result_fields(result)
    if result is None:
        return out
    if isinstance(result, MessageList):
        if result is not message_list:
            raise ConfigurationError(f"processor {pid!r} returned a different MessageList inside a workflow")
        out["messages"] = result.get.all.db()
        out["system_messages"] = result.get_system_messages()
    elif isinstance(result, list):
        if result or hook not in ("process_output_step", "process_output_result"):
            out["messages"] = result
    elif isinstance(result, dict):
        out.update(result)
    return out
