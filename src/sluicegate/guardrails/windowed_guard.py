"""`WindowedGuard`: the stream hooks an LLM guardrail mixes in to judge streamed text in windows
(see `guardrails.windows`), and `form_panel`, which lets adjacent ones judge as one panel."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from sluicegate.guardrails.judgement import (
    DEFAULT_MAX_VALUE_CHARS,
    Judgement,
    Release,
    check_window_options,
)
from sluicegate.guardrails.lanes import Member, consume
from sluicegate.guardrails.windows import PREFETCH_KEY, WindowedStream
from sluicegate.processors.base import notify_violation
from sluicegate.stream.chunk import Chunk

_STATE_KEY = "windowed_stream"
_POSITION_KEY = "windowed_stream_position"


def _member(processor: WindowedGuard, args: Any, position: int) -> Member:
    return Member(
        processor.judge_window,
        args,
        position=position,
        window_chars=processor.window_chars,
        overlap_chars=processor.overlap_chars,
        max_hold_ms=processor.max_hold_ms,
        release=processor.release,
        chunk_window=processor.chunk_window,
        processor_id=str(getattr(processor, "id", type(processor).__name__)),
        on_text_done=processor.prefetch_response,
        max_value_chars=processor.max_value_chars,
        report=lambda message, detail: notify_violation(processor, message, detail),
    )


def form_panel(
    members: Sequence[tuple[WindowedGuard, Any]], kind: type[WindowedStream] = WindowedStream
) -> WindowedStream:
    """One windowing shared by adjacent guardrails of an output chain (their stream hook
    arguments given): each judges the model's text as it comes, all at once, and text is
    released once every one vetted it. The first one's hooks drive the panel; the others'
    pass on what it released. `kind` is `SpeculativeStream` for a panel that judges its text
    ahead of time (see `guardrails.judge_panels`)."""
    stream = kind([_member(processor, args, index) for index, (processor, args) in enumerate(members)])
    for index, (_, args) in enumerate(members):
        args.state[_STATE_KEY] = stream
        args.state[_POSITION_KEY] = index
    return stream


class WindowedGuard:
    """The stream hooks of an LLM guardrail that judges windows: mix in, call
    `init_windows(...)` in `__init__`, and implement `judge_window(text, args)`."""

    window_chars: int
    overlap_chars: int
    max_hold_ms: float
    release: Release
    chunk_window: int
    max_value_chars: int = DEFAULT_MAX_VALUE_CHARS

    def init_windows(
        self,
        *,
        strategy: str,
        window_chars: int,
        overlap_chars: int,
        max_hold_ms: float,
        release: Release | None,
        chunk_window: int = 0,
        max_value_chars: int = DEFAULT_MAX_VALUE_CHARS,
    ) -> None:
        if release is None:
            release = "optimistic" if strategy == "warn" else "vetted"
        check_window_options(window_chars, overlap_chars, max_hold_ms, release, max_value_chars)
        if chunk_window < 0:
            raise ValueError(f"chunk_window must be 0 or more, got {chunk_window!r}")
        self.window_chars = window_chars
        self.overlap_chars = overlap_chars
        self.max_hold_ms = max_hold_ms
        self.release = release
        self.chunk_window = chunk_window
        self.max_value_chars = max_value_chars

    def judges_windows(self) -> bool:
        """Whether the stream hooks judge windows, so the guardrail can share a panel with
        adjacent ones (see `sluicegate.guardrails.judge_panels`)."""
        return True

    async def judge_window(self, text: str, args: Any) -> Judgement:
        raise NotImplementedError(f"{type(self).__name__} must implement judge_window")

    async def judge_response(self, text: str, args: Any) -> Any:
        """The verdict `process_output_result` wants on a whole response message's text."""
        raise NotImplementedError(f"{type(self).__name__} must implement judge_response")

    def prefetch_response(self, text: str, args: Any) -> None:
        """A run of text is over (the windowing calls this): start the whole-response check on
        what was released now, so `process_output_result` (and the other guardrails' checks)
        need not wait for it."""
        prefetched: dict[str, asyncio.Task[Any]] = args.state.setdefault(PREFETCH_KEY, {})
        key = text.strip()
        if not key or key in prefetched:
            return
        task = asyncio.ensure_future(self.judge_response(key, args))
        task.add_done_callback(consume)
        prefetched[key] = task

    def response_detector(self, args: Any) -> Callable[[str], Awaitable[Any]]:
        """`detect(text)` for `process_output_result`: the prefetched verdict when the message
        holds exactly the text that was streamed, a fresh one otherwise."""
        prefetched: dict[str, asyncio.Task[Any]] | None = args.state.get(PREFETCH_KEY)

        async def detect(text: str) -> Any:
            task = prefetched.pop(text, None) if prefetched is not None else None
            if task is not None:
                return await task
            return await self.judge_response(text, args)

        return detect

    def _windows(self, args: Any) -> WindowedStream:
        stream: WindowedStream | None = args.state.get(_STATE_KEY)
        if stream is None:
            stream = args.state[_STATE_KEY] = WindowedStream([_member(self, args, 0)])
        elif not args.state.get(_POSITION_KEY):
            stream.members[0].args = args
        return stream

    async def process_output_stream(self, args: Any) -> Chunk | list[Chunk] | None:
        stream = self._windows(args)
        position = args.state.get(_POSITION_KEY)
        if position:
            return stream.follow(position, args.part)
        return await stream.on_chunk(args)

    async def flush_output_stream(self, args: Any) -> list[Chunk]:
        stream: WindowedStream | None = args.state.get(_STATE_KEY)
        if stream is None or args.state.get(_POSITION_KEY):
            return []
        return await stream.flush()

    def stream_deadline(self, state: dict[str, Any]) -> float | None:
        stream: WindowedStream | None = state.get(_STATE_KEY)
        if stream is None or state.get(_POSITION_KEY):
            return None
        return stream.deadline()

    async def on_stream_deadline(self, args: Any) -> list[Chunk]:
        if args.state.get(_POSITION_KEY):
            return []
        return await self._windows(args).on_deadline()
