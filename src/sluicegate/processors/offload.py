"""Running a synchronous hook in a worker thread when its input is large.

A synchronous hook runs on the event loop: scanning a 10 MB message with regexes there freezes
every other request (and every timer) of the process for as long as the scan takes. Below
`OFFLOAD_THRESHOLD_CHARS` the thread hop costs more than the work, so small inputs stay on the
loop; above it the hook runs in `asyncio.to_thread` (the run awaits it, so the run's own state is
never touched concurrently). Per-chunk stream hooks never come here: a chunk is small.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

OFFLOAD_THRESHOLD_CHARS = 256 * 1024
"""Text size (characters, summed over the hook's messages) above which sync hooks go to a thread."""


def text_size(messages: Any, limit: int) -> int:
    """The characters of text in `messages`, counting stops once `limit` is passed."""
    total = 0
    for message in messages:
        content = getattr(message, "content", None)
        if content is None:
            continue
        if isinstance(content, str):  # a V2 prompt message or a plain chat dict
            total += len(content)
        else:
            parts = getattr(content, "parts", None)
            if parts is None and isinstance(content, list):
                parts = content
            for part in parts or ():
                if isinstance(part, dict):
                    text = part.get("text")
                    if isinstance(text, str):
                        total += len(text)
            flat = getattr(content, "content", None)
            if isinstance(flat, str):
                total += len(flat)
        if total > limit:
            break
    return total


def _is_large(args: Any, limit: int) -> bool:
    messages = getattr(args, "messages", None)
    if messages is None:
        messages = getattr(args, "prompt", None)
        if messages is None:
            return False
        messages = [_PromptMessage(m) for m in messages if isinstance(m, dict)]
    return text_size(messages, limit) > limit


class _PromptMessage:
    __slots__ = ("content",)

    def __init__(self, message: dict[str, Any]) -> None:
        self.content = message.get("content")


async def offload_sync_hook(fn: Callable[[Any], Any], args: Any) -> Any:
    """`fn(args)`, in a worker thread when the args carry more than the threshold of text."""
    if _is_large(args, OFFLOAD_THRESHOLD_CHARS):
        return await asyncio.to_thread(fn, args)
    return fn(args)
