"""Checking a call's input once, before anything is paid for or stored.

`generate`/`stream` take messages from callers who may be careless or hostile: `None`, an empty
list, text with a lone surrogate or a NUL byte (which no provider or database accepts), a part
without its text, a garbage `createdAt`, an unknown part type, ids that are not strings, or
megabytes of text. Each is refused here with an `InvalidInputError` that says what is wrong and
where (`messages[2].content[0].text`), so no model is called and no thread row is created.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sluicegate.errors import InvalidInputError, SluicegateError
from sluicegate.messages.message import Message

DEFAULT_MAX_INPUT_CHARS = 1_000_000
MAX_ID_CHARS = 256
"""Longest accepted message, thread or resource id."""

_PART_TYPES = frozenset(
    (
        "text",
        "image",
        "file",
        "reasoning",
        "redacted-reasoning",
        "tool-call",
        "tool-result",
        "tool-invocation",
        "dynamic-tool",
        "step-start",
        "source",
        "source-url",
        "source-document",
    )
)
"""Part types accepted besides `data-*` and AI SDK UI tool parts (`tool-<name>` with a
`toolCallId`)."""


MAX_EPOCH_MS = 253_402_300_799_999
"""A part's `createdAt` (epoch milliseconds, as Mastra stores it) is at most the end of year 9999."""


def check_max_input_chars(value: Any) -> int:
    """`max_input_chars` must be a positive int."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise SluicegateError(f"max_input_chars must be a positive integer, got {value!r}")
    return value


def check_id(value: Any, where: str) -> str:
    """A thread, resource or message id: a non-empty string of printable characters."""
    if not isinstance(value, str):
        raise InvalidInputError(f"{where} must be a string, got {type(value).__name__}")
    if not value or value.strip() == "":
        raise InvalidInputError(f"{where} must not be empty")
    if len(value) > MAX_ID_CHARS:
        raise InvalidInputError(f"{where} is {len(value)} characters long; the limit is {MAX_ID_CHARS}")
    if not value.isprintable():
        raise InvalidInputError(f"{where} contains control or unprintable characters")
    _check_encodable(value, where)
    return value


def validate_input(messages: Any, *, max_chars: int = DEFAULT_MAX_INPUT_CHARS) -> list[Message]:
    """The call's messages as `Message`s, or `InvalidInputError` naming the first problem."""
    if messages is None:
        raise InvalidInputError("no input: pass a string, a message dict, a Message or a list of them")
    if isinstance(messages, (str, Mapping, Message)):
        items: list[Any] = [messages]
        label = "messages"
    elif isinstance(messages, Iterable) and not isinstance(messages, (bytes, bytearray)):
        items = list(messages)
        label = "messages[{}]"
    else:
        raise InvalidInputError(
            f"messages must be a message or a list of messages, got {type(messages).__name__}"
        )
    if not items:
        raise InvalidInputError("no input: the list of messages is empty")
    budget = _Budget(max_chars)
    out: list[Message] = []
    for index, item in enumerate(items):
        where = label.format(index)
        _check_raw(item, where, budget)
        try:
            message = Message.coerce(item)
        except (SluicegateError, KeyError, ValueError, TypeError, AttributeError) as exc:
            raise InvalidInputError(f"{where}: {_reason(exc)}") from exc
        if isinstance(item, Message):
            _check_message(message, where, budget)
        out.append(message)
    if not any(_has_content(m) for m in out):
        raise InvalidInputError("no input: every message is empty (no text, file or tool part)")
    return out


class _Budget:
    __slots__ = ("left", "limit")

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.left = limit

    def spend(self, text: str) -> None:
        self.left -= len(text)
        if self.left < 0:
            raise InvalidInputError(
                f"the input is longer than max_input_chars ({self.limit:,} characters); "
                "send less text or raise the agent's max_input_chars"
            )


