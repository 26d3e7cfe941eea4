"""`ToolCallFilter`: keep verbose tool traffic out of the model's context, not out of memory."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from sluicegate.processors.args import ProcessLLMRequestArgs, ProcessLLMRequestResult
from sluicegate.processors.base import Processor

_HISTORY_IDS = "history_tool_call_ids"


def _model_output_text(output: Any) -> str | None:
    """Plain text for a tool's model-facing output (`{"type": "text", "value": ...}`, json, arrays)."""
    if isinstance(output, str):
        return output
    if isinstance(output, bool | int | float):
        return json.dumps(output)
    if isinstance(output, list):
        texts = [t for t in (_model_output_text(item) for item in output) if t]
        return "\n".join(texts) if texts else _dump(output)
    if isinstance(output, dict):
        if output.get("type") == "text" and isinstance(output.get("value", output.get("text")), str):
            return str(output.get("value", output.get("text")))
        if "value" in output:
            return _model_output_text(output["value"])
        if isinstance(output.get("text"), str):
            return str(output["text"])
        return _dump(output)
    return None


def _dump(value: Any) -> str | None:
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return None


def _tool_parts(prompt: list[dict[str, Any]]) -> Iterable[tuple[dict[str, Any], dict[str, Any]]]:
    for message in prompt:
        if message.get("role") in ("assistant", "tool") and isinstance(message.get("content"), list):
            for part in message["content"]:
                if part.get("type") in ("tool-call", "tool-result"):
                    yield message, part


class ToolCallFilter(Processor):
    """Removes tool calls and their results from what the model is sent.

    The filter works on the outbound prompt (`process_llm_request`), so it changes only what this
    model call receives: the run's messages, memory and UI history keep every tool invocation.
    A call and its result always go together, so no dangling call or orphaned result is sent.

    - `exclude`: the tool names to remove; all tools when omitted.
    - `filter_after_tool_steps`: without it, only tool calls from before this request are
      removed and the current run keeps its own; with it, every tool-producing step except the
      newest `filter_after_tool_steps` ones is filtered (0 filters them all).
    - `preserve_model_output`: a removed tool result that has a model-facing form (the tool's
      `to_model_output`, stored under `modelOutput`) is kept as a compact text
      `"<tool> result:\\n<output>"` where the call was; its raw args and result are still dropped.

    Example::

        agent = Agent(name="a", model=model, tools=[search, weather],
                      input_processors=[ToolCallFilter(exclude=["search"], filter_after_tool_steps=2,
                                                       preserve_model_output=True)])
    """

    id = "tool-call-filter"
    name = "ToolCallFilter"

    def __init__(
        self,
        *,
        exclude: Iterable[str] | None = None,
        filter_after_tool_steps: int | None = None,
        preserve_model_output: bool = False,
    ) -> None:
        super().__init__()
        self.exclude: frozenset[str] | None = None if exclude is None else frozenset(exclude)
        if filter_after_tool_steps is not None and filter_after_tool_steps < 0:
            raise ValueError("filter_after_tool_steps must be 0 or more")
        self.filter_after_tool_steps = filter_after_tool_steps
        self.preserve_model_output = preserve_model_output

    def _excluded(self, tool_name: str) -> bool:
        return self.exclude is None or tool_name in self.exclude

    def _preserved_ids(self, prompt: list[dict[str, Any]], state: dict[str, Any]) -> set[str]:
        all_ids = {part["toolCallId"] for _, part in _tool_parts(prompt)}
        if self.filter_after_tool_steps is None:
            # The request's first prompt is the history; every call after it belongs to this run.
            history: set[str] = state.setdefault(_HISTORY_IDS, set(all_ids))
            return all_ids - history
        steps: list[list[str]] = []
        for message in prompt:
            if message.get("role") == "assistant" and isinstance(message.get("content"), list):
                ids = [p["toolCallId"] for p in message["content"] if p.get("type") == "tool-call"]
                if ids:
                    steps.append(ids)
        keep = steps[-self.filter_after_tool_steps :] if self.filter_after_tool_steps else []
        return {tool_call_id for ids in keep for tool_call_id in ids}

    def _model_outputs(self, args: ProcessLLMRequestArgs, ids: set[str]) -> dict[str, str]:
        """`toolCallId -> "<tool> result:\\n<text>"` for removed results whose tool has a model output."""
        if not self.preserve_model_output or args.message_list is None:
            return {}
        texts: dict[str, str] = {}
        for message in args.message_list.get.all.db():
            for part in message.content.parts:
                if part.get("type") != "tool-invocation":
                    continue
                inv = part["toolInvocation"]
                if inv.get("toolCallId") in ids and inv.get("state") == "result" and "modelOutput" in inv:
                    text = _model_output_text(inv["modelOutput"])
                    if text:
                        texts[inv["toolCallId"]] = f"{inv.get('toolName')} result:\n{text}"
        return texts

    def process_llm_request(self, args: ProcessLLMRequestArgs) -> ProcessLLMRequestResult | None:
        if self.exclude is not None and not self.exclude:
            return None
        prompt = args.prompt
        preserved = self._preserved_ids(prompt, args.state)
        removed = {
            part["toolCallId"]
            for _, part in _tool_parts(prompt)
            if part["toolCallId"] not in preserved and self._excluded(part.get("toolName", ""))
        }
        if not removed:
            return None
        replacements = self._model_outputs(args, removed)
        call_ids = {
            part["toolCallId"]
            for message, part in _tool_parts(prompt)
            if message["role"] == "assistant" and part["type"] == "tool-call"
        }
        filtered: list[dict[str, Any]] = []
        for message in prompt:
            if message.get("role") not in ("assistant", "tool") or not isinstance(
                message.get("content"), list
            ):
                filtered.append(message)
                continue
            content: list[dict[str, Any]] = []
            changed = False
            for part in message["content"]:
                tool_call_id = (
                    part.get("toolCallId") if part.get("type") in ("tool-call", "tool-result") else None
                )
                if tool_call_id is None or tool_call_id not in removed:
                    content.append(part)
                    continue
                changed = True
                # The pair collapses into one text where the call stood, so roles stay valid.
                stands_in = part["type"] == "tool-call" or (
                    message["role"] == "assistant" and tool_call_id not in call_ids
                )
                if stands_in and tool_call_id in replacements:
                    content.append({"type": "text", "text": replacements[tool_call_id]})
            if content:
                filtered.append({**message, "content": content} if changed else message)
        return ProcessLLMRequestResult(prompt=filtered)
