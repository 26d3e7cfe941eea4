"""A2A tasks: what `tasks/get` reads, `tasks/cancel` stops and a later message continues.

Tasks live in the serving process (as Mastra's `InMemoryTaskStore` and the A2A SDK's default
keep them), at most `MAX_TASKS`: past that, the oldest finished task is forgotten first. A task
belongs to the caller that started it (the identity hook's resource; without a hook the server
trusts its clients, as on every route) and to its agent: anyone else gets "task not found".
The conversation itself is the agent's memory thread named by the task's `contextId`.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

MAX_TASKS = 10_000
TERMINAL = frozenset(("completed", "canceled", "failed", "rejected"))


def now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


@dataclass
class TaskRecord:
    """One task, in the A2A 0.3 wire shape, plus what continuing or cancelling it needs."""

    id: str
    context_id: str
    agent_key: str
    owner: str | None
    resource: str | None
    """The resource the run is bound to (its memory's, or the identity's): a decision on its
    pending call is made for it."""
    state: str = "submitted"
    status_message: dict[str, Any] | None = None
    timestamp: str = field(default_factory=now)
    history: list[dict[str, Any]] = field(default_factory=list)
    artifacts: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    run_id: str | None = None
    pending: str | None = None
    """The tool call waiting for approval (state `input-required`)."""
    abort: asyncio.Event | None = None
    """Set to stop the run in progress (`tasks/cancel`)."""
    turns: int = 0

    @property
    def running(self) -> bool:
        return self.abort is not None

    def status(self) -> dict[str, Any]:
        status: dict[str, Any] = {"state": self.state, "timestamp": self.timestamp}
        if self.status_message is not None:
            status["message"] = self.status_message
        return status

    def set_state(self, state: str, message: dict[str, Any] | None = None) -> None:
        self.state = state
        self.status_message = message
        self.timestamp = now()
        if message is not None:
            self.history.append(message)

    def to_json(self, history_length: int | None = None) -> dict[str, Any]:
        task: dict[str, Any] = {
            "kind": "task",
            "id": self.id,
            "contextId": self.context_id,
            "status": self.status(),
            "history": self.history
            if history_length is None
            else self.history[-history_length:]
            if history_length
            else [],
            "artifacts": self.artifacts,
        }
        if self.metadata:
            task["metadata"] = self.metadata
        return task


class TaskBook:
    """The process's tasks, by id (see the module docstring)."""

    def __init__(self, capacity: int = MAX_TASKS) -> None:
        self._tasks: OrderedDict[str, TaskRecord] = OrderedDict()
        self._capacity = capacity

    def add(self, task: TaskRecord) -> None:
        self._tasks[task.id] = task
        while len(self._tasks) > self._capacity:
            oldest = next((k for k, t in self._tasks.items() if t.state in TERMINAL), None)
            self._tasks.pop(oldest if oldest is not None else next(iter(self._tasks)))

    def get(self, task_id: str, *, agent_key: str, owner: str | None) -> TaskRecord | None:
        """The task, if it is this agent's and `owner` may see it (None: no identity hook)."""
        task = self._tasks.get(task_id)
        if task is None or task.agent_key != agent_key:
            return None
        if owner is not None and task.owner != owner:
            return None
        self._tasks.move_to_end(task_id)
        return task

    def ids(self) -> list[str]:
        """The tasks' ids, least recently used first."""
        return list(self._tasks)

    def __contains__(self, task_id: str) -> bool:
        return task_id in self._tasks
