"""`Writer`: what `args.writer` (processors) and the tool context hand out to emit `data-*` chunks."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from html import escape
from typing import Any

from sluicegate.messages import Message
from sluicegate.messages.message import MessageContent
from sluicegate.messages.part import Part
from sluicegate.stream.chunk import Chunk


class Writer:
    """`writer.custom(...)` for processors and tools: emits a `data-*` chunk."""

    __slots__ = ("_emit", "_run_id")

    def __init__(self, run_id: str, emit: Callable[[Chunk], Any]) -> None:
        self._run_id = run_id
        self._emit = emit

    def emit(self, chunk: Chunk) -> Any:
        """Emit a chunk as built (the run's own emitter, awaitable or not)."""
        return self._emit(chunk)

    async def custom(self, chunk: dict[str, Any]) -> None:
        kind = chunk.get("type") if isinstance(chunk, dict) else None
        if not isinstance(kind, str) or not kind.startswith("data-"):
            raise ValueError(f"custom chunks must have a type starting with 'data-', got {kind!r}")
        out = Chunk(
            kind,
            chunk.get("runId") or self._run_id,
            data=chunk.get("data"),
            from_=chunk.get("from", "AGENT"),
        )
        if chunk.get("transient"):
            out.transient = True  # shown live, never stored
        result = self._emit(out)
        if inspect.isawaitable(result):
            await result


def signal_message(signal: dict[str, Any]) -> Message:
    """A reactive signal as the `<system-reminder …>` user message the model sees."""
    tag = signal.get("tagName") or signal.get("tag_name") or "system-reminder"
    contents = signal.get("contents", "")
    if not isinstance(contents, str):
        contents = str(contents)
    attributes = signal.get("attributes") or {}
    rendered = "".join(f' {name}="{escape(str(value), quote=True)}"' for name, value in attributes.items())
    text = f"<{tag}{rendered}>{contents}</{tag}>"
    metadata = {
        "signal": {
            "type": signal.get("type", "reactive"),
            "tagName": tag,
            "attributes": attributes,
            "contents": contents,
        }
    }
    return Message(
        role="user",
        content=MessageContent(parts=[Part(type="text", text=text)], content=text, metadata=metadata),
    )
