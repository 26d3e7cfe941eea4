"""A Temporal worker for an application's agents: `sluicegate worker app.py --temporal HOST:PORT`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from sluicegate.agent.tool_sources import DEFAULT_LIST_TIMEOUT
from sluicegate.durable.temporal import names
from sluicegate.durable.temporal.activities import DurableActivities
from sluicegate.durable.temporal.checks import check_durable, warn_local_sub_agent_runs
from sluicegate.durable.temporal.process_exit import exit_worker_process
from sluicegate.durable.temporal.workflow import AgentWorkflow, install
from sluicegate.errors import ConfigurationError

if TYPE_CHECKING:
    from temporalio.client import Client

    from sluicegate.registry import Sluicegate

log = logging.getLogger("sluicegate.durable")

__all__ = ["create_worker", "exit_worker_process", "open_worker", "run_worker"]


def create_worker(
    client: Client, app: Sluicegate, *, task_queue: str = names.DEFAULT_TASK_QUEUE, **options: Any
) -> Worker:
    """A worker that runs `app`'s agents as workflows and their model and tool calls as
    activities. The workflow runs outside Temporal's sandbox: the agent loop imports the
    application's own code, and its ids come from `workflow.uuid4()` (see `workflow`)."""
    for key, agent in app.agents.items():
        check_durable(agent)
        if not agent.tool_sources.loaded:
            raise ConfigurationError(
                f"agent {key!r} takes tools from {agent.tool_sources.sources[0]!r}, not listed yet: "
                "a worker registers one activity per tool at its start; use `open_worker` "
                "(which lists them), or `await app.load_tools()` before `create_worker`"
            )
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


@asynccontextmanager
async def open_worker(
    client: Client,
    app: Sluicegate,
    *,
    task_queue: str = names.DEFAULT_TASK_QUEUE,
    list_timeout: float = DEFAULT_LIST_TIMEOUT,
    **options: Any,
) -> AsyncIterator[Worker]:
    """A running `create_worker(...)` for an app whose agents take tools from MCP clients: their
    tools are listed first (within `list_timeout` seconds; a server that fails or hangs is a
    `ConfigurationError` naming it, and the worker does not start), and the clients are closed
    when it stops (their servers stopped: no process left behind)."""
    try:
        await app.load_tools(list_timeout)
        async with create_worker(client, app, task_queue=task_queue, **options) as worker:
            yield worker
    finally:
        await app.close_tool_sources()


async def run_worker(
    app: Sluicegate,
    target: str,
    *,
    task_queue: str,
    namespace: str = "default",
    sticky_timeout: float = 3.0,
    list_timeout: float = DEFAULT_LIST_TIMEOUT,
) -> None:
    """Connect and run a worker until SIGINT/SIGTERM (then it finishes its running activities)."""
    import signal

    from temporalio.client import Client

    try:  # the tools first: a server that cannot list them fails before anything connects
        await app.load_tools(list_timeout)
        client = await Client.connect(target, namespace=namespace)
    except BaseException:
        await app.close_tool_sources()  # the servers that did start
        raise
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with open_worker(
        client,
        app,
        task_queue=task_queue,
        list_timeout=list_timeout,
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=sticky_timeout),
    ):
        print(
            f"sluicegate worker: {len(app.agents)} agent(s) on task queue {task_queue!r} at {target}",
            flush=True,
        )
        await stop.wait()
        log.info("sluicegate worker: stopping; running activities finish first")
