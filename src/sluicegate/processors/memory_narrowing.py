"""Per-call memory options that may only narrow what the memory was configured with.

The HTTP server passes a client's `memory.options` through `narrow`: a request may turn semantic
recall or working memory off, load fewer messages, recall fewer or closer matches from a smaller
scope, or go read-only. It may not turn on a feature the application did not configure (which
would load an embedder, create vector tables or add a tool and processors), choose a vector
index, change the working memory template, or make read-only memory writable. Code in the same
process is trusted and uses `MemoryOptions.merged`, which may widen.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from sluicegate.memory.errors import MemoryOptionError
from sluicegate.processors.memory import (
    OPTION_ALIASES,
    MemoryOptions,
    SemanticRecallOptions,
    semantic_fields,
    working_fields,
)


def narrow(configured: MemoryOptions, overrides: Mapping[str, Any]) -> MemoryOptions:
    """`configured` with `overrides` applied, each checked against `configured`;
    `MemoryOptionError` names the first option that is malformed or would widen it."""
    result = configured
    for key, value in overrides.items():
        rule = _RULES.get(OPTION_ALIASES.get(key, key))
        if rule is None:
            raise MemoryOptionError(
                key, "unknown option; known: lastMessages, semanticRecall, workingMemory, readOnly"
            )
        result = rule(configured, result, value, key)
    return result


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _last_messages(configured: MemoryOptions, result: MemoryOptions, value: Any, key: str) -> MemoryOptions:
    allowed = configured.last_messages
    if value is False:
        return replace(result, last_messages=False)
    if value is None:
        if allowed is not None:
            raise MemoryOptionError(key, f"cannot load every message: this memory loads at most {allowed}")
        return replace(result, last_messages=None)
    if not _whole(value):
        raise MemoryOptionError(key, f"must be a non-negative integer or false, got {value!r}")
    limit = 0 if allowed is False else allowed
    if limit is not None and value > limit:
        raise MemoryOptionError(key, f"cannot be more than the configured {limit}")
    return replace(result, last_messages=value)


def _span(value: int | Mapping[str, int]) -> tuple[int, int]:
    if isinstance(value, Mapping):
        return int(value.get("before", 0)), int(value.get("after", 0))
    return int(value), int(value)


def _semantic_recall(configured: MemoryOptions, result: MemoryOptions, value: Any, key: str) -> MemoryOptions:
    if value is False or value is None:
        return replace(result, semantic_recall=None)
    base = configured.semantic_recall
    if base is None:
        raise MemoryOptionError(
            key, "semantic recall is not configured for this memory; a request may only turn it off"
        )
    if value is True:
        return replace(result, semantic_recall=base)
    if not isinstance(value, Mapping):
        raise MemoryOptionError(key, f"must be true, false or an object, got {value!r}")
    fields = semantic_fields(value, key)
    for spelled in value:
        name = OPTION_ALIASES.get(str(spelled), str(spelled))
        _check_recall_field(base, name, fields[name], f"{key}.{spelled}")
    return replace(result, semantic_recall=replace(base, **fields))


def _check_recall_field(base: SemanticRecallOptions, name: str, value: Any, where: str) -> None:
    if name == "top_k" and value > base.top_k:
        raise MemoryOptionError(where, f"cannot be more than the configured {base.top_k}")
    if name == "message_range":
        asked, allowed = _span(value), _span(base.message_range)
        if asked[0] > allowed[0] or asked[1] > allowed[1]:
            raise MemoryOptionError(
                where, f"cannot be wider than the configured {{before: {allowed[0]}, after: {allowed[1]}}}"
            )
    if name == "scope" and value == "resource" and base.scope == "thread":
        raise MemoryOptionError(where, "this memory recalls from the thread only")
    if name == "threshold" and base.threshold is not None and (value is None or value < base.threshold):
        raise MemoryOptionError(where, f"cannot be lower than the configured {base.threshold}")
    if name == "index_name" and value != base.index_name:
        raise MemoryOptionError(where, "the vector index is the application's choice")


def _working_memory(configured: MemoryOptions, result: MemoryOptions, value: Any, key: str) -> MemoryOptions:
    base = configured.working_memory
    flag = isinstance(value, bool)
    if flag:
        value = {"enabled": value}
    if not isinstance(value, Mapping):
        raise MemoryOptionError(key, f"must be true, false or an object, got {value!r}")
    fields = working_fields(value, key)
    for spelled in value:
        name = OPTION_ALIASES.get(str(spelled), str(spelled))
        where = key if flag else f"{key}.{spelled}"
        if name == "enabled" and fields[name] and not base.enabled:
            raise MemoryOptionError(
                where, "working memory is not configured for this memory; a request may only turn it off"
            )
        if name == "scope" and fields[name] == "resource" and base.scope == "thread":
            raise MemoryOptionError(where, "this memory keeps working memory per thread only")
        if name == "template" and fields[name] != base.template:
            raise MemoryOptionError(where, "the working memory template is the application's choice")
    return replace(result, working_memory=replace(base, **fields))


def _read_only(configured: MemoryOptions, result: MemoryOptions, value: Any, key: str) -> MemoryOptions:
    if not isinstance(value, bool):
        raise MemoryOptionError(key, f"must be true or false, got {value!r}")
    if not value and configured.read_only:
        raise MemoryOptionError(key, "this memory is read-only; a request cannot make it writable")
    return replace(result, read_only=value)


_RULES: dict[str, Callable[[MemoryOptions, MemoryOptions, Any, str], MemoryOptions]] = {
    "last_messages": _last_messages,
    "semantic_recall": _semantic_recall,
    "working_memory": _working_memory,
    "read_only": _read_only,
}
