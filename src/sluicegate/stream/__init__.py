"""The output stream: chunks, their payloads, usage and the `ModelOutput` that delivers them."""

from sluicegate.stream.chunk import Chunk, TextPayload, text_delta
from sluicegate.stream.kinds import ChunkKind, is_chunk
from sluicegate.stream.output import ModelOutput
from sluicegate.stream.payload import Payload
from sluicegate.stream.sync_output import SyncModelOutput
from sluicegate.stream.usage import Usage

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
