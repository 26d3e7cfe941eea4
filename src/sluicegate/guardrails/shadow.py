"""Deterministic processors run ahead of time, so the LLM guardrails after them can judge early.

In an output chain `judge, RegexFilter, judge`, the second judge would see text only once the
first released it. The chain's first panel instead hands every chunk it receives to a *shadow*
of the processors between the panels: each runs its own stream hook on a private copy of its
state, with its violation reports and log records muted (it reports what it finds when the text
reaches it for real), and what comes out is the view the next panel judges at once (see
`guardrails.speculative`). The shadow only makes verdicts come sooner: a panel uses one only for
text that turns out to be exactly what it judged.

A processor qualifies with a `transforms_text()` method returning True: its stream hook rewrites
text deterministically (no model call, no side effect other than reports and logs), like
`RegexFilter`.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
from typing import Any, NoReturn

from sluicegate.errors import TripWire
from sluicegate.guardrails.speculative import SpeculativeStream
from sluicegate.processors.base import mute_reports, reports_muted, unmute_reports
from sluicegate.stream.chunk import Chunk

log = logging.getLogger("sluicegate.processors.guardrails")


def transforms_text(processor: Any) -> bool:
    check = getattr(processor, "transforms_text", None)
    return callable(check) and check() is True


class _Muted(logging.Filter):
    """Drops the records a shadowed processor logs while it runs ahead of time."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not reports_muted()


_MUTED = _Muted()


def _tripped(reason: str | None = None, *, retry: bool = False, metadata: Any = None) -> NoReturn:
    raise TripWire(reason or "tripped ahead of time", retry=retry, metadata=metadata)


class Stage:
    """One deterministic processor, run ahead of time on its own private state."""

    __slots__ = ("args", "processor", "stopped")

    def __init__(self, processor: Any, args: Any) -> None:
        self.processor = processor
        self.args = dataclasses.replace(args, state={}, stream_parts=[], abort=_tripped)
        self.stopped = False
        logger = logging.getLogger(type(processor).__module__)
        if _MUTED not in logger.filters:
            logger.addFilter(_MUTED)

    async def run(self, chunks: list[Chunk]) -> list[Chunk]:
        """The chunks its stream hook makes of `chunks`."""
        out: list[Chunk] = []
        for chunk in chunks:
            self.args.part = chunk
            out.extend(await self._call(self.processor.process_output_stream))
        return out

    async def flush(self) -> list[Chunk]:
        flush = getattr(self.processor, "flush_output_stream", None)
        if flush is None or self.stopped:
            return []
        self.args.part = None
        return await self._call(flush)

    async def _call(self, hook: Any) -> list[Chunk]:
        if self.stopped:
            return []
        token = mute_reports()
        try:
            result = hook(self.args)
            if inspect.isawaitable(result):
                result = await result
        except Exception as exc:
            # The processor blocks or fails here: it will do the same when this text reaches
            # it for real (unless a judge before it changes the text first). Nothing after it
            # is judged ahead of time any more.
            log.debug("%s stopped while run ahead of time: %r", getattr(self.processor, "id", ""), exc)
            self.stopped = True
            return []
        finally:
            unmute_reports(token)
        if result is None:
            return []
        if isinstance(result, Chunk):
            return [result]
        if isinstance(result, list) and all(isinstance(chunk, Chunk) for chunk in result):
            return result
        self.stopped = True  # anything else is left to the runner, which checks it for real
        return []


class Shadow:
    """The panels down an output chain, each behind the deterministic processors before it."""

    __slots__ = ("legs",)

    def __init__(self, legs: list[tuple[list[Stage], SpeculativeStream]]) -> None:
        self.legs = legs

    async def feed(self, part: Chunk) -> None:
        """A text chunk the first panel received: through each leg's processors to its panel."""
        chunks = [part]
        for stages, panel in self.legs:
            for stage in stages:
                chunks = await stage.run(chunks)
                if stage.stopped:
                    self._stop(panel)
                    return
            for chunk in chunks:
                panel.speculate(chunk)

    async def end(self) -> None:
        """The first panel is flushing: the processors release what they hold, and every panel
        judges the rest of its view now."""
        chunks: list[Chunk] = []
        for stages, panel in self.legs:
            for stage in stages:
                chunks = await stage.run(chunks)
                chunks += await stage.flush()
                if stage.stopped:
                    self._stop(panel)
                    return
            for chunk in chunks:
                panel.speculate(chunk)
            panel.view_ended()

    def _stop(self, panel: SpeculativeStream) -> None:
        """A processor stopped: the views from this panel on will not grow."""
        stopping = False
        for _, each in self.legs:
            stopping = stopping or each is panel
            if stopping:
                each.view_ended(stopped=True)
