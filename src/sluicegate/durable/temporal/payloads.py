"""What crosses the workflow boundary: plain JSON, checked against Temporal's payload limit.

Values are made JSON the way suspended runs store them (`held_step.json_value`: what cannot be
encoded becomes its text), so a durable run and a suspended one carry the same data.

The calls a run makes at every step (its model and tool activities, their results, the run
log's chunks) are `encoded`: made JSON once, and handed to Temporal as that payload. `checked`
walks a value into plain JSON, measures it, and Temporal's converter encodes it again: three
passes over a step's input (its prompt, its chunks), on the workflow's critical path.
"""

from __future__ import annotations

import json
from typing import Any

from temporalio.api.common.v1 import Payload
from temporalio.common import RawValue

from sluicegate.agent.held_step import json_default, json_value
from sluicegate.durable.temporal.failures import PayloadTooLargeError

PAYLOAD_LIMIT = 2 * 1024 * 1024
"""Temporal's default limit on one payload (the server's `blobSizeLimitError`)."""

LOCAL_LIMIT = 64 * 1024 * 1024
"""The limit on a local activity's input (the run log's publish): it stays in the worker, in
neither the history nor the server's limit, and bounds only what one write hands the log."""

ENCODING = b"json/plain"
"""The encoding of Temporal's JSON payload converter, which decodes an `encoded` payload."""

_ENCODER = json.JSONEncoder(default=json_default, allow_nan=False, separators=(",", ":"))
"""`encoded`'s encoder, made once (`json.dumps` with these options makes one per call)."""

_MARKER = '"\\u0000'
"""How a record's marker string (see `SharedRecords`) begins once encoded: a quote and an
escaped NUL."""

__all__ = [
    "LOCAL_LIMIT",
    "PAYLOAD_LIMIT",
    "SharedRecords",
    "checked",
    "encoded",
    "json_state",
    "json_text",
    "json_value",
]


def checked(what: str, value: Any, limit: int = PAYLOAD_LIMIT) -> Any:
    """`value` as JSON, or `PayloadTooLargeError` naming `what` when it would not fit."""
    plain = json_value(value)
    size = len(json.dumps(plain, separators=(",", ":")).encode())
    if size > limit:
        raise PayloadTooLargeError(what, size, limit)
    return plain


def json_text(value: Any) -> str:
    """`value` as the JSON text `encoded` would write for it (a chunk that travels encoded)."""
    return _ENCODER.encode(value)


def encoded(what: str, value: Any, limit: int = PAYLOAD_LIMIT) -> RawValue:
    """`value` as the JSON payload Temporal sends and the other side decodes to `checked(value)`,
    encoded once; `PayloadTooLargeError` naming `what` when it would not fit."""
    data = json_text(value).encode()
    if len(data) > limit:
        raise PayloadTooLargeError(what, len(data), limit)
    return RawValue(Payload(metadata={"encoding": ENCODING}, data=data))


def json_state(state: dict[str, Any]) -> dict[str, Any]:
    """A processor's `state`, keeping the entries that survive JSON unchanged (the others
    cannot leave the process; the processor sees them missing on the other side)."""
    out: dict[str, Any] = {}
    for key, value in state.items():
        try:
            if json.loads(json.dumps(value, allow_nan=False)) == value:
                out[key] = value
        except (TypeError, ValueError):
            continue
    return out


class SharedRecords:
    """A run's chunks as JSON text (`json_text`'s), the records its chunks share encoded once.

    Mastra's `step-finish` and `finish` list every step so far (`output.steps`) and the whole
    conversation (`messages.all`, `user`, `nonUser`, `response.messages`): quadratic text in the
    steps. The run summary builds each step's record and each message once, and every later
    chunk lists the same objects; so a dict listed in a list is encoded the first time and its
    text kept, by identity (the dict held with it, so its id names no other object while the
    run lasts), and spliced into the later chunks' text. The text is the same as `json_text`'s.
    A listed record is taken as it was when first encoded: the summary never edits one, and an
    output processor that edits a record in place edits what every chunk listing it holds."""

    __slots__ = ("_texts",)

    def __init__(self) -> None:
        self._texts: dict[int, tuple[dict[str, Any], str]] = {}

    def __call__(self, value: Any) -> str:
        """`value` (a chunk's `to_dict()`) as JSON text.

        Encoded in one pass of the C encoder: each listed record stands in as a marker string
        (a NUL and its index), whose encoding (`"\\u0000<i>"`) is then replaced by the record's
        text. A string of the value's own that starts with a NUL encodes alike: then the markers
        are not counted right, and the value is encoded whole instead (the same text, its
        records encoded again)."""
        texts: list[str] = []
        shadow = self._shadow(value, texts)
        if not texts:
            return _ENCODER.encode(value)
        pieces = _ENCODER.encode(shadow).split(_MARKER)
        if len(pieces) != len(texts) + 1:
            return _ENCODER.encode(value)
        out = [pieces[0]]
        for piece in pieces[1:]:
            index, rest = piece.split('"', 1)
            out.append(texts[int(index)])
            out.append(rest)
        return "".join(out)

    def _shadow(self, value: Any, texts: list[str]) -> Any:
        """`value` with its listed records replaced by markers, their texts appended to `texts`
        (what is not a dict or list, or a dict with keys that are not text, is kept as it is)."""
        if type(value) is dict:
            if not all(type(key) is str for key in value):
                return value
            return {
                key: self._shadow(item, texts) if type(item) is dict or type(item) is list else item
                for key, item in value.items()
            }
        if type(value) is not list:
            return value
        out: list[Any] = []
        for item in value:
            kind = type(item)
            if kind is dict:
                texts.append(self._listed(item))
                out.append(f"\x00{len(texts) - 1}")
            elif kind is list:
                out.append(self._shadow(item, texts))
            else:
                out.append(item)
        return out

    def _listed(self, item: dict[str, Any]) -> str:
        known = self._texts.get(id(item))
        if known is not None and known[0] is item:
            return known[1]
        text = _ENCODER.encode(item)
        self._texts[id(item)] = (item, text)
        return text
