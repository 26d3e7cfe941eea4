"""The interfaces other packages use instead of reaching into private fields: where ids come
from (`sluicegate.ids`, not a process-wide `uuid.uuid4` patch), `Agent.prepare_run`,
`Agent.resolve_processors`, the agent's `run_log` / `suspended_run_store` setters, and a runner
whose per-chunk pipeline runs elsewhere (`streams_here`)."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest

from sluicegate import Agent, RequestContext
from sluicegate.ids import new_uuid, reset_id_source, use_id_source
from sluicegate.messages.message import new_id
from sluicegate.processors import Processor
from sluicegate.storage import InMemorySuspendedRunStore
from sluicegate.stream.run_log import InMemoryRunLog
from sluicegate.testing import MockModel, text_step


def test_an_installed_id_source_serves_its_context_only() -> None:
    made = iter(uuid.UUID(int=n) for n in range(1, 100))
    token = use_id_source(lambda: next(made))
    try:
        assert new_uuid() == uuid.UUID(int=1)
        assert new_id() == str(uuid.UUID(int=2))
        elsewhere: list[uuid.UUID] = []

        def other_context() -> None:
            reset = use_id_source(None)
            elsewhere.append(new_uuid())
            reset_id_source(reset)

        import contextvars

        contextvars.Context().run(other_context)
        assert elsewhere[0].int > 100  # a random one: the source is not process-wide
    finally:
        reset_id_source(token)


def test_installing_the_durable_worker_patches_nothing_process_wide() -> None:
    pytest.importorskip("temporalio")
    from sluicegate.durable.temporal import workflow

    before = uuid.uuid4
    workflow.install({})
    assert uuid.uuid4 is before


async def test_a_run_draws_its_message_ids_from_the_context_source() -> None:
    counter = iter(range(1000, 2000))
    token = use_id_source(lambda: uuid.UUID(int=next(counter)))
    try:
        agent = Agent("a", model=MockModel([text_step("ok")]))
        run = await agent.prepare_run("hi", {})
        assert uuid.UUID(run.run_id).int >= 1000
        result = await agent.generate("hi")
    finally:
        reset_id_source(token)
    assert all(uuid.UUID(m.id).int >= 1000 for m in result.response.messages if m.id)


class Upper(Processor):
    id = "upper"

    def process_output_stream(self, args: Any) -> Any:
        return args.part


async def test_agent_seams_replace_private_writes() -> None:
    agent = Agent("a", model=MockModel([text_step("ok")]), output_processors=[Upper()])
    assert [p.id for p in await agent.resolve_processors("output_processors", {}, RequestContext())] == [
        "upper"
    ]
    store = InMemorySuspendedRunStore()
    agent.suspended_run_store = store
    assert agent.suspended_run_store is store
    log = InMemoryRunLog()
    agent.run_log = log
    assert agent.run_log is log
    agent.run_log = None
    assert agent.run_log is None  # and not made again on first use

    run = await agent.prepare_run("hi", {})
    run.runner.streams_here = False
    assert run.runner.stream_pipeline(run.message_list) is None
    assert not run.runner.flushes_stream


async def test_the_run_log_setter_checks_what_it_is_given() -> None:
    agent = Agent("a", model=MockModel([text_step("ok")]))
    with pytest.raises(Exception, match="run_log"):
        agent.run_log = object()  # type: ignore[assignment]
    await asyncio.sleep(0)


async def test_copy_with_changes_the_copy_only_and_refuses_what_it_does_not_know() -> None:
    from sluicegate.errors import ConfigurationError
    from sluicegate.processors import RegexFilter
    from sluicegate.storage import InMemorySuspendedRunStore

    guard = RegexFilter(presets=["pii"], strategy="redact", phase="output")
    agent = Agent("a", model=MockModel([text_step("mail ada@example.com")]))
    store = InMemorySuspendedRunStore()
    copied = agent.copy_with(output_processors=[guard], suspended_run_store=store, run_log=None)
    assert copied.output_processors == [guard] and copied.suspended_run_store is store
    assert copied.run_log is None
    assert agent.output_processors != [guard] and agent.suspended_run_store is not store
    assert agent.run_log is not None
    assert (await copied.generate("hi")).text == "mail [EMAIL]"
    with pytest.raises(ConfigurationError, match="model_id"):
        agent.copy_with(model_id="x")
    with pytest.raises(ConfigurationError):
        agent.copy_with(input_processors="not processors")
