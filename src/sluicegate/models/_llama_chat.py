"""V2 call options as llama-cpp-python chat-completion arguments, for the embedded model.

Two ways through llama.cpp, chosen per call:

- No tools: `Llama.create_chat_completion(stream=True)` with the chat template stored in the
  GGUF, the caller's stop sequences, and a JSON `response_format` turned into a llama.cpp grammar
  (`{"type": "json_object", "schema": ...}`), so the sampler can only emit JSON matching the
  schema.
- Tools: llama-cpp-python's `chatml-function-calling` handler, which describes the tools in the
  system message and constrains each call's arguments with a grammar built from the tool's
  input schema. It cannot stream a tool choice the model makes itself, so these calls return the
  whole answer at once. Only ChatML models (SmolLM2 is one) can use it.
"""

from __future__ import annotations

from typing import Any

from sluicegate.models._prompt_parts import tool_input_json, tool_output_text
from sluicegate.models.base import CallOptions

DEFAULT_TEMPERATURE = 0.8
"""What the embedded model samples with when the caller sets no temperature."""


def chat_messages(prompt: list[dict[str, Any]]) -> list[dict[str, str]]:
    """A V2 prompt as plain chat messages (text only; tool traffic described in words)."""
    messages: list[dict[str, str]] = []
    for message in prompt:
        role = message["role"]
        content = message.get("content")
        if role == "system":
            messages.append({"role": "system", "content": str(content or "")})
            continue
        if isinstance(content, str):
            text = content
        else:
            pieces: list[str] = []
            for part in content or []:
                kind = part.get("type")
                if kind == "text":
                    pieces.append(part.get("text", ""))
                elif kind == "tool-call":
                    pieces.append(f"[called {part['toolName']} with {tool_input_json(part.get('input'))}]")
                elif kind == "tool-result":
                    pieces.append(f"[{part['toolName']} returned {tool_output_text(part.get('output'))}]")
            text = "".join(pieces)
        if not text:
            continue
        wire_role = "assistant" if role == "assistant" else "user"
        if messages and messages[-1]["role"] == wire_role and wire_role == "user":
            messages[-1]["content"] += "\n" + text
        else:
            messages.append({"role": wire_role, "content": text})
    return messages


def function_calling_messages(prompt: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A V2 prompt in the shape the `chatml-function-calling` template renders.

    Assistant tool calls stay structured (the model sees them in the same `functions.<name>:`
    form it is asked to produce). The template has no tool role, so results come back as user
    turns. It lists the tools inside the system message, so there always is one.
    """
    messages: list[dict[str, Any]] = []
    system: list[str] = []
    for message in prompt:
        role = message["role"]
        content = message.get("content")
        if role == "system":
            system.append(str(content or ""))
            continue
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if role == "assistant":
            text = "".join(p.get("text", "") for p in content or [] if p.get("type") == "text")
            calls = [
                {
                    "id": p["toolCallId"],
                    "type": "function",
                    "function": {"name": p["toolName"], "arguments": tool_input_json(p.get("input"))},
                }
                for p in content or []
                if p.get("type") == "tool-call"
            ]
            entry: dict[str, Any] = {"role": "assistant", "content": text}
            if calls:
                entry["tool_calls"] = calls
            if text or calls:
                messages.append(entry)
            continue
        pieces: list[str] = []
        for part in content or []:
            kind = part.get("type")
            if kind == "text":
                pieces.append(part.get("text", ""))
            elif kind == "tool-result":
                pieces.append(
                    f"functions.{part['toolName']} returned: {tool_output_text(part.get('output'))}"
                )
        text = "\n".join(p for p in pieces if p)
        if not text:
            continue
        if messages and messages[-1]["role"] == "user":
            messages[-1]["content"] += "\n" + text
        else:
            messages.append({"role": "user", "content": text})
    return [{"role": "system", "content": "\n\n".join(system)}, *messages]


def sampling_arguments(options: CallOptions, max_tokens: int) -> dict[str, Any]:
    """Sampling settings shared by both ways through llama.cpp."""
    return {
        "temperature": DEFAULT_TEMPERATURE if options.temperature is None else float(options.temperature),
        "top_p": 1.0 if options.top_p is None else float(options.top_p),
        "top_k": options.top_k or 40,
        "presence_penalty": options.presence_penalty or 0.0,
        "frequency_penalty": options.frequency_penalty or 0.0,
        "stop": list(options.stop_sequences or []),
        "max_tokens": max_tokens,
    }


def llama_response_format(response_format: dict[str, Any] | None) -> dict[str, Any] | None:
    """A V2 `response_format` as llama-cpp-python's (a schema becomes a sampling grammar)."""
    if not response_format or response_format.get("type") != "json":
        return None
    schema = response_format.get("schema")
    if schema is None:
        return {"type": "json_object"}
    return {"type": "json_object", "schema": schema}


def llama_tools(options: CallOptions) -> tuple[list[dict[str, Any]], Any, list[dict[str, Any]]]:
    """(tools, tool_choice, warnings) for the function-calling handler; no tools when the
    caller offered none or chose `none`."""
    choice = options.tool_choice or {"type": "auto"}
    tools = [t for t in options.tools if t.get("type", "function") == "function"]
    if not tools or choice.get("type") == "none":
        return [], None, []
    wire: list[dict[str, Any]] = [
        {
            "type": "function",
            "function": {
                "name": t["name"],
                "description": t.get("description") or "",
                "parameters": t.get("inputSchema") or {"type": "object"},
            },
        }
        for t in tools
    ]
    warnings: list[dict[str, Any]] = []
    kind = choice.get("type")
    if kind == "tool":
        return wire, {"type": "function", "function": {"name": choice["toolName"]}}, warnings
    if kind == "required":
        if len(wire) == 1:
            return wire, {"type": "function", "function": {"name": wire[0]["function"]["name"]}}, warnings
        warnings.append(
            {
                "type": "unsupported-setting",
                "setting": "toolChoice",
                "details": "the local model treats `required` with several tools as `auto`",
            }
        )
    return wire, "auto", warnings
