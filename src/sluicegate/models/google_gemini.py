"""Google Gemini (Gemini Developer API) as a `LanguageModel`, through the official `google-genai`
SDK (`pip install 'sluicegate[gemini]'`).

`"google/gemini-2.5-flash"` resolves here. The key is read from `GOOGLE_GENERATIVE_AI_API_KEY`
(the AI SDK's name), `GEMINI_API_KEY` or `GOOGLE_API_KEY`, in that order.

Mapping, as the AI SDK's Google provider does it: system messages become `system_instruction`;
user and assistant turns become `user` / `model` contents; tool calls are `function_call` parts
and tool results `function_response` parts (`{"name", "content"}`); JSON `response_format`
sets `response_mime_type="application/json"` with the schema as `response_json_schema`; tools
are `function_declarations` with `parameters_json_schema`; tool choice is a
`function_calling_config` (`AUTO`, `NONE`, `ANY`, `ANY` with one allowed name). Parts marked
`thought` stream as reasoning. SDK retries are off: retrying is the agent's job.
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from sluicegate.errors import APICallError, MissingAPIKeyError, MissingExtraError, retryable_status
from sluicegate.models._prompt_parts import (
    EMPTY_USAGE,
    media_type,
    timestamp,
    tool_input_object,
    tool_output_text,
    v2_usage,
)
from sluicegate.models.base import CallOptions, GenerateResult, StreamPart, StreamResult, generate_from_stream

API_KEY_ENVS = ("GOOGLE_GENERATIVE_AI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY")

_FINISH_REASONS = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content-filter",
    "RECITATION": "content-filter",
    "BLOCKLIST": "content-filter",
    "PROHIBITED_CONTENT": "content-filter",
    "SPII": "content-filter",
    "IMAGE_SAFETY": "content-filter",
    "MALFORMED_FUNCTION_CALL": "error",
}


def finish_reason(value: Any, *, has_tool_calls: bool) -> str:
    """A V2 finish reason from Gemini's `finishReason` (an enum member or its name)."""
    if value is None:
        return "unknown"
    name = str(getattr(value, "value", value))
    reason = _FINISH_REASONS.get(name, "other")
    return "tool-calls" if reason == "stop" and has_tool_calls else reason


def gemini_usage(metadata: Any) -> dict[str, Any]:
    """V2 usage from `usage_metadata`."""
    if metadata is None:
        return dict(EMPTY_USAGE)

    def get(key: str) -> Any:
        return metadata.get(key) if isinstance(metadata, dict) else getattr(metadata, key, None)

    return v2_usage(
        get("prompt_token_count"),
        get("candidates_token_count"),
        total_tokens=get("total_token_count"),
        reasoning_tokens=get("thoughts_token_count"),
        cached_input_tokens=get("cached_content_token_count"),
    )


def _inline(part: dict[str, Any], data: Any, mime: str) -> dict[str, Any]:
    if isinstance(data, str) and data.startswith(("http://", "https://")):
        return {"file_data": {"file_uri": data, "mime_type": mime}}
    if isinstance(data, (bytes, bytearray)):
        data = base64.b64encode(bytes(data)).decode("ascii")
    elif isinstance(data, str) and data.startswith("data:"):
        data = data.split(",", 1)[1]
    return {"inline_data": {"mime_type": mime, "data": data}}


def convert_prompt(prompt: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
    """(system instruction, contents) for a V2 prompt."""
    system: list[str] = []
    contents: list[dict[str, Any]] = []

    def add(role: str, parts: list[dict[str, Any]]) -> None:
        if not parts:
            return
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})

    for message in prompt:
        role = message["role"]
        content = message.get("content")
        if role == "system":
            system.append(str(content or ""))
            continue
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        parts: list[dict[str, Any]] = []
        for part in content or []:
            kind = part.get("type")
            if kind == "text" and part.get("text"):
                parts.append({"text": part["text"]})
            elif kind == "reasoning" and role == "assistant" and part.get("text"):
                parts.append({"text": part["text"], "thought": True})
            elif kind in ("file", "image"):
                mime = media_type(part) if kind == "file" else part.get("mediaType", "image/png")
                parts.append(_inline(part, part.get("data", part.get("image")), mime))
            elif kind == "tool-call":
                arguments = tool_input_object(part.get("input"))
                parts.append(
                    {
                        "function_call": {
                            "name": part["toolName"],
                            "args": arguments if isinstance(arguments, dict) else {"value": arguments},
                        }
                    }
                )
            elif kind == "tool-result":
                parts.append(
                    {
                        "function_response": {
                            "name": part["toolName"],
                            "response": {
                                "name": part["toolName"],
                                "content": tool_output_text(part.get("output")),
                            },
                        }
                    }
                )
        add("model" if role == "assistant" else "user", parts)
    return ("\n\n".join(system) if system else None), contents


