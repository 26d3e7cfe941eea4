"""The conformance suite (../shared/conformance) on Temporal: every scenario runs as durable
runs (one dev server, one in-process worker for all scenarios, each scenario's agent with its
own mock models) and is reduced and compared by the suite's own code (`tests.conformance_suite`
loads `run.py`), against the same expected records as the in-process `test_conformance.py`.

A call is `TemporalRuns.start` and its stream `observe`; the run's text, finish reason, usage,
tripwire (and for a generate call its steps, tool calls and results, suspend payload) are the
workflow's output (`TemporalRuns.output`: its result, or what a waiting run had produced). A
generate call raises, as `Agent.generate` does, when the run ended with an error and no
tripwire. Follow-ups decide through the workflow's updates (`approve_tool_call`,
`decline_tool_call`, `resume_stream`) and read the rest from `continuation`.

Other scenario sets run the same way: `--conformance-scenarios DIR --conformance-expected DIR`.
A call's options that are objects of the application (processor arrays, `prepare_step`) run
through a variant of the agent that has them (`VARIANT_KEYS`, with why). A scenario this
executor cannot run is listed in `NOT_APPLICABLE` with the reason; a listed scenario that
passes, or that the suite no longer has, fails the test, so the table stays true.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from types import ModuleType
from typing import Any

import pytest
from temporalio.client import Client
from tests import conformance_suite as suite

from sluicegate import Agent, Sluicegate
from sluicegate.durable.temporal import TemporalRuns, create_worker
from sluicegate.durable.temporal.checks import check_durable
from sluicegate.errors import ConfigurationError

NOT_APPLICABLE: dict[str, str] = {}
"""Scenarios that cannot run on Temporal, with why. The goal is an empty table."""

CALL_KEYS = frozenset(
    {
        "method",
        "input",
        "max_steps",
        "require_tool_approval",
        "request_context",
        "repeat",
        "tool_choice",
        "max_processor_retries",
    }
)
"""What a scenario's call may set for a durable run (`TemporalRuns.start`'s options)."""

VARIANT_KEYS: dict[str, str] = {
    "input_processors": "copy_with(input_processors=...)",
    "output_processors": "copy_with(output_processors=...)",
    "error_processors": "copy_with(error_processors=...)",
    "prepare_step": "copy_with(default_options={'prepare_step': ...})",
}
"""Per-call options that are objects of the application (processors, a function), not JSON: a
durable run's input is what every worker replays from, so they cannot travel with the call.
The durable way (docs/durable.md) is a variant of the agent, registered with the worker under
its own id, that has them; a scenario whose call sets them runs as a call of that variant
(built here, with the option named on the right), and its records must match exactly."""
FOLLOW_UP_KEYS = frozenset({"method", "tool_call_id", "reason", "resume_data", "request_context"})
"""What a follow-up may set (the decisions of `TemporalRuns`)."""

FAST = {"heartbeatTimeout": 5, "retryInterval": 0.01}
STREAM_WAIT = 60.0


def _durable_options(scenario: dict[str, Any]) -> set[str]:
    """The options of `scenario` a durable run cannot take (empty: it can run)."""
    extra = set(scenario["call"]) - CALL_KEYS - set(VARIANT_KEYS)
    for follow_up in scenario.get("then", []):
        extra |= set(follow_up) - FOLLOW_UP_KEYS
    return extra


class DurableStream:
    """A stream call's output as `run.py` reads it: `run_id`, `full_stream` (observed from the
    run log), then the run's text, finish reason, usage and tripwire from the workflow."""

    def __init__(self, runs: TemporalRuns, agent: Agent[Any], run_id: str, observed: Any) -> None:
        self.runs = runs
        self.agent = agent
        self.run_id = run_id
        self.full_stream = observed.full_stream
        self._output: dict[str, Any] | None = None

    async def _field(self, name: str) -> Any:
        if self._output is None:
            self._output = await _output(self.runs, self.agent, self.run_id)
        return self._output[name]

    @property
    def text(self) -> Awaitable[Any]:
        return self._field("streamText")

    @property
    def finish_reason(self) -> Awaitable[Any]:
        return self._field("finishReason")

    @property
    def usage(self) -> Awaitable[Any]:
        return self._field("usage")

    @property
    def tripwire(self) -> Awaitable[Any]:
        return self._field("tripwire")


class DurableRunError(Exception):
    """A durable generate run that ended with an error and no tripwire (`Agent.generate` raises)."""


async def _output(runs: TemporalRuns, agent: Agent[Any], run_id: str) -> dict[str, Any]:
    """The output of a run whose stream closed: a suspended run's from the waiting workflow, an
    ended run's from its result (awaited: a query could reach the workflow just after it
    completed, and a query of a closed workflow replays it, running its processors again)."""
    assert agent.run_log is not None
    if (await agent.run_log.info(run_id)).status == "suspended":
        out = await runs.output(run_id)
    else:
        out = await runs.result(run_id)
    assert out is not None, f"run {run_id} stopped without an output"
    return out


