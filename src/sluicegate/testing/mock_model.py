"""`MockModel`: a scripted `LanguageModel` for tests.

Each call consumes the next step. A step is a list of V2 stream part dicts, an exception to
raise from `do_stream`, or a callable of the call options returning either. `calls` records the
options of every call, in order.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from sluicegate.models.base import CallOptions, GenerateResult, StreamPart, StreamResult, generate_from_stream

Step = list[StreamPart] | BaseException | Callable[[CallOptions], Any]


class MockModel:
    """A model that replays scripted steps and records what it was asked."""

    specification_version = "v2"

    def __init__(
        self,
        steps: Sequence[Step] | None = None,
        *,
        provider: str = "mock-provider",
        model_id: str = "mock-model-id",
    ) -> None:
        self._steps: list[Step] = list(steps or [])
        self._provider = provider
        self._model_id = model_id
        self.calls: list[CallOptions] = []

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def model_id(self) -> str:
        return self._model_id

    def add_step(self, step: Step) -> None:
        self._steps.append(step)

    def _next_parts(self, options: CallOptions) -> list[StreamPart]:
        self.calls.append(options)
        index = len(self.calls) - 1
        if index >= len(self._steps):
            raise RuntimeError(f"MockModel was called {index + 1} times but has {len(self._steps)} steps")
        step: Any = self._steps[index]
        if callable(step) and not isinstance(step, BaseException):
            step = step(options)
        if isinstance(step, BaseException):
            raise step
        if not isinstance(step, list):
            raise TypeError(f"a MockModel step must be a list of stream parts or an exception, got {step!r}")
        return step

    async def do_stream(self, options: CallOptions) -> StreamResult:
        return StreamResult(stream=_replay(self._next_parts(options)))

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        return await generate_from_stream(_replay(self._next_parts(options)))


async def _replay(parts: list[StreamPart]) -> AsyncIterator[StreamPart]:
    for part in parts:
        if part.get("type") == "error" and isinstance(part.get("error"), BaseException) and part.get("raise"):
            raise part["error"]
        yield part


def text_step(
    text: str, *, input_tokens: int = 10, output_tokens: int = 5, pieces: int = 1
) -> list[StreamPart]:
    """A step that streams `text` (split into `pieces` deltas) and stops."""
    size = max(1, -(-len(text) // pieces)) if text else 1
    deltas = [text[i : i + size] for i in range(0, len(text), size)] or [""]
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t1"},
        *({"type": "text-delta", "id": "t1", "delta": d} for d in deltas),
        {"type": "text-end", "id": "t1"},
        {
            "type": "finish",
            "finishReason": "stop",
            "usage": {
                "inputTokens": input_tokens,
                "outputTokens": output_tokens,
                "totalTokens": input_tokens + output_tokens,
            },
        },
    ]


def tool_call_step(*calls: tuple[str, str, dict[str, Any]], text: str | None = None) -> list[StreamPart]:
    """A step that asks for tools: each call is `(tool_call_id, tool_name, args)`."""
    import json

    parts: list[StreamPart] = [{"type": "stream-start", "warnings": []}]
    if text:
        parts += [
            {"type": "text-start", "id": "t1"},
            {"type": "text-delta", "id": "t1", "delta": text},
            {"type": "text-end", "id": "t1"},
        ]
    parts += [
        {"type": "tool-call", "toolCallId": cid, "toolName": name, "input": json.dumps(args)}
        for cid, name, args in calls
    ]
    parts.append(
        {
            "type": "finish",
            "finishReason": "tool-calls",
            "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 15},
        }
    )
    return parts
