"""ContextCompactor in durable runs on a real Temporal dev server: the summary call is the
compactor's judge activity (recorded once in the run's history), the summary is stored through
the storage activity, and the next run reuses it."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import pytest
from temporalio.client import Client
from tests.processors.builtin.compaction_models import LookupModel, Summarizer, lookup_result

from sluicegate import Agent, Sluicegate, create_tool
from sluicegate.durable.temporal import TemporalRuns, create_worker, names
from sluicegate.memory import Memory
from sluicegate.processors import ContextCompactor
from sluicegate.processors.builtin.compaction import SUMMARY_HEADER
from sluicegate.storage import SQLiteStore

pytestmark = pytest.mark.integration

FAST = {"heartbeatTimeout": 2, "retryInterval": 0.05}


async def test_the_summary_call_is_an_activity_and_the_summary_is_reused(
    temporal_server: Any, tmp_path: Any
) -> None:
    storage = SQLiteStore(str(tmp_path / "memory.db"))
    summarizer, model = Summarizer(), LookupModel()
    lookup = create_tool(
        id="lookup",
        description="look a topic up",
        input_schema={"type": "object", "properties": {"query": {"type": "string"}}},
        execute=lambda args, context: lookup_result(7, 1500),
    )
    compactor = ContextCompactor(
        model=summarizer, trigger_tokens=900, keep_last=2, clear_tool_results_after=None, store=storage
    )
    agent = Agent(
        "compacting",
        model=model,
        tools=[lookup],
        memory=Memory(storage=storage, options={"last_messages": None}),
        input_processors=[compactor],
    )
    memory = {"thread": "t1", "resource": "u1"}
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"

    async def activity_types(runs: TemporalRuns, run_id: str) -> list[str]:
        history = await runs.client.get_workflow_handle(run_id).fetch_history()
        return [
            e.activity_task_scheduled_event_attributes.activity_type.name
            for e in history.events
            if e.HasField("activity_task_scheduled_event_attributes")
        ]

    async def body(runs: TemporalRuns) -> None:
        judge = names.judge_activity(agent.id, "context-compactor")
        run_ids = []
        for turn in range(3):
            run_id = await runs.start(agent, f"Tell me about topic {turn}", memory=memory)
            result = await runs.result(run_id)
            assert result["tripwire"] is None and result["text"] == "Here is what I found."
            run_ids.append(run_id)
        assert summarizer.calls >= 1
        judged = [t for run_id in run_ids for t in await activity_types(runs, run_id) if t == judge]
        assert len(judged) == summarizer.calls  # each summary: one activity, never repeated
        stored = await storage.load_context_summary("u1", "t1")
        assert stored is not None
        assert max(model.prompt_tokens) <= 900
        assert any(
            p["content"][0]["text"] == f"{SUMMARY_HEADER}\n{stored.summary}"
            for p in model.prompts[-1]
            if p["role"] == "user"
        )

    try:
        async with create_worker(client, Sluicegate(agents={agent.id: agent}), task_queue=queue):
            await asyncio.wait_for(body(TemporalRuns(client, task_queue=queue, settings=FAST)), 90)
    finally:
        await storage.close()
