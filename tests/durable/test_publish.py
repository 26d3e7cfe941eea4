"""The publisher of durable runs' chunks writes only into its own run's log."""

from __future__ import annotations

from typing import Any

import pytest

from sluicegate.durable.temporal.publish import Publisher
from sluicegate.stream.run_log import RunInfo, RunStateError


class OpenRunLog:
    """A shared (non in-memory) log holding run `r`, open, of agent `a` and resource `victim`."""

    async def info(self, run_id: str) -> RunInfo:
        return RunInfo(run_id, "a", "victim", None, None, 0, 3)

    async def open(self, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("an open run is never opened again")


async def test_an_open_run_of_another_owner_is_not_taken_for_an_earlier_attempt() -> None:
    publisher = Publisher(OpenRunLog())
    with pytest.raises(RunStateError, match="another owner"):
        await publisher.open("r", agent_id="a", resource_id="mallory", thread_id=None)
    with pytest.raises(RunStateError, match="another owner"):
        await publisher.open("r", agent_id="b", resource_id="victim", thread_id=None)
