"""The output stream: chunks, their payloads and usage.

`ModelOutput` and `SyncModelOutput` deliver a run's chunks, so they belong to the agent layer
(`sluicegate.agent.output`); they stay importable from here, loaded on first access, so this
package never imports the agent at import time.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sluicegate._lazy import lazy_attributes
from sluicegate.stream.chunk import Chunk, TextPayload, text_delta
from sluicegate.stream.kinds import ChunkKind, is_chunk
from sluicegate.stream.payload import Payload
from sluicegate.stream.run_log import (
    InMemoryRunLog,
    OffsetExpiredError,
    OffsetOutOfRangeError,
    RunInfo,
    RunLog,
    RunLogError,
    RunLogUnavailableError,
    RunNotFoundError,
    RunStateError,
    RunStatus,
    RunWriter,
)
from sluicegate.stream.usage import Usage

if TYPE_CHECKING:
    from sluicegate.agent.output import ModelOutput
    from sluicegate.agent.sync_output import SyncModelOutput
    from sluicegate.stream.redis_run_log import RedisRunLog

_from_agent = lazy_attributes(
    __name__, {"ModelOutput": "output", "SyncModelOutput": "sync_output"}, source="sluicegate.agent"
)
# The Redis client library loads only when the Redis run log is used.
_from_here = lazy_attributes(__name__, {"RedisRunLog": "redis_run_log"})


def __getattr__(name: str) -> Any:
    if name == "RedisRunLog":
        return _from_here(name)
    return _from_agent(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "Chunk",
    "ChunkKind",
    "InMemoryRunLog",
    "ModelOutput",
    "OffsetExpiredError",
    "OffsetOutOfRangeError",
    "Payload",
    "RedisRunLog",
    "RunInfo",
    "RunLog",
    "RunLogError",
    "RunLogUnavailableError",
    "RunNotFoundError",
    "RunStateError",
    "RunStatus",
    "RunWriter",
    "SyncModelOutput",
    "TextPayload",
    "Usage",
    "is_chunk",
    "text_delta",
]
