"""`ProcessorRunner`: calls one request's processors at each stage of the run.

The runner is built once per request. It resolves which processors implement which hook,
gives each processor id one `state` dict, binds `abort`, reconciles returned messages with the
`MessageList`, and turns exceptions into the run's outcome: a `TripWire` (after `on_violation`)
or a `ProcessorError` naming the processor. `stream_pipeline()` is the per-chunk hot path (the only
one: a traced run counts inside it, see `stream_counts`); it reuses one args object per
processor and does no work for processors that are not there.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from contextvars import Token
from dataclasses import dataclass
from html import escape
from typing import Any, NoReturn

from sluicegate.errors import AccessDeniedError, ProcessorError, TripWire
from sluicegate.guardrails.judge_panels import link_judge_panels
from sluicegate.messages import Message, MessageList
from sluicegate.messages.message import MessageContent
from sluicegate.messages.part import Part
from sluicegate.models.settings import normalize_model_settings
from sluicegate.processors.args import (
    STEP_FIELDS,
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
    ProcessToolCallArgs,
    ProcessToolCallResult,
    ProcessToolResultArgs,
    ProcessToolResultResult,
    step_result_fields,
)
from sluicegate.processors.base import (
    collecting_reports,
    implements,
    make_abort,
    notify_violation,
    processor_id,
    report_violation,
    stop_collecting,
)
from sluicegate.processors.hook_timeout import (
    DEFAULT_PROCESSOR_TIMEOUT,
    StreamWatchdog,
    await_bounded,
    call_watched,
    processor_timeout,
)
from sluicegate.processors.input_guards import all_or_first_failure, checks_only, groups, runs_in_parallel
from sluicegate.processors.offload import offload_sync_hook
from sluicegate.processors.stream_counts import EXACT_CHUNKS, SAMPLE_MASK, PipelineCounts, TextTrack
from sluicegate.processors.validation import check_step_result_keys
from sluicegate.request_context import RequestContext
from sluicegate.stream.chunk import Chunk
from sluicegate.tracing.findings import CURRENT_SINK, RedactionSink, collect, release

log = logging.getLogger("sluicegate.processors")


StreamResultType = Chunk | list[Chunk] | None
StreamPipeline = Callable[[Chunk], Awaitable[StreamResultType]]


class Writer:
    """`writer.custom(...)` for processors and tools: emits a `data-*` chunk."""

    __slots__ = ("_emit", "_run_id")

    def __init__(self, run_id: str, emit: Callable[[Chunk], Any]) -> None:
        self._run_id = run_id
        self._emit = emit

    async def custom(self, chunk: dict[str, Any]) -> None:
        kind = chunk.get("type") if isinstance(chunk, dict) else None
        if not isinstance(kind, str) or not kind.startswith("data-"):
            raise ValueError(f"custom chunks must have a type starting with 'data-', got {kind!r}")
        out = Chunk(
            kind,
            chunk.get("runId") or self._run_id,
            data=chunk.get("data"),
            from_=chunk.get("from", "AGENT"),
        )
        if chunk.get("transient"):
            out.transient = True  # shown live, never stored
        result = self._emit(out)
        if inspect.isawaitable(result):
            await result


@dataclass
class StepConfig:
    """What one step runs with; `process_input_step` results chain through it."""

    model: Any
    tools: dict[str, Any]
    tool_choice: Any = None
    active_tools: list[str] | None = None
    provider_options: dict[str, Any] | None = None
    model_settings: dict[str, Any] | None = None
    structured_output: Any = None


class _Entry:
    """One processor's hook, resolved once per request."""

    __slots__ = ("abort", "fn", "hook", "index", "is_async", "pid", "processor", "state", "timeout")

    def __init__(
        self,
        processor: Any,
        hook: str,
        pid: str,
        state: dict[str, Any],
        abort: Any,
        timeout: float | None,
        index: int | None = None,
    ) -> None:
        self.processor = processor
        self.index = index
        self.hook = hook
        self.pid = pid
        self.fn = getattr(processor, hook)
        self.is_async = inspect.iscoroutinefunction(self.fn)
        self.state = state
        self.abort = abort
        self.timeout = timeout


