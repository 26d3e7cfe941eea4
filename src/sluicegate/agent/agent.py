"""`Agent`: instructions, a model, tools and three processor arrays.

`generate` runs the loop to its end and returns a `FullOutput`; `stream` returns a
`ModelOutput` whose `full_stream` drives the loop as it is read. Everything a call can vary
(processor arrays, retries, step limit, tool choice, memory thread, settings) is a keyword
option of the call.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable, Mapping, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Generic, overload

from typing_extensions import TypeVar, Unpack

from sluicegate.agent.auto_processors import auto_error_processors
from sluicegate.agent.decisions import Decision
from sluicegate.agent.observe import ObservedOutput, check_run_log, observe_run
from sluicegate.agent.options import AgentCallOptions, JSONSchema, Out
from sluicegate.agent.output import ModelOutput
from sluicegate.agent.ports import IN_PROCESS_TOOLS
from sluicegate.agent.preflight import check_processor_models
from sluicegate.agent.reserved_keys import apply_reserved_keys
from sluicegate.agent.results import FullOutput
from sluicegate.agent.resume import list_runs, resumed_run
from sluicegate.agent.resume_setup import (
    DEFAULT_SUSPENDED_RUN_TTL,
    check_require_approval,
    check_store,
    check_ttl,
    restore_context,
    restore_messages,
    resume_into,
    resumed_memory,
    suspended_run_store,
)
from sluicegate.agent.run import DEFAULT_MAX_STEPS, AgentRun
from sluicegate.agent.run_options import (
    check_call_options,
    check_retries,
    checked_default_options,
    checked_run_options,
    with_defaults,
)
from sluicegate.agent.structured import DEFAULT_OUTPUT_RETRIES, check_output_retries, output_schema
from sluicegate.agent.sub_agents import checked_agents, sub_agent_tools
from sluicegate.agent.sync_loop import run_sync
from sluicegate.agent.sync_output import SyncModelOutput
from sluicegate.agent.tool_sources import DEFAULT_LIST_TIMEOUT, ToolSources, split_tools
from sluicegate.errors import AbortError, ConfigurationError, InvalidInputError, SluicegateError
from sluicegate.memory.binding import AgentMemory, MemoryBinding
from sluicegate.messages import MessageList
from sluicegate.messages.validate import (
    DEFAULT_MAX_INPUT_CHARS,
    check_id,
    check_max_input_chars,
    validate_input,
)
from sluicegate.models.base import LanguageModel
from sluicegate.models.circuit_breaker import CircuitBreaker
from sluicegate.models.fallback import model_chain, parse_model_option
from sluicegate.models.registry import resolve_model
from sluicegate.models.retries import DEFAULT_MAX_RETRIES, check_max_retries
from sluicegate.processors.hook_timeout import DEFAULT_PROCESSOR_TIMEOUT, check_timeout
from sluicegate.processors.option_check import unknown_options
from sluicegate.processors.validation import check_processor_array
from sluicegate.request_context import AGENT_ID_KEY, RESOURCE_ID_KEY, THREAD_ID_KEY, RequestContext
from sluicegate.tools import Tool, ToolSource, normalize_tools

if TYPE_CHECKING:
    from sluicegate.agent.ports import ModelCaller, ToolRunner
    from sluicegate.storage.suspended_runs import SuspendedRun, SuspendedRunStore
    from sluicegate.stream.run_log import RunLog

ProcessorArray = Sequence[Any] | Callable[[RequestContext], Any]

_UNSET: Any = object()

M = TypeVar("M")


DEFAULT_LOG_CHUNKS = 4_000
DEFAULT_LOG_RUNS = 200
"""The bounds of an agent's own run log: a kept chunk costs about 230 bytes, so at most about
190 MB however long or many the runs (about 25 MB for 200 runs of 500 chunks)."""


class Agent(Generic[Out]):
    """An LLM agent whose pipeline is driven by processors.

    With `structured_output=SomeModel` the agent is an `Agent[SomeModel]` and `result.object`
    is a `SomeModel` for a type checker too."""

    def __init__(
        self,
        name: str,
        *,
        id: str | None = None,
        instructions: str | Sequence[str] | Callable[[RequestContext], Any] = "",
        model: str | LanguageModel | Sequence[Any],
        tools: Sequence[Tool | ToolSource] | dict[str, Tool] | ToolSource | None = None,
        input_processors: ProcessorArray | None = None,
        output_processors: ProcessorArray | None = None,
        error_processors: ProcessorArray | None = None,
        max_processor_retries: int | None = None,
        memory: AgentMemory | None = None,
        description: str | None = None,
        default_max_steps: int = DEFAULT_MAX_STEPS,
        processor_timeout: float | None = DEFAULT_PROCESSOR_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        auto_error_processors: bool = True,
        max_input_chars: int = DEFAULT_MAX_INPUT_CHARS,
        structured_output: type[Out] | JSONSchema | None = None,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
        provider_error_details: bool = False,
        suspended_runs: SuspendedRunStore | None = None,
        suspended_run_ttl: timedelta = DEFAULT_SUSPENDED_RUN_TTL,
        circuit_breaker: CircuitBreaker | None = None,
        run_log: RunLog | None = _UNSET,
        agents: Mapping[str, Agent[Any]] | None = None,
        propagate_tripwire: bool = False,
        default_options: AgentCallOptions | Mapping[str, Any] | None = None,
    ) -> None:
        if not name:
            raise ConfigurationError("an agent needs a name")
        self.name = name
        self.id = id or name
        self.description = description
        self.instructions = instructions
        # A fallback list is checked here and its models resolved per call, like a model string.
        fallback = parse_model_option(model)
        self.model = model if fallback is not None or isinstance(model, str) else resolve_model(model)
        tools, sources = split_tools(tools)
        self.tools = normalize_tools(tools)
        self.tool_sources = ToolSources(self.id, sources)
        """Sources whose tools join `tools` when listed (`load_tools`), e.g. an `MCPClient`."""
        self.agents = checked_agents(agents)
        """Sub-agents by name: each is the tool `agent-<name>` (see `sub_agents`)."""
        if not isinstance(propagate_tripwire, bool):
            raise ConfigurationError(f"propagate_tripwire must be True or False, got {propagate_tripwire!r}")
        self.propagate_tripwire = propagate_tripwire
        for tool_name, sub_tool in sub_agent_tools(
            self.agents, propagate_tripwire=propagate_tripwire
        ).items():
            if tool_name in self.tools:
                raise ConfigurationError(
                    f"agents: the tool {tool_name!r} of a sub-agent is one of the agent's tools"
                )
            self.tools[tool_name] = sub_tool
        self.input_processors = _check_array("input_processors", input_processors)
        self.output_processors = _check_array("output_processors", output_processors)
        self.error_processors = _check_array("error_processors", error_processors)
        check_retries(max_processor_retries)
        self.max_processor_retries = max_processor_retries
        self.memory = memory
        self.default_max_steps = default_max_steps
        self.processor_timeout = check_timeout("processor_timeout", processor_timeout)
        self.max_retries = check_max_retries(max_retries)
        self.auto_error_processors = auto_error_processors
        """Append `PrefillErrorHandler` as the last error processor (unless one is there)."""
        self.max_input_chars = check_max_input_chars(max_input_chars)
        if structured_output is not None:
            output_schema(structured_output)  # fail at construction on a bad schema
        self.structured_output = structured_output
        self.output_retries = check_output_retries(output_retries)
        if not isinstance(provider_error_details, bool):
            raise ConfigurationError(
                f"provider_error_details must be True or False, got {provider_error_details!r}"
            )
        if circuit_breaker is not None and not isinstance(circuit_breaker, CircuitBreaker):
            raise ConfigurationError(
                f"circuit_breaker must be a sluicegate.models.CircuitBreaker, got {circuit_breaker!r}"
            )
        self.circuit_breaker = circuit_breaker
        """Skip a fallback model that keeps failing, for a cooldown (off by default)."""
        self.provider_error_details = provider_error_details
        """Let a provider's own error text (message, response body) reach the WARNING log, tool
        errors (the model and memory) and, under `sluicegate serve`, clients; off: only the
        status, provider and code leave the process (see docs/security.md)."""
        check_store(suspended_runs)
        self._suspended_runs = suspended_runs
        self.suspended_run_ttl = check_ttl(suspended_run_ttl)
        self._run_log: RunLog | None = None if run_log is _UNSET else check_run_log(run_log)
        self._own_run_log = run_log is _UNSET
        self.default_options = _checked_defaults(self, default_options)
        """Options every call takes unless it sets them itself (Mastra's `defaultOptions`): a
        call's value wins, a mapping (`model_settings`, `provider_options`) merges key by key.
        A durable run takes them from the worker's agent (`prepare_step`, processor arrays)."""

    def __repr__(self) -> str:
        return f"Agent(name={self.name!r})"

    async def load_tools(self, within: float | None = DEFAULT_LIST_TIMEOUT) -> None:
        """List the agent's tool sources (an `MCPClient` in `tools=`) into `tools`, once. The
        first run does it when nothing did; a worker or server does it at its start."""
        await self.tool_sources.load(self.tools, within)

    # ------------------------------------------------------------------ public calls

    @overload
    async def generate(
        self, messages: Any, *, structured_output: type[M], **options: Unpack[AgentCallOptions]
    ) -> FullOutput[M]: ...
    @overload
    async def generate(
        self, messages: Any, *, structured_output: JSONSchema, **options: Unpack[AgentCallOptions]
    ) -> FullOutput[Any]: ...
    @overload
    async def generate(self, messages: Any, **options: Unpack[AgentCallOptions]) -> FullOutput[Out]: ...
    async def generate(self, messages: Any, **options: Any) -> FullOutput[Any]:
        """Run the agent to the end. Raises the error when a model call fails unrecovered."""
        return await self._complete(await self.prepare_run(messages, options))

    async def _complete(self, run: AgentRun) -> FullOutput[Any]:
        async for _ in run.events():
            pass
        if run.aborted:
            raise AbortError(f"agent {self.name!r}: the run was cancelled by its abort_signal")
        if run.error is not None and run.tripwire is None:
            raise run.error
        return run.full_output()

    @overload
    async def stream(
        self, messages: Any, *, structured_output: type[M], **options: Unpack[AgentCallOptions]
    ) -> ModelOutput[M]: ...
    @overload
    async def stream(
        self, messages: Any, *, structured_output: JSONSchema, **options: Unpack[AgentCallOptions]
    ) -> ModelOutput[Any]: ...
    @overload
    async def stream(self, messages: Any, **options: Unpack[AgentCallOptions]) -> ModelOutput[Out]: ...
    async def stream(self, messages: Any, **options: Any) -> ModelOutput[Any]:
        """Start the agent; iterate `full_stream` or await the result properties."""
        return ModelOutput(await self.prepare_run(messages, options))

    @overload
    def generate_sync(
        self, messages: Any, *, structured_output: type[M], **options: Unpack[AgentCallOptions]
    ) -> FullOutput[M]: ...
    @overload
    def generate_sync(
        self, messages: Any, *, structured_output: JSONSchema, **options: Unpack[AgentCallOptions]
    ) -> FullOutput[Any]: ...
    @overload
    def generate_sync(self, messages: Any, **options: Unpack[AgentCallOptions]) -> FullOutput[Out]: ...
    def generate_sync(self, messages: Any, **options: Any) -> FullOutput[Any]:
        """`generate` for code that does not `await`: runs on sluicegate's one background event
        loop, so it works in a row, after `asyncio.run`, and inside a running loop (a notebook)."""
        result: FullOutput[Any] = run_sync(self.generate(messages, **options))
        return result

    @overload
    def stream_sync(
        self, messages: Any, *, structured_output: type[M], **options: Unpack[AgentCallOptions]
    ) -> SyncModelOutput[M]: ...
    @overload
    def stream_sync(
        self, messages: Any, *, structured_output: JSONSchema, **options: Unpack[AgentCallOptions]
    ) -> SyncModelOutput[Any]: ...
    @overload
    def stream_sync(self, messages: Any, **options: Unpack[AgentCallOptions]) -> SyncModelOutput[Out]: ...
    def stream_sync(self, messages: Any, **options: Any) -> SyncModelOutput[Any]:
        """`stream` for code that does not `await`: iterate `text_stream` / `full_stream` with a
        plain `for`, read `text`, `object`, ... as plain attributes (they finish the run)."""
        output: ModelOutput[Any] = run_sync(self.stream(messages, **options))
        return SyncModelOutput(output)

    COPY_WITH = frozenset(
        {
            "memory",
            "input_processors",
            "output_processors",
            "error_processors",
            "suspended_run_store",
            "run_log",
            "id",
            "max_processor_retries",
            "default_options",
        }
    )
    """What `copy_with` may change: with `id`, a variant of the agent that a durable worker
    registers beside it (its own processor arrays, retries, default options)."""

    def copy_with(self, **changes: Any) -> Agent[Out]:
        """A shallow copy of this agent with `changes` (names in `COPY_WITH`) made: how another
        executor runs the agent with its own stores, judges or memory (the durable workflow's
        activities) while this agent keeps serving other runs unchanged."""
        unknown = [name for name in changes if name not in self.COPY_WITH]
        if unknown:
            raise unknown_options(f"agent {self.name!r} copy_with", unknown, set(self.COPY_WITH))
        other = copy.copy(self)
        for name in ("input_processors", "output_processors", "error_processors"):
            if name in changes:
                setattr(other, name, _check_array(name, changes[name]))
        if "memory" in changes:
            other.memory = changes["memory"]
        if "suspended_run_store" in changes:
            other.suspended_run_store = changes["suspended_run_store"]
        if "run_log" in changes:
            other.run_log = changes["run_log"]
        if "id" in changes:
            if not isinstance(changes["id"], str) or not changes["id"]:
                raise ConfigurationError(f"copy_with: id must be a non-empty string, got {changes['id']!r}")
            other.id = changes["id"]
        if "max_processor_retries" in changes:
            check_retries(changes["max_processor_retries"])
            other.max_processor_retries = changes["max_processor_retries"]
        if "default_options" in changes:
            other.default_options = _checked_defaults(other, changes["default_options"])
        return other

    # ------------------------------------------------------------------ human in the loop

    @property
    def suspended_run_store(self) -> SuspendedRunStore:
        """Where runs waiting on a person are kept: `suspended_runs=`, else the memory's SQLite or
        PostgreSQL storage, else one in-process store of this agent (made on first use)."""
        if self._suspended_runs is None:
            self._suspended_runs = suspended_run_store(self.memory)
        return self._suspended_runs

    @suspended_run_store.setter
    def suspended_run_store(self, store: SuspendedRunStore) -> None:
        check_store(store)
        self._suspended_runs = store

    @property
    def run_log(self) -> RunLog | None:
        """Where this agent's runs are kept for `observe`: `run_log=`, else one bounded
        `InMemoryRunLog` of this agent (made on first use); None when `run_log=None`."""
        if self._run_log is None and self._own_run_log:
            from sluicegate.stream.run_log import InMemoryRunLog

            self._run_log = InMemoryRunLog(max_chunks=DEFAULT_LOG_CHUNKS, max_runs=DEFAULT_LOG_RUNS)
        return self._run_log

    @run_log.setter
    def run_log(self, log: RunLog | None) -> None:
        """Replace the log the agent's next runs write to (None: they keep none)."""
        self._run_log = None if log is None else check_run_log(log)
        self._own_run_log = False

    async def observe(self, *, run_id: str, offset: int = 0, **options: Any) -> ObservedOutput:
        """Reconnect to a running or ended run: its chunks from `offset` (the number already
        received), then live until the run closes. Only the run's own resource may observe it
        (`request_context=`); anyone else gets `RunNotFoundError`, as for an unknown run."""
        return await observe_run(
            self.run_log,
            agent_id=self.id,
            agent_name=self.name,
            run_id=run_id,
            offset=offset,
            options=options,
        )

    async def approve_tool_call(
        self, *, run_id: str, tool_call_id: str | None = None, **options: Any
    ) -> ModelOutput[Any]:
        """Run the pending tool call of a suspended run and continue it, as a stream."""
        run = await resumed_run(self, "approve", run_id=run_id, tool_call_id=tool_call_id, options=options)
        return ModelOutput(run)

    async def decline_tool_call(
        self, *, run_id: str, tool_call_id: str | None = None, reason: str | None = None, **options: Any
    ) -> ModelOutput[Any]:
        """Refuse the pending call: it never runs, the model is told `reason`; continue, as a stream."""
        run = await resumed_run(
            self, "decline", run_id=run_id, tool_call_id=tool_call_id, reason=reason, options=options
        )
        return ModelOutput(run)

    async def approve_tool_call_generate(
        self, *, run_id: str, tool_call_id: str | None = None, **options: Any
    ) -> FullOutput[Any]:
        run = await resumed_run(self, "approve", run_id=run_id, tool_call_id=tool_call_id, options=options)
        return await self._complete(run)

    async def decline_tool_call_generate(
        self, *, run_id: str, tool_call_id: str | None = None, reason: str | None = None, **options: Any
    ) -> FullOutput[Any]:
        run = await resumed_run(
            self, "decline", run_id=run_id, tool_call_id=tool_call_id, reason=reason, options=options
        )
        return await self._complete(run)

    async def resume_stream(
        self, resume_data: Any, *, run_id: str, tool_call_id: str | None = None, **options: Any
    ) -> ModelOutput[Any]:
        """Run a suspended tool again with `resume_data` (checked against its `resume_schema`)."""
        run = await resumed_run(
            self, "resume", run_id=run_id, tool_call_id=tool_call_id, resume_data=resume_data, options=options
        )
        return ModelOutput(run)

    async def resume_generate(
        self, resume_data: Any, *, run_id: str, tool_call_id: str | None = None, **options: Any
    ) -> FullOutput[Any]:
        run = await resumed_run(
            self, "resume", run_id=run_id, tool_call_id=tool_call_id, resume_data=resume_data, options=options
        )
        return await self._complete(run)

    async def list_suspended_runs(
        self,
        thread_id: str | None = None,
        resource_id: str | None = None,
        *,
        request_context: RequestContext | None = None,
        memory: dict[str, Any] | None = None,
    ) -> list[SuspendedRun]:
        """This agent's runs waiting on a person that this caller could decide (the resource it
        names: `memory=`, `request_context` or `resource_id`), newest first."""
        options: dict[str, Any] = {"request_context": request_context}
        if memory is not None:
            options["memory"] = memory
        return await list_runs(
            self, self.suspended_run_store, thread_id=thread_id, resource_id=resource_id, options=options
        )

    # ------------------------------------------------------------------ preparing a run

    async def prepare_run(
        self,
        messages: Any,
        options: dict[str, Any],
        *,
        resumed: tuple[SuspendedRun, Decision] | None = None,
        run_id: str | None = None,
        models: ModelCaller | None = None,
        tool_runner: ToolRunner | None = None,
    ) -> AgentRun:
        """The run one call makes, not started: options checked, processor arrays resolved,
        memory bound, the message list built. `resumed` rebuilds a stored run with the decision
        about it (`resume`); `run_id` names the run (the durable workflow passes its own);
        `models` is how the run calls its model (the durable workflow passes its activity
        models; default: the call's `model`, else the agent's, as a `ModelChain`) and
        `tool_runner` how it runs its tools (default: in this process); see `agent.ports`."""
        if models is not None and options.get("model") is not None:
            raise SluicegateError("a run given its model caller (models=) takes no model= option")
        check_call_options(self.name, options)
        options = with_defaults(self.default_options, options)
        caller_context = options.get("request_context")
        if caller_context is not None and not isinstance(caller_context, RequestContext):
            raise SluicegateError("request_context must be a sluicegate.RequestContext")
        # The run's own copy: the caller's context may be shared by concurrent requests, so the
        # run's thread/resource (and anything processors set) never go into it.
        if resumed is None:
            request_context = RequestContext(caller_context.to_dict() if caller_context is not None else None)
        else:
            request_context = restore_context(resumed[0].snapshot, caller_context)
        request_context.set(AGENT_ID_KEY, self.id)
        max_input_chars = check_max_input_chars(options.get("max_input_chars", self.max_input_chars))
        input_messages = validate_input(messages, max_chars=max_input_chars) if resumed is None else []
        require_approval = check_require_approval(options.get("require_tool_approval"))
        for key in (THREAD_ID_KEY, RESOURCE_ID_KEY):
            if request_context.get(key) is not None:
                check_id(request_context.get(key), f"request_context[{key!r}]")

        run_options, prepare_step = checked_run_options(self, options)

        input_array = await self.resolve_processors("input_processors", options, request_context)
        output_array = await self.resolve_processors("output_processors", options, request_context)
        error_array = await self.resolve_processors("error_processors", options, request_context)

        await self.tool_sources.load(self.tools)
        tools = dict(self.tools)
        if "tools" in options:
            tools.update(normalize_tools(options["tools"]))
        memory_option = options.get("memory") if resumed is None else resumed_memory(self.memory, resumed[0])
        binding = await self._bind_memory(memory_option, request_context)
        thread_id = request_context.get(THREAD_ID_KEY)
        resource_id = request_context.get(RESOURCE_ID_KEY)
        if resumed is None:
            message_list = MessageList(thread_id=thread_id, resource_id=resource_id)
            for text in await self._instructions(options.get("instructions", _UNSET), request_context):
                message_list.add_system(text)
        else:  # the conversation, its system messages included, is the stored one
            message_list = restore_messages(resumed[0].snapshot)
        if binding is not None:
            if resumed is None:
                for text in binding.instructions:
                    message_list.add_system(text, tag="memory")
            tools.update(normalize_tools(binding.tools))
            input_array = [*binding.input_processors, *input_array]
            output_array = [*output_array, *binding.output_processors]
        message_list.add(input_messages, "input")
        check_processor_models([*input_array, *output_array, *error_array])

        if models is None:
            chain = model_chain(
                options["model"] if options.get("model") is not None else self.model, run_options.max_retries
            )
            chain.breaker = self.circuit_breaker
            models = chain
        run = AgentRun(
            agent_id=self.id,
            models=models,
            message_list=message_list,
            tools=tools,
            input_processors=input_array,
            output_processors=output_array,
            error_processors=error_array,
            request_context=request_context,
            options=run_options,
            prepare_step=prepare_step,
            run_id=run_id if resumed is None else resumed[0].run_id,
            tool_runner=IN_PROCESS_TOOLS if tool_runner is None else tool_runner,
        )
        run.provider_error_details = self.provider_error_details
        run.suspended_runs = lambda: self.suspended_run_store
        run.suspended_run_ttl = self.suspended_run_ttl
        run.require_approval = require_approval
        run.run_log = self.run_log
        if resumed is not None:
            resume_into(run, *resumed)
        if self.auto_error_processors:
            run.runner.auto_error_processors = auto_error_processors(input_array, output_array, error_array)
        return run

    async def resolve_processors(
        self, name: str, options: dict[str, Any], request_context: RequestContext
    ) -> list[Any]:
        """The processor array `name` (`input_processors`, ...) a call runs with: the call's
        option or the agent's, a callable of the request context called, checked."""
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
        memory_option = apply_reserved_keys(memory_option, request_context)  # the context's ids win
        thread = memory_option.get("thread")
        thread_id = thread.get("id") if isinstance(thread, dict) else thread
        if not isinstance(thread_id, str) or not thread_id:
            raise InvalidInputError("memory needs a 'thread' id (a string or {'id': ...})")
        resource_id = memory_option.get("resource")
        check_id(thread_id, "memory thread id")
        if resource_id is not None:
            check_id(resource_id, "memory resource id")
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
    if value is None or (
        callable(value) and not isinstance(value, (list, tuple, type)) and not hasattr(value, "id")
    ):
        return value
    return check_processor_array(value, name)


def _checked_defaults(agent: Agent[Any], defaults: Any) -> dict[str, Any]:
    """`default_options=` checked as `agent`'s (see `Agent.default_options`), its processor
    arrays as the constructor checks its own."""
    checked = checked_default_options(agent, agent.name, defaults)
    for name in ("input_processors", "output_processors", "error_processors"):
        if name in checked:
            checked[name] = _check_array(name, checked[name])
    return checked
