"""`StepRecorder`: turns one model call's chunks into the step's assistant message and result.

It is fed processed chunks (what the client sees) for the message the conversation keeps, and
model-level bookkeeping (finish reason, usage, response metadata) directly from the model.
"""

from __future__ import annotations

import json
from typing import Any

from sluicegate.clock import now_ms
from sluicegate.messages import Message
from sluicegate.messages.message import MessageContent
from sluicegate.messages.part import Part, stamped
from sluicegate.stream.chunk import Chunk
from sluicegate.stream.usage import Usage

MAX_ARGS_DEPTH = 64
"""Tool arguments nested deeper than this are refused: no tool schema needs it, and copying,
validating or serialising such a structure would hit Python's recursion limit mid-run."""


class UnparsedArgs(str):
    """Tool-call input that cannot be used as arguments (kept as the raw text); `reason` says
    why. The call becomes a `tool-error` the model sees."""

    reason: str = "could not be read"


def _unparsed(raw: str, reason: str) -> UnparsedArgs:
    value = UnparsedArgs(raw)
    value.reason = reason
    return value


def _too_deep(value: Any, limit: int) -> bool:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def parse_args(raw: Any) -> Any:
    """Tool-call input arrives as a JSON string; a string that is not JSON is kept as it is
    (the tool then rejects it). Input nested deeper than `MAX_ARGS_DEPTH` (or than the JSON
    decoder allows) becomes `UnparsedArgs`, so the call fails as a tool error, not the run."""
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            value = json.loads(raw)
        except ValueError:
            return raw
        except RecursionError:
            return _unparsed(raw, "are nested deeper than the JSON decoder allows")
    else:
        if raw is None:
            return {}
        value = raw
    if isinstance(value, (dict, list)) and _too_deep(value, MAX_ARGS_DEPTH):
        text = raw if isinstance(raw, str) else "<arguments>"
        return _unparsed(text, f"are nested deeper than {MAX_ARGS_DEPTH} levels")
    return value


