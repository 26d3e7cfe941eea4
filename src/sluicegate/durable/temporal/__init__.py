"""Agents as Temporal workflows (the `temporal` extra): see docs/durable.md.

    runs = TemporalRuns(await Client.connect("127.0.0.1:7233"))
    run_id = await runs.start(agent, "Hello")
    async for chunk in (await agent.observe(run_id=run_id)).full_stream: ...

and on each worker machine `create_worker(client, app).run()` (or `sluicegate worker app.py
--temporal HOST:PORT`).
"""

from __future__ import annotations

from sluicegate.errors import MissingExtraError

try:
    import temporalio  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingExtraError("temporalio", extra="temporal", feature="durable runs on Temporal") from exc

from sluicegate.durable.temporal import names
from sluicegate.durable.temporal.failures import PayloadTooLargeError
from sluicegate.durable.temporal.runs import TemporalRuns
from sluicegate.durable.temporal.worker import create_worker, open_worker
from sluicegate.durable.temporal.workflow import AgentWorkflow

__all__ = ["AgentWorkflow", "PayloadTooLargeError", "TemporalRuns", "create_worker", "names", "open_worker"]
