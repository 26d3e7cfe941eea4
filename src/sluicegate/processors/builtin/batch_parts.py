"""`BatchPartsProcessor`: fewer, larger stream chunks."""

from __future__ import annotations

import time
from typing import Any

from sluicegate.processors.args import ProcessOutputStreamArgs
from sluicegate.processors.base import Processor
from sluicegate.stream.chunk import Chunk, text_delta

# Chunks that close a step or the run: whatever is buffered goes out before them.
_CLOSING = frozenset(("step-finish", "finish", "error", "abort", "tripwire"))


def _combine(batch: list[Chunk]) -> list[Chunk]:
    """The batch in order, each run of text deltas with one id merged into one delta."""
    out: list[Chunk] = []
    texts: list[str] = []
    first: Chunk | None = None
    for chunk in batch:
        if chunk.type == "text-delta" and (first is None or chunk.payload.id == first.payload.id):
            if first is None:
                first = chunk
            texts.append(chunk.payload.text)
            continue
        if first is not None:
            out.append(
                first if len(texts) == 1 else text_delta(first.run_id, first.payload.id, "".join(texts))
            )
            first, texts = None, []
        if chunk.type == "text-delta":
            first, texts = chunk, [chunk.payload.text]
        else:
            out.append(chunk)
    if first is not None:
        out.append(first if len(texts) == 1 else text_delta(first.run_id, first.payload.id, "".join(texts)))
    return out


class BatchPartsProcessor(Processor):
    """Buffers text deltas and emits them combined, to cut per-chunk overhead downstream (LLM
    guardrails, network).

    - `batch_size` (5): emit once this many parts are buffered.
    - `max_wait_time` (milliseconds, none by default): emit a partial batch once its oldest part
      has waited this long, even while the model is silent.
    - `emit_on_non_text` (True): a non-text part flushes the batch and goes out right after it;
      when False, non-text parts are batched too (in order).

    Nothing is lost or reordered: a step's end (`step-finish`, `finish`, `error`, ...) always
    flushes what is buffered before it.

    Example::

        batcher = BatchPartsProcessor(batch_size=5, max_wait_time=100, emit_on_non_text=True)
        agent = Agent(name="a", model=model, output_processors=[batcher])
    """

    id = "batch-parts"
    name = "Batch Parts"

    def __init__(
        self, *, batch_size: int = 5, max_wait_time: float | None = None, emit_on_non_text: bool = True
    ) -> None:
        super().__init__()
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        if max_wait_time is not None and max_wait_time <= 0:
            raise ValueError("max_wait_time must be positive (milliseconds)")
        self.batch_size = batch_size
        self.max_wait_time = max_wait_time
        self.emit_on_non_text = emit_on_non_text

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk | list[Chunk] | None:
        part = args.part
        state = args.state
        batch: list[Chunk] | None = state.get("batch")
        if batch is None:
            batch = state["batch"] = []
        if part.type != "text-delta" and (self.emit_on_non_text or part.type in _CLOSING):
            if not batch:
                return part
            return [*self._flush(state), part]
        if not batch and self.max_wait_time is not None:
            state["deadline"] = time.monotonic() + self.max_wait_time / 1000
        batch.append(part)
        if len(batch) >= self.batch_size:
            flushed = self._flush(state)
            return flushed[0] if len(flushed) == 1 else flushed
        return None

    def _flush(self, state: dict[str, Any]) -> list[Chunk]:
        batch: list[Chunk] = state.get("batch") or []
        state["batch"] = []
        state["deadline"] = None
        return _combine(batch)

    def stream_deadline(self, state: dict[str, Any]) -> float | None:
        """When the buffered parts are due (the agent loop flushes them then)."""
        return state.get("deadline") if state.get("batch") else None

    async def on_stream_deadline(self, args: ProcessOutputStreamArgs) -> list[Chunk]:
        return self._flush(args.state)

    def flush(self, state: dict[str, Any]) -> list[Chunk]:
        """Everything buffered, combined; for callers driving the processor by hand."""
        return self._flush(state)
