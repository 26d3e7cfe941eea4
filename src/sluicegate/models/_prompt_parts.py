"""Helpers for reading V2 prompt parts, shared by the provider adapters."""

from __future__ import annotations

import base64
import json
import time
from typing import Any


def tool_input_json(value: Any) -> str:
    """A tool call's input as the JSON string providers expect (V2 prompts may hold a dict)."""
    if isinstance(value, str):
        return value
    return json.dumps(value if value is not None else {})


def tool_input_object(value: Any) -> Any:
    """A tool call's input as an object (Anthropic's `tool_use.input`)."""
    if isinstance(value, str):
        try:
            return json.loads(value) if value.strip() else {}
        except ValueError:
            return {"input": value}
    return value if value is not None else {}


def tool_output_text(output: Any) -> str:
    """A V2 tool-result `output` (`{"type": "text"|"json"|"error-text"|..., "value"}`) as text."""
    if isinstance(output, dict) and "type" in output:
        kind = output["type"]
        value = output.get("value")
        if kind in ("text", "error-text"):
            return value if isinstance(value, str) else str(value)
        if kind in ("json", "error-json"):
            return json.dumps(value)
        if kind == "content" and isinstance(value, list):
            return "".join(
                p.get("text", "") for p in value if isinstance(p, dict) and p.get("type") == "text"
            )
    if isinstance(output, str):
        return output
    return json.dumps(output)


def tool_output_is_error(output: Any) -> bool:
    return isinstance(output, dict) and output.get("type") in ("error-text", "error-json")


def media_type(part: dict[str, Any]) -> str:
    return str(part.get("mediaType") or part.get("mimeType") or "application/octet-stream")


def is_url(data: Any) -> bool:
    return isinstance(data, str) and data.startswith(("http://", "https://"))


def base64_data(data: Any) -> str:
    """File data as base64 (bytes are encoded; a data URL loses its prefix; a string is kept)."""
    if isinstance(data, (bytes, bytearray)):
        return base64.b64encode(bytes(data)).decode("ascii")
    text = str(data)
    if text.startswith("data:") and "," in text:
        return text.split(",", 1)[1]
    return text


def data_url(part: dict[str, Any]) -> str:
    """A URL for a file part: its http(s) or data URL, or a data URL built from its bytes."""
    data = part.get("data")
    if isinstance(data, str) and (is_url(data) or data.startswith("data:")):
        return data
    return f"data:{media_type(part)};base64,{base64_data(data)}"


def provider_option(part: dict[str, Any], provider: str, key: str) -> Any:
    """`part.providerOptions[provider][key]` (or the `providerMetadata` spelling), else None."""
    for field in ("providerOptions", "providerMetadata"):
        options = part.get(field)
        if isinstance(options, dict):
            scoped = options.get(provider)
            if isinstance(scoped, dict) and key in scoped:
                return scoped[key]
    return None


def timestamp(seconds: Any) -> str | None:
    """An ISO timestamp from a Unix time in seconds (as providers send `created`)."""
    if not isinstance(seconds, (int, float)):
        return None
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + ".000Z"


def v2_usage(
    input_tokens: int | None,
    output_tokens: int | None,
    *,
    reasoning_tokens: int | None = None,
    cached_input_tokens: int | None = None,
    total_tokens: int | None = None,
) -> dict[str, Any]:
    """The V2 usage dict (`inputTokens`, `outputTokens`, `totalTokens`, `reasoningTokens`,
    `cachedInputTokens`)."""
    if total_tokens is None and (input_tokens is not None or output_tokens is not None):
        total_tokens = (input_tokens or 0) + (output_tokens or 0)
    return {
        "inputTokens": input_tokens,
        "outputTokens": output_tokens,
        "totalTokens": total_tokens,
        "reasoningTokens": reasoning_tokens,
        "cachedInputTokens": cached_input_tokens,
    }


EMPTY_USAGE: dict[str, Any] = v2_usage(None, None)
