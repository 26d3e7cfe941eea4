"""`Chunk`: one event of an agent's output stream, in Mastra's `ChunkType` shape.

Chunks are built on the per-token hot path, so the class is slotted and the common payloads
are constructed without keyword dictionaries. `to_dict()` writes Mastra's JSON; `from_dict()`
reads it back. `Chunk` is generic in its payload type for type checkers only (`Chunk[Any]`
unparametrized); `sluicegate.stream.kinds.is_chunk` narrows a chunk to its kind's payload.

`chunk.metadata` (Mastra's optional chunk `metadata`, here `{"traceId": ...}` when the run is
traced) rides on the run id: a traced run's id is a `TaggedRunId`, one shared object per run, so
no chunk pays for it when it is built.
"""

from __future__ import annotations

import copy
from typing import Any, Generic

from typing_extensions import TypeVar

from sluicegate.stream.payload import Payload, to_json

P = TypeVar("P", default=Any)


class TaggedRunId(str):
    """A run id that carries the run's chunk metadata (one object shared by all its chunks)."""

    metadata: dict[str, Any]

    def __new__(cls, run_id: str, metadata: dict[str, Any]) -> TaggedRunId:
        tagged = super().__new__(cls, run_id)
        tagged.metadata = metadata
        return tagged

    def __reduce__(self) -> tuple[Any, tuple[str, dict[str, Any]]]:
        return (TaggedRunId, (str(self), self.metadata))


def tag_run_id(run_id: str, metadata: dict[str, Any] | None) -> str:
    """`run_id` carrying `metadata` (or the plain id when there is none)."""
    if not metadata:
        return str(run_id)
    return TaggedRunId(run_id, metadata)


class Chunk(Generic[P]):
    """One stream event: `type`, `run_id`, `from_` and a `payload` (or `data` for `data-*`).

    A `data-*` chunk may be marked `transient` (shown live, never stored): the slot is set only
    on those, so the per-token chunks pay nothing for it; read it with `is_transient`."""

    __slots__ = ("data", "from_", "payload", "run_id", "transient", "type")
    transient: bool
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

    @property
    def metadata(self) -> dict[str, Any] | None:
        """The run's chunk metadata (`{"traceId": ...}` when traced), or None."""
        return getattr(self.run_id, "metadata", None)

    @metadata.setter
    def metadata(self, value: dict[str, Any] | None) -> None:
        self.run_id = tag_run_id(self.run_id, value)

    @property
    def is_transient(self) -> bool:
        return bool(getattr(self, "transient", False))

    def copy(self) -> Chunk[P]:
        """An independent copy: what a processor changes in one is not seen in the other."""
        payload: Any = self.payload
        if payload.__class__ is TextPayload:
            payload = TextPayload(payload.id, payload.text)
        else:
            payload = copy.deepcopy(payload)
        data = self.data
        copied = Chunk(
            self.type, self.run_id, payload, None if data is None else copy.deepcopy(data), self.from_
        )
        if self.is_transient:
            copied.transient = True
        return copied

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.type, "runId": self.run_id, "from": self.from_}
        if self.type.startswith("data-"):
            out["data"] = to_json(self.data)
            if self.payload is not None:
                out["payload"] = to_json(self.payload)
            if self.is_transient:
                out["transient"] = True
        else:
            out["payload"] = to_json(self.payload) if self.payload is not None else {}
        metadata = getattr(self.run_id, "metadata", None)
        if metadata:
            out["metadata"] = metadata
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Chunk[Any]:
        kind = data["type"]
        if data.get("metadata"):
            data = {**data, "runId": tag_run_id(data.get("runId", ""), data["metadata"])}
        raw = data.get("payload")
        payload = Payload.from_json(raw) if isinstance(raw, dict) else raw
        if kind.startswith("data-"):
            chunk = cls(
                kind,
                data.get("runId", ""),
                payload=payload,
                data=data.get("data"),
                from_=data.get("from", "AGENT"),
            )
            if data.get("transient"):
                chunk.transient = True
            return chunk
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
