"""The model activity of an agent without output stream processors: the calls of one run share
a runner that runs nothing (`BareRunners`), so each chunk must still carry its own run's id when
calls of several runs stream at once, and what is kept stays bounded."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from temporalio.testing import ActivityEnvironment

from sluicegate import Agent, Sluicegate
from sluicegate.durable.temporal.activities import DurableActivities
from sluicegate.durable.temporal.activity_streams import BARE_RUNNERS, BareRunners
from sluicegate.models.base import CallOptions, StreamResult
from sluicegate.stream.run_log import InMemoryRunLog


class Interleaving:
    """Streams a few text deltas, letting other tasks run between them."""

    specification_version = "v2"
    provider = "test"
    model_id = "interleaving"

    async def do_stream(self, options: CallOptions) -> StreamResult:
        return StreamResult(self._parts())

    async def _parts(self) -> AsyncIterator[dict[str, Any]]:
        yield {"type": "text-start", "id": "t"}
        for piece in ("a", "b", "c"):
            await asyncio.sleep(0)
            yield {"type": "text-delta", "id": "t", "delta": piece}
        yield {"type": "text-end", "id": "t"}
        yield {"type": "finish", "finishReason": "stop", "usage": {"inputTokens": 1, "outputTokens": 3}}


def _call(run_id: str) -> dict[str, Any]:
    return {
        "runId": run_id,
        "stepNumber": 0,
        "modelIndex": 0,
        "hasNext": False,
        "attempts": 1,
        "offset": 0,
        "carry": {"offset": 0, "chunks": [], "end": 0, "open": {"resourceId": None, "threadId": None}},
        "opening": [],
        "options": {"prompt": [{"role": "user", "content": [{"type": "text", "text": "go"}]}]},
        "states": {},
        "messages": None,
        "requestContext": {},
    }


async def test_concurrent_calls_of_several_runs_each_stream_their_own_run_id() -> None:
    run_log = InMemoryRunLog()
    agent = Agent("plain", model=Interleaving(), run_log=run_log)
    activities = {
        f.__temporal_activity_definition.name: f
        for f in DurableActivities(Sluicegate(agents={"plain": agent})).all()
    }  # type: ignore[attr-defined]
    model_call = activities["sluicegate.plain.model"]
    run_ids = [str(uuid.uuid4()) for _ in range(3)]
    for _ in range(2):  # the second round: the runs' runners are already there
        results = await asyncio.gather(*(ActivityEnvironment().run(model_call, _call(r)) for r in run_ids))
        for run_id, result in zip(run_ids, results, strict=True):
            out = json.loads(result.payload.data)
            chunks = [item["chunk"] for item in out["items"] if "chunk" in item]
            assert [c["payload"].get("text") for c in chunks if c["type"] == "text-delta"] == ["a", "b", "c"]
            assert {c["runId"] for c in chunks} == {run_id}
            assert out["states"] == {}
    for run_id in run_ids:  # and into the log, under the run's own id
        held = await run_log.info(run_id)
        assert held.next_offset == 5


def test_bare_runners_keep_the_most_recent_runs_only() -> None:
    runners = BareRunners(limit=3)
    first = runners.runner("r0")
    assert runners.runner("r0") is first and first.run_id == "r0"
    for n in range(1, 6):
        assert runners.runner(f"r{n}").run_id == f"r{n}"
    assert len(runners) == 3
    assert runners.runner("r0") is not first  # forgotten, built again
    assert len(BARE_RUNNERS) <= BARE_RUNNERS.limit
