"""A new durable run's log is opened by its first write (the first model call's carry, or the
closing `publish`), not by a local activity of its own; the owner check of the opening holds."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporalio.client import Client, WorkflowFailureError

from sluicegate import Agent, Sluicegate
from sluicegate.durable.temporal import TemporalRuns, create_worker
from sluicegate.errors import TripWire
from sluicegate.processors import Processor
from sluicegate.testing import MockModel, text_step

pytestmark = pytest.mark.integration

FAST = {"heartbeatTimeout": 2, "retryInterval": 0.05, "modelAttempts": 2}


class RefuseAll(Processor):
    id = "refuse-all"

    async def process_input(self, args: Any) -> Any:
        raise TripWire("not today")


async def _serve(temporal_server: Any, agent: Agent[Any]) -> tuple[Client, str]:
    client = await Client.connect(temporal_server.target)
    return client, f"q-{uuid.uuid4()}"


async def test_a_run_that_never_calls_its_model_opens_and_closes_its_log(temporal_server: Any) -> None:
    model = MockModel([text_step("never")])
    agent = Agent("refusing", model=model, input_processors=[RefuseAll()])
    client, queue = await _serve(temporal_server, agent)
    async with create_worker(client, Sluicegate(agents={"refusing": agent}), task_queue=queue):
        runs = TemporalRuns(client, task_queue=queue, settings=FAST)
        run_id = await runs.start(agent, "hi")
        result = await asyncio.wait_for(runs.result(run_id), 30)
        chunks = [c async for c in (await runs.observe(agent, run_id)).full_stream]
    assert result["tripwire"]["reason"] == "not today"
    assert [c.type for c in chunks] == ["tripwire"]
    assert model.calls == []


async def test_a_run_id_held_in_the_log_by_another_owner_is_refused_before_the_model_runs(
    temporal_server: Any,
) -> None:
    model = MockModel([text_step("leaked")])
    agent = Agent("owned", model=model)
    app = Sluicegate(agents={"owned": agent})
    run_id = str(uuid.uuid4())
    assert agent.run_log is not None
    victim = await agent.run_log.open(run_id, agent_id="owned", resource_id="victim")
    client, queue = await _serve(temporal_server, agent)
    async with create_worker(client, app, task_queue=queue):
        runs = TemporalRuns(client, task_queue=queue, settings=FAST)
        await runs.start(agent, "hi", run_id=run_id)
        with pytest.raises(WorkflowFailureError):
            await asyncio.wait_for(runs.result(run_id), 30)
    assert model.calls == []  # refused at the log's opening, before the model call
    info = await agent.run_log.info(run_id)
    assert (info.resource_id, info.status, info.next_offset) == ("victim", None, 0)  # nothing written into it
    await victim.close("finished")


async def test_a_caller_waiting_for_the_run_to_open_looks_every_5_ms_at_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The log opens with the run's first model call, a few ms after the start: the caller
    keeps looking every 5 ms for its first 100 ms (doubling from the first miss, it slept 20 ms
    past the opening half the time)."""
    from sluicegate.stream.run_log import InMemoryRunLog

    run_log = InMemoryRunLog()
    agent = Agent("waited", model=MockModel([text_step("x")]), run_log=run_log)
    delays: list[float] = []
    real_sleep = asyncio.sleep

    async def sleep(delay: float, *args: Any) -> Any:
        delays.append(delay)
        if len(delays) == 6:  # the worker opens the run meanwhile
            await run_log.open("r1", agent_id="waited")
        return await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", sleep)
    output = await TemporalRuns(None, task_queue="q").observe(agent, "r1")  # type: ignore[arg-type]
    assert output is not None
    assert delays == [0.005] * 6
