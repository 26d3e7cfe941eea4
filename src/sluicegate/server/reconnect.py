"""The server's reconnect log: every SSE stream it serves is teed into a run log, which the
`observe` route replays from an offset and then follows live.

The log is `ServerSettings.redis_url`'s `RedisRunLog` when set (a client may reconnect through
any process), else an `InMemoryRunLog` of this process; `create_app(run_log=...)` takes any
other. It is a convenience channel, not a guardrail (see `sluicegate.stream.run_log`): a log that
cannot be opened or written leaves the run untouched, with one WARNING.

A chunk costs one `append`. Error chunks (rare) are logged as the client saw them: the public
summary of a provider error, never its private text, so a replay shows no more than the live
stream did, whichever log keeps it.
"""

from __future__ import annotations

import logging
from typing import Any

from starlette.requests import Request

from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY
from sluicegate.server.settings import ServerSettings
from sluicegate.server.streaming import Outcome, chunk_event
from sluicegate.stream.chunk import Chunk
from sluicegate.stream.run_log import InMemoryRunLog, RunLog, RunStatus, RunWriter

log = logging.getLogger("sluicegate.server")

_ERROR_CHUNKS = frozenset(("error", "tool-error"))


def make_run_log(settings: ServerSettings) -> RunLog:
    if settings.redis_url:
        from sluicegate.stream.redis_run_log import RedisRunLog

        return RedisRunLog(settings.redis_url)
    return InMemoryRunLog()


async def close_run_log(run_log: RunLog) -> None:
    """At shutdown: a Redis log flushes what it buffered and stops its flusher."""
    closer = getattr(run_log, "aclose", None)
    if closer is not None:
        await closer()


def run_log_of(request: Request) -> RunLog:
    run_log: RunLog = request.app.state.run_log
    return run_log


def owner_of(options: dict[str, Any]) -> tuple[str | None, str | None]:
    """The resource and thread a `generate`/`stream` call runs for (after identity binding)."""
    memory = options.get("memory")
    if memory is not None:
        return memory.get("resource"), memory.get("thread")
    context = options["request_context"]
    resource, thread = context.get(RESOURCE_ID_KEY), context.get(THREAD_ID_KEY)
    return (
        resource if isinstance(resource, str) else None,
        thread if isinstance(thread, str) else None,
    )


class RunTee:
    """One stream's writer in the run log; closed with the status the stream ended in."""

    __slots__ = ("_details", "_output", "_writer")

    def __init__(self, writer: RunWriter, output: Any, details: bool) -> None:
        self._writer = writer
        self._output = output
        self._details = details

    def append(self, chunk: Chunk[Any]) -> None:
        if chunk.type in _ERROR_CHUNKS:
            chunk = Chunk.from_dict(chunk_event(chunk, self._details))
        self._writer.append(chunk)

    async def close(self, outcome: Outcome) -> None:
        try:
            await self._writer.close(await self._status(outcome))
        except Exception:
            log.warning("the run log could not close run %r", self._writer.run_id, exc_info=True)

    async def _status(self, outcome: Outcome) -> RunStatus:
        if outcome in ("disconnect", "timeout"):
            return "aborted"
        if outcome == "error":
            return "error"
        try:
            reason = await self._output.finish_reason
        except Exception:
            return "error"
        if reason == "suspended":
            return "suspended"
        return "error" if reason == "error" else "finished"


async def open_tee(
    request: Request,
    output: Any,
    *,
    agent_id: str,
    resource_id: str | None,
    thread_id: str | None,
    details: bool,
) -> RunTee | None:
    """The run's writer (a resumed run reopens its suspended log and continues its offsets), or
    None when the log refuses or fails: the stream is served all the same."""
    try:
        writer = await run_log_of(request).open(
            output.run_id, agent_id=agent_id, resource_id=resource_id, thread_id=thread_id
        )
    except Exception:
        log.warning("run %r is not in the reconnect log: opening it failed", output.run_id, exc_info=True)
        return None
    return RunTee(writer, output, details)
