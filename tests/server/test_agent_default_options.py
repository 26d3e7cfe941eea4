"""The agent JSON's `defaultOptions.maxSteps`: the agent's `default_options` max_steps when it
sets one (what a call without `maxSteps` runs with), else its `default_max_steps`."""

from __future__ import annotations

from sluicegate import Agent
from sluicegate.server.serialize import agent_json
from sluicegate.testing import MockModel


async def test_the_served_agent_shows_its_default_max_steps() -> None:
    agent = Agent("a", model=MockModel([]), default_max_steps=4, default_options={"max_steps": 9})
    assert (await agent_json("a", agent))["defaultOptions"] == {"maxSteps": 9}
    assert (await agent_json("b", Agent("b", model=MockModel([]), default_max_steps=4)))[
        "defaultOptions"
    ] == {"maxSteps": 4}