async def _full_output(runs: TemporalRuns, agent: Agent[Any], run_id: str, observed: Any) -> dict[str, Any]:
    """A generate call's output: the stream read to its close, then the workflow's output."""
    async for _ in observed.full_stream:
        pass
    out = await _output(runs, agent, run_id)
    if out["error"] is not None and out["tripwire"] is None:
        raise DurableRunError(out["error"])
    return {
        "run_id": run_id,
        "text": out["text"],
        "finish_reason": out["finishReason"],
        "usage": out["usage"],
        "tripwire": out["tripwire"],
        "error": out["error"],
        "steps": out["steps"],
        "tool_calls": out["toolCalls"],
        # As FullOutput.tool_results: those of every step but retried ones.
        "tool_results": [
            r for step in out["steps"] if step["finishReason"] != "retry" for r in step["toolResults"]
        ],
        "suspend_payload": out["suspendPayload"],
    }


class DurableScenario:
    """One scenario's agent (its own id, so one worker serves every scenario) and its calls."""

    def __init__(self, runner: ModuleType, scenario: dict[str, Any]) -> None:
        self.runner = runner
        self.scenario = scenario
        self.ctx = runner.Context()
        self.model_calls: list[dict[str, Any]] = []
        model = runner.build_model(scenario, self.model_calls)
        self.agent: Agent[Any] = runner.build_agent(scenario, model, self.ctx)
        self.agent.id = f"conformance-{scenario['name']}"
        # The records hold the provider's own error text, which the in-process harness reads
        # from the error object; a durable run's error crosses Temporal's history, where that
        # text goes only with the agent's opt-in (failures.to_application_error).
        self.agent.provider_error_details = True
        self.agent = self._variant(scenario["call"])

    def _variant(self, call: dict[str, Any]) -> Agent[Any]:
        """The agent a call with `VARIANT_KEYS` options runs as: a variant with them, under its
        own id (the worker registers it as it would any agent)."""
        given = self.variant_keys = [key for key in VARIANT_KEYS if key in call]
        if not given:
            return self.agent
        options = self.runner.call_options(call, self.ctx)
        changes: dict[str, Any] = {key: options[key] for key in given if key != "prepare_step"}
        if "prepare_step" in given:
            changes["default_options"] = {"prepare_step": options["prepare_step"]}
        return self.agent.copy_with(id=f"{self.agent.id}-variant", **changes)

    async def start(self, runs: TemporalRuns, call: dict[str, Any]) -> tuple[str, Any]:
        options = self.runner.call_options(call, self.ctx)
        run_id = await runs.start(
            self.agent,
            call["input"],
            request_context=options["request_context"],
            max_steps=options.get("max_steps"),
            require_tool_approval=options.get("require_tool_approval"),
            tool_choice=options.get("tool_choice"),
            max_processor_retries=options.get("max_processor_retries"),
        )
        return run_id, await runs.observe(self.agent, run_id, wait=STREAM_WAIT)

    def call(self, runs: TemporalRuns, call: dict[str, Any]) -> Callable[[], Awaitable[Any]]:
        async def stream() -> DurableStream:
            run_id, observed = await self.start(runs, call)
            return DurableStream(runs, self.agent, run_id, observed)

        async def generate() -> dict[str, Any]:
            run_id, observed = await self.start(runs, call)
            return await _full_output(runs, self.agent, run_id, observed)

        return generate if call["method"] == "generate" else stream

    def follow_up(
        self, runs: TemporalRuns, follow_up: dict[str, Any], run_id: str
    ) -> Callable[[], Awaitable[Any]]:
        method: str = follow_up["method"]
        tool_call_id = follow_up.get("tool_call_id")
        context = self.runner.call_options(follow_up, self.ctx)["request_context"]

        async def decide() -> tuple[str, Any]:
            if method.startswith("approve_tool_call"):
                answer = await runs.approve_tool_call(run_id, tool_call_id, request_context=context)
            elif method.startswith("decline_tool_call"):
                answer = await runs.decline_tool_call(
                    run_id, tool_call_id, follow_up.get("reason"), request_context=context
                )
            elif method == "resume_stream":
                answer = await runs.resume_stream(
                    run_id, follow_up.get("resume_data"), tool_call_id, request_context=context
                )
            else:
                raise ValueError(f"unknown follow-up method {method}")
            observed = await runs.continuation(
                self.agent, answer["runId"], answer["offset"], wait=STREAM_WAIT
            )
            return answer["runId"], observed

        async def stream() -> DurableStream:
            decided_id, observed = await decide()
            return DurableStream(runs, self.agent, decided_id, observed)

        async def generate() -> dict[str, Any]:
            decided_id, observed = await decide()
            return await _full_output(runs, self.agent, decided_id, observed)

        return generate if method.endswith("_generate") else stream

    async def run(self, runs: TemporalRuns) -> dict[str, Any]:
        """The scenario's document, as `run.run_scenario` builds it in process."""
        runner, scenario, ctx = self.runner, self.scenario, self.ctx
        call = scenario["call"]
        reader = runner.run_generate if call["method"] == "generate" else runner.run_stream
        outcomes = [
            await reader(call["method"], self.call(runs, call), ctx) for _ in range(call.get("repeat", 1))
        ]
        run_id = outcomes[-1].run_id
        for index, follow_up in enumerate(scenario.get("then", [])):
            ctx.trace({"follow_up": index, "method": follow_up["method"]})
            outcome = await runner.FOLLOW_UPS[follow_up["method"]](
                follow_up["method"], self.follow_up(runs, follow_up, run_id), ctx
            )
            outcomes.append(outcome)
            run_id = outcome.run_id if outcome.run_id is not None else run_id
        runs_out = [o.run for o in outcomes] if "then" not in scenario else runner.label_runs(outcomes)
        document: dict[str, Any] = runner.plain(
            {
                "scenario": scenario["name"],
                "runs": runs_out,
                "model_calls": self.model_calls,
                "violations": ctx.violations,
                "trace": ctx.events,
            }
        )
        return document


