"""The activities of durable runs: everything a run does outside its deterministic loop.

- `sluicegate.<agent>.model`: one model call, to the model of the agent's (fallback) list at
  `modelIndex`. The provider stream is read here, chunk by chunk through the agent's output
  stream processors (their hold-back and timed flushes included), and each chunk is published
  to the run log as it is produced, so readers see it live (after the step's `step-start`,
  when the workflow handed it to the call: published once the stream opened). The provider
  client does not retry (`max_retries` 0): Temporal's retry policy does. A retried attempt
  that finds text of the failed attempt in the log first publishes a `data-stream-retry`
  chunk; what the processors held back of the failed attempt dies with it (nothing is flushed
  on failure). A failed call tells the workflow whether its stream had opened, so the loop
  moves to the next model exactly when a run in one process would.
- `sluicegate.<agent>.tool.<name>`: one tool call, with `context.idempotency_key`; its
  `context.writer.custom(...)` chunks are published as the tool writes them (at the offset the
  workflow gave), after a `data-tool-retry` notice when an earlier attempt had published some.
- `sluicegate.<agent>.judge.<processor>`, `sluicegate.<agent>.embed`: a guardrail's judge call
  from workflow code, an embedding of semantic recall (see `judges`, `vectors`).
- `sluicegate.publish`, `sluicegate.open-run` (local): the workflow's own chunks into the log
  when no model or tool call carries them (the run's end), and the log's opening again after a
  failed call or a decision (a new run's log is opened by its first write: `carry["open"]`).

A model or tool call's input carries the workflow's chunks produced since the last call
(`carry`); the activity writes them at their offsets before anything of its own.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from temporalio import activity
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

from sluicegate.agent.chunk_stream import DEADLINE, stream_chunks
from sluicegate.agent.deadline_stream import with_deadlines
from sluicegate.agent.model_parts import ModelStreamError
from sluicegate.agent.step import StepRecorder
from sluicegate.agent.tool_errors import error_text
from sluicegate.durable.temporal import names, spend
from sluicegate.durable.temporal.activity_streams import ActivityStreams, through
from sluicegate.durable.temporal.failures import to_application_error
from sluicegate.durable.temporal.heartbeats import Pacer, beating
from sluicegate.durable.temporal.judges import judge_activity, judged_processor_ids
from sluicegate.durable.temporal.packed_chunks import carried_texts
from sluicegate.durable.temporal.payloads import encoded, json_value
from sluicegate.durable.temporal.publish import Publisher, live_writes
from sluicegate.durable.temporal.stores import decode, encode, real_store, store_methods
from sluicegate.durable.temporal.trace_context import attached
from sluicegate.durable.temporal.vectors import embed_activity, embedder_of
from sluicegate.messages import Message, MessageList
from sluicegate.models.base import CallOptions, LanguageModel
from sluicegate.models.fallback import parse_model_option
from sluicegate.models.registry import resolve_model
from sluicegate.models.retries import is_retryable
from sluicegate.processors.runner import Writer
from sluicegate.request_context import RequestContext
from sluicegate.stream.chunk import Chunk
from sluicegate.stream.run_log import RunStatus
from sluicegate.tools import ToolContext

if TYPE_CHECKING:
    from sluicegate.agent import Agent
    from sluicegate.registry import Sluicegate

log = logging.getLogger("sluicegate.durable")

_BOOKKEEPING = frozenset(("finish", "stream-start", "response-metadata"))
_FAILED_ITEMS = 16
"""How many of a failed call's chunks go back to the workflow: the loop only needs to know
what it showed (whether it went beyond its step-start), not all of it; all of it is in the log."""


async def _watched(source: AsyncIterator[Any], items: list[dict[str, Any]]) -> AsyncIterator[Any]:
    """The model's parts, paced heartbeats with them (`heartbeats.Pacer`: a stalled stream times
    out); the bookkeeping ones (finish, stream-start, response metadata) also go back to the
    workflow as they are, where the loop records them into its step."""
    beat = Pacer().beat
    async for part in source:
        beat()
        if part.__class__ is dict and part.get("type") in _BOOKKEEPING:
            items.append({"part": json_value(part)})
        yield part


def _falls_over(call: dict[str, Any], opened: bool, error: BaseException) -> bool:
    """Whether this failed attempt moves the step to the next model: the model's last attempt
    (`attempts`, its retry policy's), failing inside its open stream with a retryable error
    (`model_step._falls_over`), with a model after it (`hasNext`)."""
    attempts = int(call.get("attempts") or 0)
    last = attempts > 0 and activity.info().attempt >= attempts
    return bool(call.get("hasNext")) and opened and last and is_retryable(error)


class _FailedCall(Exception):
    """A model call that failed, with whether its stream had opened (a failure to open moves to
    the next fallback model, one inside an open stream only when it is retryable)."""

    def __init__(self, error: BaseException, opened: bool, items: list[dict[str, Any]]) -> None:
        super().__init__(str(error))
        self.error = error
        self.opened = opened
        self.items = items

    def application_error(self, *, details: bool = False) -> BaseException:
        failure = to_application_error(self.error, details=details)
        attempt = {names.FAILED_ATTEMPT: {"opened": self.opened, "items": self.items[:_FAILED_ITEMS]}}
        if isinstance(failure, ApplicationError):
            return ApplicationError(
                failure.message,
                *failure.details,
                attempt,
                type=failure.type,
                non_retryable=failure.non_retryable,
            )
        # Another exception: retryable, named by its type, as Temporal would report it.
        return ApplicationError(str(self.error), attempt, type=type(self.error).__name__)


async def _open(publisher: Publisher, agent_id: str, run_id: str, owner: dict[str, Any]) -> int:
    """The run open in the log, for its owner (`resourceId`, `threadId`); the offset after what
    it holds (a log another owner's run holds is refused: `Publisher.open`)."""
    return await publisher.open(
        run_id, agent_id=agent_id, resource_id=owner.get("resourceId"), thread_id=owner.get("threadId")
    )


def model_at(agent: Agent[Any], index: int) -> LanguageModel:
    """The model at `index` of the agent's fallback list (a single model is a list of one)."""
    entries = parse_model_option(agent.model, where=f"agent {agent.id!r} model")
    if entries is None:
        if index != 0:
            raise ApplicationError(f"agent {agent.id!r} has one model, not {index + 1}", non_retryable=True)
        return resolve_model(agent.model)
    if not 0 <= index < len(entries):
        raise ApplicationError(
            f"agent {agent.id!r} has {len(entries)} fallback models, no model {index}", non_retryable=True
        )
    return resolve_model(entries[index].model)


class Publishers:
    """One `Publisher` per run log object, shared by the activities of this process."""

    def __init__(self) -> None:
        self._by_log: dict[int, Publisher] = {}

    def for_agent(self, agent: Agent[Any]) -> Publisher | None:
        run_log = agent.run_log
        if run_log is None:
            return None
        publisher = self._by_log.get(id(run_log))
        if publisher is None:
            publisher = self._by_log[id(run_log)] = Publisher(run_log)
        return publisher


class DurableActivities:
    """The activities of an application's agents (see the module docstring)."""

    def __init__(self, app: Sluicegate) -> None:
        self.app = app
        self.publishers = Publishers()

    def agent(self, agent_id: str) -> Agent[Any]:
        agent = self.app.get_agent(agent_id)
        if agent is None:
            raise LookupError(f"no agent {agent_id!r} in this worker's application")
        return agent

    def all(self) -> list[Callable[..., Any]]:
        out: list[Callable[..., Any]] = [self._publish_activity(), self._open_activity()]
        for agent_id, agent in self.app.agents.items():
            out.append(self._model_activity(agent_id))
            out.append(self._storage_activity(agent_id))
            for tool_name in agent.tools:
                out.append(self._tool_activity(agent_id, tool_name))
            out.extend(judge_activity(self.agent, agent_id, pid) for pid in judged_processor_ids(agent))
            if embedder_of(agent.memory) is not None:
                out.append(embed_activity(self.agent, agent_id))
        return out

    # ------------------------------------------------------------------ the run log

    def _publish_activity(self) -> Callable[..., Any]:
        async def publish(call: dict[str, Any]) -> int:
            publisher = self.publishers.for_agent(self.agent(call["agentId"]))
            if publisher is None:
                return int(call["offset"]) + len(call["chunks"])
            try:
                if "open" in call:
                    await _open(publisher, call["agentId"], call["runId"], call["open"])
                offset = await publisher.write(call["runId"], call["offset"], call["chunks"])
                status: RunStatus | None = call.get("close")
                if status is not None:
                    await publisher.close(call["runId"], offset, status)
            except Exception as exc:  # a refused opening (another owner's run) is not retried
                raise to_application_error(exc) from exc
            return offset

        return activity.defn(name=names.PUBLISH)(publish)

    async def _write_carried(self, agent_id: str, call: dict[str, Any]) -> None:
        """The workflow's chunks that `call` carries, into the log before anything the call
        writes (a retried attempt finds them there and skips them)."""
        carry = call.get("carry")
        if not carry:
            return
        publisher = self.publishers.for_agent(self.agent(agent_id))
        if publisher is None:
            return
        if "open" in carry:  # the run's first write: its log is opened first (`Outbox.open`)
            await _open(publisher, agent_id, call["runId"], carry["open"])
        try:
            chunks = carried_texts(carry)
        except ValueError as exc:  # not retried: another attempt carries the same
            raise ApplicationError(
                f"the chunks carried to the log of run {call['runId']!r}: {exc}", non_retryable=True
            ) from None
        if chunks:
            await publisher.write(call["runId"], carry["offset"], chunks)

    def _open_activity(self) -> Callable[..., Any]:
        async def open_run(call: dict[str, Any]) -> int:
            publisher = self.publishers.for_agent(self.agent(call["agentId"]))
            if publisher is None:
                return 0
            try:
                return await _open(publisher, call["agentId"], call["runId"], call)
            except Exception as exc:  # a refused opening (another owner's run) is not retried
                raise to_application_error(exc) from exc

        return activity.defn(name=names.OPEN_RUN)(open_run)

    # ------------------------------------------------------------------ model calls

    def _model_activity(self, agent_id: str) -> Callable[..., Any]:
        async def model_call(call: dict[str, Any]) -> RawValue:
            try:
                with attached(call):
                    await self._write_carried(agent_id, call)
                    return await self._model_call(agent_id, call)
            except _FailedCall as failed:
                details = self.agent(agent_id).provider_error_details
                raise failed.application_error(details=details) from failed.error
            except Exception as exc:
                raise to_application_error(exc, details=self.agent(agent_id).provider_error_details) from exc

        return activity.defn(name=names.model_activity(agent_id))(model_call)

    async def _model_call(self, agent_id: str, call: dict[str, Any]) -> RawValue:
        agent = self.agent(agent_id)
        run_id: str = call["runId"]
        info = activity.info()
        request_context = RequestContext(call.get("requestContext") or {})
        options = CallOptions(**call["options"])
        model = model_at(agent, int(call.get("modelIndex", 0)))
        streams = await ActivityStreams.of(agent, call, request_context)
        processors = streams.processors
        runner = streams.runner
        if call["messages"] is None and processors:
            raise ApplicationError(
                f"agent {agent_id!r} has output stream processors on this worker but not on the one "
                "running its workflow: every worker must load the same application",
                non_retryable=True,
            )
        # Without stream processors no pipeline runs (the workflow sends no messages for one).
        pipeline = runner.stream_pipeline(MessageList.from_dict(call["messages"])) if processors else None
        publisher = self.publishers.for_agent(agent)
        offset: int = call["offset"]
        items: list[dict[str, Any]] = []
        if info.attempt > 1 and publisher is not None:
            written = await publisher.end(run_id)
            if written > offset:
                # The failed attempt's text reached readers: tell them before the new attempt's.
                notice = Chunk(
                    names.RETRY_NOTICE,
                    run_id,
                    data={"stepNumber": call["stepNumber"], "attempt": info.attempt, "discardFrom": offset},
                )
                offset = await publisher.write(run_id, written, [notice.to_dict()])
                items.append({"chunk": notice.to_dict()})
        batches = live_writes(publisher, run_id, offset)
        step = StepRecorder(call["stepNumber"])
        add = batches.add

        def emit(chunk: Chunk[Any]) -> None:
            shape = chunk.to_dict()  # one for both: the log's (a shared one) and the workflow's
            add(chunk, shape)
            items.append({"chunk": shape})

        opened = False
        try:
            stream = (await model.do_stream(options)).stream
            opened = True
            # The step's start, when the workflow left it to this call: published now that the
            # stream opened, before its chunks (the workflow yields its own copy: not returned).
            for opening in call.get("opening") or ():
                batches.add(Chunk.from_dict(opening), opening)
            deadlines = pipeline is not None and runner.uses_stream_deadlines
            # As in one process: a stream processor's timed flush (`stream_deadline`, e.g.
            # `BatchPartsProcessor(max_wait_time=...)`) fires while the model is silent.
            source = with_deadlines(stream, runner.next_stream_deadline, DEADLINE) if deadlines else stream

            async def drain() -> list[Chunk[Any]]:
                return await streams.drained(pipeline)

            # The same per-chunk pipeline as a run in one process (`chunk_stream`).
            chunks = stream_chunks(
                _watched(source, items), step, runner, pipeline, drain, pending=streams.pending
            )
            try:
                async for chunk in chunks:
                    emit(chunk)
            finally:
                for closable in (chunks, source, stream) if source is not stream else (chunks, stream):
                    aclose = getattr(closable, "aclose", None)
                    if aclose is not None:
                        try:
                            await aclose()
                        except Exception:  # already closing (the deadline reader's), or the provider's own
                            log.debug("closing the model stream failed", exc_info=True)
        except Exception as exc:
            # What already went past the processors is the attempt's output: it is published
            # (the retry notice will clear it). What they held back dies with an attempt that
            # Temporal retries; the model's last attempt, when the step moves to the next model,
            # releases it first, as a run in one process does (shown, and cleared with it).
            error = exc.error if isinstance(exc, ModelStreamError) else exc
            if _falls_over(call, opened, error) and pipeline is not None and runner.flushes_stream:
                for flushed in await runner.flush_stream():
                    emit(flushed)
                for extra in await streams.drained(pipeline):
                    emit(extra)
            await batches.finish()
            raise _FailedCall(error, opened, items) from exc
        except BaseException:
            batches.cancel()
            raise
        offset = await batches.finish()
        return encoded(
            f"the model call of step {call['stepNumber']} (its streamed chunks)",
            {"items": items, "states": streams.states(), "offset": offset},
        )

    # ------------------------------------------------------------------ storage

    def _storage_activity(self, agent_id: str) -> Callable[..., Any]:
        async def storage_call(call: dict[str, Any]) -> Any:
            store = real_store(self.agent(agent_id), call["locator"])
            method = call["method"]
            if method not in store_methods(store):
                raise ApplicationError(f"the store has no method {method!r}", non_retryable=True)
            try:
                answer = await getattr(store, method)(*decode(call["args"]), **decode(call["kwargs"]))
            except Exception as exc:
                raise to_application_error(exc) from exc
            return encode(answer)

        return activity.defn(name=names.storage_activity(agent_id))(storage_call)

    # ------------------------------------------------------------------ tool calls

    def _tool_activity(self, agent_id: str, tool_name: str) -> Callable[..., Any]:
        async def tool_call(call: dict[str, Any]) -> RawValue:
            try:
                with attached(call):
                    await self._write_carried(agent_id, call)
                    return await self._tool_call(agent_id, tool_name, call)
            except Exception as exc:
                raise to_application_error(exc) from exc

        return activity.defn(name=names.tool_activity(agent_id, tool_name))(tool_call)

    async def _tool_call(self, agent_id: str, tool_name: str, call: dict[str, Any]) -> RawValue:
        agent = self.agent(agent_id)
        tool = agent.tools[tool_name]
        validated = tool.validate(call["args"])  # ToolInputError: not retried
        run_id: str = call["runId"]
        offset: int | None = call.get("offset")
        publisher = self.publishers.for_agent(agent) if offset is not None else None
        if publisher is not None and offset is not None and activity.info().attempt > 1:
            written = await publisher.end(run_id)
            if written > offset:
                # The failed attempt's data reached readers: tell them before the new attempt's.
                retry = Chunk(
                    names.TOOL_RETRY_NOTICE,
                    run_id,
                    data={
                        "toolCallId": call["toolCallId"],
                        "toolName": tool_name,
                        "attempt": activity.info().attempt,
                        "discardFrom": offset,
                    },
                )
                offset = await publisher.write(run_id, written, [retry.to_dict()])
        # Without an offset (another call of the step streams live now) the data goes back in
        # the result, for the workflow to publish after it.
        batches = None if offset is None else live_writes(publisher, run_id, offset)
        data: list[dict[str, Any]] = []
        request_context = RequestContext(call.get("requestContext") or {})
        spent = spend.collect(request_context)  # a sub-agent's model calls, charged by the workflow
        # The live call's data chunks pass through the stream processors that opted in to data
        # parts before they are published, as in one process (the workflow sends their state).
        streams = await ActivityStreams.of(agent, call, request_context) if "states" in call else None
        pipeline = (
            None
            if streams is None or not streams.processors
            else streams.runner.stream_pipeline(MessageList.from_dict(call["messageList"]))
        )

        async def write(chunk: Chunk[Any]) -> None:
            out = [chunk]
            if streams is not None and pipeline is not None:
                out = [*await through(pipeline, chunk), *await streams.drained(pipeline)]
            for processed in out:
                shape = processed.to_dict()  # as it was written: the log's and the result's
                data.append(shape)
                if batches is not None:
                    batches.add(processed, shape)

        context = ToolContext(
            tool_call_id=call["toolCallId"],
            # As in one process: the run's messages (sent only to a tool that reads its context).
            messages=[Message.from_dict(m) for m in call.get("messages") or ()],
            request_context=request_context,
            writer=Writer(run_id, write),
            tool_name=tool_name,
            resume_data=call.get("resumeData"),
            # From the run's stored snapshot (the workflow's), never from a caller.
            suspended_with=call.get("suspendedWith"),
            suspend_schema=tool.context_schema(),
            idempotency_key=call["idempotencyKey"],
        )
        try:
            with beating():  # a tool does not heartbeat itself
                result = await tool.execute(validated, context)
        except Exception as exc:
            # As in one process: the model reads the failure as the call's result. Only a crash
            # or a timeout retries a tool.
            text = error_text(exc, details=agent.provider_error_details)
            out: dict[str, Any] = {"error": text}
        except BaseException:
            if batches is not None:
                batches.cancel()
            raise
        else:
            out = {"result": result}
            if context.suspended:
                out = {"suspended": True, "suspendPayload": context.suspend_payload}
        out["data"] = data
        if entries := spent.entries():
            out["spent"] = entries
        if streams is not None:
            out["states"] = streams.states()
        if batches is not None:
            out["offset"] = await batches.finish()
        what = f"the result of tool {tool_name!r} (call {call['toolCallId']})"
        return encoded(what, out)
