"""`sluicegate.clock`: the time a run stamps on what it makes, read from the current context's
source (the system clock unless one is installed, as a durable run's workflow does)."""

from __future__ import annotations

import contextvars
import time
from datetime import UTC, datetime

from sluicegate import Agent
from sluicegate.clock import now_ms, now_ns, reset_time_source, use_time_source, utc_now
from sluicegate.messages import Message
from sluicegate.testing import MockModel, text_step, tool_call_step
from sluicegate.tools import create_tool

FIXED_NS = 1_700_000_000_123_456_789
FIXED_MS = FIXED_NS // 1_000_000


def test_an_installed_source_serves_its_context_only() -> None:
    token = use_time_source(lambda: FIXED_NS)
    try:
        assert (now_ns(), now_ms()) == (FIXED_NS, FIXED_MS)
        assert utc_now() == datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC)
        assert Message.coerce("hi").created_at == utc_now()
        assert Message.coerce("hi").content.parts[0]["createdAt"] == FIXED_MS
        elsewhere = contextvars.Context().run(now_ms)
        assert elsewhere > FIXED_MS + 10**9  # the system clock: the source is not process-wide
    finally:
        reset_time_source(token)


def test_without_a_source_it_is_the_system_clock() -> None:
    # (a run's parts then carry the system time: tests/agent/test_part_dates.py)
    before = time.time_ns()
    stamped = now_ns()
    assert before <= stamped <= time.time_ns()
    assert abs((utc_now() - datetime.now(UTC)).total_seconds()) < 1


def _agent() -> Agent[None]:
    lookup = create_tool(id="lookup", description="look up", execute=lambda args, context: "found")
    model = MockModel([tool_call_step(("c1", "lookup", {})), text_step("done")])
    return Agent("a", model=model, tools=[lookup])


async def test_a_run_stamps_its_parts_messages_and_steps_from_the_context_clock() -> None:
    token = use_time_source(lambda: FIXED_NS)
    try:
        output = await _agent().stream("hi", max_steps=3)
        chunks = [chunk async for chunk in output.full_stream]
        response = await output.response
    finally:
        reset_time_source(token)
    starts = [c.payload.started_at for c in chunks if c.type == "step-start"]
    assert starts == [FIXED_MS, FIXED_MS]
    messages = response.messages
    parts = [part for message in messages for part in message.content.parts]
    assert {"step-start", "tool-invocation", "text"} <= {p["type"] for p in parts}
    assert {p["createdAt"] for p in parts} == {FIXED_MS}
    assert {m.created_at for m in messages} == {datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC)}
