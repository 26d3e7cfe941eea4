"""Conversions from stored (db) messages to the two other formats: UI messages and the AI SDK V2
prompt a `LanguageModel` receives."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sluicegate.messages.message import Message, format_datetime
from sluicegate.messages.part import Part

PromptMessage = dict[str, Any]


def is_signal(message: Message) -> bool:
    """Signals are user-role reminders injected by processors; UI views hide them."""
    metadata = message.content.metadata
    return bool(metadata) and "signal" in metadata  # type: ignore[operator]


def tool_output(invocation: dict[str, Any]) -> dict[str, Any]:
    """The AI SDK `output` of a completed tool invocation."""
    if "modelOutput" in invocation:
        return dict(invocation["modelOutput"])
    result = invocation.get("result")
    if invocation.get("isError"):
        return {"type": "error-text", "value": result if isinstance(result, str) else str(result)}
    if isinstance(result, str):
        return {"type": "text", "value": result}
    return {"type": "json", "value": result}


def _file_part(part: Part) -> dict[str, Any]:
    return {
        "type": "file",
        "data": part.get("data"),
        "mediaType": part.get("mimeType") or part.get("mediaType"),
    }


def _user_content(message: Message) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for part in message.content.parts:
        kind = part.get("type")
        if kind == "text":
            content.append({"type": "text", "text": part["text"]})
        elif kind == "file":
            content.append(_file_part(part))
    if not message.content.parts and message.content.content:
        content.append({"type": "text", "text": message.content.content})
    return content


def _assistant_blocks(message: Message) -> list[PromptMessage]:
    """An assistant message split at `step-start` parts: each block becomes an assistant prompt
    message followed, when its tools have results, by a `tool` message."""
    blocks: list[PromptMessage] = []
    content: list[dict[str, Any]] = []
    results: list[dict[str, Any]] = []
    for part in message.content.parts:
        kind = part.get("type")
        if kind == "step-start":
            if content or results:
                _close_block(blocks, content, results)
                content, results = [], []
        elif kind == "text":
            if part.get("text"):
                content.append({"type": "text", "text": part["text"]})
        elif kind == "reasoning":
            text = part.get("text") or part.get("reasoning") or ""
            entry: dict[str, Any] = {"type": "reasoning", "text": text}
            if part.get("providerMetadata") is not None:
                entry["providerOptions"] = part["providerMetadata"]
            content.append(entry)
        elif kind == "file":
            content.append(_file_part(part))
        elif kind == "tool-invocation":
            inv = part["toolInvocation"]
            if inv.get("state") != "result":
                continue  # a call without a result cannot be sent to a provider
            content.append(
                {
                    "type": "tool-call",
                    "toolCallId": inv["toolCallId"],
                    "toolName": inv["toolName"],
                    "input": inv.get("args", {}),
                }
            )
            results.append(
                {
                    "type": "tool-result",
                    "toolCallId": inv["toolCallId"],
                    "toolName": inv["toolName"],
                    "output": tool_output(inv),
                }
            )
    if not message.content.parts and message.content.content:
        content.append({"type": "text", "text": message.content.content})
    _close_block(blocks, content, results)
    return blocks


def _close_block(blocks: list[PromptMessage], content: list[Any], results: list[Any]) -> None:
    """A block's assistant message (its content) and `tool` message (its results), each only
    if not empty; the lists become the messages' own (the caller starts new ones)."""
    if content:
        blocks.append({"role": "assistant", "content": content})
    if results:
        blocks.append({"role": "tool", "content": results})


def to_prompt_messages(messages: Iterable[Message]) -> list[PromptMessage]:
    prompt: list[PromptMessage] = []
    for message in messages:
        if message.role == "user":
            content = _user_content(message)
            if content:
                prompt.append({"role": "user", "content": content})
        elif message.role == "assistant":
            prompt.extend(_assistant_blocks(message))
        elif message.role == "tool":
            results = [
                {
                    "type": "tool-result",
                    "toolCallId": inv["toolCallId"],
                    "toolName": inv["toolName"],
                    "output": tool_output(inv),
                }
                for inv in (
                    p["toolInvocation"] for p in message.content.parts if p.get("type") == "tool-invocation"
                )
            ]
            if results:
                prompt.append({"role": "tool", "content": results})
        elif message.role == "system":
            prompt.append({"role": "system", "content": message.text})
    return prompt


def mastra_created_at(part: Part, metadata: Any = None) -> dict[str, Any] | None:
    """`metadata` (a part's provider metadata or options) with the part's own `createdAt`
    under `mastra`, as Mastra's UI and model parts carry it; None for an undated part."""
    created = part.get("createdAt")
    if not isinstance(created, int) or isinstance(created, bool):
        return metadata if isinstance(metadata, dict) else None
    merged = dict(metadata) if isinstance(metadata, dict) else {}
    mastra = merged.get("mastra")
    merged["mastra"] = {**(mastra if isinstance(mastra, dict) else {}), "createdAt": created}
    return merged


def _dated(ui: dict[str, Any], part: Part) -> dict[str, Any]:
    metadata = mastra_created_at(part, part.get("providerMetadata"))
    if metadata is not None:
        ui["providerMetadata"] = metadata
    return ui


def _ui_part(part: Part) -> dict[str, Any] | None:
    kind = part.get("type")
    if kind == "text":
        return _dated({"type": "text", "text": part.get("text", "")}, part)
    if kind == "reasoning":
        return _dated({"type": "reasoning", "text": part.get("text") or part.get("reasoning") or ""}, part)
    if kind == "step-start":
        return {"type": "step-start"}
    if kind == "file":
        return _dated({"type": "file", "mediaType": part.get("mimeType"), "url": part.get("data")}, part)
    if kind == "tool-invocation":
        inv = part["toolInvocation"]
        ui: dict[str, Any] = {
            "type": f"tool-{inv['toolName']}",
            "toolCallId": inv["toolCallId"],
            "input": inv.get("args", {}),
        }
        if inv.get("state") == "result":
            if inv.get("isError"):
                ui.update(state="output-error", errorText=str(inv.get("result")))
            else:
                ui.update(state="output-available", output=inv.get("result"))
        else:
            ui["state"] = "input-available"
        return ui
    if kind == "source":
        source = {k: v for k, v in part.items() if k not in ("type", "createdAt")}
        return _dated({"type": "source-url", **source}, part)
    if isinstance(kind, str) and kind.startswith("data-"):
        return dict(part)
    return None


def to_ui_message(message: Message) -> dict[str, Any]:
    parts = [ui for ui in (_ui_part(p) for p in message.content.parts) if ui is not None]
    if not parts and message.content.content:
        parts.append({"type": "text", "text": message.content.content})
    ui: dict[str, Any] = {
        "id": message.id,
        "role": message.role,
        "parts": parts,
        "createdAt": format_datetime(message.created_at),
    }
    if message.content.metadata is not None:
        # Mastra's UI metadata: the stored metadata, when it was written and in which thread.
        ui["metadata"] = {**message.content.metadata, "createdAt": ui["createdAt"]}
        if message.thread_id is not None:
            ui["metadata"]["threadId"] = message.thread_id
        if message.resource_id is not None:
            ui["metadata"]["resourceId"] = message.resource_id
    return ui


def to_ui_messages(messages: Iterable[Message]) -> list[dict[str, Any]]:
    return [to_ui_message(m) for m in messages if not is_signal(m) and m.role != "tool"]
