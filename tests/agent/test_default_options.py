"""`Agent(default_options=...)`: call options every call takes unless it sets them (Mastra's
`defaultOptions`), checked when the agent is made; a call's value wins."""

from __future__ import annotations

from typing import Any

import pytest

from sluicegate import Agent, tool
from sluicegate.errors import ConfigurationError, UnknownOptionError
from sluicegate.processors import Processor
from sluicegate.testing import MockModel, text_step


@tool
async def lookup(city: str) -> str:
    """Look a city up."""
    return "sunny"


def _noting(seen: list[Any]) -> Any:
    async def prepare_step(args: Any) -> None:
        seen.append(args.tool_choice)

    return prepare_step


async def test_the_defaults_apply_and_a_calls_own_value_wins() -> None:
    seen: list[Any] = []
    model = MockModel([text_step("one"), text_step("two"), text_step("three")])
    agent = Agent(
        "a",
        model=model,
        tools=[lookup],
        default_options={"prepare_step": _noting(seen), "tool_choice": "required", "max_steps": 1},
    )
    await agent.generate("hi")
    assert seen == ["required"] and model.calls[0].tool_choice == {"type": "required"}
    await agent.generate("hi", tool_choice={"type": "tool", "tool_name": "lookup"})
    assert model.calls[1].tool_choice == {"type": "tool", "toolName": "lookup"}
    await agent.generate("hi", prepare_step=None, tool_choice="auto")
    assert len(seen) == 2  # the call's None wins over the default prepare_step
    assert model.calls[2].tool_choice == {"type": "auto"}


async def test_a_mapping_merges_into_the_defaults_key_by_key() -> None:
    model = MockModel([text_step("one")])
    agent = Agent("a", model=model, default_options={"model_settings": {"temperature": 0.1, "seed": 7}})
    await agent.generate("hi", model_settings={"temperature": 0.9})
    assert (model.calls[0].temperature, model.calls[0].seed) == (0.9, 7)


async def test_default_processor_arrays_replace_the_agents_and_a_call_replaces_them() -> None:
    class Block(Processor):
        id = "block"

        def process_input(self, args: Any) -> None:
            args.abort("blocked")

    model = MockModel([text_step("calm")])
    agent = Agent("a", model=model, default_options={"input_processors": [Block()]})
    blocked = await agent.generate("hi")
    assert blocked.tripwire is not None and blocked.tripwire.reason == "blocked" and not model.calls
    assert (await agent.generate("hi", input_processors=[])).text == "calm"


def test_an_unknown_option_is_named_with_its_closest_spelling() -> None:
    with pytest.raises(UnknownOptionError, match=r"'tool_choise' \(did you mean 'tool_choice'\?\)"):
        Agent("a", model=MockModel([]), default_options={"tool_choise": "auto"})


@pytest.mark.parametrize(
    ("defaults", "named"),
    [
        ({"request_context": None}, "request_context"),
        ({"abort_signal": None}, "abort_signal"),
        ({"model": "openai/gpt-4o"}, "model"),
        ({"memory": {"thread": "t", "resource": "u"}}, "memory"),
        ({"max_steps": 0}, "max_steps"),
        ({"tool_choice": "sometimes"}, "tool_choice"),
        ({"prepare_step": "note"}, "prepare_step"),
        ({"max_processor_retries": -1}, "max_processor_retries"),
        ({"output_processors": [object()]}, "output_processors"),
        (["max_steps", 3], "mapping"),
    ],
)
def test_a_bad_default_fails_the_agent_by_name(defaults: Any, named: str) -> None:
    with pytest.raises((ConfigurationError, TypeError), match=named):
        Agent("a", model=MockModel([]), default_options=defaults)


async def test_copy_with_makes_a_variant_with_its_own_id_retries_and_defaults() -> None:
    agent = Agent("a", model=MockModel([text_step("one")]), default_options={"max_steps": 2})
    variant = agent.copy_with(id="a-strict", max_processor_retries=2, default_options={"tool_choice": "none"})
    assert (variant.id, variant.max_processor_retries, variant.default_options) == (
        "a-strict",
        2,
        {"tool_choice": "none"},
    )
    assert (agent.id, agent.max_processor_retries, agent.default_options) == ("a", None, {"max_steps": 2})
    with pytest.raises(ConfigurationError, match="id must be a non-empty string"):
        agent.copy_with(id="")
    with pytest.raises(ConfigurationError, match="max_processor_retries"):
        agent.copy_with(max_processor_retries=-1)
    with pytest.raises(ConfigurationError, match="max_steps"):
        agent.copy_with(default_options={"max_steps": 0})
