"""Structured output on the wire: Mastra's `object` events (the answer so far, parsed each time
it changes) and `object-result` (the whole answer, before its step's `step-finish`).

Only a run with `structuredOutput` goes through this extra generator; it is the same parsing
`ModelOutput.object_stream` does in process.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import Any, cast

from sluicegate.agent.structured import parse_partial_json, strip_code_fence


class WireOnly:
    """An event the wire carries that is no chunk of the run (`type`, and its JSON)."""

    __slots__ = ("event", "type")

    def __init__(self, event: dict[str, Any]) -> None:
        self.type = event["type"]
        self.event = event

    def to_dict(self) -> dict[str, Any]:
        return dict(self.event)


def _whole(text: str) -> Any:
    try:
        return json.loads(strip_code_fence(text) if text.lstrip().startswith("```") else text)
    except ValueError:
        return parse_partial_json(text)


async def with_objects(chunks: AsyncIterator[Any], run_id: str) -> AsyncIterator[Any]:
    """`chunks` with an `object` event before each text delta that changes the parsed answer,
    and an `object-result` before the `step-finish` of a step that wrote one."""
    pieces: list[str] = []
    last: Any = None
    async with aclosing(cast(AsyncGenerator[Any, None], chunks)) as source:
        async for chunk in source:
            kind = chunk.type
            if kind == "text-delta":
                pieces.append(chunk.payload.text)
                value = parse_partial_json("".join(pieces))
                if value is not None and value != last:
                    last = value
                    yield WireOnly({"type": "object", "runId": run_id, "from": "AGENT", "object": value})
            elif kind == "step-start":
                pieces.clear()
                last = None
            elif kind == "step-finish" and last is not None:
                whole = _whole("".join(pieces))
                yield WireOnly({"type": "object-result", "runId": run_id, "from": "AGENT", "object": whole})
                pieces.clear()
                last = None
            yield chunk
