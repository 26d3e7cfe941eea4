"""A Temporal worker for an application's agents: `sluicegate worker app.py --temporal HOST:PORT`."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from sluicegate.durable.temporal import names
from sluicegate.durable.temporal.activities import DurableActivities
from sluicegate.durable.temporal.checks import check_durable, warn_local_sub_agent_runs
from sluicegate.durable.temporal.process_exit import exit_worker_process
from sluicegate.durable.temporal.workflow import AgentWorkflow, install

if TYPE_CHECKING:
    from temporalio.client import Client

    from sluicegate.registry import Sluicegate

log = logging.getLogger("sluicegate.durable")

__all__ = ["create_worker", "exit_worker_process", "run_worker"]


def create_worker(
    client: Client, app: Sluicegate, *, task_queue: str = names.DEFAULT_TASK_QUEUE, **options: Any
) -> Worker:
    """A worker that runs `app`'s agents as workflows and their model and tool calls as
    activities. The workflow runs outside Temporal's sandbox: the agent loop imports the
    application's own code, and its ids come from `workflow.uuid4()` (see `workflow`)."""
    for agent in app.agents.values():
        check_durable(agent)
        warn_local_sub_agent_runs(agent)
    install(app.agents)
    # A dead worker's cached runs move to another worker after this (Temporal's default is 10 s).
    options.setdefault("sticky_queue_schedule_to_start_timeout", timedelta(seconds=3))
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[AgentWorkflow],
        activities=DurableActivities(app).all(),
        workflow_runner=UnsandboxedWorkflowRunner(),
        **options,
    )


async def run_worker(
    app: Sluicegate, target: str, *, task_queue: str, namespace: str = "default", sticky_timeout: float = 3.0
) -> None:
    """Connect and run a worker until SIGINT/SIGTERM (then it finishes its running activities)."""
    import signal

    from temporalio.client import Client

    client = await Client.connect(target, namespace=namespace)
    worker = create_worker(
        client,
        app,
        task_queue=task_queue,
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=sticky_timeout),
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with worker:
        print(
            f"sluicegate worker: {len(app.agents)} agent(s) on task queue {task_queue!r} at {target}",
            flush=True,
        )
        await stop.wait()
        log.info("sluicegate worker: stopping; running activities finish first")
