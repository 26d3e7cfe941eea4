"""The model call of a durable run, as the workflow makes it: an activity (`ActivityModel`,
one per model of the agent's fallback chain, `DurableChain` around them), the workflow's own
chunks on their way to the run log with the next activity (`Outbox`), and the activities'
timeouts and retries (`Settings`). The loop that calls the model is the agent's own; see
`workflow`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from temporalio import workflow
from temporalio.common import RawValue, RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

from sluicegate.agent.suspension import json_context
from sluicegate.durable.temporal import names
from sluicegate.durable.temporal.failures import PayloadTooLargeError, from_activity_error
from sluicegate.durable.temporal.packed_chunks import packed_texts
from sluicegate.durable.temporal.payloads import LOCAL_LIMIT, SharedRecords, encoded, json_state, json_text
from sluicegate.durable.temporal.trace_context import inject
from sluicegate.models.base import CallOptions, StreamResult
from sluicegate.models.fallback import FallbackEntry, ModelChain, parse_model_option
from sluicegate.models.registry import resolve_model
from sluicegate.processors.base import implements, processor_id
from sluicegate.stream.chunk import Chunk

if TYPE_CHECKING:
    from sluicegate.agent import Agent
    from sluicegate.agent.run import AgentRun


OPEN_WITH_FIRST_WRITE = "sluicegate.open-with-first-write"
"""The patch (`workflow.patched`) of runs whose log the first write opens (`Outbox.open`)."""

CARRY_BUDGET = 256 * 1024
"""A model call larger than this (in bytes, encoded) leaves the chunks it would carry to a
publish of their own (`LARGE_CARRY_ALONE`)."""

ENCODED_CHUNKS = "sluicegate.encoded-chunks"
"""The patch of runs whose chunks travel to the log as JSON text, one string each, which the
in-process log keeps as it came (`MemoryRunWriter.append_encoded`) and Redis stores as it is;
before it they travelled as dicts, decoded into chunk objects by the activity."""

LARGE_CARRY_ALONE = "sluicegate.large-carry-alone"
"""The patch of runs whose model call, over `CARRY_BUDGET` with the chunks it carries, sends
them to the log by themselves first (`ActivityModel.do_stream`); before it they rode along, and
a call over Temporal's payload limit failed the run."""


