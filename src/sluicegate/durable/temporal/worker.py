"""A Temporal worker for an application's agents: `sluicegate worker app.py --temporal HOST:PORT`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from sluicegate.durable.temporal import names
from sluicegate.durable.temporal.activities import DurableActivities
from sluicegate.durable.temporal.workflow import AgentWorkflow, install

if TYPE_CHECKING:
    from temporalio.client import Client

    from sluicegate.registry import Sluicegate


def create_worker(
    client: Client, app: Sluicegate, *, task_queue: str = names.DEFAULT_TASK_QUEUE, **options: Any
) -> Worker:
    """A worker that runs `app`'s agents as workflows and their model and tool calls as
    activities. The workflow runs outside Temporal's sandbox: the agent loop imports the
    application's own code, and its ids come from `workflow.uuid4()` (see `workflow`)."""
    install(app.agents)
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[AgentWorkflow],
        activities=DurableActivities(app).all(),
        workflow_runner=UnsandboxedWorkflowRunner(),
        **options,
    )
