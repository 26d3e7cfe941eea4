"""The OpenAI Responses API (`POST /responses`) as a `LanguageModel`.

This is what `"openai/<model>"` resolves to: it is the API OpenAI recommends for new work and
the one that returns reasoning summaries and encrypted reasoning items. Requests go through the
official `openai` SDK's `AsyncOpenAI` client; the adapter reads the raw event JSON.

Reasoning round-trips: a streamed reasoning item ends with `providerMetadata.openai.itemId` (and
`reasoningEncryptedContent` when `include=["reasoning.encrypted_content"]` was asked for); a
reasoning part carrying those in `providerOptions.openai` is sent back as a `reasoning` input item.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from sluicegate.errors import APICallError
from sluicegate.models._http_errors import close_quietly, error_part, stream_error
from sluicegate.models._prompt_parts import (
    EMPTY_USAGE,
    data_url,
    media_type,
    provider_option,
    tool_input_json,
    tool_output_text,
    v2_usage,
)
from sluicegate.models._response_checks import truncated_stream_error
from sluicegate.models._sdk_model import SDKModel, response_metadata
from sluicegate.models.base import CallOptions, GenerateResult, StreamPart

# providerOptions.openai keys -> Responses body fields.
_OPTIONS = {
    "parallelToolCalls": "parallel_tool_calls",
    "store": "store",
    "user": "user",
    "metadata": "metadata",
    "previousResponseId": "previous_response_id",
    "instructions": "instructions",
    "include": "include",
    "serviceTier": "service_tier",
    "promptCacheKey": "prompt_cache_key",
    "safetyIdentifier": "safety_identifier",
    "truncation": "truncation",
    "maxToolCalls": "max_tool_calls",
}


def responses_usage(usage: Any) -> dict[str, Any]:
    if not isinstance(usage, dict):
        return dict(EMPTY_USAGE)
    return v2_usage(
        usage.get("input_tokens"),
        usage.get("output_tokens"),
        total_tokens=usage.get("total_tokens"),
        reasoning_tokens=(usage.get("output_tokens_details") or {}).get("reasoning_tokens"),
        cached_input_tokens=(usage.get("input_tokens_details") or {}).get("cached_tokens"),
    )


def responses_finish_reason(response: dict[str, Any], has_tool_calls: bool) -> str:
    incomplete = (response.get("incomplete_details") or {}).get("reason")
    if incomplete == "max_output_tokens":
        return "length"
    if incomplete == "content_filter":
        return "content-filter"
    if incomplete:
        return "other"
    if response.get("status") == "failed":
        return "error"
    return "tool-calls" if has_tool_calls else "stop"


class OpenAIResponsesModel(SDKModel):
    """A model served by the OpenAI Responses API.

    `provider_options={"openai": {"reasoningEffort": "low", "reasoningSummary": "auto"}}` becomes
    `reasoning: {effort, summary}`; `textVerbosity`, `store`, `include`, `previousResponseId` and
    the other AI SDK option names map to their body fields.
    """

    path = "/responses"
    default_provider = "openai.responses"
    default_api_key_env = "OPENAI_API_KEY"
    missing_key_message = "openai/{model_id} needs an API key: set the {env} environment variable"

    def _sdk_classes(self) -> tuple[Any, Any]:
        from openai import AsyncOpenAI, AsyncStream

        return AsyncOpenAI, AsyncStream

    # ------------------------------------------------------------------ request

    def build_body(self, options: CallOptions, *, stream: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self._model_id, "input": convert_input(options.prompt)}
        if options.max_output_tokens is not None:
            body["max_output_tokens"] = options.max_output_tokens
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if options.top_p is not None:
            body["top_p"] = options.top_p
        openai_options = (options.provider_options or {}).get("openai") or {}
        text: dict[str, Any] = {}
        response_format = options.response_format
        if response_format and response_format.get("type") == "json":
            schema = response_format.get("schema")
            text["format"] = (
                {
                    "type": "json_schema",
                    "name": response_format.get("name") or "response",
                    "schema": schema,
                    "strict": False,
                }
                if schema is not None
                else {"type": "json_object"}
            )
        if openai_options.get("textVerbosity"):
            text["verbosity"] = openai_options["textVerbosity"]
        if text:
            body["text"] = text
        reasoning: dict[str, Any] = {}
        if openai_options.get("reasoningEffort"):
            reasoning["effort"] = openai_options["reasoningEffort"]
        if openai_options.get("reasoningSummary"):
            reasoning["summary"] = openai_options["reasoningSummary"]
        if reasoning:
            body["reasoning"] = reasoning
        for key, field in _OPTIONS.items():
            if key in openai_options:
                body[field] = openai_options[key]
        choice = options.tool_choice or {"type": "auto"}
        if options.tools and choice.get("type") != "none":
            body["tools"] = [
                {
                    "type": "function",
                    "name": t["name"],
                    "description": t.get("description") or "",
                    "parameters": t.get("inputSchema") or {"type": "object"},
                    "strict": False,
                }
                for t in options.tools
                if t.get("type", "function") == "function"
            ]
            kind = choice.get("type")
            body["tool_choice"] = {"type": "function", "name": choice["toolName"]} if kind == "tool" else kind
        if stream:
            body["stream"] = True
        return body

    # ------------------------------------------------------------------ responses

    def _generate_result(self, body: dict[str, Any], data: Any) -> GenerateResult:
        if data.get("error"):
            raise stream_error(
                {"type": "response.failed", "response": data},
                url=self._url(),
                request_body=body,
                message=(data["error"] or {}).get("message"),
            )
        content: list[dict[str, Any]] = []
        has_calls = False
        for item in data.get("output") or []:
            kind = item.get("type")
            if kind == "message":
                for block in item.get("content") or []:
                    if block.get("type") == "output_text":
                        content.append(
                            {
                                "type": "text",
                                "text": block.get("text", ""),
                                "providerMetadata": {"openai": {"itemId": item.get("id")}},
                            }
                        )
            elif kind == "reasoning":
                metadata = {
                    "openai": {
                        "itemId": item.get("id"),
                        "reasoningEncryptedContent": item.get("encrypted_content"),
                    }
                }
                summaries = item.get("summary") or [{"text": ""}]
                for summary in summaries:
                    content.append(
                        {"type": "reasoning", "text": summary.get("text", ""), "providerMetadata": metadata}
                    )
            elif kind == "function_call":
                has_calls = True
                content.append(
                    {
                        "type": "tool-call",
                        "toolCallId": item.get("call_id"),
                        "toolName": item.get("name"),
                        "input": item.get("arguments") or "{}",
                        "providerMetadata": {"openai": {"itemId": item.get("id")}},
                    }
                )
        return GenerateResult(
            content=content,
            finish_reason=responses_finish_reason(data, has_calls),
            usage=responses_usage(data.get("usage")),
            request={"body": body},
            response={**response_metadata(data, data.get("created_at")), "body": data},
        )

    async def _parts(self, stream: Any, body: dict[str, Any]) -> AsyncIterator[StreamPart]:
        yield {"type": "stream-start", "warnings": []}
        calls: dict[int, dict[str, Any]] = {}  # output_index -> {"id", "name"}
        has_calls = False
        final: dict[str, Any] = {}
        completed = False
        url = self._url()
        try:
            async for event in stream:
                kind = event.get("type")
                if kind == "response.output_text.delta":
                    yield {"type": "text-delta", "id": event.get("item_id"), "delta": event.get("delta", "")}
                elif kind == "response.function_call_arguments.delta":
                    call = calls.get(event.get("output_index", -1))
                    if call is not None:
                        yield {"type": "tool-input-delta", "id": call["id"], "delta": event.get("delta", "")}
                elif kind == "response.reasoning_summary_text.delta":
                    yield {
                        "type": "reasoning-delta",
                        "id": f"{event.get('item_id')}:{event.get('summary_index', 0)}",
                        "delta": event.get("delta", ""),
                    }
                elif kind == "response.reasoning_summary_part.added":
                    if event.get("summary_index", 0) > 0:
                        yield {
                            "type": "reasoning-start",
                            "id": f"{event.get('item_id')}:{event['summary_index']}",
                            "providerMetadata": {"openai": {"itemId": event.get("item_id")}},
                        }
                elif kind == "response.output_item.added":
                    item = event.get("item") or {}
                    item_kind = item.get("type")
                    if item_kind == "message":
                        yield {
                            "type": "text-start",
                            "id": item.get("id"),
                            "providerMetadata": {"openai": {"itemId": item.get("id")}},
                        }
                    elif item_kind == "function_call":
                        calls[event.get("output_index", len(calls))] = {
                            "id": item.get("call_id"),
                            "name": item.get("name"),
                        }
                        yield {
                            "type": "tool-input-start",
                            "id": item.get("call_id"),
                            "toolName": item.get("name"),
                        }
                    elif item_kind == "reasoning":
                        yield {
                            "type": "reasoning-start",
                            "id": f"{item.get('id')}:0",
                            "providerMetadata": {"openai": {"itemId": item.get("id")}},
                        }
                elif kind == "response.output_item.done":
                    item = event.get("item") or {}
                    item_kind = item.get("type")
                    if item_kind == "message":
                        yield {"type": "text-end", "id": item.get("id")}
                    elif item_kind == "function_call":
                        has_calls = True
                        yield {"type": "tool-input-end", "id": item.get("call_id")}
                        yield {
                            "type": "tool-call",
                            "toolCallId": item.get("call_id"),
                            "toolName": item.get("name"),
                            "input": item.get("arguments") or "{}",
                            "providerMetadata": {"openai": {"itemId": item.get("id")}},
                        }
                    elif item_kind == "reasoning":
                        metadata = {
                            "openai": {
                                "itemId": item.get("id"),
                                "reasoningEncryptedContent": item.get("encrypted_content"),
                            }
                        }
                        for index in range(max(1, len(item.get("summary") or []))):
                            yield {
                                "type": "reasoning-end",
                                "id": f"{item.get('id')}:{index}",
                                "providerMetadata": metadata,
                            }
                elif kind == "response.created":
                    response = event.get("response") or {}
                    metadata = response_metadata(response, response.get("created_at"))
                    yield {"type": "response-metadata", **metadata}
                elif kind in ("response.completed", "response.incomplete"):
                    completed = True
                    final = event.get("response") or {}
                elif kind == "response.failed":
                    response = event.get("response") or {}
                    error = response.get("error") or {}
                    yield {
                        "type": "error",
                        "error": stream_error(
                            event, url=url, request_body=body, message=error.get("message")
                        ),
                    }
                    return
                elif kind == "error":
                    yield {"type": "error", "error": stream_error(event, url=url, request_body=body)}
                    return
        except Exception as exc:
            part = error_part(exc, url=url, request_body=body)
            error = part["error"]
            body_data = getattr(exc, "body", None)
            if (
                isinstance(error, APICallError)
                and isinstance(body_data, dict)
                and getattr(exc, "status_code", None) is None
            ):
                # The SDK raised on an `error` event: keep the event's shape for matchers.
                error.data = {"type": "error", "error": body_data}
            yield part
            return
        finally:
            await close_quietly(stream)
        if not completed:
            yield {"type": "error", "error": truncated_stream_error(url, body, "response.completed")}
            return
        yield {
            "type": "finish",
            "finishReason": responses_finish_reason(final, has_calls) if final else "unknown",
            "usage": responses_usage(final.get("usage")),
            "providerMetadata": {"openai": {"responseId": final.get("id")}},
        }


def convert_input(prompt: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A V2 prompt as Responses `input` items."""
    items: list[dict[str, Any]] = []
    for message in prompt:
        role = message["role"]
        content = message.get("content")
        if role == "system":
            items.append({"role": "system", "content": content})
        elif role == "user":
            parts: list[dict[str, Any]] = []
            for part in content if isinstance(content, list) else [{"type": "text", "text": content}]:
                kind = part.get("type")
                if kind == "text":
                    parts.append({"type": "input_text", "text": part["text"]})
                elif kind == "file":
                    mime = media_type(part)
                    if mime.startswith("image/"):
                        parts.append({"type": "input_image", "image_url": data_url(part)})
                    else:
                        parts.append(
                            {
                                "type": "input_file",
                                "filename": part.get("filename") or "file",
                                "file_data": data_url(part),
                            }
                        )
            items.append({"role": "user", "content": parts})
        elif role == "assistant":
            for part in content if isinstance(content, list) else [{"type": "text", "text": content}]:
                kind = part.get("type")
                if kind == "text":
                    items.append(
                        {"role": "assistant", "content": [{"type": "output_text", "text": part["text"]}]}
                    )
                elif kind == "tool-call":
                    items.append(
                        {
                            "type": "function_call",
                            "call_id": part["toolCallId"],
                            "name": part["toolName"],
                            "arguments": tool_input_json(part.get("input")),
                        }
                    )
                elif kind == "reasoning":
                    item_id = provider_option(part, "openai", "itemId")
                    if item_id is None:
                        continue  # reasoning from another provider cannot be replayed here
                    reasoning: dict[str, Any] = {
                        "type": "reasoning",
                        "id": item_id,
                        "summary": [{"type": "summary_text", "text": part["text"]}]
                        if part.get("text")
                        else [],
                    }
                    encrypted = provider_option(part, "openai", "reasoningEncryptedContent")
                    if encrypted:
                        reasoning["encrypted_content"] = encrypted
                    items.append(reasoning)
        elif role == "tool":
            for part in content or []:
                if part.get("type") == "tool-result":
                    items.append(
                        {
                            "type": "function_call_output",
                            "call_id": part["toolCallId"],
                            "output": tool_output_text(part.get("output")),
                        }
                    )
    return items
