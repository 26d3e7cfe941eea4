"""How the built-in LLM guardrails check `data-*` chunks.

A tool (or a processor) writes `data-*` chunks straight to the client with `writer.custom`:
a secret or a leaked system prompt in one is as exposed as one in the answer text. Mastra's
processors skip data chunks unless they set `process_data_parts`, so user processors keep that
default; the built-in output guardrails opt in by default (`process_data_parts=False` opts out).

A data chunk is checked as one text: every string in its `data` (through dicts, lists and
tuples, in order), joined by newlines and judged in windows of the guardrail's `window_chars`
(overlapping by `overlap_chars`, judged concurrently), so a chunk of N characters costs
about N / (window_chars - overlap_chars) detector calls, and a chunk without strings none. A
chunk with the same strings as one judged before in the run reuses that verdict (a tool
repeating `{"status": "indexing"}` costs one call). Data chunks written by sluicegate's own
processors (retractions, limit notices) hold no model or tool content and are not judged.

Outcomes follow the guardrail's strategy: block aborts the run, warn reports and passes the
chunk, filter drops the chunk, redact rewrites the strings (a redaction that cannot be placed
drops the chunk). The guardrail's `judge_window(text, args)` decides, exactly as for text.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from typing import Any

from sluicegate.errors import ConfigurationError
from sluicegate.stream.chunk import Chunk

OWN_DATA_TYPES = frozenset(
    (
        "data-guardrail-retraction",  # the windowed guardrails' retractions
        "data-token-limit-reached",  # TokenLimiter
        "data-system-reminder",  # PrefillErrorHandler
    )
)
"""Data chunks sluicegate's processors write: fixed notices, not judged."""

_MEMO_KEY = "data_part_verdicts"
_MEMO_SIZE = 256
_DROPPED = object()
_UNJUDGED = object()

StreamHook = Callable[[Any, Any], Awaitable[Chunk | list[Chunk] | None]]


def check_flag(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigurationError(f"process_data_parts must be True or False, got {value!r}")
    return value


def strings_of(value: Any) -> Iterator[str]:
    """Every string inside `value` (through dicts, lists and tuples), in order."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings_of(item)
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from strings_of(item)


def replace_strings(value: Any, replacements: Iterator[str]) -> Any:
    """`value` with its strings (in `strings_of` order) replaced by the next of `replacements`."""
    if isinstance(value, str):
        return next(replacements)
    if isinstance(value, dict):
        return {key: replace_strings(item, replacements) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(replace_strings(item, replacements) for item in value)
    return value


async def guard_data_part(guard: Any, args: Any, stream_hook: StreamHook) -> Chunk | list[Chunk] | None:
    """`process_output_stream` of a windowed guardrail for a `data-*` chunk: the chunk checked
    (see the module docstring), then handed to `stream_hook` (the windowed stream, which
    releases the text held before it first)."""
    part: Chunk = args.part
    if part.type in OWN_DATA_TYPES:
        return part
    checked = await check_data(guard, args, part)
    out = await stream_hook(guard, args)
    return swap(out, part, checked)


def swap(out: Chunk | list[Chunk] | None, part: Chunk, checked: Chunk | None) -> Chunk | list[Chunk] | None:
    """The stream hook's output with `part` replaced by `checked` (removed when None)."""
    if out is part:
        return checked
    if isinstance(out, list):
        replaced = [checked if chunk is part else chunk for chunk in out]
        kept = [chunk for chunk in replaced if chunk is not None]
        return kept or None
    return out


async def check_data(guard: Any, args: Any, part: Chunk) -> Chunk | None:
    """`part` as the guardrail lets it out: unchanged, with its strings redacted, or None."""
    leaves = list(strings_of(part.data))
    if not any(leaf.strip() for leaf in leaves):
        return part
    text = "\n".join(leaves)
    memo: dict[str, Any] = args.state.setdefault(_MEMO_KEY, {})
    known = memo.get(text, _UNJUDGED)
    if known is _UNJUDGED:
        known = await _judge(guard, args, text, leaves)
        if len(memo) >= _MEMO_SIZE:
            memo.pop(next(iter(memo)))
        memo[text] = known
    if known is _DROPPED:
        return None
    if known is None:
        return part
    data = replace_strings(part.data, iter(known))
    return Chunk(part.type, part.run_id, part.payload, data, part.from_)


async def _judge(guard: Any, args: Any, text: str, leaves: list[str]) -> Any:
    """The new strings of a data chunk's text (`leaves` joined), `_DROPPED`, or None when it
    passes as it is. A block raises `TripWire` from the judge."""
    size = max(1, int(guard.window_chars))
    step = max(1, size - int(guard.overlap_chars))
    starts = [0]
    while starts[-1] + size < len(text):
        starts.append(starts[-1] + step)
    results = await asyncio.gather(
        *(guard.judge_window(text[start : start + size], args) for start in starts), return_exceptions=True
    )
    judgements: list[Any] = []
    for result in results:
        if isinstance(result, BaseException):
            raise result
        judgements.append(result)
    edits: list[tuple[int, int, str, Callable[[str, str], str] | None]] = []
    for start, judgement in zip(starts, judgements, strict=True):
        if not judgement.flagged:
            continue
        if judgement.drop:
            return _DROPPED
        edits.extend((start + s.start, start + s.end, s.type, judgement.replace) for s in judgement.spans)
    if not edits:
        return None
    return _apply(leaves, _merged(edits))


def _merged(
    edits: list[tuple[int, int, str, Callable[[str, str], str] | None]],
) -> list[tuple[int, int, str, Callable[[str, str], str] | None]]:
    """Overlapping redactions (a value judged in two overlapping windows) as one."""
    edits.sort(key=lambda e: (e[0], -e[1]))
    merged: list[tuple[int, int, str, Callable[[str, str], str] | None]] = []
    for edit in edits:
        if merged and edit[0] < merged[-1][1]:
            last = merged[-1]
            merged[-1] = (last[0], max(last[1], edit[1]), last[2], last[3])
        else:
            merged.append(edit)
    return merged


def _apply(
    leaves: list[str], edits: list[tuple[int, int, str, Callable[[str, str], str] | None]]
) -> list[str]:
    """Each leaf with the redactions that fall in it applied (a redaction spanning two leaves
    is applied to each part)."""
    out: list[str] = []
    offset = 0
    for leaf in leaves:
        end = offset + len(leaf)
        pieces: list[str] = []
        cursor = offset
        for start, stop, kind, replace in edits:
            if stop <= offset or start >= end:
                continue
            start, stop = max(start, offset), min(stop, end)
            if start < cursor:
                continue
            pieces.append(leaf[cursor - offset : start - offset])
            value = leaf[start - offset : stop - offset]
            pieces.append(replace(value, kind) if replace is not None else "")
            cursor = stop
        pieces.append(leaf[cursor - offset :])
        out.append("".join(pieces))
        offset = end + 1  # the newline joining the leaves
    return out
