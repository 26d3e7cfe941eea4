"""Activities heartbeat only when an interval (a third of the heartbeat timeout) has passed: an
activity that ends sooner costs the server no heartbeat write, one that runs longer still tells
it the worker is alive before the timeout."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from datetime import timedelta
from typing import Any

import pytest
import temporalio.activity
from temporalio.client import Client
from temporalio.testing import ActivityEnvironment

from sluicegate import Agent, Sluicegate, tool
from sluicegate.durable.temporal import TemporalRuns, create_worker
from sluicegate.durable.temporal.heartbeats import DEFAULT_INTERVAL, Pacer, beating, interval
from sluicegate.testing import MockModel, text_step, tool_call_step

pytestmark = pytest.mark.integration


def _environment(timeout: float | None) -> tuple[ActivityEnvironment, list[Any]]:
    env = ActivityEnvironment()
    timeout_delta = None if timeout is None else timedelta(seconds=timeout)
    env.info = dataclasses.replace(env.info, heartbeat_timeout=timeout_delta)
    beats: list[Any] = []
    env.on_heartbeat = lambda *details: beats.append(details)
    return env, beats


async def test_a_stream_beats_once_an_interval_passed_not_on_its_first_part() -> None:
    env, beats = _environment(3)  # an interval of 1 s
    now = [100.0]

    async def stream() -> None:
        pacer = Pacer(clock=lambda: now[0])
        now[0] += 0.5
        pacer.beat()
        pacer.beat()
        assert beats == []  # parts right after the start: nothing to tell the server yet
        now[0] += 0.6
        pacer.beat()
        now[0] += 0.9
        pacer.beat()
        assert len(beats) == 1  # then at most once per interval
        now[0] += 0.2
        pacer.beat()
        assert len(beats) == 2

    await env.run(stream)


async def test_a_long_call_beats_while_it_runs_and_a_short_one_not_at_all() -> None:
    async def call(seconds: float) -> None:
        with beating():
            await asyncio.sleep(seconds)

    env, beats = _environment(3)  # an interval of 1 s
    await env.run(call, 0.01)
    assert beats == []
    env, beats = _environment(0.15)  # an interval of 0.05 s
    await env.run(call, 0.18)
    assert len(beats) >= 2


async def test_beating_stops_with_its_body_even_when_it_raises() -> None:
    async def call() -> None:
        with pytest.raises(RuntimeError), beating():
            await asyncio.sleep(0.08)
            raise RuntimeError("the tool failed")
        seen = len(beats)
        await asyncio.sleep(0.12)  # two more intervals after the body: no timer left behind
        assert len(beats) == seen >= 1

    env, beats = _environment(0.15)  # an interval of 0.05 s
    await env.run(call)


def test_an_activity_without_a_heartbeat_timeout_beats_every_second() -> None:
    env, beats = _environment(None)

    assert env.run(interval) == DEFAULT_INTERVAL == 1.0
    assert beats == []


async def test_a_run_of_quick_calls_sends_no_heartbeat(
    temporal_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before, every model and tool activity sent one at its start: a server write each."""
    sent: list[Any] = []
    real = temporalio.activity.heartbeat
    monkeypatch.setattr(temporalio.activity, "heartbeat", lambda *d: (sent.append(d), real(*d)))

    @tool
    async def double(n: int) -> int:
        """Doubles n."""
        return 2 * n

    model = MockModel([tool_call_step(("c1", "double", {"n": 2})), text_step("4")])
    agent = Agent("quick", model=model, tools=[double])
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    async with create_worker(client, Sluicegate(agents={"quick": agent}), task_queue=queue):
        runs = TemporalRuns(client, task_queue=queue, settings={"heartbeatTimeout": 30})
        run_id = await runs.start(agent, "double 2")
        assert (await asyncio.wait_for(runs.result(run_id), 30))["text"] == "4"
    assert sent == []
