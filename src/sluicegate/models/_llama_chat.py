"""V2 call options as llama.cpp server requests, for the embedded model.

Two ways through llama.cpp (`_llama_runtime`), chosen per call:

- No tools: an OpenAI-style chat completion rendered with the chat template stored in the GGUF,
  with the caller's stop sequences, streamed, and a JSON `response_format` turned into a
  grammar (`_json_grammar`), so the sampler can only emit JSON matching the schema (any JSON
  value when there is no schema).
- Tools (ChatML models only; SmolLM2 is one): the `functions.<name>:` protocol. The tools are
  described in the system message; with `tool_choice` auto a short grammar-constrained step lets
  the model pick `message:` or `functions.<name>:`, then either the text answer streams or the
  call's arguments are generated under the tool's input schema. A named (or single `required`)
  tool skips the choice. One tool call per turn.
"""

from __future__ import annotations

import json
from typing import Any

from sluicegate.models._json_grammar import schema_grammar
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
    """A V2 prompt in the shape `function_calling_prompt` renders.

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
    """Sampling settings shared by both ways through llama.cpp (min-p 0.05, typical-p 1 and no
    repeat penalty, as the embedded model has always sampled)."""
    arguments: dict[str, Any] = {
        "temperature": DEFAULT_TEMPERATURE if options.temperature is None else float(options.temperature),
        "top_p": 1.0 if options.top_p is None else float(options.top_p),
        "top_k": options.top_k or 40,
        "min_p": 0.05,
        "typical_p": 1.0,
        "repeat_penalty": 1.0,
        "presence_penalty": options.presence_penalty or 0.0,
        "frequency_penalty": options.frequency_penalty or 0.0,
        "stop": list(options.stop_sequences or []),
        "max_tokens": max_tokens,
    }
    if options.seed is not None:
        arguments["seed"] = int(options.seed)
    return arguments


def llama_response_format(response_format: dict[str, Any] | None) -> dict[str, Any]:
    """A V2 `response_format` as llama.cpp request fields: a compact grammar built from the
    schema (`_json_grammar`), or llama.cpp's own `json_schema` conversion for schemas that grammar
    does not cover. Without a schema, any JSON value."""
    if not response_format or response_format.get("type") != "json":
        return {}
    return schema_constraint(response_format.get("schema", True))


def schema_constraint(schema: Any) -> dict[str, Any]:
    """Request fields that make llama.cpp produce only JSON matching `schema`."""
    grammar = schema_grammar(schema)
    if grammar is not None:
        return {"grammar": grammar}
    return {"response_format": {"type": "json_schema", "json_schema": {"schema": schema}}}


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


def named_tool(choice: Any) -> str | None:
    """The tool `llama_tools` pinned the call to, or None when the model chooses."""
    if isinstance(choice, dict):
        return str(choice["function"]["name"])
    return None


def function_calling_prompt(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> str:
    """`function_calling_messages` rendered as a ChatML prompt that describes `tools` in the
    system message and shows earlier calls in the `functions.<name>:` form the model answers in."""
    system = str(messages[0]["content"] if messages and messages[0]["role"] == "system" else "")
    described = "".join(
        f"\nfunctions.{t['function']['name']}:\n{json.dumps(t['function']['parameters'], sort_keys=True)}\n"
        for t in tools
    )
    system += (
        "\n\nYou have access to the following functions:\n"
        f"{described}"
        "\n\nYou can respond to users messages with either a single message or one or more function calls."
        "\n\nTo respond with a message begin the message with 'message:', use the following format:"
        "\n\nmessage:\n<message>"
        "\n\nTo respond with one or more function calls begin the message with "
        "'functions.<function_name>:', use the following format:"
        "\n\nfunctions.<function_name>:\n"
        '{ "arg1": "value1", "arg2": "value2" }\n'
        "functions.<function_name>:\n"
        '{ "arg1": "value1", "arg2": "value2" }'
    )
    turns = [f"<|im_start|>system\n{system}<|im_end|>\n"]
    for message in messages[1:]:
        if message["role"] == "assistant":
            body = f"message:\n{message['content']}" if message.get("content") else ""
            for call in message.get("tool_calls") or ():
                body += f"functions.{call['function']['name']}:\n{call['function']['arguments']}"
            turns.append(f"<|im_start|>assistant\n{body}<|im_end|>\n")
        else:
            turns.append(f"<|im_start|>user\n{message['content']}<|im_end|>\n")
    turns.append("<|im_start|>assistant\n")
    return "".join(turns)


def tool_decision_grammar(names: list[str]) -> str:
    """A GBNF grammar that admits only `message:` or `functions.<name>:` for one of `names`."""
    choices = " | ".join(json.dumps(f"functions.{name}:") for name in names)
    return f'root ::= functions | "message:"\nfunctions ::= {choices}\n'
