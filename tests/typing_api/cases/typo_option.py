"""A misspelt call option: `mypy --strict` must reject it."""

from __future__ import annotations

from sluicegate import Agent
from sluicegate.testing import MockModel


async def main() -> None:
    agent = Agent("a", model=MockModel([]))
    await agent.generate("hi", max_step=3)
    agent.generate_sync("hi", max_steps="3")