def _folders(config: pytest.Config) -> tuple[Any, Any]:
    return (
        suite.resolve_folder(config.getoption("--conformance-scenarios"), suite.DEFAULT_SCENARIOS),
        suite.resolve_folder(config.getoption("--conformance-expected"), suite.DEFAULT_EXPECTED),
    )


@pytest.mark.skipif(not suite.available(), reason="the shared conformance suite is not beside this checkout")
async def test_every_conformance_scenario_passes_on_temporal(
    temporal_server: Any, pytestconfig: pytest.Config
) -> None:
    runner = suite.load_runner()
    scenarios_dir, expected_dir = _folders(pytestconfig)
    scenarios = [suite.read_scenario(p) for p in suite.scenario_paths(scenarios_dir)]
    assert scenarios, f"no scenarios in {scenarios_dir}"
    names = {s["name"] for s in scenarios}
    report: list[str] = []
    outcomes: dict[str, str] = {}
    runnable: list[DurableScenario] = []
    for scenario in scenarios:
        extra = _durable_options(scenario)
        if extra:
            outcomes[scenario["name"]] = "N/A"
            report.append(f"N/A  {scenario['name']}: options a durable run does not take: {sorted(extra)}")
            continue
        durable = DurableScenario(runner, scenario)
        try:
            check_durable(durable.agent)
        except ConfigurationError as exc:
            outcomes[scenario["name"]] = "N/A"
            report.append(f"N/A  {scenario['name']}: the worker refuses the agent: {exc}")
            continue
        runnable.append(durable)
    client = await Client.connect(temporal_server.target)
    queue = f"conformance-{uuid.uuid4()}"
    app = Sluicegate(agents={s.agent.id: s.agent for s in runnable})
    began = time.monotonic()
    async with create_worker(client, app, task_queue=queue):
        for durable in runnable:
            name = durable.scenario["name"]
            expected = suite.expected_for(expected_dir, name)
            if expected is None:
                outcomes[name] = "FAIL"
                report.append(f"FAIL {name}: no expected result in {expected_dir}")
                continue
            settings = {**FAST, "modelAttempts": durable.agent.max_retries + 1}
            runs = TemporalRuns(client, task_queue=queue, settings=settings)
            try:
                actual = await asyncio.wait_for(durable.run(runs), runner.SCENARIO_TIMEOUT_S)
            except Exception as exc:
                outcomes[name] = "FAIL"
                report.append(f"FAIL {name}: {type(exc).__name__}: {exc}")
                continue
            difference = runner.first_difference(expected, actual)
            if difference is None:
                outcomes[name] = "PASS"
                variant = f" (as a variant agent with {', '.join(durable.variant_keys)})"
                report.append(f"PASS {name}" + (variant if durable.variant_keys else ""))
            else:
                where, want, got = difference
                outcomes[name] = "FAIL"
                raised = "".join(
                    f"\n    the call raised {type(e).__name__}: {e}" for e in durable.ctx.exceptions
                )
                report.append(f"FAIL {name}: {where}: expected {want!r}, got {got!r}{raised}")
    report.append(f"{len(runnable)} scenarios on Temporal in {time.monotonic() - began:.1f} s")
    text = "\n".join(report)
    print(text)
    failed = sorted(n for n, o in outcomes.items() if o != "PASS" and n not in NOT_APPLICABLE)
    assert not failed, f"scenarios failing on Temporal: {failed}\n{text}"
    now_passing = sorted(n for n in NOT_APPLICABLE if outcomes.get(n) == "PASS")
    assert not now_passing, f"these pass on Temporal now: remove them from NOT_APPLICABLE: {now_passing}"
    if scenarios_dir == suite.DEFAULT_SCENARIOS:
        gone = sorted(n for n in NOT_APPLICABLE if n not in names)
        assert not gone, f"NOT_APPLICABLE names scenarios the suite no longer has: {gone}"
