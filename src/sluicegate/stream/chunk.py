"""`Chunk`: one event of an agent's output stream, in Mastra's `ChunkType` shape.

Chunks are built on the per-token hot path, so the class is slotted and the common payloads
are constructed without keyword dictionaries. `to_dict()` writes Mastra's JSON; `from_dict()`
reads it back. `Chunk` is generic in its payload type for type checkers only (`Chunk[Any]`
unparametrized); `sluicegate.stream.kinds.is_chunk` narrows a chunk to its kind's payload.
"""

from __future__ import annotations

import copy
from typing import Any, Generic

from typing_extensions import TypeVar

from sluicegate.stream.payload import Payload, to_json

P = TypeVar("P", default=Any)


class Chunk(Generic[P]):
    """One stream event: `type`, `run_id`, `from_` and a `payload` (or `data` for `data-*`)."""

    __slots__ = ("data", "from_", "payload", "run_id", "type")
    type: str
    run_id: str
    from_: str
    payload: P
    data: Any

    def __init__(
        self, type: str, run_id: str = "", payload: Any = None, data: Any = None, from_: str = "AGENT"
    ) -> None:
        self.type = type
        self.run_id = run_id
        self.from_ = from_
        self.payload = payload
        self.data = data

    def copy(self) -> Chunk[P]:
        """An independent copy: what a processor changes in one is not seen in the other."""
        payload: Any = self.payload
        if payload.__class__ is TextPayload:
            payload = TextPayload(payload.id, payload.text)
        else:
            payload = copy.deepcopy(payload)
        data = self.data
        return Chunk(
            self.type, self.run_id, payload, None if data is None else copy.deepcopy(data), self.from_
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "runId": self.run_id, "from": self.from_}
        if self.type.startswith("data-"):
            out["data"] = to_json(self.data)
            if self.payload is not None:
                out["payload"] = to_json(self.payload)
        else:
            out["payload"] = to_json(self.payload) if self.payload is not None else {}
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Chunk[Any]:
        kind = data["type"]
        raw = data.get("payload")
        payload = Payload.from_json(raw) if isinstance(raw, dict) else raw
        if kind.startswith("data-"):
            return cls(
                kind,
                data.get("runId", ""),
                payload=payload,
                data=data.get("data"),
                from_=data.get("from", "AGENT"),
            )
        return cls(
            kind,
            data.get("runId", ""),
            payload=payload if payload is not None else Payload(),
            from_=data.get("from", "AGENT"),
        )

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Chunk) and self.to_dict() == other.to_dict()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        body = f"data={self.data!r}" if self.type.startswith("data-") else f"payload={self.payload!r}"
        return f"Chunk({self.type!r}, {body})"


class TextPayload(Payload):
    """Payload of `text-delta` / `reasoning-delta`: built once per token, so positional."""

    id: str
    text: str

    def __init__(self, id: str, text: str) -> None:
        self.id = id
        self.text = text


def text_delta(run_id: str, id: str, text: str) -> Chunk[TextPayload]:
    return Chunk("text-delta", run_id, TextPayload(id, text))
