"""A run's tool definitions are built once and reused by its steps (`ToolDefinitions`): what a
`process_llm_request` processor edits stays in its step, and a tool shared by agents or swapped
by a processor is sent as it is at that step."""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel

from sluicegate import Agent, create_tool
from sluicegate.processors import ProcessInputStepResult, Processor
from sluicegate.testing import MockModel, text_step, tool_call_step

DICT_SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}}


class Args(BaseModel):
    city: str


def _tools() -> tuple[Any, Any]:
    by_dict = create_tool(
        id="by_dict", description="d", input_schema=copy.deepcopy(DICT_SCHEMA), execute=lambda a, c: "ok"
    )
    by_model = create_tool(id="by_model", description="m", input_schema=Args, execute=lambda a, c: "ok")
    return by_dict, by_model


def _two_steps() -> MockModel:
    return MockModel([tool_call_step(("c1", "by_dict", {"city": "Paris"})), text_step("done")])


class EditsTools(Processor):
    """Edits the definitions it is handed, in place, on every step."""

    id = "edits-tools"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[list[dict[str, Any]]] = []

    def process_llm_request(self, args: Any) -> None:
        self.seen.append(copy.deepcopy(args.tools))
        for definition in args.tools:
            definition["description"] = "edited"
            definition["inputSchema"]["properties"]["injected"] = {"type": "string"}
        args.tools.append({"type": "function", "name": "extra", "description": "", "inputSchema": {}})


async def test_a_processor_editing_a_steps_definitions_leaves_later_steps_and_runs_alone() -> None:
    by_dict, by_model = _tools()
    editor = EditsTools()
    agent = Agent(
        "a", model=_two_steps(), tools={"by_dict": by_dict, "by_model": by_model}, input_processors=[editor]
    )
    await agent.generate("go")
    agent.model = _two_steps()
    await agent.generate("again")
    assert len(editor.seen) == 4
    for seen in editor.seen:  # every step of both runs is handed the tools as they are
        assert [d["name"] for d in seen] == ["by_dict", "by_model"]
        assert [d["description"] for d in seen] == ["d", "m"]
        assert all("injected" not in d["inputSchema"]["properties"] for d in seen)
    assert by_dict.input_schema == DICT_SCHEMA  # the tool's own schema was not edited through
    assert "injected" not in by_model.json_schema()["properties"]


async def test_without_request_processors_a_run_builds_each_definition_once() -> None:
    by_dict, by_model = _tools()
    model = _two_steps()
    await Agent("a", model=model, tools={"by_dict": by_dict, "by_model": by_model}).generate("go")
    first, second = (call.tools for call in model.calls)
    assert first == second and first[1]["inputSchema"] == Args.model_json_schema()
    # Each step its own definitions, sharing the schema the run generated once.
    assert all(a is not b for a, b in zip(first, second, strict=True))
    assert first[1]["inputSchema"] is second[1]["inputSchema"]


class PopsProviderOptions(MockModel):
    """A model that takes keys out of the definitions it is sent (after noting what it got)."""

    def __init__(self, steps: Any) -> None:
        super().__init__(steps)
        self.had_options: list[bool] = []

    async def do_stream(self, options: Any) -> Any:
        for definition in options.tools:
            self.had_options.append("providerOptions" in definition)
            definition.pop("providerOptions", None)
        return await super().do_stream(options)


async def test_a_model_changing_its_definitions_leaves_the_next_steps_alone() -> None:
    tagged = create_tool(
        id="by_dict",
        description="d",
        input_schema=copy.deepcopy(DICT_SCHEMA),
        execute=lambda a, c: "ok",
        provider_options={"anthropic": {"cacheControl": {"type": "ephemeral"}}},
    )
    model = PopsProviderOptions([tool_call_step(("c1", "by_dict", {"city": "Paris"})), text_step("done")])
    await Agent("a", model=model, tools=[tagged]).generate("go")
    assert model.had_options == [True, True]  # the second step was sent the key the first one lost


async def test_a_tool_shared_by_two_agents_is_sent_under_each_agents_name() -> None:
    by_dict, _ = _tools()
    one, two = _two_steps(), MockModel([text_step("hi")])
    await Agent("one", model=one, tools={"by_dict": by_dict}).generate("go")
    await Agent("two", model=two, tools={"lookup": by_dict}).generate("go")
    assert [d["name"] for call in one.calls for d in call.tools] == ["by_dict", "by_dict"]
    assert [d["name"] for d in two.calls[0].tools] == ["lookup"]
    assert two.calls[0].tools[0]["inputSchema"] == DICT_SCHEMA


class SwapsTools(Processor):
    """From the second step on, the tool under `by_dict` is another one, and `by_model`'s
    description changes."""

    id = "swaps-tools"

    def __init__(self, replacement: Any, renamed: Any) -> None:
        super().__init__()
        self.replacement = replacement
        self.renamed = renamed

    def process_input_step(self, args: Any) -> ProcessInputStepResult | None:
        if args.step_number == 0:
            return None
        self.renamed.description = "changed"
        return ProcessInputStepResult(tools={"by_dict": self.replacement, "by_model": self.renamed})


async def test_a_tool_swapped_or_changed_between_steps_is_sent_as_it_is_then() -> None:
    by_dict, by_model = _tools()
    replacement = create_tool(
        id="other", description="other", input_schema={"type": "object"}, execute=lambda a, c: "ok"
    )
    model = _two_steps()
    swap = SwapsTools(replacement, by_model)
    await Agent(
        "a", model=model, tools={"by_dict": by_dict, "by_model": by_model}, input_processors=[swap]
    ).generate("go")
    first, second = (call.tools for call in model.calls)
    assert [d["description"] for d in first] == ["d", "m"]
    assert [d["description"] for d in second] == ["other", "changed"]
    assert second[0]["inputSchema"] == {"type": "object"}
