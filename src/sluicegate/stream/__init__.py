"""The output stream: chunks, their payloads and usage.

`ModelOutput` and `SyncModelOutput` deliver a run's chunks, so they belong to the agent layer
(`sluicegate.agent.output`); they stay importable from here, loaded on first access, so this
package never imports the agent at import time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sluicegate._lazy import lazy_attributes
from sluicegate.stream.chunk import Chunk, TextPayload, text_delta
from sluicegate.stream.kinds import ChunkKind, is_chunk
from sluicegate.stream.payload import Payload
from sluicegate.stream.usage import Usage

if TYPE_CHECKING:
    from sluicegate.agent.output import ModelOutput
    from sluicegate.agent.sync_output import SyncModelOutput

__getattr__ = lazy_attributes(
    __name__, {"ModelOutput": "output", "SyncModelOutput": "sync_output"}, source="sluicegate.agent"
)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "Chunk",
    "ChunkKind",
    "ModelOutput",
    "Payload",
    "SyncModelOutput",
    "TextPayload",
    "Usage",
    "is_chunk",
    "text_delta",
]
