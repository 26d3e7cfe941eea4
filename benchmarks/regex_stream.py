"""Per-chunk overhead of RegexFilter's stream redactor (target: at most 3 µs added per chunk).

Feeds LLM-like token deltas through `process_output_stream` and compares with a processor that
returns each chunk unchanged (the cost any stream processor pays), for several rule sets.
"""

from __future__ import annotations

import time

from sluicegate.processors import ProcessOutputStreamArgs, RegexFilter
from sluicegate.processors.base import Processor
from sluicegate.request_context import RequestContext
from sluicegate.stream.chunk import Chunk, text_delta

TARGET_ADDED_US = 3.0

PROSE = (
    "The quarterly report shows steady growth across all regions, and the team expects the "
    "trend to continue into next year as new products reach customers. "
) * 40


def tokens(text: str) -> list[str]:
    out, word = [], ""
    for char in text:
        if char == " " and word:
            out.append(word)
            word = ""
        word += char
    return [*out, word] if word else out


class PassThrough(Processor):
    id = "pass"

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk:
        return args.part


def per_chunk(processor: Processor, chunks: list[Chunk], rounds: int = 20) -> float:
    def _abort(*_: object, **__: object) -> None:
        raise RuntimeError

    best = float("inf")
    for _ in range(rounds):
        args = ProcessOutputStreamArgs(abort=_abort, request_context=RequestContext())  # type: ignore[arg-type]
        hook = processor.process_output_stream
        start = time.perf_counter()
        for chunk in chunks:
            args.part = chunk
            hook(args)
        args.part = Chunk("text-end", "r")
        hook(args)
        best = min(best, (time.perf_counter() - start) / len(chunks))
    return best * 1e6


def main() -> None:
    chunks = [text_delta("r", "t1", t) for t in tokens(PROSE)]
    base = per_chunk(PassThrough(), chunks)
    print(f"{len(chunks)} chunks of prose; pass-through processor: {base:.2f} µs/chunk")
    cases = {
        "1 custom rule (TICKET-\\d{6})": RegexFilter(
            rules=[{"name": "t", "pattern": r"TICKET-\d{6}"}], strategy="redact"
        ),
        "urls preset": RegexFilter(presets=["urls"], strategy="redact"),
        "secrets preset": RegexFilter(presets=["secrets"], strategy="redact"),
        "pii preset": RegexFilter(presets=["pii"], strategy="redact"),
        "pii + secrets + urls": RegexFilter(presets=["pii", "secrets", "urls"], strategy="redact"),
    }
    added: dict[str, float] = {}
    for label, processor in cases.items():
        cost = per_chunk(processor, chunks)
        added[label] = cost - base
        print(f"  {label:30s}: {cost:6.2f} µs/chunk, {cost - base:6.2f} µs added")
    verdict = "met" if added["pii preset"] <= TARGET_ADDED_US else "NOT met"
    print(f"target: pii preset adds <= {TARGET_ADDED_US:.0f} µs per chunk: {verdict}")


if __name__ == "__main__":
    main()