class Settings:
    """The activities' timeouts and retries, from the run's start input (so every worker that
    replays the run uses the same)."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.heartbeat = timedelta(seconds=float(raw.get("heartbeatTimeout", 10)))
        self.model_timeout = timedelta(seconds=float(raw.get("modelTimeout", 300)))
        self.tool_timeout = timedelta(seconds=float(raw.get("toolTimeout", 300)))
        self.model_retry = RetryPolicy(
            initial_interval=timedelta(seconds=float(raw.get("retryInterval", 1))),
            maximum_attempts=int(raw.get("modelAttempts", 4)),
        )
        self.storage_timeout = timedelta(seconds=float(raw.get("storageTimeout", 30)))
        self.storage_retry = RetryPolicy(
            initial_interval=timedelta(seconds=float(raw.get("retryInterval", 1))),
            maximum_attempts=int(raw.get("storageAttempts", 5)),
        )
        self.tool_retry = RetryPolicy(
            initial_interval=timedelta(seconds=float(raw.get("retryInterval", 1))),
            maximum_attempts=int(raw.get("toolAttempts", 3)),
        )


class Outbox:
    """The workflow's chunks on their way to the run log; `offset` is the next chunk's offset.

    Pending chunks travel in the input of the next model or tool activity, which writes them
    before anything of its own (`carry`), so the log keeps the stream's order and they cost no
    round trip of their own; the last ones go with the run's closing `publish`. Every write
    names its offsets and a write at an offset already written is skipped, so a retried
    activity never doubles them."""

    def __init__(self, agent_id: str, run_id: str) -> None:
        self.agent_id = agent_id
        self.run_id = run_id
        self.offset = 0
        self.pending: list[Chunk[Any]] = []
        self.streamed: dict[int, Chunk[Any]] = {}
        """Chunks an activity already published, by identity, not written twice (the chunk is
        held, so its id cannot name another chunk while it is listed)."""
        self.carrying = 0
        """Activities in flight with chunks to write."""
        self.opening: list[Chunk[Any]] = []
        """The step's opening chunks, for the next model activity to publish once its stream
        opened, before its own (`DurableChain.announce_on_open`); taken by that activity."""
        self.unopened: dict[str, Any] | None = None
        """The run's owner while its log is still to be opened by the next write (`open`)."""
        self.lock = asyncio.Lock()
        self.packs = False
        """Whether carried chunks travel packed (`sent`; set by `open`, from the run's format)."""
        self.encode: Callable[[Chunk[Any]], dict[str, Any] | str] = Chunk.to_dict
        """A chunk as it travels: its JSON text (`ENCODED_CHUNKS`, set by `open`), or its dict."""

    async def open(self, run: AgentRun, run_format: object = None) -> None:
        """A new run's log is opened by the first activity that writes to it (the first model
        call's carry, or the closing `publish`), not by an `open-run` of its own: a local
        activity, and its round trip through the worker, less per run. A new run's chunks start
        at offset 0, and a replay writes the same chunks at the same offsets. A run recorded
        before (its history has the `open-run`) opens as it did. `run_format` is the run's
        input's (`names.RUN_FORMAT`); without it the patches decide, as they did. From
        `names.PACKED_FORMAT` on, its carried chunks travel packed (`sent`)."""
        level = run_format if type(run_format) is int else 0  # a bool is not a format
        current = level >= names.TEXT_FORMAT
        self.packs = level >= names.PACKED_FORMAT
        if current or workflow.patched(ENCODED_CHUNKS):
            self.encode = ChunkTexts()
        if not current and not workflow.patched(OPEN_WITH_FIRST_WRITE):
            await self.resync(run)
            return
        self.offset = 0
        self.unopened = _owner(run)

    def carry(self) -> dict[str, Any]:
        """The pending chunks for the next activity's input: `{"offset", "chunks", "end"}`,
        `end` being the offset after them. One activity carries at a time: the log is appended
        in order, so a second one (a parallel tool call) could write past chunks the first has
        not written yet; while one is in flight, new chunks wait for the next activity or the
        run's close."""
        encode = self.encode
        chunks = [] if self.carrying else [encode(c) for c in self.pending]
        carry = {"offset": self.offset, "chunks": chunks, "end": self.offset + len(chunks)}
        if self.unopened is not None:
            carry["open"] = self.unopened  # the activity opens the log before it writes
        return carry

    def sent(self, carry: dict[str, Any]) -> dict[str, Any]:
        """`carry` as an activity's input holds it: its texts packed in one string
        (`packed_chunks.packed_texts`) when the run's format says so and they are long enough,
        with no `chunks` (an activity that cannot unpack them fails instead of skipping them)."""
        chunks = carry["chunks"]
        if not self.packs or not chunks:
            return carry
        packed = packed_texts(chunks)
        if packed is None:
            return carry
        wire = {key: value for key, value in carry.items() if key != "chunks"}
        wire["packed"] = packed
        return wire

    async def landing(self, carry: dict[str, Any], call: Awaitable[Any]) -> Any:
        """`call`'s result: the activity whose input holds `carry` (scheduled, not yet started:
        nothing awaited since `carry`, so its chunks are still the pending ones). If it fails,
        its chunks may not have reached the log: they are written here at their offsets."""
        count = len(carry["chunks"])
        if not count:
            result = await call
        else:
            del self.pending[:count]
            self.offset = carry["end"]
            self.carrying += 1
            try:
                result = await call
            except ActivityError:
                await self._publish(carry["offset"], carry["chunks"], None)
                raise
            finally:
                self.carrying -= 1
        if "open" in carry:
            self.unopened = None
        return result

    async def flush(self, close: str | None = None) -> None:
        """The pending chunks into the log now (the run's end: with its `close` status)."""
        async with self.lock:
            if not self.pending and close is None:
                return
            chunks, self.pending = self.pending, []
            self.offset = await self._publish(self.offset, [self.encode(c) for c in chunks], close)

    async def _publish(self, offset: int, chunks: list[dict[str, Any] | str], close: str | None) -> int:
        call = {
            "agentId": self.agent_id,
            "runId": self.run_id,
            "offset": offset,
            "chunks": chunks,
            "close": close,
        }
        if self.unopened is not None:
            call["open"] = self.unopened
        written: int = await workflow.execute_local_activity(
            names.PUBLISH,
            encoded(f"the run's chunks from offset {offset}", call, LOCAL_LIMIT),
            start_to_close_timeout=timedelta(seconds=30),
        )
        self.unopened = None
        return written

    async def resync(self, run: AgentRun) -> None:
        """Continue after what is in the log (a failed activity's chunks are not in its result)."""
        self.offset = await workflow.execute_local_activity(
            names.OPEN_RUN,
            {"agentId": self.agent_id, "runId": self.run_id, **_owner(run)},
            start_to_close_timeout=timedelta(seconds=30),
        )
        self.unopened = None


