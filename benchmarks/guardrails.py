"""What the stream-safe guardrails cost.

Prints, with mock models (no network):

1. detector calls for a streamed answer of 50 and 500 chunks, per LLM guardrail, against the
   target ceil(chars / 400) + 1, beside Mastra 1.71's count for the same stream and mock
   detector (measured with `mastra_guardrail_calls.mjs`, which needs Node and npm);
2. time to the first released text delta with a 100 ms judge, `vetted` and `optimistic`;
3. wall time of a 500-chunk stream (2 ms per chunk) with three LLM guardrails vs none;
4. µs added per chunk by the deterministic guardrails (RegexFilter presets, PIIDetector
   without a model), against a pass-through processor;
5. RegexFilter on one 100,000-character token streamed in 4-character chunks (target ≤ 0.5 s);
6. time to first token with three 200 ms input guards and a 300 ms model: one after another
   (the old behaviour, emulated), concurrently, and with `run_in_parallel=True`.

    uv run python benchmarks/guardrails.py [--repeat 5]
    uv run python benchmarks/guardrails.py --per-chunk   # section 4 alone, fastest 1,000-chunk block
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import statistics
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from sluicegate import Agent
from sluicegate.models.base import CallOptions, GenerateResult, StreamResult
from sluicegate.processors import (
    ModerationProcessor,
    PIIDetector,
    ProcessOutputStreamArgs,
    PromptInjectionDetector,
    RegexFilter,
    SystemPromptScrubber,
)
from sluicegate.processors.base import Processor
from sluicegate.request_context import RequestContext
from sluicegate.stream.chunk import Chunk, text_delta
from sluicegate.stream.payload import Payload
from sluicegate.testing import MockModel


def answer(text: str) -> str:
    return json.dumps({})


class Judge(MockModel):
    """A detector that answers "nothing found" after `delay` seconds."""

    def __init__(self, delay: float = 0.0) -> None:
        super().__init__()
        self.delay = delay

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        self.calls.append(options)
        if self.delay:
            await asyncio.sleep(self.delay)
        return GenerateResult(content=[{"type": "text", "text": "{}"}], finish_reason="stop", usage={})


class Paced(MockModel):
    """A main model streaming `deltas` after `first` seconds, `pause` seconds apart."""

    def __init__(self, deltas: list[str], *, pause: float = 0.0, first: float = 0.0) -> None:
        super().__init__()
        self.deltas = deltas
        self.pause = pause
        self.first = first

    async def do_stream(self, options: CallOptions) -> StreamResult:
        self.calls.append(options)

        async def parts() -> AsyncIterator[dict[str, Any]]:
            yield {"type": "stream-start", "warnings": []}
            if self.first:
                await asyncio.sleep(self.first)
            yield {"type": "text-start", "id": "t1"}
            for delta in self.deltas:
                if self.pause:
                    await asyncio.sleep(self.pause)
                yield {"type": "text-delta", "id": "t1", "delta": delta}
            yield {"type": "text-end", "id": "t1"}
            yield {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 1}}

        return StreamResult(stream=parts())


def words(count: int) -> list[str]:
    vocabulary = ["The ", "report ", "shows ", "steady ", "growth ", "across ", "regions, ", "and ", "more. "]
    return [vocabulary[i % len(vocabulary)] for i in range(count)]


LLM_GUARDS: dict[str, Callable[[Any], Any]] = {
    "ModerationProcessor": lambda judge: ModerationProcessor(model=judge),
    "PIIDetector": lambda judge: PIIDetector(model=judge),
    "SystemPromptScrubber": lambda judge: SystemPromptScrubber(model=judge),
}


MASTRA_CALLS = {
    "ModerationProcessor": {50: 51, 500: 501},
    "PIIDetector": {50: 2, 500: 16},
    "SystemPromptScrubber": {50: 51, 500: 501},
}
"""Detector calls of Mastra 1.71.0 for the same streams, final check included
(`node mastra_guardrail_calls.mjs`)."""


async def first_and_total(agent: Agent) -> tuple[float, float]:
    start = time.perf_counter()
    output = await agent.stream("go")
    first = 0.0
    async for chunk in output.full_stream:
        if chunk.type == "text-delta" and not first:
            first = time.perf_counter() - start
    return first, time.perf_counter() - start


async def detector_calls() -> None:
    print("1. detector calls per streamed answer (ours: the final whole-response check excluded)")
    print(
        f"   {'guardrail':<22}{'chunks':>7}{'chars':>7}{'calls':>7}{'target':>8}   Mastra 1.71 (incl. final)"
    )
    for name, make in LLM_GUARDS.items():
        for chunks in (50, 500):
            deltas = words(chunks)
            chars = sum(map(len, deltas))
            judge = Judge()
            agent = Agent(name="b", model=Paced(deltas), output_processors=[make(judge)])
            await first_and_total(agent)
            stream_calls = len(judge.calls) - 1
            target = math.ceil(chars / 400) + 1
            mastra = MASTRA_CALLS[name][chunks]
            print(f"   {name:<22}{chunks:>7}{chars:>7}{stream_calls:>7}{target:>8}   {mastra}")


def three_guards(release: str, *, separated: bool = False, judges: list[Judge] | None = None) -> list[Any]:
    """The three LLM guardrails with a 100 ms judge; `separated` puts a pass-through processor
    between them, so they are not adjacent and judge one after another (each sees text only
    once the previous one released it): the chain as it was before panels."""
    made = [Judge(0.1) for _ in LLM_GUARDS]
    if judges is not None:
        judges.extend(made)
    guards = [make(judge) for make, judge in zip(LLM_GUARDS.values(), made, strict=True)]
    for guard in guards:
        guard.release = release
    if not separated:
        return guards
    return [guards[0], PassThrough(), guards[1], AsyncPassThrough(), guards[2]]


async def latency(repeat: int) -> None:
    deltas = words(500)
    chars = sum(map(len, deltas))
    print(f"2. time to first released delta, 100 ms judge, 500 chunks at 2 ms each (median of {repeat})")
    for label, make in (
        ("one guardrail", lambda release: [ModerationProcessor(model=Judge(0.1), release=release)]),
        ("three guardrails", three_guards),
    ):
        for release in ("vetted", "optimistic"):
            firsts = []
            for _ in range(repeat):
                agent = Agent(name="b", model=Paced(deltas, pause=0.002), output_processors=make(release))
                firsts.append((await first_and_total(agent))[0])
            print(f"   {label:<17} {release:<11} {statistics.median(firsts) * 1000:7.0f} ms")
    print(
        f"3. wall time of that stream ({chars} chars): three LLM guardrails (100 ms judge) vs none, "
        f"median of {repeat}; target <= +2 judges vetted, <= +1 optimistic"
    )
    nones = []
    for _ in range(repeat):
        nones.append((await first_and_total(Agent(name="b", model=Paced(deltas, pause=0.002))))[1])
    none_total = statistics.median(nones)
    print(f"   no guardrails                         {none_total * 1000:7.0f} ms")
    for release in ("vetted", "optimistic"):
        for separated in (False, True):
            totals = []
            calls = []
            for _ in range(repeat):
                judges: list[Judge] = []
                guards = three_guards(release, separated=separated, judges=judges)
                agent = Agent(name="b", model=Paced(deltas, pause=0.002), output_processors=guards)
                totals.append((await first_and_total(agent))[1])
                calls.append(max(len(judge.calls) - 1 for judge in judges))  # the final check excluded
            total = statistics.median(totals)
            extra = (total - none_total) * 1000
            label = f"three, {release}" + (", one after another" if separated else "")
            print(
                f"   {label:<37} {total * 1000:7.0f} ms   (+{extra:.0f} ms = {extra / 100:.1f} judges; "
                f"most calls per guardrail {max(calls)}, target {math.ceil(chars / 400) + 1})"
            )


class PassThrough(Processor):
    id = "pass"

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        return args.part


def argument_delta(run_id: str, call_id: str, text: str) -> Chunk:
    return Chunk("tool-call-delta", run_id, Payload(tool_call_id=call_id, args_text_delta=text))


BLOCK = 0
"""With `--per-chunk`, chunks per timed block: the figure is the fastest block's, not a run's."""


def per_chunk_us(
    processor: Any, deltas: list[str], repeat: int = 5, make: Callable[[str, str, str], Chunk] = text_delta
) -> float:
    """Median µs per chunk of `processor.process_output_stream` (awaited when async); with
    `BLOCK`, the minimum over blocks of that many chunks (on a shared, loaded machine the
    fastest block sheds the pauses other work causes)."""
    is_async = asyncio.iscoroutinefunction(processor.process_output_stream)
    runs = []
    for _ in range(repeat):
        args = ProcessOutputStreamArgs(abort=lambda *a, **k: None, request_context=RequestContext())  # type: ignore[arg-type,return-value]
        chunks = [make("r", "t1", d) for d in deltas]

        size = BLOCK or len(chunks)

        async def feed(
            chunks: list[Chunk] = chunks, args: ProcessOutputStreamArgs = args, size: int = size
        ) -> float:
            best = math.inf
            for at in range(0, len(chunks), size):
                start = time.perf_counter()
                for chunk in chunks[at : at + size]:
                    args.part = chunk
                    result = processor.process_output_stream(args)
                    if is_async:
                        await result
                best = min(best, (time.perf_counter() - start) / len(chunks[at : at + size]))
            return best

        runs.append(asyncio.run(feed()) * 1e6)
    return min(runs) if BLOCK else statistics.median(runs)


class AsyncPassThrough(Processor):
    id = "async-pass"

    async def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        return args.part


def deterministic() -> None:
    print("4. µs added per chunk by deterministic guardrails (10,000 prose tokens; target <= 3)")
    # Model tokenizers put the space before a word (" report"): every chunk ends inside a word,
    # which an address may continue, so its last word waits for the next chunk. Chunks ending
    # in a space ("report ") wait the same way since a spelled-out address ("report at x dot
    # com") may continue them; that costs more (a new chunk for each).
    shapes = (
        ("tokens as models send them", [" " + w.strip() for w in words(10_000)]),
        ("chunks ending in a space", words(10_000)),
    )
    for shape, deltas in shapes:
        print(f"   {shape}:")
        base = per_chunk_us(PassThrough(), deltas)
        async_base = per_chunk_us(AsyncPassThrough(), deltas)
        for name, processor in (
            ("RegexFilter pii", RegexFilter(presets=["pii"], strategy="redact")),
            ("RegexFilter pii+secrets", RegexFilter(presets=["pii", "secrets"], strategy="redact")),
            ("PIIDetector, no model", PIIDetector()),
        ):
            floor = async_base if asyncio.iscoroutinefunction(processor.process_output_stream) else base
            print(f"     {name:<24} +{per_chunk_us(processor, deltas) - floor:5.2f}")
    # A tool call's arguments streamed as JSON in 4-character deltas (prose values, numbers).
    arguments = json.dumps({"notes": [{"text": w.strip(), "n": i} for i, w in enumerate(words(2_000))]})
    deltas = [arguments[i : i + 4] for i in range(0, len(arguments), 4)]
    print(f"   tool-call argument deltas ({len(deltas):,} of 4 characters):")
    base = per_chunk_us(PassThrough(), deltas, make=argument_delta)
    async_base = per_chunk_us(AsyncPassThrough(), deltas, make=argument_delta)
    for name, processor in (
        ("RegexFilter pii", RegexFilter(presets=["pii"], strategy="redact")),
        ("PIIDetector, no model", PIIDetector()),
    ):
        floor = async_base if asyncio.iscoroutinefunction(processor.process_output_stream) else base
        print(f"     {name:<24} +{per_chunk_us(processor, deltas, make=argument_delta) - floor:5.2f}")
    print("5. RegexFilter, one 100,000-character token in 4-character chunks (target <= 0.5 s)")
    token = ("abcd" * 25_000,)
    pieces = [token[0][i : i + 4] for i in range(0, len(token[0]), 4)]
    for label, cap in (("default cap (128)", 128), ("stream_carryover_size=None", None)):
        # quadratic without a cap: only a 20,000-character slice
        pieces_run = pieces[:5_000] if cap is None else pieces
        processor = RegexFilter(presets=["pii", "secrets"], strategy="redact", stream_carryover_size=cap)
        args = ProcessOutputStreamArgs(abort=lambda *a, **k: None, request_context=RequestContext())  # type: ignore[arg-type,return-value]
        start = time.perf_counter()
        first_out = None
        for index, piece in enumerate(pieces_run):
            args.part = text_delta("r", "t1", piece)
            if processor.process_output_stream(args) is not None and first_out is None:
                first_out = index
        processor.flush_output_stream(args)
        chars = len(pieces_run) * 4
        print(
            f"   {label:<27} {time.perf_counter() - start:6.3f} s for {chars:,} chars; "
            f"first text released after {first_out if first_out is not None else '-'} chunks"
        )


async def input_guards() -> None:
    print("6. time to first token: three 200 ms input guards, 300 ms model")

    def guards(parallel: bool) -> list[Any]:
        return [
            ModerationProcessor(model=Judge(0.2), run_in_parallel=parallel),
            PromptInjectionDetector(model=Judge(0.2), run_in_parallel=parallel),
            PIIDetector(model=Judge(0.2), strategy="block", run_in_parallel=parallel),
        ]

    class Sequential(Processor):
        """The three guards one after another (what every input processor did before)."""

        id = "sequential"

        def __init__(self) -> None:
            super().__init__()
            self.inner = guards(False)

        async def process_input(self, args: Any) -> None:
            for guard in self.inner:
                await guard.process_input(args)

    for label, processors in (
        ("one after another", [Sequential()]),
        ("concurrently", guards(False)),
        ("run_in_parallel=True", guards(True)),
    ):
        agent = Agent(name="b", model=Paced(["hello"], first=0.3), input_processors=processors)
        first, _ = await first_and_total(agent)
        print(f"   {label:<22} {first * 1000:6.0f} ms")


async def streaming(repeat: int) -> None:
    await detector_calls()
    await latency(repeat)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs per latency figure (the median is shown)")
    parser.add_argument(
        "--per-chunk",
        action="store_true",
        help="section 4 alone, each figure the fastest 1,000-chunk block (for a loaded machine)",
    )
    options = parser.parse_args()
    if options.per_chunk:
        BLOCK = 1_000
        deterministic()
    else:
        asyncio.run(streaming(options.repeat))
        deterministic()
        asyncio.run(input_guards())