class StepRecorder:
    """Accumulates one step: parts in order, tool calls, finish reason, usage. Each part is
    dated (`createdAt`, epoch ms) once, when it is made: per part, never per delta."""

    __slots__ = (
        "_open_reasoning",
        "_reasoning_pieces",
        "_text_pieces",
        "finish_reason",
        "model_chunks",
        "open_text",
        "parts",
        "provider_metadata",
        "replayed_results",
        "response",
        "step_number",
        "tool_calls",
        "usage",
        "warnings",
    )

    def __init__(self, step_number: int) -> None:
        self.step_number = step_number
        self.parts: list[Part] = [Part(type="step-start", createdAt=now_ms())]
        self.tool_calls: list[Chunk] = []
        self.replayed_results: dict[str, Chunk] = {}
        """Tool results a cached response replayed with its calls (those tools do not run again)."""
        self.model_chunks: list[Chunk] = []
        self.finish_reason: str | None = None
        self.usage = Usage()
        self.provider_metadata: dict[str, Any] | None = None
        self.response: dict[str, Any] = {}
        self.warnings: list[Any] = []
        self.open_text: list[str] | None = None
        self._text_pieces: dict[int, list[str]] = {}
        self._open_reasoning: list[str] | None = None
        self._reasoning_pieces: dict[int, list[str]] = {}

    # ---- text, on the hot path: one list append per delta

    def start_text(self) -> list[str]:
        pieces: list[str] = []
        part = Part(type="text", text="", createdAt=now_ms())
        self.parts.append(part)
        self._text_pieces[id(part)] = pieces
        self.open_text = pieces
        return pieces

    def end_text(self) -> None:
        self.open_text = None

    def start_reasoning(self, provider_metadata: Any = None) -> list[str]:
        pieces: list[str] = []
        part = Part(type="reasoning", text="", details=[], createdAt=now_ms())
        if provider_metadata is not None:
            part["providerMetadata"] = provider_metadata
        self.parts.append(part)
        self._reasoning_pieces[id(part)] = pieces
        self._open_reasoning = pieces
        return pieces

    def add_reasoning(self, text: str, provider_metadata: Any = None) -> None:
        pieces = self._open_reasoning
        if pieces is None:
            pieces = self.start_reasoning(provider_metadata)
        pieces.append(text)

    def end_reasoning(self, provider_metadata: Any = None) -> None:
        if provider_metadata is not None and self._open_reasoning is not None:
            for part in reversed(self.parts):
                if part.get("type") == "reasoning":
                    part["providerMetadata"] = provider_metadata
                    break
        self._open_reasoning = None

    # ---- everything else

    def record(self, chunk: Chunk) -> None:
        """Record a processed chunk that is not a text delta."""
        kind = chunk.type
        if kind == "text-start":
            self.start_text()
        elif kind == "text-end":
            self.end_text()
        elif kind == "reasoning-start":
            self.start_reasoning(chunk.payload.get("provider_metadata"))
        elif kind == "reasoning-delta":
            self.add_reasoning(chunk.payload.text)
        elif kind == "reasoning-end":
            self.end_reasoning(chunk.payload.get("provider_metadata"))
        elif kind == "tool-call":
            payload = chunk.payload
            self.tool_calls.append(chunk)
            invocation = {
                "state": "call",
                "toolCallId": payload.tool_call_id,
                "toolName": payload.tool_name,
                "args": payload.args,
            }
            self.parts.append(Part(type="tool-invocation", toolInvocation=invocation, createdAt=now_ms()))
        elif kind == "file":
            self.parts.append(
                Part(
                    type="file",
                    data=chunk.payload.get("data"),
                    mimeType=chunk.payload.get("media_type") or chunk.payload.get("mime_type"),
                    createdAt=now_ms(),
                )
            )
        elif kind == "source":
            self.parts.append(stamped(Part(type="source", **vars(chunk.payload))))

    def finalize_parts(self) -> None:
        for part in self.parts:
            pieces = self._text_pieces.pop(id(part), None)
            if pieces is not None:
                part["text"] = "".join(pieces)
                continue
            pieces = self._reasoning_pieces.pop(id(part), None)
            if pieces is not None:
                part["text"] = "".join(pieces)
        self.parts = [p for p in self.parts if not (p.get("type") == "text" and not p.get("text"))]

    def current_text(self) -> str:
        """The text emitted so far (works mid-stream, before `finalize_parts`)."""
        out: list[str] = []
        for part in self.parts:
            if part.get("type") == "text":
                pieces = self._text_pieces.get(id(part))
                out.append("".join(pieces) if pieces is not None else part.get("text", ""))
        return "".join(out)

    def text(self) -> str:
        return "".join(p.get("text", "") for p in self.parts if p.get("type") == "text")

    def reasoning_text(self) -> str:
        return "".join(p.get("text", "") for p in self.parts if p.get("type") == "reasoning")

    def invocation(self, tool_call_id: str) -> dict[str, Any] | None:
        for part in self.parts:
            if part.get("type") == "tool-invocation" and part["toolInvocation"]["toolCallId"] == tool_call_id:
                return part["toolInvocation"]  # type: ignore[no-any-return]
        return None

    def to_message(
        self, *, thread_id: str | None, resource_id: str | None, message_id: str | None = None
    ) -> Message | None:
        """The assistant message of this step (None when the model said nothing), under
        `message_id` when given (the id its `step-start` chunk announced)."""
        if len(self.parts) <= 1:
            return None
        text = self.text()
        content = MessageContent(parts=list(self.parts), content=text or None)
        if self.provider_metadata:
            content.extra["providerMetadata"] = self.provider_metadata
        message = Message(role="assistant", content=content, thread_id=thread_id, resource_id=resource_id)
        if message_id is not None:
            message.id = message_id
        return message
