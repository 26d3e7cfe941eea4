"""The output stream: chunks, their payloads, usage and the `ModelOutput` that delivers them."""

from sluicegate.stream.chunk import Chunk, text_delta
from sluicegate.stream.payload import Payload
from sluicegate.stream.usage import Usage

__all__ = ["Chunk", "Payload", "Usage", "text_delta"]