def build_config(options: CallOptions) -> dict[str, Any]:
    """The `GenerateContentConfig` (as a dict) for `options`, system instruction excluded."""
    config: dict[str, Any] = {}
    for field, key in (
        ("max_output_tokens", "max_output_tokens"),
        ("temperature", "temperature"),
        ("top_p", "top_p"),
        ("top_k", "top_k"),
        ("seed", "seed"),
        ("presence_penalty", "presence_penalty"),
        ("frequency_penalty", "frequency_penalty"),
        ("stop_sequences", "stop_sequences"),
    ):
        value = getattr(options, field)
        if value is not None:
            config[key] = value
    response_format = options.response_format
    if response_format and response_format.get("type") == "json":
        config["response_mime_type"] = "application/json"
        if response_format.get("schema") is not None:
            config["response_json_schema"] = response_format["schema"]
    choice = options.tool_choice or {"type": "auto"}
    tools = [t for t in options.tools if t.get("type", "function") == "function"]
    if tools and choice.get("type") != "none":
        config["tools"] = [
            {
                "function_declarations": [
                    {
                        "name": t["name"],
                        "description": t.get("description") or "",
                        "parameters_json_schema": t.get("inputSchema") or {"type": "object"},
                    }
                    for t in tools
                ]
            }
        ]
        kind = choice.get("type")
        mode: dict[str, Any] = {"mode": "AUTO"}
        if kind == "required":
            mode = {"mode": "ANY"}
        elif kind == "tool":
            mode = {"mode": "ANY", "allowed_function_names": [choice["toolName"]]}
        config["tool_config"] = {"function_calling_config": mode}
    google = (options.provider_options or {}).get("google")
    if isinstance(google, dict):
        thinking = google.get("thinkingConfig")
        if isinstance(thinking, dict):
            config["thinking_config"] = {
                "thinking_budget": thinking.get("thinkingBudget"),
                "include_thoughts": thinking.get("includeThoughts"),
            }
        if google.get("safetySettings"):
            config["safety_settings"] = google["safetySettings"]
    if options.headers:
        config["http_options"] = {"headers": dict(options.headers)}
    return config


def to_api_call_error(exc: BaseException, *, url: str) -> APICallError:
    """An `APICallError` from a `google.genai.errors.APIError` (or a transport failure)."""
    code = getattr(exc, "code", None)
    status = code if isinstance(code, int) else None
    details = getattr(exc, "details", None)
    body = json.dumps(details) if details is not None else None
    connection = status is None and isinstance(exc, (ConnectionError, TimeoutError, OSError))
    connection = connection or any(
        cls.__name__ in ("TransportError", "ConnectError", "TimeoutException") for cls in type(exc).__mro__
    )
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return APICallError(
        str(message),
        url=url,
        status_code=status,
        response_body=body,
        is_retryable=retryable_status(status) or connection,
        cause=exc,
        data=details,
    )