class _StreamEntry:
    __slots__ = ("args", "data_parts", "entry", "parts_append", "watchdog")

    def __init__(self, entry: _Entry, args: ProcessOutputStreamArgs) -> None:
        self.entry = entry
        self.args = args
        self.data_parts = bool(getattr(entry.processor, "process_data_parts", False))
        self.parts_append = args.stream_parts.append
        self.watchdog = (
            StreamWatchdog(entry.timeout) if entry.is_async and entry.timeout is not None else None
        )


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


def _wrong_return(entry: _Entry, result: Any, expected: str) -> ProcessorError:
    return ProcessorError(
        f"processor {entry.pid!r} returned {type(result).__name__} from {entry.hook}; expected {expected}",
        processor_id=entry.pid,
        hook=entry.hook,
    )


def _failed_in(entry: _Entry, hook: str, exc: Exception) -> ProcessorError:
    """A stream processor's failure, per chunk, at a flush or at a deadline, named alike."""
    return ProcessorError(
        f"processor {entry.pid!r} failed in {hook}: {exc}", processor_id=entry.pid, hook=hook
    )


class PrepareStep:
    """`prepare_step=` wrapped as an input-step processor (it runs after the input processors)."""

    id = "prepare-step"
    name = "Prepare Step"

    def __init__(self, fn: Callable[[ProcessInputStepArgs], Any]) -> None:
        self._fn = fn

    async def process_input_step(self, args: ProcessInputStepArgs) -> Any:
        result = self._fn(args)
        return await result if inspect.isawaitable(result) else result


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
        self._stream_entries: list[_StreamEntry] = []
        self.request_context = request_context
        self.processor_timeout = processor_timeout
        self.run_id = run_id
        self.retry_count = 0
        self.abort_signal: Any = None
        self.tracing_context = tracing_context
        self.stream_counts: Callable[[list[_StreamEntry]], PipelineCounts] | None = None
        """Set by `sluicegate.tracing` on a traced run: the counters the per-chunk loop keeps
        for a list of stream entries (the same object each time for the same entries)."""
        self.writer = Writer(run_id, emit)
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
        self.has_error_processors = bool(self._entries(error_processors, "process_api_error"))
        self.auto_error_processors: Sequence[Any] = ()
        """Run after every other `process_api_error`, built only when a call fails (see
        `sluicegate.agent.auto_processors`); they do not count for `has_error_processors`."""
        self.has_data_part_processors = any(
            getattr(e.processor, "process_data_parts", False) for e in self._output_stream
        )

    # ------------------------------------------------------------------ plumbing

    @property
    def retry_count(self) -> int:
        return self._retry_count

    @retry_count.setter
    def retry_count(self, value: int) -> None:
        # The per-chunk args objects are built once; keep their retry_count current.
        self._retry_count = value
        for stream_entry in self._stream_entries:
            stream_entry.args.retry_count = value

    def state_for(self, pid: str) -> dict[str, Any]:
        state = self._states.get(pid)
        if state is None:
            state = self._states[pid] = {}
        return state

    def _entries(self, processors: Sequence[Any], hook: str, *, union: bool = False) -> list[_Entry]:
        entries = []
        for position, processor in enumerate(processors):
            if implements(processor, hook):
                pid = processor_id(processor)
                abort = self._aborts.get(pid)
                if abort is None:
                    abort = self._aborts[pid] = make_abort(pid)
                timeout = processor_timeout(processor, self.processor_timeout)
                index = self._indexes.get(id(processor)) if union else position
                entries.append(_Entry(processor, hook, pid, self.state_for(pid), abort, timeout, index))
        return entries

    def violation(self, processor: Any, message: str, detail: Any) -> None:
        """Tell a processor's `on_violation` (if any) about a violation; never raises."""
        notify_violation(processor, message, detail)

    async def _call(self, entry: _Entry, args: Any) -> Any:
        reports, token = collecting_reports()
        try:
            if entry.is_async:
                result = entry.fn(args)
            else:
                result = await offload_sync_hook(entry.fn, args)
            if inspect.isawaitable(result):
                result = await await_bounded(result, entry.timeout, entry.pid, entry.hook)
            return result
        except TripWire as tripwire:
            await self._tripped(entry, tripwire)
            raise
        except (ProcessorError, AccessDeniedError):
            raise
        except Exception as exc:
            raise ProcessorError(
                f"processor {entry.pid!r} failed in {entry.hook}: {exc}",
                processor_id=entry.pid,
                hook=entry.hook,
            ) from exc
        finally:
            stop_collecting(token)
            if reports.pending:
                await reports.drain()
            reports.open = False

    async def _tripped(self, entry: _Entry, tripwire: TripWire) -> None:
        if tripwire.processor_id is None:
            tripwire.processor_id = entry.pid
        await report_violation(entry.processor, tripwire.reason, tripwire.metadata)

    def _common(self, entry: _Entry) -> dict[str, Any]:
        return {
            "abort": entry.abort,
            "processor_index": entry.index,
            "request_context": self.request_context,
            "retry_count": self.retry_count,
            "state": entry.state,
            "tracing_context": self.tracing_context,
            "writer": self.writer,
        }

    def _apply_messages(
        self, entry: _Entry, result: Any, message_list: MessageList, *, empty_is_unchanged: bool = False
    ) -> None:
        """Apply a hook's message result: None, the same MessageList, a list, or a dict."""
        if result is None or result is message_list:
            return
        if isinstance(result, MessageList):
            raise ProcessorError(
                f"processor {entry.pid!r} returned a different MessageList from {entry.hook}; mutate the one "
                "passed in (args.message_list) and return it, or return a list of messages",
                processor_id=entry.pid,
                hook=entry.hook,
            )
        if isinstance(result, list):
            if result or not empty_is_unchanged:
                message_list.reconcile(result)
            return
        if isinstance(result, dict):
            if "messages" in result and result["messages"] is not None:
                message_list.reconcile(result["messages"])
            system_messages = result.get("system_messages", result.get("systemMessages"))
            if system_messages is not None:
                message_list.replace_system_messages(system_messages)
            return
        raise _wrong_return(entry, result, "a list of messages, the MessageList, a dict or None")

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
                    [self._call(e, self._input_args(e, message_list, send_signal)) for e in group]
                )
                for entry, result in zip(group, results, strict=True):
                    self._apply_messages(entry, result, message_list)
                continue
            entry = group[0]
            args = self._input_args(entry, message_list, send_signal)
            self._apply_messages(entry, await self._call(entry, args), message_list)

    def _input_args(self, entry: _Entry, message_list: MessageList, send_signal: Any) -> ProcessInputArgs:
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
                [self._call(e, self._input_args(e, message_list, send_signal)) for e in entries]
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
            result = await self._call(entry, args)
            if isinstance(result, dict):
                check_step_result_keys(result, entry.pid, entry.hook)
            if isinstance(result, (ProcessInputStepResult, dict)):
                fields = step_result_fields(result)
                self._apply_messages(entry, fields.get("message_list"), message_list)
                message_result = {k: fields[k] for k in ("messages", "system_messages") if k in fields}
                self._apply_messages(entry, message_result or None, message_list)
                for name in STEP_FIELDS:
                    if name in fields:
                        value = fields[name]
                        if name == "model_settings":
                            where = f"model_settings from {entry.pid!r}"
                            value = normalize_model_settings(value, where=where)
                        setattr(config, name, resolve(name, value))
            else:
                self._apply_messages(entry, result, message_list)
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
            )
            result = await self._call(entry, args)
            if result is None:
                continue
            if isinstance(result, ProcessLLMRequestResult):
                new_prompt, response = result.prompt, result.response
            elif isinstance(result, dict):
                new_prompt, response = result.get("prompt"), result.get("response")
            else:
                raise _wrong_return(entry, result, "{'prompt': ...}, ProcessLLMRequestResult or None")
            if new_prompt is not None:
                prompt = new_prompt
            if response is not None:
                return prompt, list(response)
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
            await self._call(entry, args)

    def output_token_cap(self, *, request: bool = False) -> int | None:
        """The smallest `max_output_tokens` an output processor asks the next model call for
        (see `TokenLimiter`), so the model stops generating what would be discarded. With
        `request`, asked right after `process_llm_request`, of the processors that implement
        it: the cost guard caps the call at the output its reservation covers."""
        cap: int | None = None
        for entry in self._llm_request if request else self._output_stream:
            ask = getattr(entry.processor, "max_output_tokens_for", None)
            wanted = ask(entry.state) if ask is not None else None
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
        """Whether a processor asked to retry the failed call. The first one that asks wins."""
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
                result = await self._call(entry, args)
            except ProcessorError as exc:
                log.warning("%s; trying the next error processor", exc)
                continue
            if isinstance(result, ProcessAPIErrorResult):
                retry = result.retry
            elif isinstance(result, dict):
                retry = bool(result.get("retry"))
            else:
                retry = False
            if retry:
                return True
        return False

    # ------------------------------------------------------------------ output

    def stream_pipeline(self, message_list: MessageList) -> StreamPipeline | None:
        """The per-chunk function, or None when no processor looks at chunks."""
        if not self._output_stream:
            return None
        entries = [
            _StreamEntry(entry, ProcessOutputStreamArgs(**self._common(entry), message_list=message_list))
            for entry in self._output_stream
        ]
        self._stream_entries = entries
        link_judge_panels([(e.entry.processor, e.args) for e in entries])
        return self._make_pipeline(entries)

    def _make_pipeline(self, entries: list[_StreamEntry]) -> StreamPipeline:
        counts = None if self.stream_counts is None else self.stream_counts(entries)
        if counts is not None:
            return self._traced_pipeline(entries, counts)
        tripped = self._tripped
        fan_out = self._fan_out
        coerce = self._coerce_stream_result

        async def process(chunk: Chunk) -> StreamResultType:
            is_data = chunk.type.startswith("data-")
            for index, stream_entry in enumerate(entries):
                if is_data and not stream_entry.data_parts:
                    continue
                entry = stream_entry.entry
                args = stream_entry.args
                args.part = chunk
                stream_entry.parts_append(chunk)
                watchdog = stream_entry.watchdog
                try:
                    if watchdog is None:
                        result = entry.fn(args)
                        if entry.is_async:
                            result = await result
                    else:  # an async hook under processor_timeout: see StreamWatchdog
                        result = await call_watched(watchdog, entry, args)
                except TripWire as tripwire:
                    await tripped(entry, tripwire)
                    raise
                except ProcessorError:
                    raise
                except Exception as exc:
                    raise _failed_in(entry, entry.hook, exc) from exc
                if result is not chunk:
                    if result is None:
                        return None
                    if result.__class__ is not Chunk:
                        result = await coerce(entry, result)
                        if result is None:
                            return None
                        if isinstance(result, list):
                            return await fan_out(result, entries[index + 1 :])
                    chunk = result
            return chunk

        return process

    def _traced_pipeline(self, entries: list[_StreamEntry], counts: PipelineCounts) -> StreamPipeline:
        """The per-chunk function of a traced run: the untraced one plus the counters of
        `stream_counts` (chunks, sampled hook time, drops and replacements, what each processor
        changed once it changes anything, and the redactions of processors that report them)."""
        tripped = self._tripped
        fan_out = self._fan_out
        coerce = self._coerce_stream_result
        clock = time.perf_counter_ns
        tracks = counts.tracks
        counted = [bool(getattr(e.entry.processor, "counts_redactions", False)) for e in entries]
        steps = [
            (e, t, RedactionSink(t.redactions) if c else None)
            for e, t, c in zip(entries, tracks, counted, strict=True)
        ]
        current = CURRENT_SINK

        async def process(chunk: Chunk) -> StreamResultType:
            is_data = chunk.type.startswith("data-")
            calls = counts.calls + 1
            counts.calls = calls
            if is_data:
                counts.data_calls += 1
            timed = not (calls & counts.mask)
            if timed:
                if calls >= EXACT_CHUNKS:
                    counts.mask = SAMPLE_MASK
                start = clock()
            for index, (stream_entry, track, sink) in enumerate(steps):
                if is_data and not stream_entry.data_parts:
                    continue
                entry = stream_entry.entry
                args = stream_entry.args
                args.part = chunk
                stream_entry.parts_append(chunk)
                watchdog = stream_entry.watchdog
                if sink is not None:
                    token = current.set(sink)
                try:
                    if watchdog is None:
                        result = entry.fn(args)
                        if entry.is_async:
                            result = await result
                    else:  # an async hook under processor_timeout: see StreamWatchdog
                        result = await call_watched(watchdog, entry, args)
                except TripWire as tripwire:
                    counts.failed(index, is_data, tripwire)
                    await tripped(entry, tripwire)
                    raise
                except ProcessorError as exc:
                    counts.failed(index, is_data, exc)
                    raise
                except Exception as exc:
                    counts.failed(index, is_data, exc)
                    raise _failed_in(entry, entry.hook, exc) from exc
                finally:
                    if sink is not None:
                        current.reset(token)
                if timed:
                    now = clock()
                    counts.timed(index, now - start)
                    start = now
                if result is chunk:
                    if track.recording:
                        track.passed(chunk)
                    continue
                track.recording = True
                track.take(chunk)
                if result is None:
                    counts.dropped(index, is_data)
                    track.put((), chunk)
                    return None
                if result.__class__ is not Chunk:
                    result = await coerce(entry, result)
                    if result is None:
                        counts.dropped(index, is_data)
                        track.put((), chunk)
                        return None
                    if isinstance(result, list):
                        counts.fanned_out(index, is_data)
                        track.put(result, chunk)
                        return await fan_out(result, entries[index + 1 :])
                counts.replaced(index)
                track.put((result,), chunk)
                chunk = result
            return chunk

        return process

    async def _coerce_stream_result(self, entry: _Entry, result: Any) -> Chunk | list[Chunk] | None:
        if inspect.isawaitable(result):
            result = await result
        if result is None or isinstance(result, (Chunk, list)):
            return result
        if isinstance(result, dict) and "type" in result:
            return Chunk.from_dict({"runId": self.run_id, **result})
        raise _wrong_return(entry, result, "a chunk, a list of chunks or None")

    async def _fan_out(self, chunks: list[Any], rest: list[_StreamEntry]) -> list[Chunk]:
        out: list[Chunk] = []
        downstream = self._make_pipeline(rest) if rest else None
        for chunk in chunks:
            if not isinstance(chunk, Chunk):
                chunk = Chunk.from_dict({"runId": self.run_id, **chunk})
            if downstream is None:
                out.append(chunk)
                continue
            result = await downstream(chunk)
            if isinstance(result, list):
                out.extend(result)
            elif result is not None:
                out.append(result)
        return out

    def next_stream_deadline(self) -> float | None:
        """The earliest `stream_deadline` of the stream processors (see `BatchPartsProcessor`)."""
        earliest: float | None = None
        for stream_entry in self._stream_entries:
            deadline_fn = getattr(stream_entry.entry.processor, "stream_deadline", None)
            if deadline_fn is None:
                continue
            deadline = deadline_fn(stream_entry.entry.state)
            if deadline is not None and (earliest is None or deadline < earliest):
                earliest = deadline
        return earliest

    @property
    def uses_stream_deadlines(self) -> bool:
        return any(
            getattr(e.entry.processor, "stream_deadline", None) is not None for e in self._stream_entries
        )

    async def run_stream_deadlines(self) -> list[Chunk]:
        """Let processors whose deadline passed flush; their chunks go on downstream."""
        out: list[Chunk] = []
        now = time.monotonic()
        for index, stream_entry in enumerate(self._stream_entries):
            processor = stream_entry.entry.processor
            deadline_fn = getattr(processor, "stream_deadline", None)
            if deadline_fn is None:
                continue
            deadline = deadline_fn(stream_entry.entry.state)
            if deadline is None or deadline > now:
                continue
            stream_entry.args.part = None  # type: ignore[assignment]
            track = self._released_track(index)
            flushed = None
            try:
                flushed = await processor.on_stream_deadline(stream_entry.args)
            except TripWire as tripwire:
                await self._tripped(stream_entry.entry, tripwire)
                raise
            except (ProcessorError, AccessDeniedError):
                raise
            except Exception as exc:
                raise _failed_in(stream_entry.entry, "on_stream_deadline", exc) from exc
            finally:
                self._end_release(track, flushed)
            if flushed:
                out.extend(await self._fan_out(list(flushed), self._stream_entries[index + 1 :]))
        return out

    def _released_track(self, index: int) -> tuple[TextTrack, Token[RedactionSink | None]] | None:
        """On a traced run, the track of the processor about to release held chunks (at a
        deadline or the step's end), with its redactions being counted."""
        if self.stream_counts is None:
            return None
        track = self.stream_counts(self._stream_entries).tracks[index]
        return track, collect(RedactionSink(track.redactions))

    def _end_release(self, held: tuple[TextTrack, Token[RedactionSink | None]] | None, flushed: Any) -> None:
        if held is None:
            return
        track, token = held
        release(token)
        if flushed:
            track.recording = True
            track.put(flushed)

    @property
    def flushes_stream(self) -> bool:
        return any(hasattr(e.entry.processor, "flush_output_stream") for e in self._stream_entries)

    async def flush_stream(self) -> list[Chunk]:
        """At the end of a model step, processors that hold text back (see the hold-back
        contract in docs/processors.md) release it; each one's output goes on downstream
        before the next one flushes."""
        out: list[Chunk] = []
        for index, stream_entry in enumerate(self._stream_entries):
            flush = getattr(stream_entry.entry.processor, "flush_output_stream", None)
            if flush is None:
                continue
            stream_entry.args.part = None  # type: ignore[assignment]
            track = self._released_track(index)
            flushed = None
            try:
                result = flush(stream_entry.args)
                flushed = await result if inspect.isawaitable(result) else result
            except TripWire as tripwire:
                await self._tripped(stream_entry.entry, tripwire)
                raise
            except (ProcessorError, AccessDeniedError):
                raise
            except Exception as exc:
                raise _failed_in(stream_entry.entry, "flush_output_stream", exc) from exc
            finally:
                self._end_release(track, flushed)
            if flushed:
                out.extend(await self._fan_out(list(flushed), self._stream_entries[index + 1 :]))
        return out

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
            self._apply_messages(entry, await self._call(entry, args), message_list, empty_is_unchanged=True)

    async def run_output_result(self, message_list: MessageList, result: OutputResult) -> None:
        for entry in self._output_result:
            args = ProcessOutputResultArgs(
                **self._common(entry),
                messages=message_list.get.all.db(),
                message_list=message_list,
                result=result,
            )
            self._apply_messages(entry, await self._call(entry, args), message_list, empty_is_unchanged=True)

    @property
    def handles_tool_result(self) -> bool:
        return bool(self._tool_result)

    async def run_tool_result(
        self,
        result: Any,
        *,
        tool_name: str,
        tool_call_id: str,
        tool_args: Any,
        provider_executed: bool,
        step_number: int,
        steps: list[Any],
        message_list: MessageList,
    ) -> Any:
        """A successful tool result through the `process_tool_result` chain; the result to use."""
        for entry in self._tool_result:
            args = ProcessToolResultArgs(
                **self._common(entry),
                tool_name=tool_name,
                tool_call_id=tool_call_id,
                tool_args=tool_args,
                result=result,
                provider_executed=provider_executed,
                step_number=step_number,
                messages=message_list.get.all.db(),
                message_list=message_list,
                system_messages=message_list.get_system_messages(),
                steps=steps,
            )
            returned = await self._call(entry, args)
            if returned is None:
                continue
            if isinstance(returned, ProcessToolResultResult):
                result = returned.result
            elif isinstance(returned, dict) and set(returned) <= {"result"}:
                result = returned.get("result", result)
            else:
                raise _wrong_return(entry, returned, "{'result': ...}, ProcessToolResultResult or None")
        return result

    @property
    def handles_tool_call(self) -> bool:
        return bool(self._tool_call)

    async def run_tool_call(
        self,
        tool_args: Any,
        *,
        tool_name: str,
        tool_call_id: str,
        step_number: int,
        steps: list[Any],
        message_list: MessageList,
    ) -> Any:
        """A tool call's arguments through the `process_tool_call` chain; what the tool receives."""
        for entry in self._tool_call:
            args = ProcessToolCallArgs(
                **self._common(entry),
                tool_name=tool_name,
                tool_call_id=tool_call_id,
                args=tool_args,
                step_number=step_number,
                message_list=message_list,
                steps=steps,
            )
            returned = await self._call(entry, args)
            if returned is None:
                continue
            if isinstance(returned, ProcessToolCallResult):
                tool_args = returned.args
            elif isinstance(returned, dict) and set(returned) == {"args"}:
                tool_args = returned["args"]
            else:
                raise _wrong_return(entry, returned, "{'args': ...}, ProcessToolCallResult or None")
        return tool_args


def signal_message(signal: dict[str, Any]) -> Message:
    """A reactive signal as the `<system-reminder …>` user message the model sees."""
    tag = signal.get("tagName") or signal.get("tag_name") or "system-reminder"
    contents = signal.get("contents", "")
    if not isinstance(contents, str):
        contents = str(contents)
    attributes = signal.get("attributes") or {}
    rendered = "".join(f' {name}="{escape(str(value), quote=True)}"' for name, value in attributes.items())
    text = f"<{tag}{rendered}>{contents}</{tag}>"
    metadata = {
        "signal": {
            "type": signal.get("type", "reactive"),
            "tagName": tag,
            "attributes": attributes,
            "contents": contents,
        }
    }
    return Message(
        role="user",
        content=MessageContent(parts=[Part(type="text", text=text)], content=text, metadata=metadata),
    )
