"""How an OpenAI-compatible server is asked for JSON matching a schema.

Servers differ: OpenAI, vLLM and llama.cpp's C++ server accept `response_format: json_schema`;
llama-cpp-python's server and several hosted APIs accept only `json_object` (llama.cpp-based ones
take the schema inside it, `{"type": "json_object", "schema": ...}`, and turn it into a grammar);
some accept neither. `structured_outputs` names the mode:

- `"json_schema"`: `{"type": "json_schema", "json_schema": {"name", "schema", "strict": False}}`.
- `"json_object"`: `{"type": "json_object", "schema": ...}`, plus the schema described in the
  system prompt for servers that ignore the `schema` key.
- `"prompt"`: no `response_format`; the schema is described in the system prompt only.

A server that rejects a mode is retried once with the next mode, and the model remembers the
mode that worked. A rejection is an HTTP error whose message names `response_format` or
`json_schema` (llama-cpp-python's server answers a 500 with its validation error), or a 400, 404,
415, 422 or 501 whose message is about schemas or structured output.
"""

from __future__ import annotations

import json
from typing import Any, Literal, get_args

from sluicegate.errors import APICallError, ConfigurationError

StructuredOutputs = Literal["json_schema", "json_object", "prompt"]
STRUCTURED_OUTPUT_MODES: tuple[str, ...] = get_args(StructuredOutputs)

_REJECTION_STATUSES = frozenset({400, 404, 415, 422, 501})
_NAMES = ("response_format", "json_schema")
_TOPICS = ("json_object", "schema", "structured")


def check_mode(mode: str) -> StructuredOutputs:
    """`mode` if it is one of the three, else a `ConfigurationError` naming them."""
    if mode not in STRUCTURED_OUTPUT_MODES:
        raise ConfigurationError(
            f"unknown structured_outputs mode {mode!r}; use one of {', '.join(STRUCTURED_OUTPUT_MODES)}"
        )
    return mode  # type: ignore[return-value]


def next_mode(mode: StructuredOutputs) -> StructuredOutputs | None:
    """The mode to fall back to after `mode` was rejected (`None` after `prompt`)."""
    index = STRUCTURED_OUTPUT_MODES.index(mode)
    if index + 1 < len(STRUCTURED_OUTPUT_MODES):
        return STRUCTURED_OUTPUT_MODES[index + 1]  # type: ignore[return-value]
    return None


def schema_instruction(schema: dict[str, Any] | None) -> str:
    """What the system prompt says when the server cannot be told the schema itself."""
    if schema is None:
        return "You MUST answer with JSON."
    return (
        f"JSON schema:\n{json.dumps(schema)}\n"
        "You MUST answer with a JSON object that matches the JSON schema above."
    )


def apply_mode(body: dict[str, Any], response_format: dict[str, Any], mode: StructuredOutputs) -> None:
    """Rewrite `body` (built for `json_schema`) for `mode`, in place."""
    schema = response_format.get("schema")
    if mode == "json_schema" and schema is not None:
        return
    body.pop("response_format", None)
    if mode == "json_object" or (mode == "json_schema" and schema is None):
        body["response_format"] = {
            "type": "json_object",
            **({"schema": schema} if schema is not None else {}),
        }
    messages = body["messages"] = list(body.get("messages") or [])
    instruction = schema_instruction(schema)
    if messages and messages[0].get("role") == "system" and isinstance(messages[0].get("content"), str):
        messages[0] = {**messages[0], "content": f"{messages[0]['content']}\n\n{instruction}"}
    else:
        messages.insert(0, {"role": "system", "content": instruction})


def rejects_response_format(error: BaseException) -> bool:
    """Whether a provider error says the request's `response_format` is not understood."""
    if not isinstance(error, APICallError) or error.status_code is None or error.status_code < 400:
        return False
    text = f"{error} {error.response_body or ''}".lower()
    if any(name in text for name in _NAMES):
        return True
    return error.status_code in _REJECTION_STATUSES and any(topic in text for topic in _TOPICS)