def _reason(exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"missing field {exc.args[0]!r}"
    return str(exc)


def _check_encodable(text: str, where: str) -> None:
    if "\x00" in text:
        raise InvalidInputError(f"{where} contains a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(
            f"{where} is not valid Unicode (a lone surrogate at position {exc.start})"
        ) from None


def _check_strings(value: Any, where: str, budget: _Budget, depth: int = 0) -> None:
    """Every string inside `value` is encodable and counts against the size cap."""
    if depth > 32:
        raise InvalidInputError(f"{where} is nested too deeply")
    if isinstance(value, str):
        _check_encodable(value, where)
        budget.spend(value)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if isinstance(key, str):
                _check_encodable(key, f"{where} (a key)")
            _check_strings(item, f"{where}.{key}", budget, depth + 1)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _check_strings(item, f"{where}[{i}]", budget, depth + 1)


def _check_raw(item: Any, where: str, budget: _Budget) -> None:
    """The shape of one input message as the caller gave it."""
    if isinstance(item, str):
        _check_encodable(item, where)
        budget.spend(item)
        return
    if isinstance(item, Message):
        return
    if not isinstance(item, Mapping):
        raise InvalidInputError(
            f"{where} must be a str, a dict with role and content, or a Message; got {type(item).__name__}"
        )
    if "id" in item and item["id"] is not None:
        check_id(item["id"], f"{where}.id")
    for key in ("threadId", "resourceId"):
        if item.get(key) is not None:
            check_id(item[key], f"{where}.{key}")
    for key in ("createdAt", "created_at"):
        if item.get(key) is not None:
            _check_created_at(item[key], f"{where}.{key}")
    content = item.get("content", item.get("parts"))
    if isinstance(content, Mapping):
        parts = content.get("parts")
        if parts is not None and not isinstance(parts, list):
            raise InvalidInputError(f"{where}.content.parts must be a list")
        for i, part in enumerate(parts or []):
            _check_part(part, f"{where}.content.parts[{i}]")
    elif isinstance(content, list):
        for i, part in enumerate(content):
            if not isinstance(part, str):
                _check_part(part, f"{where}.content[{i}]")
    _check_strings(dict(item), where, budget)


def _check_created_at(value: Any, where: str) -> None:
    from sluicegate.messages.message import parse_datetime

    if isinstance(value, bool):
        raise InvalidInputError(f"{where} must be a datetime, a timestamp or an ISO string, got {value!r}")
    try:
        parse_datetime(value)
    except (SluicegateError, ValueError, TypeError, OverflowError, OSError) as exc:
        raise InvalidInputError(f"{where} is not a valid date: {value!r}") from exc


def _check_part(part: Any, where: str) -> None:
    if not isinstance(part, Mapping):
        raise InvalidInputError(f"{where} must be an object with a `type`, got {type(part).__name__}")
    kind = part.get("type")
    if not isinstance(kind, str):
        raise InvalidInputError(f"{where} has no `type`")
    ui_tool = kind.startswith("tool-") and "toolCallId" in part
    if kind not in _PART_TYPES and not kind.startswith("data-") and not ui_tool:
        raise InvalidInputError(f"{where} has an unknown type {kind!r}")
    if kind in ("text", "reasoning") and not isinstance(part.get("text"), str):
        raise InvalidInputError(f"{where} is a {kind} part without a `text` string")
    if kind in ("tool-call", "tool-result") or ui_tool:
        for key in ("toolCallId",) if ui_tool else ("toolCallId", "toolName"):
            if not isinstance(part.get(key), str) or not part.get(key):
                raise InvalidInputError(f"{where} is a {kind} part without `{key}`")
    if kind == "tool-invocation" and not isinstance(part.get("toolInvocation"), Mapping):
        raise InvalidInputError(f"{where} is a tool-invocation part without `toolInvocation`")
    created = part.get("createdAt")
    if created is not None and (
        isinstance(created, bool) or not isinstance(created, int) or not 0 <= created <= MAX_EPOCH_MS
    ):
        raise InvalidInputError(f"{where}.createdAt must be epoch milliseconds (an integer), got {created!r}")


def _check_message(message: Message, where: str, budget: _Budget) -> None:
    """A `Message` object given directly: the same rules on its stored shape."""
    check_id(message.id, f"{where}.id")
    for i, part in enumerate(message.content.parts):
        _check_part(part, f"{where}.content.parts[{i}]")
    _check_strings(message.content.to_dict(), f"{where}.content", budget)


def _has_content(message: Message) -> bool:
    for part in message.content.parts:
        if part.get("type") != "text" or part.get("text"):
            return True
    return bool(message.content.content)