class ChunkTexts:
    """A run's chunks as JSON text (`ENCODED_CHUNKS`): those that list the run so far
    (`step-finish`, `finish`) through the run's `SharedRecords`, each step's record and each
    message encoded once; the others as they are."""

    __slots__ = ("shared",)

    def __init__(self) -> None:
        self.shared = SharedRecords()

    def __call__(self, chunk: Chunk[Any]) -> str:
        data = chunk.to_dict()
        return self.shared(data) if chunk.type in _LISTING else json_text(data)


_LISTING = frozenset(("step-finish", "finish"))


def _owner(run: AgentRun) -> dict[str, Any]:
    """Whose run the log holds: its resource and thread (checked when the log is opened)."""
    return {"resourceId": run.message_list.resource_id, "threadId": run.message_list.thread_id}


class ActivityModel:
    """One model of the run's (fallback) list inside the workflow: each call is the model
    activity, with the model's `index` in its input and the model's own retry policy (the
    entry's `max_retries` + 1 attempts, or `modelAttempts` when the entry sets none)."""

    specification_version = "v2"

    def __init__(
        self,
        agent: Agent[Any],
        outbox: Outbox,
        settings: Settings,
        index: int = 0,
        entry: FallbackEntry | None = None,
    ) -> None:
        self._agent = agent
        self._outbox = outbox
        self._settings = settings
        self.index = index
        self.has_next = False
        """Whether a model follows this one in the fallback list (set by `activity_models`)."""
        self.run: AgentRun | None = None
        self.provider, self.model_id = model_names(agent.model if entry is None else entry.model)
        retries = None if entry is None else entry.max_retries
        self.retry_policy = settings.model_retry
        if retries is not None:
            interval = settings.model_retry.initial_interval
            self.retry_policy = RetryPolicy(initial_interval=interval, maximum_attempts=retries + 1)

    async def do_stream(self, options: CallOptions) -> StreamResult:
        run = self.run
        assert run is not None
        opening, self._outbox.opening = self._outbox.opening, []
        carry = self._outbox.carry()
        try:
            call = self._call(run, options, carry, opening)
            large = bool(carry["chunks"]) and len(call.payload.data) > CARRY_BUDGET
        except PayloadTooLargeError:
            if not carry["chunks"] or not workflow.patched(LARGE_CARRY_ALONE):
                raise
            large = True
        if large and workflow.patched(LARGE_CARRY_ALONE):
            # Mostly the carried chunks (a `step-finish` repeats every earlier step, so with
            # large tool results it soon outgrows the prompt): they go to the log by themselves,
            # through the local publish, whose input stays in this worker (neither in the
            # history, which would grow by them at every step, nor under the server's payload
            # limit), and the call goes without them.
            await self._outbox.flush()
            carry = self._outbox.carry()
            call = self._call(run, options, carry, opening)
        try:
            result = await self._outbox.landing(
                carry,
                workflow.execute_activity(
                    names.model_activity(self._agent.id),
                    call,
                    start_to_close_timeout=self._settings.model_timeout,
                    heartbeat_timeout=self._settings.heartbeat,
                    retry_policy=self.retry_policy,
                ),
            )
        except ActivityError as exc:
            # The failed call may have published part of its stream: continue after it.
            await self._outbox.resync(run)
            error = from_activity_error(exc)
            attempt = failed_attempt(exc)
            if attempt is None or not attempt.get("opened"):
                raise error from None
            self._published(opening)
            # It failed inside an open stream: the loop sees what it streamed, then the error,
            # and moves to the next model exactly when a run in one process would. A stream
            # processor's tripwire too: what went out before it is the step's text, as in one
            # process (the run's text keeps it).
            return StreamResult(iterate_items(self._items(attempt.get("items") or []), error))
        self._outbox.offset = result["offset"]
        load_stream_states(run, result["states"])
        self._published(opening)
        return StreamResult(iterate_items(self._items(result["items"])))

    def _call(
        self, run: AgentRun, options: CallOptions, carry: dict[str, Any], opening: list[Chunk[Any]]
    ) -> RawValue:
        """The model activity's input: the step's call and the chunks it carries to the log."""
        streams = run.pipeline is not None
        step_number = run.state.step_number
        return encoded(
            f"the model call of step {step_number} (prompt, tools and processor state)",
            inject(
                {
                    "runId": run.run_id,
                    "stepNumber": step_number,
                    "modelIndex": self.index,
                    "hasNext": self.has_next,
                    "attempts": self.retry_policy.maximum_attempts,
                    "offset": carry["end"],
                    "carry": self._outbox.sent(carry),
                    "opening": [c.to_dict() for c in opening],
                    "options": vars(options),
                    "states": stream_states(run),
                    # Only output stream processors read the message list (the prompt is in
                    # `options`): without them it would only double every call's input.
                    "messages": run.message_list.to_dict() if streams else None,
                    "requestContext": json_context(run.request_context),
                },
                None if run.trace is None else run.trace.chat_span,
            ),
        )

    def _published(self, opening: list[Chunk[Any]]) -> None:
        """The opening chunks the activity published once its stream opened: the loop yields
        them next, and they are not written again."""
        for chunk in opening:
            self._outbox.streamed[id(chunk)] = chunk

    def _items(self, raw: list[dict[str, Any]]) -> list[Any]:
        """The call's chunks (already in the log: not written again) and bookkeeping parts."""
        items: list[Any] = []
        for item in raw:
            if "chunk" in item:
                chunk = Chunk.from_dict(item["chunk"])
                self._outbox.streamed[id(chunk)] = chunk
                items.append(chunk)
            else:
                items.append(item["part"])
        return items

    async def do_generate(self, options: CallOptions) -> Any:
        raise NotImplementedError("a durable run streams its model calls")


