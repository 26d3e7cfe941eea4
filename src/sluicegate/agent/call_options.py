"""A step's `StepConfig` -> the model call's `CallOptions`: settings, tools, tool choice.

`model_settings` are checked and put in one spelling by `models.settings` (an unknown key is
rejected rather than dropped, so a typo cannot silently change nothing).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

from sluicegate.agent.structured import OutputSchema
from sluicegate.errors import SluicegateError
from sluicegate.models.base import CallOptions
from sluicegate.models.settings import check_provider_options, normalize_model_settings
from sluicegate.processors.runner import StepConfig
from sluicegate.tools import Tool


def normalize_tool_choice(choice: Any) -> dict[str, Any] | None:
    """`"auto" | "none" | "required" | {"type": "tool", "tool_name": ...}` -> the V2 dict."""
    if choice is None:
        return None
    if isinstance(choice, str):
        if choice not in ("auto", "none", "required"):
            raise SluicegateError(
                f"tool_choice must be 'auto', 'none', 'required' or a tool dict, got {choice!r}"
            )
        return {"type": choice}
    if isinstance(choice, dict):
        kind = choice.get("type")
        if kind == "tool":
            name = choice.get("tool_name") or choice.get("toolName")
            if not name:
                raise SluicegateError("tool_choice {'type': 'tool'} needs a tool_name")
            return {"type": "tool", "toolName": name}
        if kind in ("auto", "none", "required"):
            return {"type": kind}
    raise SluicegateError(f"tool_choice must be 'auto', 'none', 'required' or a tool dict, got {choice!r}")


class ToolDefinitions:
    """One run's V2 tool definitions, each built once and reused by the run's later steps
    (`Tool.to_v2` copies a pydantic schema on every call, and the loop asks on every step).

    Who could change a definition after it is built: a `process_llm_request` processor is
    handed the step's list (`args.tools`), so when the run has one (`private`) every step gets
    deep copies, and what a processor edits stays in that step (a dict `input_schema` the tool
    owns included). Without one, only the run's model calls read them: each step gets its own
    top-level dicts (a model that pops a key changes no other step's), sharing the schemas,
    which providers only read. A definition is rebuilt when its tool, name, description, schema
    or provider options change (a step's `process_input_step` may swap tools)."""

    __slots__ = ("_built", "private")

    def __init__(self, *, private: bool) -> None:
        self.private = private
        self._built: dict[str, tuple[Tool, Any, Any, Any, dict[str, Any]]] = {}

    def of(self, tools: dict[str, Tool]) -> list[dict[str, Any]]:
        """The definitions of `tools` (name -> tool), in order: a new list each call."""
        built = self._built
        out: list[dict[str, Any]] = []
        for name, tool in tools.items():
            entry = built.get(name)
            if (
                entry is None
                or entry[0] is not tool
                or entry[1] is not tool.description
                or entry[2] is not tool.input_schema
                or entry[3] is not tool.provider_options
            ):
                definition = tool.to_v2(name)
                built[name] = (tool, tool.description, tool.input_schema, tool.provider_options, definition)
            else:
                definition = entry[4]
            out.append(definition)
        return copy.deepcopy(out) if self.private else [dict(definition) for definition in out]


def build_call_options(
    config: StepConfig,
    prompt: list[dict[str, Any]],
    schema_for: Callable[[Any], OutputSchema],
    definitions: ToolDefinitions | None = None,
) -> CallOptions:
    """The provider call of one step, from its `StepConfig` (after `process_input_step`);
    its tools' definitions from the run's `definitions` (built anew without)."""
    tool_defs, tool_choice = tool_definitions(config, definitions)
    options = CallOptions(
        prompt=prompt, tools=tool_defs, tool_choice=tool_choice, provider_options=config.provider_options
    )
    # Normalised again here: a processor may have edited the settings dict in place.
    check_provider_options(config.provider_options)
    for attr, value in normalize_model_settings(config.model_settings).items():
        setattr(options, attr, value)
    if config.structured_output is not None:
        options.response_format = {
            "type": "json",
            "schema": schema_for(config.structured_output).json_schema,
        }
    return options


def tool_definitions(
    config: StepConfig, definitions: ToolDefinitions | None = None
) -> tuple[list[dict[str, Any]], dict[str, Any] | None]:
    choice = normalize_tool_choice(config.tool_choice)
    tools = active_tools(config)
    if not tools or (choice is not None and choice["type"] == "none"):
        return [], None
    if definitions is None:
        return [tool.to_v2(name) for name, tool in tools.items()], choice or {"type": "auto"}
    return definitions.of(tools), choice or {"type": "auto"}


def active_tools(config: StepConfig) -> dict[str, Tool]:
    if config.active_tools is None:
        return config.tools
    allowed = set(config.active_tools)
    return {name: tool for name, tool in config.tools.items() if name in allowed}
