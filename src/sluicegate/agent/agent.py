"""`Agent`: instructions, a model, tools and three processor arrays.

`generate` runs the loop to its end and returns a `FullOutput`; `stream` returns a
`ModelOutput` whose `full_stream` drives the loop as it is read. Everything a call can vary
(processor arrays, retries, step limit, tool choice, memory thread, settings) is a keyword
option of the call.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sluicegate.agent.abort import check_abort_signal
from sluicegate.agent.auto_processors import auto_error_processors
from sluicegate.agent.memory_binding import AgentMemory, MemoryBinding
from sluicegate.agent.results import FullOutput
from sluicegate.agent.run import (
    DEFAULT_MAX_STEPS,
    AgentRun,
    RunOptions,
    normalize_tool_choice,
    structured_schema,
)
from sluicegate.errors import AbortError, ConfigurationError, SluicegateError
from sluicegate.messages import Message, MessageList
from sluicegate.models.base import LanguageModel
from sluicegate.models.registry import resolve_model
from sluicegate.processors.validation import check_processor_array
from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY, RequestContext
from sluicegate.stream.output import ModelOutput
from sluicegate.tools import Tool, normalize_tools

ProcessorArray = Sequence[Any] | Callable[[RequestContext], Any]
AGENT_ID_KEY = "sluicegate__agentId"

_UNSET: Any = object()


class Agent:
    """An LLM agent whose pipeline is driven by processors."""

    def __init__(
        self,
        name: str,
        *,
        id: str | None = None,
        instructions: str | Sequence[str] | Callable[[RequestContext], Any] = "",
        model: str | LanguageModel,
        tools: Sequence[Tool] | dict[str, Tool] | None = None,
        input_processors: ProcessorArray | None = None,
        output_processors: ProcessorArray | None = None,
        error_processors: ProcessorArray | None = None,
        max_processor_retries: int | None = None,
        memory: AgentMemory | None = None,
        description: str | None = None,
        default_max_steps: int = DEFAULT_MAX_STEPS,
        auto_error_processors: bool = True,
    ) -> None:
        if not name:
            raise ConfigurationError("an agent needs a name")
        self.name = name
        self.id = id or name
        self.description = description
        self.instructions = instructions
        self.model = model if isinstance(model, str) else resolve_model(model)
        self.tools = normalize_tools(tools)
        self.input_processors = _check_array("input_processors", input_processors)
        self.output_processors = _check_array("output_processors", output_processors)
        self.error_processors = _check_array("error_processors", error_processors)
        _check_retries(max_processor_retries)
        self.max_processor_retries = max_processor_retries
        self.memory = memory
        self.default_max_steps = default_max_steps
        self.auto_error_processors = auto_error_processors
        """Append `PrefillErrorHandler` as the last error processor (unless one is there)."""

    def __repr__(self) -> str:
        return f"Agent(name={self.name!r})"

    # ------------------------------------------------------------------ public calls

    async def generate(self, messages: Any, **options: Any) -> FullOutput:
        """Run the agent to the end. Raises the error when a model call fails unrecovered."""
        run = await self._prepare(messages, options)
        async for _ in run.events():
            pass
        if run.aborted:
            raise AbortError(f"agent {self.name!r}: the run was cancelled by its abort_signal")
        if run.error is not None and run.tripwire is None:
            raise run.error
        return FullOutput(
            text=run.final_text(),
            finish_reason=run.finish_reason,
            usage=run.usage,
            steps=list(run.steps),
            tool_calls=run.all_tool_calls(),
            tool_results=run.all_tool_results(),
            tripwire=run.tripwire,
            response=run.response(),
            object=run.object,
            run_id=run.run_id,
            reasoning_text=run.reasoning_text(),
        )

    async def stream(self, messages: Any, **options: Any) -> ModelOutput:
        """Start the agent; iterate `full_stream` or await the result properties."""
        return ModelOutput(await self._prepare(messages, options))

    def generate_sync(self, messages: Any, **options: Any) -> FullOutput:
        """`generate` for code without an event loop (in a worker thread when one is running)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.generate(messages, **options))
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(asyncio.run, self.generate(messages, **options)).result()

    # ------------------------------------------------------------------ preparing a run

    async def _prepare(self, messages: Any, options: dict[str, Any]) -> AgentRun:
        known = {
            "max_steps",
            "input_processors",
            "output_processors",
            "error_processors",
            "max_processor_retries",
            "prepare_step",
            "request_context",
            "tool_choice",
            "active_tools",
            "memory",
            "model_settings",
            "provider_options",
            "structured_output",
            "instructions",
            "tools",
            "model",
            "abort_signal",
        }
        unknown = set(options) - known
        if unknown:
            raise TypeError(f"unknown option(s) for {self.name!r}: {sorted(unknown)}; known: {sorted(known)}")
        request_context = options.get("request_context") or RequestContext()
        if not isinstance(request_context, RequestContext):
            raise SluicegateError("request_context must be a sluicegate.RequestContext")
        request_context.set(AGENT_ID_KEY, self.id)

        max_steps = options.get("max_steps", self.default_max_steps)
        if not isinstance(max_steps, int) or isinstance(max_steps, bool) or max_steps < 1:
            raise SluicegateError(f"max_steps must be a positive integer, got {max_steps!r}")
        retries = options.get("max_processor_retries", self.max_processor_retries)
        _check_retries(retries)
        tool_choice = options.get("tool_choice")
        normalize_tool_choice(tool_choice)  # fail early on a bad value
        abort_signal = options.get("abort_signal")
        check_abort_signal(abort_signal)
        prepare_step = options.get("prepare_step")
        if prepare_step is not None and not callable(prepare_step):
            raise ConfigurationError(
                f"prepare_step must be a function (def or async def), got {type(prepare_step).__name__}"
            )
        if options.get("structured_output") is not None:
            structured_schema(options["structured_output"])  # fail early on a bad value

        input_array = await self._resolve_array("input_processors", options, request_context)
        output_array = await self._resolve_array("output_processors", options, request_context)
        error_array = await self._resolve_array("error_processors", options, request_context)

        tools = dict(self.tools)
        if "tools" in options:
            tools.update(normalize_tools(options["tools"]))
        binding = await self._bind_memory(options.get("memory"), request_context)
        thread_id = request_context.get(THREAD_ID_KEY)
        resource_id = request_context.get(RESOURCE_ID_KEY)
        message_list = MessageList(thread_id=thread_id, resource_id=resource_id)
        for text in await self._instructions(options.get("instructions", _UNSET), request_context):
            message_list.add_system(text)
        if binding is not None:
            for text in binding.instructions:
                message_list.add_system(text, tag="memory")
            tools.update(normalize_tools(binding.tools))
            input_array = [*binding.input_processors, *input_array]
            output_array = [*output_array, *binding.output_processors]
        message_list.add(Message.coerce_many(messages), "input")

        model = (
            resolve_model(options["model"]) if options.get("model") is not None else resolve_model(self.model)
        )
        run_options = RunOptions(
            max_steps=max_steps,
            max_processor_retries=retries,
            tool_choice=tool_choice,
            active_tools=options.get("active_tools"),
            model_settings=options.get("model_settings"),
            provider_options=options.get("provider_options"),
            structured_output=options.get("structured_output"),
            abort_signal=abort_signal,
        )
        run = AgentRun(
            agent_id=self.id,
            model=model,
            message_list=message_list,
            tools=tools,
            input_processors=input_array,
            output_processors=output_array,
            error_processors=error_array,
            request_context=request_context,
            options=run_options,
            prepare_step=prepare_step,
        )
        if self.auto_error_processors:
            run.runner.auto_error_processors = auto_error_processors(input_array, output_array, error_array)
        return run

    async def _resolve_array(
        self, name: str, options: dict[str, Any], request_context: RequestContext
    ) -> list[Any]:
        array = options[name] if options.get(name) is not None else getattr(self, name)
        if array is None:
            return []
        if callable(array) and not isinstance(array, (list, tuple)) and not hasattr(array, "id"):
            array = array(request_context)
            if inspect.isawaitable(array):
                array = await array
            if array is None:
                return []
            return check_processor_array(array, f"{name} (returned by the callable)")
        return check_processor_array(array, name)

    async def _instructions(self, override: Any, request_context: RequestContext) -> list[str]:
        value = self.instructions if override is _UNSET else override
        if callable(value):
            value = value(request_context)
            if inspect.isawaitable(value):
                value = await value
        if value is None or value == "":
            return []
        if isinstance(value, str):
            return [value]
        return [str(v) for v in value]

    async def _bind_memory(self, memory_option: Any, request_context: RequestContext) -> MemoryBinding | None:
        if memory_option is None:
            return None
        if self.memory is None:
            raise ConfigurationError(
                f"agent {self.name!r} was given memory= for a call but has no memory configured"
            )
        if not isinstance(memory_option, dict):
            raise SluicegateError("memory must be a dict like {'thread': 'thread-id', 'resource': 'user-id'}")
        thread = memory_option.get("thread")
        thread_id = thread.get("id") if isinstance(thread, dict) else thread
        if not isinstance(thread_id, str) or not thread_id:
            raise SluicegateError("memory needs a 'thread' id (a string or {'id': ...})")
        resource_id = memory_option.get("resource")
        request_context.set(THREAD_ID_KEY, thread_id)
        if resource_id is not None:
            request_context.set(RESOURCE_ID_KEY, resource_id)
        return await self.memory.bind(
            thread_id=thread_id,
            resource_id=resource_id,
            request_context=request_context,
            options=memory_option.get("options"),
        )


def _check_array(name: str, value: Any) -> Any:
    if value is None or (callable(value) and not isinstance(value, (list, tuple))):
        return value
    return check_processor_array(value, name)


def _check_retries(value: Any) -> None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
        raise ConfigurationError(
            f"max_processor_retries must be a non-negative integer or None, got {value!r}"
        )