def stream_states(run: AgentRun) -> dict[str, dict[str, Any]]:
    """The output stream processors' `state` (its JSON part), by processor id, for an activity
    that runs them: the run's state is the workflow's, lent to one activity at a time."""
    return {
        processor_id(p): json_state(run.runner.state_for(processor_id(p)))
        for p in run.processors
        if implements(p, "process_output_stream")
    }


def load_stream_states(run: AgentRun, states: dict[str, dict[str, Any]]) -> None:
    """The states an activity hands back replace the run's (in place: the hooks' args hold them)."""
    for pid, saved in states.items():
        state = run.runner.state_for(pid)
        state.clear()
        state.update(saved)


def model_names(model: Any) -> tuple[str, str]:
    """The provider and model id a run in one process reports for `model` (a model string is
    resolved as there, for its name only: the activity makes the calls)."""
    if isinstance(model, str):
        try:
            model = resolve_model(model)
        except Exception:  # a provider this worker cannot build: the string's own parts
            provider, _, model_id = model.partition("/")
            return provider, model_id
    return str(getattr(model, "provider", "durable")), str(getattr(model, "model_id", model))


def failed_attempt(exc: ActivityError) -> dict[str, Any] | None:
    cause = exc.cause
    if isinstance(cause, ApplicationError):
        for detail in cause.details:
            if isinstance(detail, dict) and names.FAILED_ATTEMPT in detail:
                found: dict[str, Any] = detail[names.FAILED_ATTEMPT]
                return found
    return None


def activity_models(agent: Agent[Any], outbox: Outbox, settings: Settings) -> list[ActivityModel]:
    """The agent's model, or each model of its fallback list, as model activities."""
    entries = parse_model_option(agent.model)
    if entries is None:
        return [ActivityModel(agent, outbox, settings)]
    models = [ActivityModel(agent, outbox, settings, index, entry) for index, entry in enumerate(entries)]
    for model in models[:-1]:
        model.has_next = True
    return models


class DurableChain(ModelChain):
    """The run's model activities, in order. Each activity publishes its chunks to the log as
    they stream (`publishes_live`); a model with a fallback after it is handed the step's start
    (`announce_on_open`) and publishes it once its stream opened, before its own chunks, so, as
    in one process, a call that fails to open and moves on leaves no trace. The circuit breaker
    is not consulted (its state is not the workflow's to read). Each activity runs the output
    stream processors on the model's stream (`processes_stream`): the loop passes only the
    chunks the workflow makes through them."""

    processes_stream = True
    publishes_live = True

    def __init__(self, models: list[ActivityModel], outbox: Outbox) -> None:
        super().__init__(models, [0] * len(models))  # no client retries: Temporal's policy retries
        self.outbox = outbox

    def announce_on_open(self, chunks: list[Any]) -> None:
        self.outbox.opening = list(chunks)

    def with_chosen(self, model: Any, max_retries: int) -> ModelChain:
        """A model a processor chose serves its step alone in a durable run (the fallbacks are
        activities announced in order; a chosen model is not one of them)."""
        return ModelChain.single(model, max_retries)


async def iterate_items(items: list[Any], error: BaseException | None = None) -> AsyncIterator[Any]:
    for item in items:
        yield item
    if error is not None:
        raise error
