"""OpenAI Chat Completions (`POST /chat/completions`) as a `LanguageModel`.

Requests go through the official `openai` SDK (`AsyncOpenAI`); the adapter sends and reads the
wire JSON itself (`client.post(..., cast_to=object)`), so fields that OpenAI-compatible servers
add (`reasoning_content`, `reasoning`) come through untouched. `OpenAICompatible` is this class
pointed at another base URL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from sluicegate.models._http_errors import close_quietly, error_part
from sluicegate.models._prompt_parts import (
    EMPTY_USAGE,
    base64_data,
    data_url,
    media_type,
    tool_input_json,
    tool_output_text,
    v2_usage,
)
from sluicegate.models._response_checks import (
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_STREAM_IDLE_TIMEOUT,
    truncated_stream_error,
)
from sluicegate.models._sdk_model import SDKModel, response_metadata
from sluicegate.models.base import CallOptions, GenerateResult, StreamPart

_FINISH_REASONS = {
    "stop": "stop",
    "length": "length",
    "content_filter": "content-filter",
    "tool_calls": "tool-calls",
    "function_call": "tool-calls",
}

# providerOptions.openai keys (camelCase, as in the AI SDK) -> Chat Completions body fields.
_OPENAI_OPTIONS = {
    "reasoningEffort": "reasoning_effort",
    "parallelToolCalls": "parallel_tool_calls",
    "user": "user",
    "logitBias": "logit_bias",
    "logprobs": "logprobs",
    "store": "store",
    "metadata": "metadata",
    "prediction": "prediction",
    "serviceTier": "service_tier",
    "textVerbosity": "verbosity",
    "promptCacheKey": "prompt_cache_key",
    "safetyIdentifier": "safety_identifier",
    "maxCompletionTokens": "max_completion_tokens",
}


def finish_reason(value: Any) -> str:
    if value is None:
        return "unknown"
    return _FINISH_REASONS.get(value, "other")


def chat_usage(usage: Any) -> dict[str, Any]:
    """V2 usage from a Chat Completions `usage` object."""
    if not isinstance(usage, dict):
        return dict(EMPTY_USAGE)
    prompt_details = usage.get("prompt_tokens_details") or {}
    completion_details = usage.get("completion_tokens_details") or {}
    return v2_usage(
        usage.get("prompt_tokens"),
        usage.get("completion_tokens"),
        total_tokens=usage.get("total_tokens"),
        reasoning_tokens=completion_details.get("reasoning_tokens"),
        cached_input_tokens=prompt_details.get("cached_tokens"),
    )


class OpenAIChatModel(SDKModel):
    """A model served by the Chat Completions API.

    `send_reasoning` echoes assistant reasoning parts back as `reasoning_content` (what
    OpenAI-compatible servers such as DeepSeek expect; OpenAI itself ignores it, so it is off
    here). `provider_options_key` names the `provider_options` entry read for extra body fields.
    """

    path = "/chat/completions"
    default_provider = "openai.chat"
    default_api_key_env = "OPENAI_API_KEY"
    max_tokens_field = "max_completion_tokens"

    def __init__(
        self,
        model_id: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: Any = None,
        provider: str = "openai.chat",
        provider_options_key: str = "openai",
        api_key_env: str | None = "OPENAI_API_KEY",
        send_reasoning: bool = False,
        headers: dict[str, str] | None = None,
        max_retries: int = 0,
        timeout: float | None = None,
        request_timeout: float | None = DEFAULT_REQUEST_TIMEOUT,
        stream_idle_timeout: float | None = DEFAULT_STREAM_IDLE_TIMEOUT,
    ) -> None:
        super().__init__(
            model_id,
            api_key=api_key,
            base_url=base_url,
            client=client,
            headers=headers,
            max_retries=max_retries,
            timeout=timeout,
            request_timeout=request_timeout,
            stream_idle_timeout=stream_idle_timeout,
        )
        self._provider = provider
        self._api_key_env = api_key_env
        self._options_key = provider_options_key
        self._send_reasoning = send_reasoning

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._model_id!r}, provider={self._provider!r})"

    def _sdk_classes(self) -> tuple[Any, Any]:
        from openai import AsyncOpenAI, AsyncStream

        return AsyncOpenAI, AsyncStream

    # ------------------------------------------------------------------ request

    def build_body(self, options: CallOptions, *, stream: bool) -> dict[str, Any]:
        """The Chat Completions request body for `options`."""
        body: dict[str, Any] = {"model": self._model_id, "messages": self.convert_prompt(options.prompt)}
        if options.max_output_tokens is not None:
            body[self.max_tokens_field] = options.max_output_tokens
        for field, key in (
            ("temperature", "temperature"),
            ("top_p", "top_p"),
            ("seed", "seed"),
            ("presence_penalty", "presence_penalty"),
            ("frequency_penalty", "frequency_penalty"),
            ("stop_sequences", "stop"),
        ):
            value = getattr(options, field)
            if value is not None:
                body[key] = value
        response_format = options.response_format
        if response_format and response_format.get("type") == "json":
            schema = response_format.get("schema")
            if schema is not None:
                body["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {
                        "name": response_format.get("name") or "response",
                        "schema": schema,
                        "strict": False,
                        **(
                            {"description": response_format["description"]}
                            if response_format.get("description")
                            else {}
                        ),
                    },
                }
            else:
                body["response_format"] = {"type": "json_object"}
        choice = options.tool_choice or {"type": "auto"}
        if options.tools and choice.get("type") != "none":
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t["name"],
                        "description": t.get("description") or "",
                        "parameters": t.get("inputSchema") or {"type": "object"},
                    },
                }
                for t in options.tools
                if t.get("type", "function") == "function"
            ]
            kind = choice.get("type")
            if kind == "tool":
                body["tool_choice"] = {"type": "function", "function": {"name": choice["toolName"]}}
            elif kind in ("auto", "required"):
                body["tool_choice"] = kind
        body.update(self.provider_body_options(options.provider_options or {}))
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def provider_body_options(self, provider_options: dict[str, Any]) -> dict[str, Any]:
        """Body fields from `provider_options[<key>]`: known AI SDK names mapped, the rest as given."""
        scoped = provider_options.get(self._options_key)
        if not isinstance(scoped, dict):
            return {}
        out: dict[str, Any] = {}
        for key, value in scoped.items():
            if key in _OPENAI_OPTIONS:
                out[_OPENAI_OPTIONS[key]] = value
            elif self._options_key != "openai":
                out[key] = value  # OpenAI-compatible servers: pass unknown options through
        return out

    def convert_prompt(self, prompt: list[dict[str, Any]]) -> list[dict[str, Any]]:
        messages: list[dict[str, Any]] = []
        for message in prompt:
            role = message["role"]
            content = message.get("content")
            if role == "system":
                messages.append({"role": "system", "content": content})
            elif role == "user":
                messages.append({"role": "user", "content": self._user_content(content)})
            elif role == "assistant":
                messages.append(self._assistant_message(content))
            elif role == "tool":
                for part in content or []:
                    if part.get("type") == "tool-result":
                        messages.append(
                            {
                                "role": "tool",
                                "tool_call_id": part["toolCallId"],
                                "content": tool_output_text(part.get("output")),
                            }
                        )
        return messages

    @staticmethod
    def _user_content(content: Any) -> Any:
        if isinstance(content, str):
            return content
        parts = content or []
        if len(parts) == 1 and parts[0].get("type") == "text":
            return parts[0]["text"]
        out: list[dict[str, Any]] = []
        for part in parts:
            kind = part.get("type")
            if kind == "text":
                out.append({"type": "text", "text": part["text"]})
            elif kind in ("file", "image"):
                mime = media_type(part) if kind == "file" else part.get("mediaType", "image/*")
                if kind == "image" or mime.startswith("image/"):
                    source = dict(part, data=part.get("image", part.get("data")), mediaType=mime)
                    out.append({"type": "image_url", "image_url": {"url": data_url(source)}})
                elif mime in ("audio/wav", "audio/mpeg", "audio/mp3"):
                    out.append(
                        {
                            "type": "input_audio",
                            "input_audio": {
                                "data": base64_data(part.get("data")),
                                "format": "wav" if mime == "audio/wav" else "mp3",
                            },
                        }
                    )
                else:
                    out.append(
                        {
                            "type": "file",
                            "file": {"filename": part.get("filename") or "file", "file_data": data_url(part)},
                        }
                    )
        return out

    def _assistant_message(self, content: Any) -> dict[str, Any]:
        if isinstance(content, str):
            return {"role": "assistant", "content": content}
        text = ""
        reasoning = ""
        tool_calls: list[dict[str, Any]] = []
        for part in content or []:
            kind = part.get("type")
            if kind == "text":
                text += part.get("text", "")
            elif kind == "reasoning":
                reasoning += part.get("text", "")
            elif kind == "tool-call":
                tool_calls.append(
                    {
                        "id": part["toolCallId"],
                        "type": "function",
                        "function": {
                            "name": part["toolName"],
                            "arguments": tool_input_json(part.get("input")),
                        },
                    }
                )
        # `""`, not `null`, beside tool calls: servers such as llama-cpp-python's reject a null content.
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if tool_calls:
            message["tool_calls"] = tool_calls
        if reasoning and self._send_reasoning:
            message["reasoning_content"] = reasoning
        return message

    # ------------------------------------------------------------------ responses

    def _generate_result(self, body: dict[str, Any], data: Any) -> GenerateResult:
        choice = (data.get("choices") or [{}])[0]
        message = choice.get("message") or {}
        content: list[dict[str, Any]] = []
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if reasoning:
            content.append({"type": "reasoning", "text": reasoning})
        if message.get("content"):
            content.append({"type": "text", "text": message["content"]})
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            content.append(
                {
                    "type": "tool-call",
                    "toolCallId": call.get("id"),
                    "toolName": function.get("name"),
                    "input": function.get("arguments") or "{}",
                }
            )
        return GenerateResult(
            content=content,
            finish_reason=finish_reason(choice.get("finish_reason")),
            usage=chat_usage(data.get("usage")),
            request={"body": body},
            response={**response_metadata(data, data.get("created")), "body": data},
        )

    async def _parts(self, stream: Any, body: dict[str, Any]) -> AsyncIterator[StreamPart]:
        yield {"type": "stream-start", "warnings": []}
        text_open = False
        reasoning_open = False
        calls: dict[int, dict[str, Any]] = {}
        reason = "unknown"
        usage: dict[str, Any] = dict(EMPTY_USAGE)
        first = True
        finished = False
        try:
            async for chunk in stream:
                if first:
                    first = False
                    yield {"type": "response-metadata", **response_metadata(chunk, chunk.get("created"))}
                if chunk.get("usage"):
                    usage = chat_usage(chunk["usage"])
                for choice in chunk.get("choices") or ():
                    delta = choice.get("delta") or {}
                    thought = delta.get("reasoning_content") or delta.get("reasoning")
                    if thought:
                        if not reasoning_open:
                            reasoning_open = True
                            yield {"type": "reasoning-start", "id": "reasoning-0"}
                        yield {"type": "reasoning-delta", "id": "reasoning-0", "delta": thought}
                    text = delta.get("content")
                    if text:
                        if reasoning_open:
                            reasoning_open = False
                            yield {"type": "reasoning-end", "id": "reasoning-0"}
                        if not text_open:
                            text_open = True
                            yield {"type": "text-start", "id": "txt-0"}
                        yield {"type": "text-delta", "id": "txt-0", "delta": text}
                    for call_delta in delta.get("tool_calls") or ():
                        for part in _tool_call_delta(calls, call_delta):
                            yield part
                    if choice.get("finish_reason") is not None:
                        finished = True
                        reason = finish_reason(choice["finish_reason"])
        except Exception as exc:
            yield error_part(exc, url=self._url(), request_body=body)
            return
        finally:
            await close_quietly(stream)
        if not finished:
            error = truncated_stream_error(self._url(), body, "a finish_reason")
            yield {"type": "error", "error": error}
            return
        if reasoning_open:
            yield {"type": "reasoning-end", "id": "reasoning-0"}
        if text_open:
            yield {"type": "text-end", "id": "txt-0"}
        for call in calls.values():
            yield {"type": "tool-input-end", "id": call["id"]}
            yield {
                "type": "tool-call",
                "toolCallId": call["id"],
                "toolName": call["name"],
                "input": call["arguments"] or "{}",
            }
        if calls and reason in ("stop", "unknown"):
            reason = "tool-calls"
        yield {"type": "finish", "finishReason": reason, "usage": usage}


def _tool_call_delta(calls: dict[int, dict[str, Any]], delta: dict[str, Any]) -> list[StreamPart]:
    """Fold one streamed `tool_calls[i]` delta into `calls`, returning the parts to emit."""
    index = delta.get("index", len(calls))
    function = delta.get("function") or {}
    parts: list[StreamPart] = []
    call = calls.get(index)
    if call is None:
        call = {"id": delta.get("id") or f"call_{index}", "name": function.get("name") or "", "arguments": ""}
        calls[index] = call
        parts.append({"type": "tool-input-start", "id": call["id"], "toolName": call["name"]})
    arguments = function.get("arguments")
    if arguments:
        call["arguments"] += arguments
        parts.append({"type": "tool-input-delta", "id": call["id"], "delta": arguments})
    return parts
