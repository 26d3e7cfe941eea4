"""The `LanguageModel` protocol, in the AI SDK's V2 shapes.

A model takes `CallOptions` (a V2 prompt, V2 function tools, a tool choice, settings) and
returns V2 stream parts as plain dicts: `{"type": "text-delta", "id": "t1", "delta": "Hi"}`,
`{"type": "tool-call", "toolCallId": ..., "toolName": ..., "input": "<json>"}`,
`{"type": "finish", "finishReason": "stop", "usage": {...}}` and the rest of the spec.
Provider adapters in this package implement it; so does `sluicegate.testing.MockModel`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

StreamPart = dict[str, Any]
PromptMessage = dict[str, Any]
ToolChoice = dict[str, Any]
FinishReason = Literal["stop", "length", "content-filter", "tool-calls", "error", "other", "unknown"]


@dataclass
class CallOptions:
    """What the agent sends to a model for one call (AI SDK `LanguageModelV2CallOptions`)."""

    prompt: list[PromptMessage]
    tools: list[dict[str, Any]] = field(default_factory=list)
    """V2 function tools: `{"type": "function", "name", "description", "inputSchema"}`."""
    tool_choice: ToolChoice | None = None
    """`{"type": "auto" | "none" | "required"}` or `{"type": "tool", "toolName": ...}`."""
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    stop_sequences: list[str] | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    seed: int | None = None
    response_format: dict[str, Any] | None = None
    """`{"type": "text"}` or `{"type": "json", "schema": {...}, "name": ...}`."""
    provider_options: dict[str, Any] | None = None
    headers: dict[str, str] | None = None

    def tool_names(self) -> list[str]:
        return [t["name"] for t in self.tools]


@dataclass
class StreamResult:
    """What `do_stream` returns: the part stream plus request/response details."""

    stream: AsyncIterator[StreamPart]
    request: dict[str, Any] | None = None
    response: dict[str, Any] | None = None


@dataclass
class GenerateResult:
    """What `do_generate` returns: V2 content parts (`text`, `reasoning`, `tool-call`, ...)."""

    content: list[dict[str, Any]]
    finish_reason: str
    usage: dict[str, Any]
    provider_metadata: dict[str, Any] | None = None
    request: dict[str, Any] | None = None
    response: dict[str, Any] | None = None
    warnings: list[Any] = field(default_factory=list)


@runtime_checkable
class LanguageModel(Protocol):
    """A chat model reachable with V2 prompts."""

    @property
    def provider(self) -> str: ...

    @property
    def model_id(self) -> str: ...

    @property
    def specification_version(self) -> str: ...

    async def do_stream(self, options: CallOptions) -> StreamResult: ...

    async def do_generate(self, options: CallOptions) -> GenerateResult: ...


async def generate_from_stream(stream: AsyncIterator[StreamPart]) -> GenerateResult:
    """Collect a V2 part stream into a `GenerateResult` (for models that only stream)."""
    content: list[dict[str, Any]] = []
    texts: dict[str, dict[str, Any]] = {}
    finish_reason = "unknown"
    usage: dict[str, Any] = {}
    provider_metadata: dict[str, Any] | None = None
    response: dict[str, Any] = {}
    async for part in stream:
        kind = part.get("type")
        if kind in ("text-start", "reasoning-start"):
            block = {"type": "text" if kind == "text-start" else "reasoning", "text": ""}
            texts[f"{block['type']}:{part.get('id')}"] = block
            content.append(block)
        elif kind in ("text-delta", "reasoning-delta"):
            key = f"{'text' if kind == 'text-delta' else 'reasoning'}:{part.get('id')}"
            if key not in texts:
                texts[key] = {"type": key.split(":")[0], "text": ""}
                content.append(texts[key])
            texts[key]["text"] += part.get("delta", "")
        elif kind == "tool-call" or kind in ("file", "source"):
            content.append(dict(part))
        elif kind == "finish":
            finish_reason = part.get("finishReason", "unknown")
            usage = part.get("usage") or {}
            provider_metadata = part.get("providerMetadata")
        elif kind == "response-metadata":
            response.update({k: v for k, v in part.items() if k != "type"})
        elif kind == "error":
            error = part.get("error")
            raise error if isinstance(error, BaseException) else RuntimeError(str(error))
    return GenerateResult(
        content=content,
        finish_reason=finish_reason,
        usage=usage,
        provider_metadata=provider_metadata,
        response=response or None,
    )


def model_label(model: Any) -> str:
    """`provider/model_id` for messages and logs."""
    return f"{getattr(model, 'provider', '?')}/{getattr(model, 'model_id', '?')}"
