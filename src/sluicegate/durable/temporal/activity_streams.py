"""The output stream processors inside one activity of a durable run.

A durable run's chunks pass through the agent's output stream processors wherever they are
made: the model's in the model activity, a tool's data chunks in its tool activity, the chunks
the workflow makes (tool results, step boundaries) in the workflow's own loop. Their `state` is
the run's, kept by the workflow: each activity that runs them gets it in its input (`states`,
the JSON part, as a suspended run stores it) and hands it back in its result, so the next one
continues where it stopped, one at a time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sluicegate.durable.temporal.payloads import json_state
from sluicegate.processors.base import implements, processor_id
from sluicegate.processors.runner import ProcessorRunner
from sluicegate.processors.stream_pipeline import StreamPipeline
from sluicegate.request_context import RequestContext
from sluicegate.stream.chunk import Chunk

if TYPE_CHECKING:
    from sluicegate.agent import Agent


class BareRunners:
    """The runners of calls without stream processors, one per run, the most recent `limit`
    runs' kept. Such a runner runs nothing: the per-chunk loop (`chunk_stream.stream_chunks`)
    only reads its run id, and no processor writes to it or keeps state in it, so the calls of
    one run can share it instead of each building one (most of the cost of a call's streams)."""

    def __init__(self, limit: int = 1024) -> None:
        self.limit = limit
        self._by_run: dict[str, ProcessorRunner] = {}

    def __len__(self) -> int:
        return len(self._by_run)

    def runner(self, run_id: str) -> ProcessorRunner:
        """The run's runner without processors (holding nothing of a call: no request context)."""
        runner = self._by_run.get(run_id)
        if runner is None:
            runner = ProcessorRunner(
                input_processors=[],
                output_processors=[],
                request_context=RequestContext(),
                run_id=run_id,
                emit=_no_processor_writes,
                processor_timeout=None,
            )
            if len(self._by_run) >= self.limit:
                del self._by_run[next(iter(self._by_run))]  # the oldest run's
            self._by_run[run_id] = runner
        return runner


def _no_processor_writes(chunk: Chunk[Any]) -> None:
    raise RuntimeError(f"a runner without processors was written to ({chunk.type!r})")


BARE_RUNNERS = BareRunners()
"""This process's `BareRunners`: a runner holds only its run's id that matters."""


class ActivityStreams:
    """The agent's output stream processors for one activity, with the run's states loaded."""

    def __init__(
        self,
        processors: list[Any],
        states: dict[str, Any],
        request_context: RequestContext,
        run_id: str,
        timeout: Any,
    ) -> None:
        self.processors = processors
        self.pending: list[Chunk[Any]] = []
        """What the processors wrote (`writer.custom`), waiting to go out after the chunk."""
        if not processors:
            self.runner = BARE_RUNNERS.runner(run_id)
            return
        self.runner = ProcessorRunner(
            input_processors=[],
            output_processors=processors,
            request_context=request_context,
            run_id=run_id,
            emit=self.pending.append,
            processor_timeout=timeout,
        )
        for pid, saved in states.items():
            self.runner.state_for(pid).update(saved)

    @classmethod
    async def of(
        cls, agent: Agent[Any], call: dict[str, Any], request_context: RequestContext
    ) -> ActivityStreams:
        """The agent's stream processors (its array resolved for the call's request context)."""
        processors = [
            p
            for p in await agent.resolve_processors("output_processors", {}, request_context)
            if implements(p, "process_output_stream")
        ]
        return cls(
            processors, call.get("states") or {}, request_context, call["runId"], agent.processor_timeout
        )

    def states(self) -> dict[str, dict[str, Any]]:
        """The processors' states for the workflow (their JSON part)."""
        return {processor_id(p): json_state(self.runner.state_for(processor_id(p))) for p in self.processors}

    async def drained(self, pipeline: StreamPipeline | None) -> list[Chunk[Any]]:
        """What the processors wrote, each `data-*` chunk through those that opted in to data
        parts, as a run in one process passes it (`RunCore.drain_processed`); what they write
        meanwhile goes out as it is."""
        if not self.pending:
            return []
        chunks = list(self.pending)
        self.pending.clear()
        if pipeline is None or not self.runner.has_data_part_processors:
            return chunks
        out: list[Chunk[Any]] = []
        for chunk in chunks:
            if chunk.type.startswith("data-"):
                out.extend(await through(pipeline, chunk))
                out.extend(self.pending)
                self.pending.clear()
            else:
                out.append(chunk)
        return out


async def through(pipeline: StreamPipeline, chunk: Chunk[Any]) -> list[Chunk[Any]]:
    """`chunk` through the stream processors: what comes out (nothing when one dropped it)."""
    result = await pipeline(chunk)
    if result is None:
        return []
    return result if isinstance(result, list) else [result]
