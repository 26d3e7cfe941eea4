"""One rule for what a hook returns as a dict.

A hook that may return a result object (`ProcessInputStepResult`, `ProcessToolResultResult`,
...) may return the same thing as a dict: `{"result": x}` is `ProcessToolResultResult(result=x)`.
Its keys are the result's field names in snake_case, or Mastra's camelCase spelling of them
(`systemMessages`); a key that is neither would silently change nothing, so it is a
`UnknownResultKeyError` (a `ProcessorError` and a `ConfigurationError`) naming the processor,
the hook, the key and the closest known one. `{}`,
like None, changes nothing. The hooks that return messages read `{"messages", "system_messages"}`
the same way.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from sluicegate.errors import ProcessorError, UnknownResultKeyError
from sluicegate.messages import MessageList
from sluicegate.processors.args import (
    ProcessAPIErrorResult,
    ProcessInputStepResult,
    ProcessLLMRequestResult,
    ProcessToolCallResult,
    ProcessToolResultResult,
)
from sluicegate.processors.hook_call import HookEntry, wrong_return

MESSAGE_KEYS: tuple[str, ...] = ("messages", "system_messages")
"""What a dict from `process_input`, `process_output_step` or `process_output_result` may set."""


def camel(name: str) -> str:
    """Mastra's spelling of a snake_case field: `system_messages` -> `systemMessages`."""
    head, *rest = name.split("_")
    return head + "".join(word.title() for word in rest)


def _fields(result_type: type) -> tuple[str, ...]:
    return tuple(field.name for field in dataclasses.fields(result_type))


RESULT_KEYS: dict[str, tuple[str, ...]] = {
    "process_input": MESSAGE_KEYS,
    "process_input_step": _fields(ProcessInputStepResult),
    "process_llm_request": _fields(ProcessLLMRequestResult),
    "process_api_error": _fields(ProcessAPIErrorResult),
    "process_output_step": MESSAGE_KEYS,
    "process_output_result": MESSAGE_KEYS,
    "process_tool_result": _fields(ProcessToolResultResult),
    "process_tool_call": _fields(ProcessToolCallResult),
}
"""Per hook, the keys its dict result may have (snake_case; camelCase accepted)."""

_SPELLINGS: dict[str, dict[str, str]] = {
    hook: {**{key: key for key in keys}, **{camel(key): key for key in keys}}
    for hook, keys in RESULT_KEYS.items()
}


def known_keys(hook: str) -> frozenset[str]:
    """Every key (both spellings) a dict returned from `hook` may have."""
    return frozenset(_SPELLINGS[hook])


def dict_fields(result: dict[str, Any], pid: str, hook: str) -> dict[str, Any]:
    """`result`'s keys as the hook's result fields (snake_case), values as given; raises
    `UnknownResultKeyError` for a key the hook's result does not have."""
    spellings = _SPELLINGS[hook]
    fields: dict[str, Any] = {}
    unknown: list[str] = []
    for key, value in result.items():
        name = spellings.get(key) if isinstance(key, str) else None
        if name is None:
            unknown.append(key)
        else:
            fields[name] = value
    if unknown:
        raise _unknown_keys(unknown, pid, hook)
    return fields


def _unknown_keys(unknown: list[Any], pid: str, hook: str) -> UnknownResultKeyError:
    import difflib  # only a mistake needs suggestions

    known = sorted(RESULT_KEYS[hook])
    hints = []
    for key in unknown:
        close = difflib.get_close_matches(str(key), known, n=1)
        hints.append(f"{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    return UnknownResultKeyError(
        f"processor {pid!r} returned unknown key(s) from {hook}: {', '.join(hints)}; known: {known}",
        processor_id=pid,
        hook=hook,
    )


def returned_fields(pid: str, hook: str, result: Any, result_type: type) -> dict[str, Any] | None:
    """What a hook returned (None, a `result_type` object or a dict) as its fields; None when
    it changes nothing (None or `{}`)."""
    if result is None:
        return None
    if isinstance(result, dict):
        return dict_fields(result, pid, hook) or None
    return {field.name: getattr(result, field.name) for field in dataclasses.fields(result_type)}


def apply_messages(
    pid: str, hook: str, result: Any, message_list: MessageList, *, empty_is_unchanged: bool = False
) -> None:
    """Apply what a message hook returned: None, the same `MessageList`, a list, or a dict."""
    if result is None or result is message_list:
        return
    if isinstance(result, MessageList):
        raise ProcessorError(
            f"processor {pid!r} returned a different MessageList from {hook}; mutate the one "
            "passed in (args.message_list) and return it, or return a list of messages",
            processor_id=pid,
            hook=hook,
        )
    if isinstance(result, list):
        if result or not empty_is_unchanged:
            message_list.reconcile(result)
        return
    if isinstance(result, dict):
        apply_message_fields(dict_fields(result, pid, hook), message_list)
        return
    raise ProcessorError(
        f"processor {pid!r} returned {type(result).__name__} from {hook}; expected "
        "a list of messages, the MessageList, a dict or None",
        processor_id=pid,
        hook=hook,
    )


def apply_message_fields(fields: dict[str, Any], message_list: MessageList) -> None:
    """`messages` reconciled with the list, `system_messages` replacing the system messages."""
    if fields.get("messages") is not None:
        message_list.reconcile(fields["messages"])
    if fields.get("system_messages") is not None:
        message_list.replace_system_messages(fields["system_messages"])


def hook_result_fields(
    entry: HookEntry, result: Any, result_type: type, expected: str
) -> dict[str, Any] | None:
    """A hook's result object or dict as its fields; None for None or `{}`. Anything else is
    the hook's mistake: a `ProcessorError` naming the processor, the hook and `expected`."""
    if result is not None and not isinstance(result, (result_type, dict)):
        raise wrong_return(entry, result, expected)
    return returned_fields(entry.pid, entry.hook, result, result_type)
