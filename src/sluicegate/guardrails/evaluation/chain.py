"""Running a processor chain over one text, as a real run would, without a main model.

`input`: the text is the user's message and the input processors run `process_input` (the
`run_in_parallel` ones too); what reaches the model is the text of the user messages after.
`output`: the text is the model's answer, streamed in `chunk_chars` pieces between `text-start`
and `text-end` through the output processors' `process_output_stream` (the per-chunk pipeline
the agent loop uses, hold-back and flush at the step's end included); what reaches the client
is the text of the `text-delta` chunks that come out. A tripwire anywhere blocks the text.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sluicegate.errors import TripWire
from sluicegate.guardrails.evaluation.pacing import Pacer
from sluicegate.messages import MessageList
from sluicegate.processors.runner import ProcessorRunner
from sluicegate.request_context import RequestContext
from sluicegate.stream.chunk import Chunk, text_delta
from sluicegate.stream.payload import Payload
from sluicegate.stream.usage import Usage

Phase = Literal["input", "output"]
PHASES: tuple[Phase, ...] = ("input", "output")
DEFAULT_CHUNK_CHARS = 8
"""About two tokens a chunk: values split across chunks, as a model streams them."""


@dataclass(frozen=True, slots=True)
class Outcome:
    output: str
    """What got through ("" when blocked or dropped)."""
    blocked: bool
    reason: str | None
    seconds: float


def _ignore(chunk: Chunk) -> None:
    """Chunks processors write (`data-*`) carry no answer text."""


async def run_chain(
    processors: Sequence[Any],
    text: str,
    *,
    phase: Phase,
    chunk_chars: int = DEFAULT_CHUNK_CHARS,
    request_context: RequestContext | None = None,
    pacer: Pacer | None = None,
) -> Outcome:
    """`text` through `processors` in `phase`: what gets through, and how long it took. With
    `pacer`, the event loop gets a turn between chunks (see `pacing`)."""
    run_id = str(uuid.uuid4())
    runner = ProcessorRunner(
        input_processors=processors if phase == "input" else (),
        output_processors=processors if phase == "output" else (),
        request_context=request_context if request_context is not None else RequestContext(),
        run_id=run_id,
        emit=_ignore,
    )
    message_list = MessageList()
    started = time.perf_counter()
    try:
        if phase == "input":
            output = await _input(runner, message_list, text)
        else:
            output = await _output(runner, message_list, text, run_id, chunk_chars, pacer or Pacer())
    except TripWire as tripwire:
        return Outcome("", True, tripwire.reason, time.perf_counter() - started)
    return Outcome(output, False, None, time.perf_counter() - started)


async def _input(runner: ProcessorRunner, message_list: MessageList, text: str) -> str:
    message_list.add(text, "input")
    parallel = runner.parallel_input(message_list)
    await runner.run_input(message_list)
    if parallel is not None:
        await parallel
    return "".join(m.text for m in message_list.get.all.db() if m.role == "user")


async def _output(
    runner: ProcessorRunner, message_list: MessageList, text: str, run_id: str, chunk_chars: int, pacer: Pacer
) -> str:
    pipeline = runner.stream_pipeline(message_list)
    if pipeline is None:
        return text
    block = "t0"
    chunks = [
        Chunk("text-start", run_id, Payload(id=block)),
        *(text_delta(run_id, block, text[i : i + chunk_chars]) for i in range(0, len(text), chunk_chars)),
        Chunk("text-end", run_id, Payload(id=block)),
        Chunk("finish", run_id, Payload(step_result=Payload(reason="stop"), output=Payload(usage=Usage()))),
    ]
    pieces: list[str] = []
    for chunk in chunks:
        result = await pipeline(chunk)
        _collect(result, pieces)
        await pacer.turn()
    if runner.flushes_stream:
        _collect(await runner.flush_stream(), pieces)
    return "".join(pieces)


def _collect(result: Chunk | list[Chunk] | None, pieces: list[str]) -> None:
    for chunk in result if isinstance(result, list) else (result,):
        if chunk is not None and chunk.type == "text-delta":
            pieces.append(chunk.payload.text)
