"""`ProcessorRunner`: calls one request's processors at each stage of the run.

The runner is built once per request. It resolves which processors implement which hook
(`HookEntry`), gives each processor id one `state` dict, binds `abort`, reconciles returned
messages with the `MessageList`, and reads what each hook returns. Every hook is called by
`hook_call.call_hook` (one rule for what a failure becomes, see `hook_call`), every dict return
is read by `returns` (one rule for its keys), and the per-chunk path is `stream_pipeline`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, NoReturn

from sluicegate.errors import ProcessorError
from sluicegate.guardrails.judge_panels import link_judge_panels
from sluicegate.messages import Message, MessageList
from sluicegate.models.settings import normalize_model_settings
from sluicegate.processors.args import (
    STEP_FIELDS,
    GuardInput,
    OutputResult,
    ProcessAPIErrorArgs,
    ProcessAPIErrorResult,
    ProcessInputArgs,
    ProcessInputStepArgs,
    ProcessInputStepResult,
    ProcessLLMRequestArgs,
    ProcessLLMRequestResult,
    ProcessLLMResponseArgs,
    ProcessOutputResultArgs,
    ProcessOutputStepArgs,
    ProcessOutputStreamArgs,
)
from sluicegate.processors.base import (
    TokenCap,
    implements,
    make_abort,
    notify_violation,
    optional_hook,
    processor_id,
)
from sluicegate.processors.hook_call import HookEntry, call_hook
from sluicegate.processors.hook_timeout import DEFAULT_PROCESSOR_TIMEOUT, processor_timeout
from sluicegate.processors.input_guards import all_or_first_failure, checks_only, groups, runs_in_parallel
from sluicegate.processors.returns import (
    apply_message_fields,
    apply_messages,
    hook_result_fields,
    returned_fields,
)
from sluicegate.processors.step_config import PrepareStep, StepConfig
from sluicegate.processors.stream_pipeline import (
    CountsFor,
    OutputStream,
    StreamEntry,
    StreamPipeline,
    StreamResultType,
)
from sluicegate.processors.tool_hooks import ToolHooks
from sluicegate.processors.writer import Writer, signal_message
from sluicegate.request_context import RequestContext
from sluicegate.stream.chunk import Chunk

__all__ = [
    "HookEntry",
    "PrepareStep",
    "ProcessorRunner",
    "StepConfig",
    "StreamEntry",
    "StreamPipeline",
    "StreamResultType",
    "Writer",
    "signal_message",
]

log = logging.getLogger("sluicegate.processors")


def _unique(*arrays: Sequence[Any]) -> list[Any]:
    """The processors of several arrays, in order, each object once."""
    seen: set[int] = set()
    out: list[Any] = []
    for array in arrays:
        for processor in array:
            if id(processor) not in seen:
                seen.add(id(processor))
                out.append(processor)
    return out


class ProcessorRunner:
    """The processors of one request, ready to run."""

    def __init__(
        self,
        *,
        input_processors: Sequence[Any],
        output_processors: Sequence[Any],
        error_processors: Sequence[Any] = (),
        request_context: RequestContext,
        run_id: str,
        emit: Callable[[Chunk], Any],
        prepare_step: Callable[[ProcessInputStepArgs], Any] | None = None,
        tracing_context: Any = None,
        processor_timeout: float | None = DEFAULT_PROCESSOR_TIMEOUT,
    ) -> None:
        self._output: OutputStream | None = None
        self.request_context = request_context
        self.processor_timeout = processor_timeout
        self.run_id = run_id
        self.retry_count = 0
        self.abort_signal: Any = None
        self.tracing_context = tracing_context
        self.stream_counts: CountsFor | None = None
        """Set by `sluicegate.tracing` on a traced run: the counters the per-chunk loop keeps
        for a list of stream entries (the same object each time for the same entries)."""
        self.writer = Writer(run_id, emit)
        self.streams_here = True
        """False when the per-chunk pipeline runs elsewhere (a durable run's model activity):
        `stream_pipeline` is then None here, and nothing is held back to flush."""
        self._states: dict[str, dict[str, Any]] = {}
        self._aborts: dict[str, Callable[..., NoReturn]] = {}
        # Positions are per request (`args.processor_index`): a processor object is shared by
        # concurrent requests, so nothing request-specific is written onto it. A hook of one
        # array gets the position in that array; hooks run over several arrays (LLM request and
        # response, API errors) get the first array's position (input, then output, then error).
        self._indexes: dict[int, int] = {}
        for array in (error_processors, output_processors, input_processors):
            self._indexes.update((id(processor), index) for index, processor in enumerate(array))
        step_processors = list(input_processors)
        if prepare_step is not None:
            step_processors.append(PrepareStep(prepare_step))
        self._input = self._entries(input_processors, "process_input")
        self._input_step = self._entries(step_processors, "process_input_step")
        both = _unique(input_processors, output_processors)
        self._llm_request = self._entries(both, "process_llm_request", union=True)
        self._llm_response = self._entries(both, "process_llm_response", union=True)
        api_error = _unique(input_processors, output_processors, error_processors)
        self._api_error = self._entries(api_error, "process_api_error", union=True)
        self._output_stream = self._entries(output_processors, "process_output_stream")
        self._output_step = self._entries(output_processors, "process_output_step")
        self._output_result = self._entries(output_processors, "process_output_result")
        self._tool_result = self._entries(output_processors, "process_tool_result")
        self._tool_call = self._entries(output_processors, "process_tool_call")
        # The tool hooks' chains live in `tool_hooks`; callers reach them as the runner's own.
        tools = ToolHooks(tool_call=self._tool_call, tool_result=self._tool_result, common=self._common)
        self.handles_tool_call = bool(self._tool_call)
        self.handles_tool_result = bool(self._tool_result)
        self.run_tool_call = tools.run_tool_call
        self.run_tool_result = tools.run_tool_result
        self._all = (
            self._input,
            self._input_step,
            self._llm_request,
            self._llm_response,
            self._api_error,
            self._output_stream,
            self._output_step,
            self._output_result,
            self._tool_result,
            self._tool_call,
        )
        self.has_error_processors = bool(self._entries(error_processors, "process_api_error"))
        self.auto_error_processors: Sequence[Any] = ()
        """Run after every other `process_api_error`, built only when a call fails (see
        `sluicegate.agent.auto_processors`); they do not count for `has_error_processors`."""
        self.has_data_part_processors = any(
            getattr(e.processor, "process_data_parts", False) for e in self._output_stream
        )
        self._token_caps = [
            (cap, e.state) for e in self._output_stream if (cap := _token_cap(e.processor)) is not None
        ]
        self._request_caps = [
            (cap, e.state) for e in self._llm_request if (cap := _token_cap(e.processor)) is not None
        ]

    # ------------------------------------------------------------------ plumbing

    @property
    def retry_count(self) -> int:
        return self._retry_count

    @retry_count.setter
    def retry_count(self, value: int) -> None:
        # The per-chunk args objects are built once; keep their retry_count current.
        self._retry_count = value
        if self._output is not None:
            for stream_entry in self._output.entries:
                stream_entry.args.retry_count = value

    def state_for(self, pid: str) -> dict[str, Any]:
        state = self._states.get(pid)
        if state is None:
            state = self._states[pid] = {}
        return state

    def hook_entries(self) -> list[HookEntry]:
        """Every hook this runner calls, each once (tracing wraps them in spans: `HookEntry.wrap`)."""
        unique = {id(entry): entry for entries in self._all for entry in entries}
        return list(unique.values())

    def _entries(self, processors: Sequence[Any], hook: str, *, union: bool = False) -> list[HookEntry]:
        entries = []
        for position, processor in enumerate(processors):
            if implements(processor, hook):
                pid = processor_id(processor)
                abort = self._aborts.get(pid)
                if abort is None:
                    abort = self._aborts[pid] = make_abort(pid)
                timeout = processor_timeout(processor, self.processor_timeout)
                index = self._indexes.get(id(processor)) if union else position
                entries.append(HookEntry(processor, hook, pid, self.state_for(pid), abort, timeout, index))
        return entries

    def violation(self, processor: Any, message: str, detail: Any) -> None:
        """Tell a processor's `on_violation` (if any) about a violation; never raises."""
        notify_violation(processor, message, detail)

    def _common(self, entry: HookEntry) -> dict[str, Any]:
        return {
            "abort": entry.abort,
            "processor_index": entry.index,
            "request_context": self.request_context,
            "retry_count": self.retry_count,
            "state": entry.state,
            "tracing_context": self.tracing_context,
            "writer": self.writer,
        }

    def signal_sender(self, message_list: MessageList) -> Callable[[dict[str, Any]], Awaitable[None]]:
        async def send_signal(signal: dict[str, Any]) -> None:
            message_list.add(signal_message(signal), "input")

        return send_signal

    # ------------------------------------------------------------------ input

    async def run_input(self, message_list: MessageList) -> None:
        """The input processors in order; adjacent ones that only check run concurrently,
        and those with `run_in_parallel` are left to `parallel_input` (see `input_guards`)."""
        send_signal = self.signal_sender(message_list)
        entries = [e for e in self._input if not runs_in_parallel(e.processor)]
        for group in groups(entries, lambda e: checks_only(e.processor)):
            if len(group) > 1:
                results = await all_or_first_failure(
                    [call_hook(e, self._input_args(e, message_list, send_signal)) for e in group]
                )
                for entry, result in zip(group, results, strict=True):
                    apply_messages(entry.pid, entry.hook, result, message_list)
                continue
            entry = group[0]
            args = self._input_args(entry, message_list, send_signal)
            apply_messages(entry.pid, entry.hook, await call_hook(entry, args), message_list)

    def input_guard(self, caller: HookEntry, message_list: MessageList) -> GuardInput:
        """`args.guard_input` for `caller`'s hook: messages judged by the `process_input` of
        this request's input processors, except `caller` and those that load context, on a
        list of their own (the run's thread and resource, nothing else of the run's)."""
        entries = [
            e
            for e in self._input
            if e.processor is not caller.processor and not getattr(e.processor, "loads_context", False)
        ]

        async def guard(messages: list[Message]) -> list[Message]:
            scratch = MessageList(thread_id=message_list.thread_id, resource_id=message_list.resource_id)
            scratch.add(list(messages), "input")

            async def no_signals(signal: dict[str, Any]) -> None:
                return None

            for entry in entries:
                args = self._input_args(entry, scratch, no_signals)
                apply_messages(entry.pid, entry.hook, await call_hook(entry, args), scratch)
            return scratch.get.all.db()

        return guard

    def _input_args(self, entry: HookEntry, message_list: MessageList, send_signal: Any) -> ProcessInputArgs:
        return ProcessInputArgs(
            **self._common(entry),
            messages=message_list.get.all.db(),
            system_messages=message_list.get_system_messages(),
            message_list=message_list,
            send_signal=send_signal,
        )

    def parallel_input(self, message_list: MessageList) -> asyncio.Future[Any] | None:
        """The `run_in_parallel` input guards, started now to run alongside the first model
        call; None when there are none."""
        entries = [e for e in self._input if runs_in_parallel(e.processor)]
        if not entries:
            return None
        send_signal = self.signal_sender(message_list)
        return asyncio.ensure_future(
            all_or_first_failure(
                [call_hook(e, self._input_args(e, message_list, send_signal)) for e in entries]
            )
        )

    async def run_input_step(
        self,
        message_list: MessageList,
        config: StepConfig,
        *,
        step_number: int,
        steps: list[Any],
        resolve: Callable[[str, Any], Any],
    ) -> StepConfig:
        """Chain `process_input_step` (then `prepare_step`) results into `config`.
        `resolve(field, value)` normalises a returned model, tools or tool choice."""
        send_signal = self.signal_sender(message_list)
        for entry in self._input_step:
            args = ProcessInputStepArgs(
                **self._common(entry),
                messages=message_list.get.all.db(),
                system_messages=message_list.get_system_messages(),
                message_list=message_list,
                send_signal=send_signal,
                step_number=step_number,
                steps=steps,
                model=config.model,
                tools=dict(config.tools),
                tool_choice=config.tool_choice,
                active_tools=config.active_tools,
                provider_options=config.provider_options,
                model_settings=config.model_settings,
                structured_output=config.structured_output,
            )
            result = await call_hook(entry, args)
            if not isinstance(result, (ProcessInputStepResult, dict)):
                apply_messages(entry.pid, entry.hook, result, message_list)
                continue
            fields = returned_fields(entry.pid, entry.hook, result, ProcessInputStepResult) or {}
            fields = {name: value for name, value in fields.items() if value is not None}
            apply_messages(entry.pid, entry.hook, fields.get("message_list"), message_list)
            apply_message_fields(fields, message_list)
            for name in STEP_FIELDS:
                if name in fields:
                    value = fields[name]
                    if name == "model_settings":
                        value = normalize_model_settings(value, where=f"model_settings from {entry.pid!r}")
                    setattr(config, name, resolve(name, value))
        return config

    # ------------------------------------------------------------------ the provider call

    async def run_llm_request(
        self,
        prompt: list[dict[str, Any]],
        *,
        model: Any,
        tools: list[dict[str, Any]],
        tool_choice: dict[str, Any] | None = None,
        step_number: int,
        steps: list[Any],
        message_list: MessageList,
        max_output_tokens: int | None = None,
    ) -> tuple[list[dict[str, Any]], list[Any] | None]:
        """The prompt to send, and a replacement response if a processor answered the call."""
        for entry in self._llm_request:
            args = ProcessLLMRequestArgs(
                **self._common(entry),
                prompt=prompt,
                model=model,
                step_number=step_number,
                steps=steps,
                message_list=message_list,
                tools=tools,
                tool_choice=tool_choice,
                max_output_tokens=max_output_tokens,
                guard_input=self.input_guard(entry, message_list),
            )
            fields = hook_result_fields(
                entry,
                await call_hook(entry, args),
                ProcessLLMRequestResult,
                "{'prompt': ...}, ProcessLLMRequestResult or None",
            )
            if fields is None:
                continue
            if fields.get("prompt") is not None:
                prompt = fields["prompt"]
            if fields.get("response") is not None:
                return prompt, list(fields["response"])
        return prompt, None

    async def run_llm_response(
        self,
        chunks: list[Chunk],
        *,
        model: Any,
        step_number: int,
        steps: list[Any],
        from_cache: bool,
        message_list: MessageList,
        accepted: bool = True,
        warnings: list[Any] | None = None,
    ) -> None:
        """After the output-step guardrails: `accepted` is False when one rejected the step."""
        for entry in self._llm_response:
            args = ProcessLLMResponseArgs(
                **self._common(entry),
                chunks=chunks,
                model=model,
                step_number=step_number,
                steps=steps,
                from_cache=from_cache,
                accepted=accepted,
                message_list=message_list,
                warnings=warnings if warnings is not None else [],
            )
            await call_hook(entry, args)

    def output_token_cap(self, *, request: bool = False) -> int | None:
        """The smallest `max_output_tokens` an output processor asks the next model call for
        (see `TokenLimiter`), so the model stops generating what would be discarded. With
        `request`, asked right after `process_llm_request`, of the processors that implement
        it: the cost guard caps the call at the output its reservation covers."""
        cap: int | None = None
        for ask, state in self._request_caps if request else self._token_caps:
            wanted = ask(state)
            if isinstance(wanted, int) and wanted > 0 and (cap is None or wanted < cap):
                cap = wanted
        return cap

    @property
    def handles_llm_response(self) -> bool:
        return bool(self._llm_response)

    async def run_api_error(
        self,
        error: BaseException,
        *,
        message_list: MessageList,
        step_number: int,
        steps: list[Any],
        model: Any,
    ) -> bool:
        """Whether a processor asked to retry the failed call. The first one that asks wins; a
        processor that fails here is logged and the next one asked (the call already failed)."""
        for entry in (*self._api_error, *self._entries(self.auto_error_processors, "process_api_error")):
            args = ProcessAPIErrorArgs(
                **self._common(entry),
                error=error,
                messages=message_list.get.all.db(),
                message_list=message_list,
                step_number=step_number,
                steps=steps,
                model=model,
                abort_signal=self.abort_signal,
            )
            try:
                result = await call_hook(entry, args)
            except ProcessorError as exc:
                log.warning("%s; trying the next error processor", exc)
                continue
            if not isinstance(result, (ProcessAPIErrorResult, dict)):
                continue  # anything else asks for nothing
            fields = returned_fields(entry.pid, entry.hook, result, ProcessAPIErrorResult)
            if fields and fields.get("retry"):
                return True
        return False

    # ------------------------------------------------------------------ output

    def stream_pipeline(self, message_list: MessageList) -> StreamPipeline | None:
        """The per-chunk function, or None when no processor looks at chunks (or they run
        elsewhere: `streams_here`)."""
        if not self._output_stream or not self.streams_here:
            return None
        entries = [
            StreamEntry(entry, ProcessOutputStreamArgs(**self._common(entry), message_list=message_list))
            for entry in self._output_stream
        ]
        self._output = OutputStream(entries, self.run_id, self.stream_counts)
        link_judge_panels([(e.entry.processor, e.args) for e in entries])
        return self._output.pipeline()

    def next_stream_deadline(self) -> float | None:
        """The earliest `stream_deadline` of the stream processors (see `BatchPartsProcessor`)."""
        return None if self._output is None else self._output.next_deadline()

    @property
    def uses_stream_deadlines(self) -> bool:
        return self._output is not None and self._output.uses_deadlines

    async def run_stream_deadlines(self) -> list[Chunk]:
        """Let processors whose deadline passed flush; their chunks go on downstream."""
        return [] if self._output is None else await self._output.run_deadlines()

    @property
    def flushes_stream(self) -> bool:
        return self._output is not None and self._output.flushes

    async def flush_stream(self) -> list[Chunk]:
        """At the end of a model step, what the stream processors held back (see `OutputStream.flush`)."""
        return [] if self._output is None else await self._output.flush()

    async def run_output_step(
        self,
        message_list: MessageList,
        *,
        step_number: int,
        finish_reason: str | None,
        tool_calls: list[Chunk],
        text: str,
        usage: Any,
        steps: list[Any],
    ) -> None:
        for entry in self._output_step:
            args = ProcessOutputStepArgs(
                **self._common(entry),
                messages=message_list.get.all.db(),
                message_list=message_list,
                step_number=step_number,
                finish_reason=finish_reason,
                tool_calls=tool_calls,
                text=text,
                usage=usage,
                system_messages=message_list.get_system_messages(),
                steps=steps,
            )
            apply_messages(
                entry.pid, entry.hook, await call_hook(entry, args), message_list, empty_is_unchanged=True
            )

    async def run_output_result(self, message_list: MessageList, result: OutputResult) -> None:
        for entry in self._output_result:
            args = ProcessOutputResultArgs(
                **self._common(entry),
                messages=message_list.get.all.db(),
                message_list=message_list,
                result=result,
            )
            apply_messages(
                entry.pid, entry.hook, await call_hook(entry, args), message_list, empty_is_unchanged=True
            )


def _token_cap(processor: Any) -> TokenCap | None:
    cap: TokenCap | None = optional_hook(processor, "max_output_tokens_for")
    return cap
