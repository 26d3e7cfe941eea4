"""Anthropic's Messages API (`POST /v1/messages`) as a `LanguageModel`.

Requests go through the official `anthropic` SDK's `AsyncAnthropic` client; the adapter reads the
raw event JSON. Mappings worth knowing:

- system messages become the top-level `system` blocks; tool results become `tool_result`
  blocks in a user turn (consecutive user/tool messages are merged, as the API requires);
- `providerOptions.anthropic.cacheControl` on a message or a part becomes `cache_control`
  (on a message: on its last block);
- reasoning parts round-trip as `thinking` blocks when they carry
  `providerOptions.anthropic.signature` (`redactedData` for `redacted_thinking`); reasoning
  without a signature (another provider's) cannot be sent and is dropped;
- `provider_options={"anthropic": {"thinking": {"type": "enabled", "budgetTokens": 2048}}}`
  enables extended thinking (the budget is added to `max_tokens`).
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from typing import Any

from sluicegate.errors import MissingExtraError
from sluicegate.models._http_errors import close_quietly, error_part
from sluicegate.models._prompt_parts import (
    base64_data,
    is_url,
    media_type,
    provider_option,
    tool_input_object,
    tool_output_is_error,
    tool_output_text,
    v2_usage,
)
from sluicegate.models._response_checks import truncated_stream_error
from sluicegate.models._sdk_model import SDKModel, response_metadata
from sluicegate.models.base import CallOptions, GenerateResult, StreamPart

DEFAULT_MAX_TOKENS = 4096

_FINISH_REASONS = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool-calls",
    "refusal": "content-filter",
}


def anthropic_finish_reason(value: Any) -> str:
    return "unknown" if value is None else _FINISH_REASONS.get(value, "other")


def anthropic_usage(usage: dict[str, Any]) -> dict[str, Any]:
    """V2 usage; `inputTokens` counts uncached input, as the AI SDK reports it."""
    return v2_usage(
        usage.get("input_tokens"),
        usage.get("output_tokens"),
        cached_input_tokens=usage.get("cache_read_input_tokens"),
    )


def _cache_control(source: dict[str, Any]) -> Any:
    return provider_option(source, "anthropic", "cacheControl") or provider_option(
        source, "anthropic", "cache_control"
    )


class AnthropicMessagesModel(SDKModel):
    """A Claude model served by the Messages API."""

    path = "/v1/messages"
    default_provider = "anthropic.messages"
    default_api_key_env = "ANTHROPIC_API_KEY"
    missing_key_message = "anthropic/{model_id} needs an API key: set the {env} environment variable"

    def _sdk_classes(self) -> tuple[Any, Any]:
        try:
            from anthropic import AsyncAnthropic, AsyncStream
        except ImportError as exc:
            raise MissingExtraError("anthropic", extra="anthropic", feature="AnthropicMessagesModel") from exc

        return AsyncAnthropic, AsyncStream

    # ------------------------------------------------------------------ request

    def build_body(self, options: CallOptions, *, stream: bool) -> dict[str, Any]:
        system, messages = convert_prompt(options.prompt)
        anthropic_options = (options.provider_options or {}).get("anthropic") or {}
        max_tokens = options.max_output_tokens or DEFAULT_MAX_TOKENS
        body: dict[str, Any] = {"model": self._model_id, "messages": messages}
        if system:
            body["system"] = system
        thinking = anthropic_options.get("thinking")
        if isinstance(thinking, dict) and thinking.get("type") == "enabled":
            budget = int(thinking.get("budgetTokens") or thinking.get("budget_tokens") or 1024)
            body["thinking"] = {"type": "enabled", "budget_tokens": budget}
            max_tokens += budget
        else:
            if options.temperature is not None:
                body["temperature"] = options.temperature
            if options.top_p is not None:
                body["top_p"] = options.top_p
            if options.top_k is not None:
                body["top_k"] = options.top_k
        body["max_tokens"] = max_tokens
        if options.stop_sequences:
            body["stop_sequences"] = options.stop_sequences
        choice = options.tool_choice or {"type": "auto"}
        if options.tools and choice.get("type") != "none":
            body["tools"] = [
                {
                    "name": t["name"],
                    "description": t.get("description") or "",
                    "input_schema": t.get("inputSchema") or {"type": "object"},
                    **({"cache_control": _cache_control(t)} if _cache_control(t) else {}),
                }
                for t in options.tools
                if t.get("type", "function") == "function"
            ]
            kind = choice.get("type")
            tool_choice: dict[str, Any] = {"type": {"auto": "auto", "required": "any"}.get(str(kind), "tool")}
            if kind == "tool":
                tool_choice["name"] = choice["toolName"]
            if anthropic_options.get("disableParallelToolUse"):
                tool_choice["disable_parallel_tool_use"] = True
            body["tool_choice"] = tool_choice
        if anthropic_options.get("metadata"):
            body["metadata"] = anthropic_options["metadata"]
        if stream:
            body["stream"] = True
        return body

    # ------------------------------------------------------------------ responses

    def _generate_result(self, body: dict[str, Any], data: Any) -> GenerateResult:
        content: list[dict[str, Any]] = []
        for block in data.get("content") or []:
            kind = block.get("type")
            if kind == "text":
                content.append({"type": "text", "text": block.get("text", "")})
            elif kind == "thinking":
                content.append(
                    {
                        "type": "reasoning",
                        "text": block.get("thinking", ""),
                        "providerMetadata": {"anthropic": {"signature": block.get("signature")}},
                    }
                )
            elif kind == "redacted_thinking":
                content.append(
                    {
                        "type": "reasoning",
                        "text": "",
                        "providerMetadata": {"anthropic": {"redactedData": block.get("data")}},
                    }
                )
            elif kind == "tool_use":
                content.append(
                    {
                        "type": "tool-call",
                        "toolCallId": block.get("id"),
                        "toolName": block.get("name"),
                        "input": json.dumps(block.get("input") or {}),
                    }
                )
        usage = data.get("usage") or {}
        return GenerateResult(
            content=content,
            finish_reason=anthropic_finish_reason(data.get("stop_reason")),
            usage=anthropic_usage(usage),
            provider_metadata={
                "anthropic": {"cacheCreationInputTokens": usage.get("cache_creation_input_tokens")}
            },
            request={"body": body},
            response={"id": data.get("id"), "modelId": data.get("model"), "body": data},
        )

    async def _parts(self, stream: Any, body: dict[str, Any]) -> AsyncIterator[StreamPart]:
        yield {"type": "stream-start", "warnings": []}
        blocks: dict[int, dict[str, Any]] = {}
        usage: dict[str, Any] = {}
        reason = "unknown"
        stopped = False
        try:
            async for event in stream:
                kind = event.get("type")
                if kind == "content_block_delta":
                    index = event.get("index", 0)
                    delta = event.get("delta") or {}
                    delta_kind = delta.get("type")
                    if delta_kind == "text_delta":
                        yield {"type": "text-delta", "id": str(index), "delta": delta.get("text", "")}
                    elif delta_kind == "input_json_delta":
                        block = blocks[index]
                        block["json"] += delta.get("partial_json", "")
                        yield {
                            "type": "tool-input-delta",
                            "id": block["id"],
                            "delta": delta.get("partial_json", ""),
                        }
                    elif delta_kind == "thinking_delta":
                        yield {
                            "type": "reasoning-delta",
                            "id": str(index),
                            "delta": delta.get("thinking", ""),
                        }
                    elif delta_kind == "signature_delta":
                        yield {
                            "type": "reasoning-delta",
                            "id": str(index),
                            "delta": "",
                            "providerMetadata": {"anthropic": {"signature": delta.get("signature")}},
                        }
                elif kind == "content_block_start":
                    index = event.get("index", 0)
                    block = event.get("content_block") or {}
                    block_kind = block.get("type")
                    blocks[index] = {
                        "type": block_kind,
                        "id": block.get("id"),
                        "name": block.get("name"),
                        "json": "",
                    }
                    if block_kind == "text":
                        yield {"type": "text-start", "id": str(index)}
                    elif block_kind == "thinking":
                        yield {"type": "reasoning-start", "id": str(index)}
                    elif block_kind == "redacted_thinking":
                        yield {
                            "type": "reasoning-start",
                            "id": str(index),
                            "providerMetadata": {"anthropic": {"redactedData": block.get("data")}},
                        }
                    elif block_kind == "tool_use":
                        yield {
                            "type": "tool-input-start",
                            "id": block.get("id"),
                            "toolName": block.get("name"),
                        }
                elif kind == "content_block_stop":
                    index = event.get("index", 0)
                    block = blocks.pop(index, {"type": None})
                    if block["type"] == "text":
                        yield {"type": "text-end", "id": str(index)}
                    elif block["type"] in ("thinking", "redacted_thinking"):
                        yield {"type": "reasoning-end", "id": str(index)}
                    elif block["type"] == "tool_use":
                        yield {"type": "tool-input-end", "id": block["id"]}
                        yield {
                            "type": "tool-call",
                            "toolCallId": block["id"],
                            "toolName": block["name"],
                            "input": block["json"] or "{}",
                        }
                elif kind == "message_start":
                    message = event.get("message") or {}
                    usage.update(message.get("usage") or {})
                    yield {"type": "response-metadata", **response_metadata(message, time.time())}
                elif kind == "message_delta":
                    delta = event.get("delta") or {}
                    if delta.get("stop_reason"):
                        reason = anthropic_finish_reason(delta["stop_reason"])
                    usage.update({k: v for k, v in (event.get("usage") or {}).items() if v is not None})
                elif kind == "message_stop":
                    stopped = True
        except Exception as exc:
            yield error_part(exc, url=self._url(), request_body=body)
            return
        finally:
            await close_quietly(stream)
        if not stopped:
            yield {"type": "error", "error": truncated_stream_error(self._url(), body, "message_stop")}
            return
        yield {
            "type": "finish",
            "finishReason": reason,
            "usage": anthropic_usage(usage),
            "providerMetadata": {
                "anthropic": {"cacheCreationInputTokens": usage.get("cache_creation_input_tokens")}
            },
        }


# ---------------------------------------------------------------------- prompt


def _file_block(part: dict[str, Any]) -> dict[str, Any]:
    mime = media_type(part)
    data = part.get("data")
    source: dict[str, Any]
    if is_url(data):
        source = {"type": "url", "url": data}
    elif mime.startswith("text/"):
        text = data.decode() if isinstance(data, (bytes, bytearray)) else str(data)
        source = {"type": "text", "media_type": "text/plain", "data": text}
    else:
        source = {"type": "base64", "media_type": mime, "data": base64_data(data)}
    return {"type": "image" if mime.startswith("image/") else "document", "source": source}


def _with_cache(block: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
    cache = _cache_control(part)
    if cache:
        block["cache_control"] = cache
    return block


def _user_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks: list[dict[str, Any]] = []
    for part in content or []:
        kind = part.get("type")
        if kind == "text":
            blocks.append(_with_cache({"type": "text", "text": part["text"]}, part))
        elif kind == "file":
            blocks.append(_with_cache(_file_block(part), part))
        elif kind == "tool-result":
            output = part.get("output")
            blocks.append(
                _with_cache(
                    {
                        "type": "tool_result",
                        "tool_use_id": part["toolCallId"],
                        "content": tool_output_text(output),
                        **({"is_error": True} if tool_output_is_error(output) else {}),
                    },
                    part,
                )
            )
    return blocks


def _assistant_blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks: list[dict[str, Any]] = []
    for part in content or []:
        kind = part.get("type")
        if kind == "text":
            if part.get("text"):
                blocks.append(_with_cache({"type": "text", "text": part["text"]}, part))
        elif kind == "reasoning":
            signature = provider_option(part, "anthropic", "signature")
            redacted = provider_option(part, "anthropic", "redactedData")
            if signature:
                blocks.append({"type": "thinking", "thinking": part.get("text", ""), "signature": signature})
            elif redacted:
                blocks.append({"type": "redacted_thinking", "data": redacted})
        elif kind == "tool-call":
            blocks.append(
                _with_cache(
                    {
                        "type": "tool_use",
                        "id": part["toolCallId"],
                        "name": part["toolName"],
                        "input": tool_input_object(part.get("input")),
                    },
                    part,
                )
            )
    return blocks


def convert_prompt(prompt: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A V2 prompt as Anthropic's (`system` blocks, `messages`)."""
    system: list[dict[str, Any]] = []
    messages: list[dict[str, Any]] = []
    for message in prompt:
        role = message["role"]
        if role == "system":
            system.append(_with_cache({"type": "text", "text": message.get("content") or ""}, message))
            continue
        wire_role = "assistant" if role == "assistant" else "user"
        blocks = _assistant_blocks(message) if role == "assistant" else _user_blocks(message)
        if not blocks:
            continue
        cache = _cache_control(message)
        if cache:
            blocks[-1]["cache_control"] = cache
        if messages and messages[-1]["role"] == wire_role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": wire_role, "content": blocks})
    return system, messages
