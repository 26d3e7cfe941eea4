"""A run's progress is one `RunState`: the step counters, accepted text and feedback a stored
snapshot would need, and no per-step leftovers once the run has ended."""

from __future__ import annotations

from sluicegate import Agent
from sluicegate.agent.run_state import RunState
from sluicegate.processors import Processor
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step

from .helpers import collect, weather_tool


class RejectFirst(Processor):
    id = "reject-first"

    def process_output_step(self, args):
        if args.retry_count == 0:
            args.abort("too short", retry=True)


async def test_the_state_counts_steps_and_keeps_each_accepted_text():
    model = MockModel([tool_call_step(("c1", "weather", {"city": "Paris"})), text_step("sunny")])
    output = await Agent("a", model=model, tools=[weather_tool()]).stream("weather?")
    run = output._run
    state = run.state
    assert isinstance(state, RunState)
    assert (state.step_number, state.completed, state.steps) == (0, 0, [])

    await collect(output)

    assert [s.finish_reason for s in state.steps] == ["tool-calls", "stop"]
    assert (state.step_number, state.completed) == (1, 2)
    assert state.accepted_text == ["", "sunny"]
    assert state.usage.output_tokens == 10
    assert state.current is None and state.input_gate is None and not state.finishing
    # what Agent and ModelOutput read is the state itself
    assert run.steps is state.steps and run.usage is state.usage
    assert (run.finish_reason, run.error, run.tripwire) == ("stop", None, None)


async def test_a_retried_attempt_takes_a_step_number_but_does_not_count_as_completed():
    model = MockModel([text_step("first"), text_step("second")])
    agent = Agent("a", model=model, output_processors=[RejectFirst()], max_processor_retries=3)
    output = await agent.stream("hi")
    state = output._run.state

    assert await output.text == "second"

    assert [s.finish_reason for s in state.steps] == ["retry", "stop"]
    assert (state.step_number, state.completed) == (1, 1)
    assert state.accepted_text == ["second"]
    assert len(state.feedback) == 1 and "too short" in state.feedback[0][0]["content"]
