"""`ResponseCache` inside real agent runs (`MockModel`), on both backends (memory and redis)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from sluicegate import Agent, RequestContext, create_tool
from sluicegate.cache import RedisCache, ServerCache
from sluicegate.errors import APICallError
from sluicegate.memory import Memory
from sluicegate.processors import Processor, ResponseCache, build_response_cache_key
from sluicegate.processors.args import ProcessLLMRequestResult
from sluicegate.processors.builtin.response_cache import ModelIdentity, ResponseCacheKeyInputs
from sluicegate.request_context import RESOURCE_ID_KEY
from sluicegate.testing import MockModel, text_step, tool_call_step

from .redis_server import RedisServer, free_port

LOGGER = "sluicegate.processors.builtin.response_cache"


class RecordingCache(ServerCache):
    """Delegates to a real backend and records which keys were read and written."""

    def __init__(self, inner: ServerCache) -> None:
        self.inner = inner
        self.reads: list[str] = []
        self.writes: list[str] = []
        self.ttls: list[float | None] = []

    async def get(self, key: str) -> Any:
        self.reads.append(key)
        return await self.inner.get(key)

    async def set(self, key: str, value: Any, ttl: float | None = None) -> None:
        self.writes.append(key)
        self.ttls.append(ttl)
        await self.inner.set(key, value, ttl)

    async def delete(self, key: str) -> bool:
        return await self.inner.delete(key)

    async def clear(self) -> None:
        await self.inner.clear()


class FailingCache(ServerCache):
    """A backend whose reads and/or writes fail."""

    def __init__(self, *, reads: bool = True, writes: bool = True) -> None:
        self.fail_reads, self.fail_writes = reads, writes
        self.written: dict[str, Any] = {}

    async def get(self, key: str) -> Any:
        if self.fail_reads:
            raise ConnectionError("backend unreachable")
        return self.written.get(key)

    async def set(self, key: str, value: Any, ttl: float | None = None) -> None:
        if self.fail_writes:
            raise ConnectionError("backend unreachable")
        self.written[key] = value

    async def delete(self, key: str) -> bool:
        return self.written.pop(key, None) is not None

    async def clear(self) -> None:
        self.written.clear()


class LLMResponseSpy(Processor):
    """Records what `process_llm_response` sees."""

    id = "llm-response-spy"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[int, bool]] = []

    def process_llm_response(self, args: Any) -> None:
        self.seen.append((args.step_number, args.from_cache))


@pytest.fixture
def recording(cache: ServerCache) -> RecordingCache:
    return RecordingCache(cache)


def agent_with(
    cache: ServerCache,
    model: MockModel,
    *,
    name: str = "cached",
    tools: Any = None,
    extra: list[Any] | None = None,
    **options: Any,
) -> Agent:
    return Agent(
        name=name,
        model=model,
        tools=tools or [],
        input_processors=[ResponseCache(cache=cache, **options), *(extra or [])],
    )


def default_key(
    model: MockModel, *, call: int = 0, agent_id: str = "cached", scope: str | None = None
) -> str:
    """The key `ResponseCache` derives by default for one recorded model call (a step without tools)."""
    options = model.calls[call]
    return build_response_cache_key(
        ResponseCacheKeyInputs(
            agent_id=agent_id,
            step_number=0,
            scope=scope,
            model=ModelIdentity.of(model),
            prompt=options.prompt,
            tools=options.tools,
            tool_choice=options.tool_choice,
        )
    )


def counting_weather() -> tuple[Any, list[str]]:
    runs: list[str] = []

    async def execute(input: Any, context: Any) -> dict[str, Any]:
        runs.append(input["city"])
        return {"city": input["city"], "forecast": "sunny"}

    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    return create_tool(
        id="weather", description="Get the weather", input_schema=schema, execute=execute
    ), runs


# ------------------------------------------------------------------ hits replay the step


async def test_a_hit_skips_the_model_and_generate_returns_the_same_result(recording: RecordingCache) -> None:
    model = MockModel(
        [text_step("Sluice gates control water flow.", input_tokens=21, output_tokens=7, pieces=4)]
    )
    spy = LLMResponseSpy()
    agent = agent_with(recording, model, extra=[spy])

    first = await agent.generate("What is a sluice gate?")
    second = await agent.generate("What is a sluice gate?")

    assert len(model.calls) == 1
    assert second.text == first.text == "Sluice gates control water flow."
    assert second.finish_reason == first.finish_reason == "stop"
    assert (second.usage.input_tokens, second.usage.output_tokens, second.usage.total_tokens) == (21, 7, 28)
    assert [s.from_cache for s in first.steps] == [False]
    assert [s.from_cache for s in second.steps] == [True]
    assert spy.seen == [(0, False), (0, True)]
    assert len(recording.writes) == 1  # the replay is not written back


async def test_a_hit_replays_the_same_stream(recording: RecordingCache) -> None:
    model = MockModel([text_step("one two three four", pieces=4)])
    agent = agent_with(recording, model)

    live = await agent.stream("count")
    live_chunks = [c async for c in live.full_stream]
    replay = await agent.stream("count")
    replay_chunks = [c async for c in replay.full_stream]

    assert len(model.calls) == 1
    assert [c.type for c in replay_chunks] == [c.type for c in live_chunks]
    deltas = [c.payload.text for c in replay_chunks if c.type == "text-delta"]
    assert deltas == [c.payload.text for c in live_chunks if c.type == "text-delta"]
    assert len(deltas) == 4
    assert {c.run_id for c in replay_chunks} == {replay_chunks[0].run_id} != {live_chunks[0].run_id}
    assert await replay.text == "one two three four"
    assert await replay.finish_reason == "stop"
    assert (await replay.usage).total_tokens == 15


async def test_generate_and_stream_share_entries(recording: RecordingCache) -> None:
    model = MockModel([text_step("shared")])
    agent = agent_with(recording, model)
    streamed = await agent.stream("hello")
    assert await streamed.text == "shared"
    assert (await agent.generate("hello")).text == "shared"
    assert len(model.calls) == 1


async def test_a_tool_loop_caches_each_step_and_the_tool_runs_again_on_replay(
    recording: RecordingCache,
) -> None:
    weather, runs = counting_weather()
    model = MockModel([tool_call_step(("call-1", "weather", {"city": "Oslo"})), text_step("Sunny in Oslo.")])
    spy = LLMResponseSpy()
    agent = agent_with(recording, model, tools=[weather], extra=[spy])

    first = await agent.generate("Weather in Oslo?")
    second = await agent.generate("Weather in Oslo?")

    assert len(model.calls) == 2
    assert len(set(recording.writes)) == 2  # one entry per step
    assert second.text == first.text == "Sunny in Oslo."
    assert [c.payload.tool_name for c in second.tool_calls] == ["weather"]
    assert second.tool_calls[0].payload.args == {"city": "Oslo"}
    assert [r.payload.result for r in second.tool_results] == [{"city": "Oslo", "forecast": "sunny"}]
    assert [s.finish_reason for s in second.steps] == ["tool-calls", "stop"]
    assert [s.from_cache for s in second.steps] == [True, True]
    assert runs == ["Oslo", "Oslo"]  # the replayed tool call is executed again
    assert spy.seen == [(0, False), (1, False), (0, True), (1, True)]
    assert (second.usage.total_tokens, first.usage.total_tokens) == (30, 30)


# ------------------------------------------------------------------ what the key depends on


async def test_different_prompts_miss(recording: RecordingCache) -> None:
    model = MockModel([text_step("A"), text_step("B")])
    agent = agent_with(recording, model)
    assert (await agent.generate("first question")).text == "A"
    assert (await agent.generate("second question")).text == "B"
    assert len(model.calls) == 2


async def test_the_key_uses_the_prompt_after_earlier_processors(recording: RecordingCache) -> None:
    class Tier(Processor):
        """Rewrites the outbound prompt per request, as an earlier processor may."""

        id = "tier"

        def process_llm_request(self, args: Any) -> Any:
            tier = args.request_context.get("tier")
            return ProcessLLMRequestResult(
                prompt=[{"role": "system", "content": f"tier={tier}"}, *args.prompt]
            )

    model = MockModel([text_step("gold answer"), text_step("free answer")])
    agent = Agent(name="tiers", model=model, input_processors=[Tier(), ResponseCache(cache=recording)])
    gold = RequestContext({"tier": "gold"})
    assert (await agent.generate("q", request_context=gold)).text == "gold answer"
    assert (await agent.generate("q", request_context=RequestContext({"tier": "free"}))).text == "free answer"
    assert (await agent.generate("q", request_context=RequestContext({"tier": "gold"}))).text == "gold answer"
    assert len(model.calls) == 2
    assert model.calls[0].prompt[0] == {"role": "system", "content": "tier=gold"}


async def test_different_models_miss(recording: RecordingCache) -> None:
    first = MockModel([text_step("from model one")], model_id="model-one")
    second = MockModel([text_step("from model two")], model_id="model-two")
    other_provider = MockModel(
        [text_step("from provider two")], provider="provider-two", model_id="model-one"
    )
    agent = agent_with(recording, first)
    assert (await agent.generate("q")).text == "from model one"
    assert (await agent.generate("q", model=second)).text == "from model two"
    assert (await agent.generate("q", model=other_provider)).text == "from provider two"
    assert (await agent.generate("q", model=first)).text == "from model one"
    assert [len(m.calls) for m in (first, second, other_provider)] == [1, 1, 1]


async def test_different_tool_sets_miss(recording: RecordingCache) -> None:
    weather, _ = counting_weather()
    model = MockModel([text_step("with tools"), text_step("without tools")])
    agent = agent_with(recording, model, tools=[weather])
    assert (await agent.generate("q")).text == "with tools"
    assert (await agent.generate("q", active_tools=[])).text == "without tools"
    assert (await agent.generate("q")).text == "with tools"
    assert len(model.calls) == 2


async def test_a_different_tool_choice_misses(recording: RecordingCache) -> None:
    weather, _ = counting_weather()
    model = MockModel(
        [text_step("auto"), tool_call_step(("c1", "weather", {"city": "Oslo"})), text_step("done")]
    )
    agent = agent_with(recording, model, tools=[weather])
    assert (await agent.generate("q")).text == "auto"
    assert (await agent.generate("q", tool_choice="required", max_steps=1)).tool_calls
    assert len(model.calls) == 2


async def test_each_step_number_has_its_own_entry(recording: RecordingCache) -> None:
    weather, _ = counting_weather()
    model = MockModel([tool_call_step(("c1", "weather", {"city": "Rome"})), text_step("done")])
    agent = agent_with(recording, model, tools=[weather])
    await agent.generate("q")
    assert len(recording.writes) == 2
    assert recording.writes[0] != recording.writes[1]
    assert recording.reads == recording.writes  # step 1 looked up its own key, not step 0's


async def test_agents_have_separate_entries_unless_they_share_an_agent_id(recording: RecordingCache) -> None:
    model = MockModel([text_step("from a"), text_step("from b")])
    a = Agent(name="agent-a", model=model, input_processors=[ResponseCache(cache=recording)])
    b = Agent(name="agent-b", model=model, input_processors=[ResponseCache(cache=recording)])
    assert (await a.generate("q")).text == "from a"
    assert (await b.generate("q")).text == "from b"
    assert recording.writes[0].startswith("sluicegate:agent-response:agent-a:")
    assert recording.writes[1].startswith("sluicegate:agent-response:agent-b:")
    assert len(model.calls) == 2

    shared_model = MockModel([text_step("shared")])
    c = Agent(
        name="agent-c", model=shared_model, input_processors=[ResponseCache(cache=recording, agent_id="pool")]
    )
    d = Agent(
        name="agent-d", model=shared_model, input_processors=[ResponseCache(cache=recording, agent_id="pool")]
    )
    assert (await c.generate("q")).text == (await d.generate("q")).text == "shared"
    assert len(shared_model.calls) == 1
    assert recording.writes[-1].startswith("sluicegate:agent-response:pool:")


# ------------------------------------------------------------------ tenant scoping


def as_user(user: str) -> RequestContext:
    return RequestContext({RESOURCE_ID_KEY: user})


async def test_users_never_see_each_others_entries(recording: RecordingCache) -> None:
    model = MockModel([text_step("for alice"), text_step("for bob")])
    agent = agent_with(recording, model)
    assert (await agent.generate("q", request_context=as_user("alice"))).text == "for alice"
    assert (await agent.generate("q", request_context=as_user("bob"))).text == "for bob"
    assert (await agent.generate("q", request_context=as_user("alice"))).text == "for alice"
    assert len(model.calls) == 2


async def test_memory_scopes_entries_by_resource(recording: RecordingCache) -> None:
    model = MockModel([text_step("for alice"), text_step("for bob")])
    agent = Agent(
        name="mem",
        model=model,
        memory=Memory(options={"last_messages": False}),
        input_processors=[ResponseCache(cache=recording)],
    )
    alice = await agent.generate("q", memory={"thread": "t-alice", "resource": "alice"})
    bob = await agent.generate("q", memory={"thread": "t-bob", "resource": "bob"})
    assert (alice.text, bob.text) == ("for alice", "for bob")
    assert len(model.calls) == 2


async def test_scope_none_shares_entries_across_users(recording: RecordingCache) -> None:
    model = MockModel([text_step("public answer")])
    agent = agent_with(recording, model, scope=None)
    assert (await agent.generate("q", request_context=as_user("alice"))).text == "public answer"
    assert (await agent.generate("q", request_context=as_user("bob"))).text == "public answer"
    assert len(model.calls) == 1


async def test_an_explicit_scope_replaces_the_resource_id(recording: RecordingCache) -> None:
    model = MockModel([text_step("org answer")])
    agent = agent_with(recording, model, scope="org-123")
    assert (await agent.generate("q", request_context=as_user("alice"))).text == "org answer"
    assert (await agent.generate("q", request_context=as_user("bob"))).text == "org answer"
    assert len(model.calls) == 1
    assert recording.writes == [default_key(model, scope="org-123")]


async def test_a_per_call_scope_overrides_the_processor_scope(recording: RecordingCache) -> None:
    model = MockModel([text_step("org a"), text_step("org b")])
    agent = agent_with(recording, model, scope="org-a")
    assert (await agent.generate("q")).text == "org a"
    assert (await agent.generate("q", request_context=ResponseCache.context(scope="org-b"))).text == "org b"
    assert (await agent.generate("q", request_context=ResponseCache.context(scope="org-a"))).text == "org a"
    assert len(model.calls) == 2


async def test_a_per_call_scope_none_shares_for_that_call(recording: RecordingCache) -> None:
    model = MockModel([text_step("public")])
    agent = agent_with(recording, model)
    for user in ("alice", "bob"):
        ctx = ResponseCache.apply_context(as_user(user), scope=None)
        assert (await agent.generate("q", request_context=ctx)).text == "public"
    assert len(model.calls) == 1


# ------------------------------------------------------------------ ttl and bust


async def test_entries_expire_after_ttl(recording: RecordingCache) -> None:
    model = MockModel([text_step("old"), text_step("fresh")])
    agent = agent_with(recording, model, ttl=0.25)
    assert (await agent.generate("q")).text == "old"
    assert (await agent.generate("q")).text == "old"
    await asyncio.sleep(0.4)
    assert (await agent.generate("q")).text == "fresh"
    assert len(model.calls) == 2
    assert recording.ttls == [0.25, 0.25]


async def test_ttl_none_writes_without_expiry(recording: RecordingCache) -> None:
    agent = agent_with(recording, MockModel([text_step("kept")]), ttl=None)
    await agent.generate("q")
    assert recording.ttls == [None]
    assert await recording.inner.get(recording.writes[0]) is not None


async def test_bust_skips_the_read_but_writes(recording: RecordingCache) -> None:
    model = MockModel([text_step("v1"), text_step("v2")])
    agent = agent_with(recording, model)
    assert (await agent.generate("q")).text == "v1"
    assert (await agent.generate("q", request_context=ResponseCache.context(bust=True))).text == "v2"
    assert (await agent.generate("q")).text == "v2"  # the busted call refreshed the entry
    assert len(model.calls) == 2
    assert len(recording.reads) == 2


async def test_bust_on_the_processor_always_calls_the_model_and_a_call_can_turn_it_off(
    recording: RecordingCache,
) -> None:
    model = MockModel([text_step("v1"), text_step("v2")])
    agent = agent_with(recording, model, bust=True)
    assert (await agent.generate("q")).text == "v1"
    assert (await agent.generate("q")).text == "v2"
    assert (await agent.generate("q", request_context=ResponseCache.context(bust=False))).text == "v2"
    assert len(model.calls) == 2


# ------------------------------------------------------------------ custom keys


async def test_a_string_key_on_the_processor_is_the_entry_key(recording: RecordingCache) -> None:
    model = MockModel([text_step("pinned")])
    agent = agent_with(recording, model, key="faq:opening-hours")
    assert (await agent.generate("When are you open?")).text == "pinned"
    assert (await agent.generate("Opening hours?")).text == "pinned"
    assert recording.writes == ["faq:opening-hours"]
    assert len(model.calls) == 1


async def test_a_per_call_string_key_overrides_the_processor_key(recording: RecordingCache) -> None:
    model = MockModel([text_step("derived"), text_step("custom")])
    agent = agent_with(recording, model)
    assert (await agent.generate("q")).text == "derived"
    ctx = ResponseCache.context(key="custom-key")
    assert (await agent.generate("q", request_context=ctx)).text == "custom"
    assert (
        await agent.generate("other", request_context=ResponseCache.context(key="custom-key"))
    ).text == "custom"
    assert recording.writes[1] == "custom-key"
    assert len(model.calls) == 2


async def test_a_string_key_still_caches_each_tool_step_separately(recording: RecordingCache) -> None:
    weather, runs = counting_weather()
    model = MockModel([tool_call_step(("c1", "weather", {"city": "Lima"})), text_step("Sunny in Lima.")])
    agent = agent_with(recording, model, tools=[weather], key="lima")
    first = await agent.generate("q")
    second = await agent.generate("q")
    assert recording.writes == ["lima", "lima:step:1"]
    assert second.text == first.text == "Sunny in Lima."
    assert len(model.calls) == 2
    assert runs == ["Lima", "Lima"]


async def test_a_sync_key_function_receives_the_key_inputs(recording: RecordingCache) -> None:
    seen: list[ResponseCacheKeyInputs] = []

    def by_last_user_text(inputs: ResponseCacheKeyInputs) -> str:
        seen.append(inputs)
        return f"qa:{inputs.model.model_id}:{inputs.prompt[-1]['content'][0]['text'].lower()}"

    model = MockModel([text_step("answer")])
    agent = agent_with(recording, model, key=by_last_user_text)
    await agent.generate("Hello", request_context=as_user("alice"))
    await agent.generate("HELLO", request_context=as_user("bob"))
    assert recording.writes == ["qa:mock-model-id:hello"]
    assert len(model.calls) == 1
    first = seen[0]
    assert (first.agent_id, first.step_number, first.scope) == ("cached", 0, "alice")
    assert (first.model.provider, first.model.model_id, first.model.specification_version) == (
        "mock-provider",
        "mock-model-id",
        "v2",
    )
    assert first.prompt == model.calls[0].prompt
    assert seen[1].scope == "bob"


async def test_an_async_key_function_per_call(recording: RecordingCache) -> None:
    async def global_key(inputs: ResponseCacheKeyInputs) -> str:
        return build_response_cache_key(inputs, scope="global")

    model = MockModel([text_step("answer")])
    agent = agent_with(recording, model)
    for user in ("alice", "bob"):
        ctx = ResponseCache.apply_context(as_user(user), key=global_key)
        assert (await agent.generate("q", request_context=ctx)).text == "answer"
    assert len(model.calls) == 1
    assert recording.writes == [default_key(model, scope="global")]


@pytest.mark.parametrize("broken", ["raises", "returns-non-string", "async-raises"])
async def test_a_failing_key_function_falls_back_to_the_default_key(
    recording: RecordingCache, broken: str, caplog: pytest.LogCaptureFixture
) -> None:
    async def async_raises(inputs: ResponseCacheKeyInputs) -> str:
        raise RuntimeError("boom")

    def raises(inputs: ResponseCacheKeyInputs) -> str:
        raise RuntimeError("boom")

    def non_string(inputs: ResponseCacheKeyInputs) -> Any:
        return 42

    key = {"raises": raises, "returns-non-string": non_string, "async-raises": async_raises}[broken]
    model = MockModel([text_step("answer")])
    agent = agent_with(recording, model, key=key)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert (await agent.generate("q")).text == "answer"
        assert (await agent.generate("q")).text == "answer"
    assert len(model.calls) == 1
    assert recording.writes == [default_key(model)]
    assert any("key function failed" in r.getMessage() for r in caplog.records)


# ------------------------------------------------------------------ only successful steps are written


async def test_a_failed_model_call_is_not_cached(recording: RecordingCache) -> None:
    model = MockModel([APICallError("overloaded", status_code=529), text_step("recovered")])
    agent = agent_with(recording, model)
    with pytest.raises(APICallError):
        await agent.generate("q")
    assert recording.writes == []
    assert (await agent.generate("q")).text == "recovered"
    assert len(model.calls) == 2


async def test_a_stream_error_part_is_not_cached(recording: RecordingCache) -> None:
    broken = [
        {"type": "text-start", "id": "t1"},
        {"type": "text-delta", "id": "t1", "delta": "par"},
        {"type": "error", "error": {"message": "connection reset"}},
    ]
    model = MockModel([broken, text_step("whole")])
    agent = agent_with(recording, model)
    output = await agent.stream("q")
    chunks = [c async for c in output.full_stream]
    assert [c.type for c in chunks][-3:] == ["error", "step-finish", "finish"]
    assert recording.writes == []
    assert (await agent.generate("q")).text == "whole"


async def test_a_tripwire_during_the_stream_is_not_cached(recording: RecordingCache) -> None:
    class Guard(Processor):
        id = "guard"

        def process_output_stream(self, args: Any) -> Any:
            if args.part.type == "text-delta" and "forbidden" in args.part.payload.text:
                args.abort("forbidden word")
            return args.part

    model = MockModel([text_step("a forbidden answer"), text_step("a forbidden answer")])
    agent = Agent(
        name="guarded",
        model=model,
        input_processors=[ResponseCache(cache=recording)],
        output_processors=[Guard()],
    )
    result = await agent.generate("q")
    assert result.tripwire is not None
    assert recording.writes == []
    await agent.generate("q")
    assert len(model.calls) == 2


class Judge(Processor):
    """An output-step guardrail that rejects answers containing "wrong"."""

    id = "judge"

    def __init__(self, *, retry: bool) -> None:
        super().__init__()
        self.retry = retry
        self.verdicts: list[str] = []

    def process_output_step(self, args: Any) -> Any:
        if "wrong" in args.text:
            self.verdicts.append("rejected")
            args.abort("rejected by the judge", retry=self.retry)
        self.verdicts.append("accepted")


async def test_a_step_an_output_step_guardrail_rejects_is_never_cached(
    recording: RecordingCache,
) -> None:
    # `process_llm_response` sees `accepted=False` for a rejected step, so nothing is written
    # and the next identical request reaches the model again.
    judge = Judge(retry=False)
    model = MockModel([text_step("a wrong answer"), text_step("a wrong answer")])
    agent = Agent(
        name="judged",
        model=model,
        input_processors=[ResponseCache(cache=recording)],
        output_processors=[judge],
    )
    first = await agent.generate("q")
    second = await agent.generate("q")
    assert first.tripwire is not None and second.tripwire is not None
    assert judge.verdicts == ["rejected", "rejected"]
    assert len(model.calls) == 2
    assert recording.writes == []


async def test_only_the_accepted_attempt_of_a_retried_step_is_cached(
    recording: RecordingCache,
) -> None:
    judge = Judge(retry=True)
    model = MockModel([text_step("a wrong answer"), text_step("a right answer"), text_step("a wrong answer")])
    agent = Agent(
        name="judged",
        model=model,
        input_processors=[ResponseCache(cache=recording)],
        output_processors=[judge],
        max_processor_retries=2,
    )
    first = await agent.generate("q")
    second = await agent.generate("q")
    assert second.text == first.text == "a right answer"
    # The rejected first attempt was not cached, so it runs again; the retry (whose prompt
    # carries the feedback) is answered from the cache.
    assert len(model.calls) == 3
    assert len(recording.writes) == 1
    assert judge.verdicts == ["rejected", "accepted", "rejected", "accepted"]


async def test_a_non_successful_finish_reason_is_not_cached(recording: RecordingCache) -> None:
    filtered = [
        {"type": "text-start", "id": "t1"},
        {"type": "text-delta", "id": "t1", "delta": "partial"},
        {"type": "text-end", "id": "t1"},
        {"type": "finish", "finishReason": "content-filter", "usage": {"inputTokens": 1, "outputTokens": 1}},
    ]
    model = MockModel([filtered, text_step("full")])
    agent = agent_with(recording, model)
    assert (await agent.generate("q")).finish_reason == "content-filter"
    assert recording.writes == []
    assert (await agent.generate("q")).text == "full"


# ------------------------------------------------------------------ a failing backend never fails the agent


async def test_a_backend_whose_reads_fail_answers_uncached_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    cache = FailingCache(reads=True, writes=False)
    model = MockModel([text_step("a1"), text_step("a2")])
    agent = agent_with(cache, model)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert (await agent.generate("q")).text == "a1"
        assert (await agent.generate("q")).text == "a2"
    assert cache.written == {}  # a backend that failed the read is not written to
    assert [r.levelno for r in caplog.records if r.name == LOGGER] == [logging.WARNING] * 2
    assert "read failed" in caplog.records[0].getMessage()


async def test_a_backend_whose_writes_fail_answers_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    model = MockModel([text_step("a1")])
    agent = agent_with(FailingCache(reads=False, writes=True), model)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert (await agent.generate("q")).text == "a1"
    assert any("write failed" in r.getMessage() for r in caplog.records)


async def test_an_unreadable_entry_is_a_miss_and_is_replaced(
    recording: RecordingCache, caplog: pytest.LogCaptureFixture
) -> None:
    model = MockModel([text_step("first"), text_step("second")])
    agent = agent_with(recording, model)
    await agent.generate("q")
    await recording.inner.set(recording.writes[0], {"version": 1, "chunks": [{"no": "type"}]})
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert (await agent.generate("q")).text == "second"
    assert any("unreadable" in r.getMessage() for r in caplog.records)
    assert (await agent.generate("q")).text == "second"
    assert len(model.calls) == 2


async def test_a_redis_that_is_down_does_not_fail_the_agent(caplog: pytest.LogCaptureFixture) -> None:
    cache = RedisCache(url=f"redis://127.0.0.1:{free_port()}/0")
    model = MockModel([text_step("a1"), text_step("a2")])
    agent = agent_with(cache, model)
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        first = await agent.generate("q")
        streamed = await agent.stream("q")
        assert await streamed.text == "a2"
    assert first.text == "a1"
    assert len(model.calls) == 2
    warnings = [r for r in caplog.records if r.name == LOGGER and r.levelno == logging.WARNING]
    assert len(warnings) == 2
    assert "ConnectionError" in warnings[0].getMessage()
    await cache.close()


async def test_a_redis_that_goes_down_mid_use_does_not_fail_the_agent(
    disposable_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    cache = RedisCache(url=disposable_redis.url)
    model = MockModel([text_step("cached"), text_step("live")])
    agent = agent_with(cache, model)
    assert (await agent.generate("q")).text == "cached"
    assert (await agent.generate("q")).text == "cached"
    disposable_redis.stop()
    with caplog.at_level(logging.WARNING, logger=LOGGER):
        assert (await agent.generate("q")).text == "live"
    assert len(model.calls) == 2
    assert any("read failed" in r.getMessage() for r in caplog.records)
    await cache.close()