class GeminiModel:
    """A Gemini model on the Gemini Developer API.

    ```python
    from sluicegate import Agent

    agent = Agent(name="gemini", instructions="Be brief.", model="google/gemini-2.5-flash")
    ```

    `GeminiModel("gemini-2.5-flash", api_key=..., base_url=...)` for an explicit key or endpoint;
    `provider_options={"google": {"thinkingConfig": {"thinkingBudget": 0}}}` sets thinking.
    """

    specification_version = "v2"

    def __init__(
        self,
        model_id: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        timeout: float | None = None,
    ) -> None:
        self._model_id = model_id
        self._api_key = api_key
        self._base_url = base_url
        self._client = client
        self._timeout = timeout

    @property
    def provider(self) -> str:
        return "google.generative-ai"

    @property
    def model_id(self) -> str:
        return self._model_id

    def __repr__(self) -> str:
        return f"GeminiModel({self._model_id!r})"

    def client(self) -> Any:
        """The `google.genai.Client`, created on first use (the key is read then)."""
        if self._client is None:
            try:
                genai = importlib.import_module("google.genai")
            except ImportError as exc:
                raise MissingExtraError("google-genai", extra="gemini", feature="GeminiModel") from exc
            api_key = self._api_key or next((os.environ[e] for e in API_KEY_ENVS if os.environ.get(e)), None)
            if not api_key:
                raise MissingAPIKeyError(
                    f"google/{self._model_id} needs an API key: "
                    f"set {' or '.join(API_KEY_ENVS)} or pass api_key="
                )
            http_options: dict[str, Any] = {"api_version": "v1beta", "retry_options": {"attempts": 1}}
            if self._base_url:
                http_options["base_url"] = self._base_url
            if self._timeout is not None:
                http_options["timeout"] = int(self._timeout * 1000)
            self._client = genai.Client(api_key=api_key, http_options=http_options)
        return self._client

    def _url(self, stream: bool) -> str:
        base = (self._base_url or "https://generativelanguage.googleapis.com").rstrip("/")
        method = "streamGenerateContent" if stream else "generateContent"
        return f"{base}/v1beta/models/{self._model_id}:{method}"

    def _request(self, options: CallOptions) -> dict[str, Any]:
        system, contents = convert_prompt(options.prompt)
        config = build_config(options)
        if system:
            config["system_instruction"] = system
        return {"model": self._model_id, "contents": contents, "config": config}

    async def do_stream(self, options: CallOptions) -> StreamResult:
        request = self._request(options)
        client = self.client()
        # The SDK sends the request when the stream is first read: read the first chunk here, so
        # a rejected call raises from `do_stream` (before the stream starts) like other adapters.
        try:
            stream = (await client.aio.models.generate_content_stream(**request)).__aiter__()
            first = await anext(stream)
        except StopAsyncIteration:
            first = None
        except Exception as exc:
            raise to_api_call_error(exc, url=self._url(True)) from exc
        return StreamResult(stream=self._parts(first, stream), request={"body": request})

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        result = await generate_from_stream((await self.do_stream(options)).stream)
        return result

    async def _parts(self, first_chunk: Any, rest: AsyncIterator[Any]) -> AsyncIterator[StreamPart]:
        yield {"type": "stream-start", "warnings": []}
        text_open = reasoning_open = False
        calls = 0
        reason: Any = None
        usage: dict[str, Any] = dict(EMPTY_USAGE)
        first = True

        async def chunks() -> AsyncIterator[Any]:
            if first_chunk is not None:
                yield first_chunk
                async for chunk in rest:
                    yield chunk

        try:
            async for chunk in chunks():
                if first:
                    first = False
                    yield {
                        "type": "response-metadata",
                        "id": getattr(chunk, "response_id", None),
                        "modelId": getattr(chunk, "model_version", None) or self._model_id,
                        "timestamp": timestamp(time.time()),
                    }
                if getattr(chunk, "usage_metadata", None) is not None:
                    usage = gemini_usage(chunk.usage_metadata)
                for candidate in (getattr(chunk, "candidates", None) or [])[:1]:
                    content = getattr(candidate, "content", None)
                    for part in getattr(content, "parts", None) or []:
                        text = getattr(part, "text", None)
                        call = getattr(part, "function_call", None)
                        if text and getattr(part, "thought", False):
                            if not reasoning_open:
                                reasoning_open = True
                                yield {"type": "reasoning-start", "id": "reasoning-0"}
                            yield {"type": "reasoning-delta", "id": "reasoning-0", "delta": text}
                        elif text:
                            if reasoning_open:
                                reasoning_open = False
                                yield {"type": "reasoning-end", "id": "reasoning-0"}
                            if not text_open:
                                text_open = True
                                yield {"type": "text-start", "id": "txt-0"}
                            yield {"type": "text-delta", "id": "txt-0", "delta": text}
                        elif call is not None:
                            calls += 1
                            call_id = getattr(call, "id", None) or f"call_{uuid.uuid4().hex[:16]}"
                            arguments = json.dumps(getattr(call, "args", None) or {})
                            name = getattr(call, "name", None) or ""
                            yield {"type": "tool-input-start", "id": call_id, "toolName": name}
                            yield {"type": "tool-input-delta", "id": call_id, "delta": arguments}
                            yield {"type": "tool-input-end", "id": call_id}
                            yield {
                                "type": "tool-call",
                                "toolCallId": call_id,
                                "toolName": name,
                                "input": arguments,
                            }
                    if getattr(candidate, "finish_reason", None) is not None:
                        reason = candidate.finish_reason
        except Exception as exc:
            yield {"type": "error", "error": to_api_call_error(exc, url=self._url(True))}
            return
        if reasoning_open:
            yield {"type": "reasoning-end", "id": "reasoning-0"}
        if text_open:
            yield {"type": "text-end", "id": "txt-0"}
        yield {
            "type": "finish",
            "finishReason": finish_reason(reason, has_tool_calls=calls > 0),
            "usage": usage,
        }
