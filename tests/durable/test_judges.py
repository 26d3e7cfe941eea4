"""LLM judges of guardrails in durable runs: each judge call from workflow code is an activity,
recorded once, so a replay never asks the judge again."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from temporalio.client import Client

from sluicegate import Agent, Sluicegate, tool
from sluicegate.durable.temporal import TemporalRuns, create_worker, names
from sluicegate.errors import APICallError
from sluicegate.guardrails.detector import DetectorModel, Verdict, judged
from sluicegate.models.base import CallOptions, GenerateResult
from sluicegate.processors import Processor
from sluicegate.processors.builtin.moderation import ModerationProcessor
from sluicegate.testing import MockModel, text_step, tool_call_step

pytestmark = pytest.mark.integration

FAST = {"heartbeatTimeout": 2, "retryInterval": 0.05}


class CountingJudge:
    """A judge model answering a fixed JSON verdict (or failing), counting its calls."""

    specification_version = "v2"
    provider = "fake"
    model_id = "judge"

    def __init__(self, verdict: dict[str, Any] | None = None, error: Exception | None = None) -> None:
        self.verdict = verdict
        self.error = error
        self.calls: list[CallOptions] = []

    async def do_generate(self, options: CallOptions) -> GenerateResult:
        self.calls.append(options)
        if self.error is not None:
            raise self.error
        return GenerateResult(
            content=[{"type": "text", "text": json.dumps(self.verdict)}],
            finish_reason="stop",
            usage={"inputTokens": 3, "outputTokens": 2, "totalTokens": 5},
        )

    async def do_stream(self, options: CallOptions) -> Any:
        raise NotImplementedError


def hate(score: float) -> dict[str, Any]:
    return {"category_scores": [{"category": "hate", "score": score}], "reason": "judged"}


async def _run(
    temporal_server: Any,
    agents: list[Agent[Any]],
    body: Callable[[TemporalRuns], Awaitable[Any]],
    *,
    cached: bool = True,
    **settings: Any,
) -> Any:
    client = await Client.connect(temporal_server.target)
    queue = f"q-{uuid.uuid4()}"
    app = Sluicegate(agents={a.id: a for a in agents})
    options: dict[str, Any] = {} if cached else {"max_cached_workflows": 0}
    async with create_worker(client, app, task_queue=queue, **options):
        runs = TemporalRuns(client, task_queue=queue, settings={**FAST, **settings})
        return await asyncio.wait_for(body(runs), 60)


async def _activity_types(runs: TemporalRuns, run_id: str) -> list[str]:
    history = await runs.client.get_workflow_handle(run_id).fetch_history()
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]


def test_judge_activity_names_are_stable() -> None:
    assert names.judge_activity("support", "moderation") == "sluicegate.support.judge.moderation"
    assert names.embed_activity("support") == "sluicegate.support.embed"


async def test_a_blocking_judge_ends_the_run_with_its_tripwire(temporal_server: Any) -> None:
    judge = CountingJudge(hate(0.9))
    model = MockModel([text_step("never said")])
    agent = Agent(
        "guarded", model=model, input_processors=[ModerationProcessor(model=judge, categories=["hate"])]
    )

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "something hateful")
        result = await runs.result(run_id)
        assert result["tripwire"] is not None
        assert "hate" in result["tripwire"]["reason"]
        assert result["text"] == ""
        assert len(judge.calls) == 1
        assert model.calls == []  # the verdict was decided before the model was asked
        assert "sluicegate.guarded.judge.moderation" in await _activity_types(runs, run_id)

    await _run(temporal_server, [agent], body)


async def test_an_allowing_judge_lets_the_run_answer(temporal_server: Any) -> None:
    judge = CountingJudge(hate(0.1))
    agent = Agent(
        "allowed",
        model=MockModel([text_step("hello there")]),
        input_processors=[ModerationProcessor(model=judge, categories=["hate"])],
    )

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "hello")
        result = await runs.result(run_id)
        assert result["tripwire"] is None
        assert result["text"] == "hello there"
        assert len(judge.calls) == 1
        # The judge saw the user's text: the prompt went to the activity whole.
        assert "hello" in json.dumps(judge.calls[0].prompt)

    await _run(temporal_server, [agent], body)


async def test_a_replay_answers_the_judge_from_history(temporal_server: Any) -> None:
    """With no run cached, every workflow task replays the run from its start, the input
    guardrail included: the judge is still asked once."""
    judge = CountingJudge(hate(0.0))

    @tool
    async def lookup(order: int) -> str:
        """Look an order up."""
        return f"order {order} shipped"

    model = MockModel([tool_call_step(("c1", "lookup", {"order": 7})), text_step("it shipped")])
    agent = Agent(
        "replayed",
        model=model,
        tools=[lookup],
        input_processors=[ModerationProcessor(model=judge, categories=["hate"])],
    )

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "where is order 7?")
        result = await runs.result(run_id)
        assert result["text"] == "it shipped"
        history = await runs.client.get_workflow_handle(run_id).fetch_history()
        tasks = [e for e in history.events if e.HasField("workflow_task_completed_event_attributes")]
        assert len(tasks) >= 3  # judge, model, tool, model: replayed at each task
        assert len(judge.calls) == 1
        assert (await _activity_types(runs, run_id)).count("sluicegate.replayed.judge.moderation") == 1

    await _run(temporal_server, [agent], body, cached=False)


async def test_a_judge_failing_for_good_fails_closed_after_temporal_retries(temporal_server: Any) -> None:
    judge = CountingJudge(error=APICallError("overloaded", status_code=503, is_retryable=True))
    model = MockModel([text_step("never said")])
    agent = Agent(
        "closed", model=model, input_processors=[ModerationProcessor(model=judge, categories=["hate"])]
    )

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "hello")
        result = await runs.result(run_id)
        assert result["tripwire"] is not None
        assert result["tripwire"]["metadata"]["detector_failed"] is True
        assert len(judge.calls) == 2  # modelAttempts: Temporal retried, the client did not
        assert model.calls == []

    await _run(temporal_server, [agent], body, modelAttempts=2)


async def test_a_misconfigured_judge_is_never_a_pass(temporal_server: Any) -> None:
    """A 401 is a `ConfigurationError` in the workflow, as in one process, even with
    `error_strategy="allow"`: not retried, and the content is not let through."""
    judge = CountingJudge(error=APICallError("bad key", status_code=401, is_retryable=False))
    model = MockModel([text_step("never said")])
    guard = ModerationProcessor(model=judge, categories=["hate"], error_strategy="allow")
    agent = Agent("misconfigured", model=model, input_processors=[guard])

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "hello")
        result = await runs.result(run_id)
        assert result["error"] is not None and "rejected the call" in result["error"]
        assert result["text"] == ""
        assert len(judge.calls) == 1
        assert model.calls == []

    await _run(temporal_server, [agent], body, modelAttempts=3)


class Approval(Verdict):
    ok: bool


class ResultJudge(Processor):
    """Any processor with a `DetectorModel`, judging the final answer in `process_output_result`."""

    id = "result-judge"

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.detector = DetectorModel(
            model,
            instructions="Is this answer fine?",
            schema=Approval,
            schema_name="approval",
            label="ResultJudge",
        )

    async def process_output_result(self, args: Any) -> Any:
        text = " ".join(m.text for m in args.messages if m.role == "assistant")
        verdict = await judged(self, self.detector, text, error_strategy="block")
        if verdict is not None and not verdict.ok:
            args.abort("the answer was judged not fine")
        return None


async def test_an_output_result_judge_is_an_activity(temporal_server: Any) -> None:
    judge = CountingJudge({"ok": False})
    agent = Agent(
        "checked", model=MockModel([text_step("a bad answer")]), output_processors=[ResultJudge(judge)]
    )

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "hello")
        result = await runs.result(run_id)
        assert result["tripwire"]["reason"] == "the answer was judged not fine"
        assert result["tripwire"]["processorId"] == "result-judge"
        assert len(judge.calls) == 1
        assert "a bad answer" in json.dumps(judge.calls[0].prompt)
        assert "sluicegate.checked.judge.result-judge" in await _activity_types(runs, run_id)

    await _run(temporal_server, [agent], body, cached=False)


def test_with_judge_models_copies_the_processor_and_leaves_it_alone() -> None:
    from sluicegate.guardrails.detector import with_judge_models
    from sluicegate.processors.builtin.regex_filter import RegexFilter

    real, stand_in = CountingJudge(hate(0.0)), CountingJudge(hate(0.0))
    guard = ModerationProcessor(model=real, categories=["hate"])
    copied = with_judge_models(guard, lambda attribute, detector: stand_in)
    assert copied is not guard
    assert copied.detector.model is stand_in
    assert guard.detector.model is real  # the application's processor keeps serving its runs
    assert copied.detector.instructions == guard.detector.instructions
    plain = RegexFilter(presets=["urls"])
    assert with_judge_models(plain, lambda attribute, detector: stand_in) is plain


async def test_one_guardrail_on_input_and_output_judges_each_in_its_place(temporal_server: Any) -> None:
    """Its stream windows are judged in the model activity (the real model, directly); its
    input and whole-result checks in the workflow, one judge activity each."""
    judge = CountingJudge(hate(0.0))
    guard = ModerationProcessor(model=judge, categories=["hate"])
    agent = Agent(
        "both",
        model=MockModel([text_step("a kind answer")]),
        input_processors=[guard],
        output_processors=[guard],
    )

    async def body(runs: TemporalRuns) -> None:
        run_id = await runs.start(agent, "a kind question")
        result = await runs.result(run_id)
        assert result["text"] == "a kind answer" and result["tripwire"] is None
        judged_in_workflow = (await _activity_types(runs, run_id)).count("sluicegate.both.judge.moderation")
        assert judged_in_workflow == 2
        assert len(judge.calls) > judged_in_workflow  # and the stream's windows, in the model activity
        prompts = [json.dumps(c.prompt) for c in judge.calls]
        assert any("a kind question" in p for p in prompts) and any("a kind answer" in p for p in prompts)

    await _run(temporal_server, [agent], body)


def test_a_model_router_is_refused_by_the_worker() -> None:
    """Its judge could be an activity, but the model it picks would be called from workflow code."""
    from sluicegate.errors import ConfigurationError
    from sluicegate.processors.builtin.model_router import ModelRouterProcessor

    router = ModelRouterProcessor(
        routes={"small": MockModel([]), "large": MockModel([])}, classifier=CountingJudge({})
    )
    agent = Agent("routed", model=MockModel([]), input_processors=[router])
    with pytest.raises(ConfigurationError, match=r"'routed'.*picks each step's model"):
        create_worker(None, Sluicegate(agents={"routed": agent}))  # type: ignore[arg-type]
