"""The run's model port (`agent.ports.ModelCaller`), given where the run is built
(`Agent.prepare_run(models=...)`): the loop calls the model it picks, moves on when it says,
and hands the step's start to a caller that publishes its calls' chunks itself."""

from __future__ import annotations

from typing import Any

import pytest

from sluicegate import Agent
from sluicegate.agent.output import ModelOutput
from sluicegate.agent.ports import InProcessTools, ModelCaller, SnapshotStore
from sluicegate.errors import APICallError, SluicegateError
from sluicegate.models.base import LanguageModel
from sluicegate.models.fallback import ModelChain
from sluicegate.storage.suspended_runs import SuspendedRunStore
from sluicegate.testing import MockModel, text_step, tool_call_step
from sluicegate.tools import Tool, ToolContext

from .helpers import collect, types, weather_tool


class RecordingCaller:
    """A `ModelCaller` that is not a `ModelChain`: the loop's every use of it, recorded."""

    def __init__(self, models: list[LanguageModel], *, publishes_live: bool = False) -> None:
        self.chain = ModelChain(models, [0] * len(models))
        self.processes_stream = False
        self.publishes_live = publishes_live
        self.picked: list[str] = []
        self.recorded: list[tuple[str, bool]] = []
        self.announced: list[list[str]] = []

    @property
    def current(self) -> LanguageModel:
        return self.chain.current

    @property
    def max_retries(self) -> int:
        return self.chain.max_retries

    @property
    def is_last(self) -> bool:
        return self.chain.is_last

    async def pick(self) -> LanguageModel:
        model = await self.chain.pick()
        self.picked.append(str(getattr(model, "model_id", model)))
        return model

    def advance(self) -> bool:
        return self.chain.advance()

    async def record(self, model: LanguageModel, error: BaseException | None) -> None:
        self.recorded.append((str(getattr(model, "model_id", model)), error is None))

    def announce_on_open(self, chunks: list[Any]) -> None:
        self.announced.append([c.type for c in chunks])

    def with_chosen(self, model: LanguageModel, max_retries: int) -> ModelCaller:
        return ModelChain.single(model, max_retries)


def _failing_then_answering() -> list[LanguageModel]:
    refused = APICallError("bad request", status_code=400, is_retryable=False)
    return [
        MockModel([refused], provider="mock", model_id="primary"),
        MockModel([text_step("second answers")], provider="mock", model_id="secondary"),
    ]


async def test_the_loop_calls_the_model_its_caller_picks_and_moves_on_when_it_says() -> None:
    caller = RecordingCaller(_failing_then_answering())
    agent = Agent("ports", model=MockModel([text_step("never the agent's own")]))
    output = ModelOutput(await agent.prepare_run("hi", {}, models=caller))
    chunks = await collect(output)
    assert await output.text == "second answers"
    assert caller.picked == ["primary", "secondary"]
    assert caller.recorded == [("primary", False), ("secondary", True)]
    assert caller.announced == []  # it does not publish its calls' chunks: the loop yields the start
    assert types(chunks).count("step-start") == 1


async def test_a_caller_that_publishes_live_is_handed_the_steps_start_once_made() -> None:
    caller = RecordingCaller(_failing_then_answering(), publishes_live=True)
    agent = Agent("ports-live", model=MockModel([text_step("never")]))
    output = ModelOutput(await agent.prepare_run("hi", {}, models=caller))
    chunks = await collect(output)
    # Handed to the first model's call (a fallback follows it); that call failed to open, so
    # the last model's step is announced before its call, with the same chunk, shown once.
    assert caller.announced == [["step-start"]]
    starts = [c for c in chunks if c.type == "step-start"]
    assert len(starts) == 1
    assert await output.text == "second answers"


async def test_a_caller_that_publishes_live_gets_the_start_its_stream_then_shows() -> None:
    answering = [
        MockModel([text_step("first answers")], provider="mock", model_id="primary"),
        MockModel([text_step("never")], provider="mock", model_id="secondary"),
    ]
    caller = RecordingCaller(answering, publishes_live=True)
    handed: list[Any] = []
    caller.announce_on_open = handed.extend  # type: ignore[method-assign]
    agent = Agent("ports-open", model=MockModel([text_step("never")]))
    chunks = await collect(ModelOutput(await agent.prepare_run("hi", {}, models=caller)))
    starts = [c for c in chunks if c.type == "step-start"]
    # The loop yields, once the stream opened, the very chunk the caller was handed.
    assert len(handed) == 1 and starts == handed
    assert types(chunks).index("step-start") < types(chunks).index("text-delta")


async def test_a_model_option_beside_a_model_caller_is_refused() -> None:
    agent = Agent("ports-both", model=MockModel([text_step("x")]))
    with pytest.raises(SluicegateError, match="models="):
        await agent.prepare_run(
            "hi", {"model": MockModel([text_step("y")])}, models=RecordingCaller([MockModel([])])
        )


class RemoteTools:
    """A `ToolRunner` that runs every call elsewhere (here: answers for the tool)."""

    def __init__(self) -> None:
        self.validated: list[Any] = []
        self.executed: list[tuple[str, Any, str]] = []

    def validate(self, tool: Tool, args: Any) -> Any:
        tool.validate(args)
        self.validated.append(args)
        return args

    async def execute(self, tool: Tool, args: Any, context: ToolContext) -> Any:
        self.executed.append((tool.id, args, context.tool_call_id))
        return {"forecast": "ran elsewhere"}


async def test_the_loop_runs_its_tools_through_the_runner_it_was_given() -> None:
    runner = RemoteTools()
    model = MockModel([tool_call_step(("c1", "weather", {"city": "Oslo"})), text_step("done")])
    agent = Agent("ports-tools", model=model, tools={"weather": weather_tool()})
    result = await ModelOutput(await agent.prepare_run("hi", {}, tool_runner=runner)).tool_results
    assert runner.validated == [{"city": "Oslo"}]
    assert runner.executed == [("weather", {"city": "Oslo"}, "c1")]
    assert [r.payload.result for r in result] == [{"forecast": "ran elsewhere"}]


async def test_a_run_without_a_runner_runs_its_tools_here() -> None:
    model = MockModel([tool_call_step(("c1", "weather", {"city": "Oslo"})), text_step("done")])
    agent = Agent("ports-local", model=model, tools={"weather": weather_tool()})
    run = await agent.prepare_run("hi", {})
    assert isinstance(run.tool_runner, InProcessTools)


def test_the_in_process_implementations_are_the_ports() -> None:
    assert isinstance(ModelChain.single(MockModel([]), 0), ModelCaller)
    assert isinstance(RecordingCaller([MockModel([])]), ModelCaller)
    assert not isinstance(MockModel([]), ModelCaller)  # a model is not a caller of models
    assert SnapshotStore is SuspendedRunStore  # the suspended-run store is the snapshot port


def test_a_chain_that_does_not_publish_its_calls_refuses_the_steps_opening() -> None:
    # Only a caller whose calls publish their chunks themselves takes the step's start; for the
    # others the loop yields it, and handing it over would lose it.
    chain = ModelChain.single(MockModel([]), 0)
    assert chain.publishes_live is False
    with pytest.raises(TypeError, match="does not publish"):
        chain.announce_on_open([])
