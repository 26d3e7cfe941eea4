"""The per-chunk pipeline: one step's chunks through the `process_output_stream` processors.

This is the hot path. `OutputStream.pipeline()` builds the one per-chunk function, which reuses
one args object per processor (only `args.part` changes), calls sync hooks without a coroutine,
and does nothing for processors that are not there. On a traced run (`counts_for` given, see
`stream_counts`) the same function also keeps the counters; untraced, that costs a `None` check
per chunk and per processor. Held-back chunks come out at a step's end (`flush`) or when a
processor's `stream_deadline` passes (`run_deadlines`), and go on through the processors after
the one that held them. Failures follow `hook_call.fail`, like every other hook.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Awaitable, Callable
from contextvars import Token
from typing import Any

from sluicegate.processors.args import ProcessOutputStreamArgs
from sluicegate.processors.base import StreamDeadline, flag, optional_hook
from sluicegate.processors.hook_call import HookEntry, call_hook, fail, wrong_return
from sluicegate.processors.hook_timeout import StreamWatchdog, call_watched
from sluicegate.processors.stream_counts import EXACT_CHUNKS, SAMPLE_MASK, PipelineCounts, TextTrack
from sluicegate.stream.chunk import Chunk
from sluicegate.tracing.findings import CURRENT_SINK, RedactionSink, collect, release

StreamResultType = Chunk | list[Chunk] | None
StreamPipeline = Callable[[Chunk], Awaitable[StreamResultType]]
CountsFor = Callable[[list["StreamEntry"]], PipelineCounts]
"""What `sluicegate.tracing` gives a traced run: the counters for a list of stream entries (the
same object each time for the same entries)."""


class StreamEntry:
    """One stream processor of one request: its hook, its reused args, its optional hooks."""

    __slots__ = (
        "args",
        "counts_redactions",
        "data_parts",
        "deadline",
        "entry",
        "flush",
        "on_deadline",
        "parts_append",
        "watchdog",
    )

    def __init__(self, entry: HookEntry, args: ProcessOutputStreamArgs) -> None:
        processor = entry.processor
        self.entry = entry
        self.args = args
        self.data_parts = flag(processor, "process_data_parts")
        self.counts_redactions = flag(processor, "counts_redactions")
        self.flush = optional_hook(processor, "flush_output_stream")
        deadline: StreamDeadline | None = optional_hook(processor, "stream_deadline")
        self.deadline = deadline
        self.on_deadline = optional_hook(processor, "on_stream_deadline") if deadline else None
        self.parts_append = args.stream_parts.append
        self.watchdog = (
            StreamWatchdog(entry.timeout) if entry.is_async and entry.timeout is not None else None
        )


def _counted(stream_entry: StreamEntry, track: TextTrack | None) -> Any:
    """The stream hook as the pipeline calls it: on a traced run, a processor that reports its
    redactions (`counts_redactions`) has them counted into its track while it runs."""
    fn = stream_entry.entry.fn
    if track is None or not stream_entry.counts_redactions:
        return fn
    sink = RedactionSink(track.redactions)
    if stream_entry.entry.is_async:

        async def counted_async(args: Any) -> Any:
            token = CURRENT_SINK.set(sink)
            try:
                return await fn(args)
            finally:
                CURRENT_SINK.reset(token)

        return counted_async

    def counted(args: Any) -> Any:
        token = CURRENT_SINK.set(sink)
        try:
            return fn(args)
        finally:
            CURRENT_SINK.reset(token)

    return counted


class OutputStream:
    """The stream processors of one request, and what runs them."""

    def __init__(self, entries: list[StreamEntry], run_id: str, counts_for: CountsFor | None) -> None:
        self.entries = entries
        self.run_id = run_id
        self.counts_for = counts_for

    def pipeline(self, entries: list[StreamEntry] | None = None) -> StreamPipeline:
        """The per-chunk function over `entries` (all of them by default)."""
        entries = self.entries if entries is None else entries
        counts = None if self.counts_for is None else self.counts_for(entries)
        tracks: list[TextTrack | None] = [None] * len(entries) if counts is None else list(counts.tracks)
        # One tuple per processor, unpacked once per chunk: cheaper than reading its fields.
        steps = [
            (e.entry, _counted(e, t), e.entry.is_async, e.args, e.parts_append, e.watchdog, e.data_parts, t)
            for e, t in zip(entries, tracks, strict=True)
        ]
        fan_out = self.fan_out
        coerce = self.coerce
        clock = time.perf_counter_ns

        async def process(chunk: Chunk) -> StreamResultType:
            is_data = chunk.type.startswith("data-")
            timed = False
            if counts is not None:
                calls = counts.calls + 1
                counts.calls = calls
                if is_data:
                    counts.data_calls += 1
                if not (calls & counts.mask):
                    timed = True
                    if calls >= EXACT_CHUNKS:
                        counts.mask = SAMPLE_MASK
                    start = clock()
            for index, (entry, fn, is_async, args, parts_append, watchdog, data_parts, track) in enumerate(
                steps
            ):
                if is_data and not data_parts:
                    continue
                args.part = chunk
                parts_append(chunk)
                try:
                    if watchdog is None:
                        result = fn(args)
                        if is_async:
                            result = await result
                    else:  # an async hook under processor_timeout: see StreamWatchdog
                        result = await call_watched(watchdog, entry, args, fn)
                except Exception as exc:
                    if counts is not None:
                        counts.failed(index, is_data, exc)
                    await fail(entry, entry.hook, exc)
                if timed:
                    now = clock()
                    counts.timed(index, now - start)  # type: ignore[union-attr]
                    start = now
                if result is chunk:
                    if track is not None and track.recording:
                        track.passed(chunk)
                    continue
                if track is not None:
                    track.recording = True
                    track.take(chunk)
                if result is not None and result.__class__ is not Chunk:
                    result = await coerce(entry, result)
                    if isinstance(result, list):
                        if track is not None:
                            counts.fanned_out(index, is_data)  # type: ignore[union-attr]
                            track.put(result, chunk)
                        return await fan_out(result, entries[index + 1 :])
                if result is None:
                    if track is not None:
                        counts.dropped(index, is_data)  # type: ignore[union-attr]
                        track.put((), chunk)
                    return None
                if track is not None:
                    counts.replaced(index)  # type: ignore[union-attr]
                    track.put((result,), chunk)
                chunk = result
            return chunk

        return process

    async def coerce(self, entry: HookEntry, result: Any) -> Chunk | list[Chunk] | None:
        """A stream hook's result that is not a `Chunk`: an awaitable, a list or a chunk dict."""
        if inspect.isawaitable(result):
            result = await result
        if result is None or isinstance(result, (Chunk, list)):
            return result
        if isinstance(result, dict) and "type" in result:
            return Chunk.from_dict({"runId": self.run_id, **result})
        raise wrong_return(entry, result, "a chunk, a list of chunks or None")

    async def fan_out(self, chunks: list[Any], rest: list[StreamEntry]) -> list[Chunk]:
        """`chunks` (what one processor made of one chunk) through the processors after it."""
        out: list[Chunk] = []
        downstream = self.pipeline(rest) if rest else None
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

    # ------------------------------------------------------------------ held chunks

    @property
    def flushes(self) -> bool:
        return any(e.flush is not None for e in self.entries)

    @property
    def uses_deadlines(self) -> bool:
        return any(e.deadline is not None for e in self.entries)

    def next_deadline(self) -> float | None:
        """The earliest `stream_deadline` of the stream processors (see `BatchPartsProcessor`)."""
        earliest: float | None = None
        for stream_entry in self.entries:
            if stream_entry.deadline is None:
                continue
            deadline = stream_entry.deadline(stream_entry.entry.state)
            if deadline is not None and (earliest is None or deadline < earliest):
                earliest = deadline
        return earliest

    async def flush(self) -> list[Chunk]:
        """At the end of a model step, processors that hold text back (see the hold-back
        contract in docs/processors.md) release it; each one's output goes on downstream
        before the next one flushes."""
        return await self._release(lambda e: e.flush, "flush_output_stream", None)

    async def run_deadlines(self) -> list[Chunk]:
        """Let processors whose deadline passed release what they hold."""
        return await self._release(lambda e: e.on_deadline, "on_stream_deadline", time.monotonic())

    async def _release(
        self, hook_of: Callable[[StreamEntry], Any], hook: str, due_by: float | None
    ) -> list[Chunk]:
        out: list[Chunk] = []
        for index, stream_entry in enumerate(self.entries):
            release_hook = hook_of(stream_entry)
            if release_hook is None:
                continue
            if due_by is not None:
                deadline = stream_entry.deadline(stream_entry.entry.state)  # type: ignore[misc]
                if deadline is None or deadline > due_by:
                    continue
            stream_entry.args.part = None  # type: ignore[assignment]
            track = self._released_track(index)
            released = None
            try:
                released = await call_hook(stream_entry.entry, stream_entry.args, release_hook, hook)
            finally:
                self._end_release(track, released)
            if released:
                out.extend(await self.fan_out(list(released), self.entries[index + 1 :]))
        return out

    def _released_track(self, index: int) -> tuple[TextTrack, Token[RedactionSink | None]] | None:
        """On a traced run, the track of the processor about to release held chunks (at a
        deadline or the step's end), with its redactions being counted."""
        if self.counts_for is None:
            return None
        track = self.counts_for(self.entries).tracks[index]
        return track, collect(RedactionSink(track.redactions))

    def _end_release(self, held: tuple[TextTrack, Token[RedactionSink | None]] | None, released: Any) -> None:
        if held is None:
            return
        track, token = held
        release(token)
        if released:
            track.recording = True
            track.put(released)
