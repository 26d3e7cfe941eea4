"""`ResponseCache` without an agent: key derivation, entry encoding, options and overrides."""

from __future__ import annotations

import dataclasses
import json
import re
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluicegate import RequestContext
from sluicegate.cache import InMemoryServerCache
from sluicegate.processors import ResponseCache, build_response_cache_key
from sluicegate.processors.builtin.response_cache import (
    RESPONSE_CACHE_CONTEXT_KEY,
    UNSET,
    ModelIdentity,
    ResponseCacheKeyInputs,
    ResponseCacheOverrides,
    decode_chunks,
    encode_chunks,
    is_cacheable,
)
from sluicegate.stream import Chunk
from sluicegate.stream.chunk import TextPayload
from sluicegate.stream.payload import Payload
from sluicegate.stream.usage import Usage

PROMPT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": [{"type": "text", "text": "Hi"}]},
]
TOOLS = [
    {
        "type": "function",
        "name": "weather",
        "description": "Get the weather",
        "inputSchema": {"type": "object"},
    }
]


def inputs(**changes: Any) -> ResponseCacheKeyInputs:
    base = ResponseCacheKeyInputs(
        agent_id="agent",
        step_number=0,
        scope="user-1",
        model=ModelIdentity("openai", "gpt-5", "v2"),
        prompt=PROMPT,
        tools=TOOLS,
        tool_choice={"type": "auto"},
    )
    return dataclasses.replace(base, **changes)


# ------------------------------------------------------------------ the deterministic key


def test_the_key_is_a_sha256_named_by_agent_and_scope_digest() -> None:
    key = build_response_cache_key(inputs())
    assert re.fullmatch(r"sluicegate:agent-response:agent:[0-9a-f]{8}:[0-9a-f]{64}", key)
    assert build_response_cache_key(inputs()) == key
    assert "user-1" not in key
    assert re.fullmatch(
        r"sluicegate:agent-response:agent:[0-9a-f]{64}", build_response_cache_key(inputs(scope=None))
    )


@pytest.mark.parametrize(
    "change",
    [
        {"agent_id": "other-agent"},
        {"step_number": 1},
        {"scope": "user-2"},
        {"scope": None},
        {"model": ModelIdentity("anthropic", "gpt-5", "v2")},
        {"model": ModelIdentity("openai", "gpt-5-mini", "v2")},
        {"model": ModelIdentity("openai", "gpt-5", "v3")},
        {"prompt": [*PROMPT[:1], {"role": "user", "content": [{"type": "text", "text": "Hello"}]}]},
        {"tools": []},
        {"tool_choice": {"type": "required"}},
    ],
    ids=lambda change: next(iter(change)) + "=" + repr(next(iter(change.values())))[:30],
)
def test_every_input_changes_the_key(change: dict[str, Any]) -> None:
    assert build_response_cache_key(inputs(**change)) != build_response_cache_key(inputs())


def _shuffled(value: Any, data: st.DataObject) -> Any:
    if isinstance(value, dict):
        keys = data.draw(st.permutations(list(value)))
        return {k: _shuffled(value[k], data) for k in keys}
    if isinstance(value, list):
        return [_shuffled(v, data) for v in value]
    return value


prompt_text = st.text(min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(texts=st.lists(prompt_text, min_size=1, max_size=4), data=st.data())
def test_the_key_ignores_dict_order_but_not_content(texts: list[str], data: st.DataObject) -> None:
    prompt = [
        {"role": "user", "content": [{"type": "text", "text": t, "providerOptions": {"x": {"a": 1, "b": 2}}}]}
        for t in texts
    ]
    key = build_response_cache_key(inputs(prompt=prompt))
    assert build_response_cache_key(inputs(prompt=_shuffled(prompt, data))) == key
    index = data.draw(st.integers(0, len(texts) - 1))
    other = data.draw(prompt_text.filter(lambda t: t != texts[index]))
    changed = json.loads(json.dumps(prompt))
    changed[index]["content"][0]["text"] = other
    assert build_response_cache_key(inputs(prompt=changed)) != key


def test_binary_and_datetime_prompt_values_are_keyed_by_content() -> None:
    def file_prompt(data: bytes, when: datetime) -> list[dict[str, Any]]:
        return [
            {
                "role": "user",
                "content": [{"type": "file", "data": data, "mediaType": "image/png"}],
                "at": when,
            }
        ]

    when = datetime(2025, 1, 1, tzinfo=UTC)
    key = build_response_cache_key(inputs(prompt=file_prompt(b"\x89PNG-1", when)))
    assert build_response_cache_key(inputs(prompt=file_prompt(b"\x89PNG-1", when))) == key
    assert build_response_cache_key(inputs(prompt=file_prompt(b"\x89PNG-2", when))) != key
    assert build_response_cache_key(inputs(prompt=file_prompt(b"\x89PNG-1", when.replace(year=2026)))) != key


def test_dicts_with_keys_json_cannot_sort_still_get_a_key() -> None:
    prompt = [{"role": "user", "content": [{"type": "text", "text": "x", "meta": {1: "a", "b": 2}}]}]
    assert build_response_cache_key(inputs(prompt=prompt)) == build_response_cache_key(inputs(prompt=prompt))


def test_fields_can_be_overridden_by_keyword() -> None:
    assert build_response_cache_key(inputs(), scope="global") == build_response_cache_key(
        inputs(scope="global")
    )
    built = build_response_cache_key(
        agent_id="agent",
        step_number=0,
        scope="user-1",
        model=ModelIdentity("openai", "gpt-5", "v2"),
        prompt=PROMPT,
        tools=TOOLS,
        tool_choice={"type": "auto"},
    )
    assert built == build_response_cache_key(inputs())


def test_model_identity_reads_what_a_model_has() -> None:
    class Model:
        provider = "p"
        model_id = "m"
        specification_version = "v2"

    assert ModelIdentity.of(Model()) == ModelIdentity("p", "m", "v2")
    assert ModelIdentity.of("openai/gpt-5") == ModelIdentity(None, None, None)


# ------------------------------------------------------------------ entries


def _finish(reason: str) -> Chunk:
    return Chunk(
        "finish", "run-1", Payload(step_result=Payload(reason=reason), output=Payload(usage=Usage(12, 34)))
    )


chunk_text = st.text(max_size=12)


@settings(max_examples=60, deadline=None)
@given(
    deltas=st.lists(chunk_text, max_size=8),
    calls=st.lists(st.dictionaries(st.text(max_size=5), st.integers() | chunk_text, max_size=3), max_size=2),
)
def test_chunks_round_trip_through_json(deltas: list[str], calls: list[dict[str, Any]]) -> None:
    chunks = [Chunk("text-start", "run-1", Payload(id="t1"))]
    chunks += [Chunk("text-delta", "run-1", TextPayload("t1", d)) for d in deltas]
    chunks += [Chunk("reasoning-delta", "run-1", TextPayload("r1", "why"))]
    chunks += [
        Chunk("tool-call", "run-1", Payload(tool_call_id=f"c{i}", tool_name="weather", args=args))
        for i, args in enumerate(calls)
    ]
    chunks.append(_finish("tool-calls" if calls else "stop"))
    restored = decode_chunks(json.loads(json.dumps(encode_chunks(chunks))))
    for chunk in chunks:
        chunk.run_id = ""  # a stored chunk drops the run id; the replaying run sets its own
    assert restored == chunks
    assert all(type(r.payload) is TextPayload for r in restored if r.type.endswith("-delta"))
    usage = restored[-1].payload.output.usage
    assert isinstance(usage, Usage)
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (12, 34, 46)


def test_encoding_keeps_a_non_default_origin() -> None:
    chunk = Chunk("text-delta", "run-1", TextPayload("t1", "x"), from_="USER")
    (restored,) = decode_chunks(encode_chunks([chunk]))
    assert restored.from_ == "USER"
    assert restored.payload.text == "x"


@pytest.mark.parametrize(
    ("reason", "cacheable"),
    [
        ("stop", True),
        ("length", True),
        ("tool-calls", True),
        ("content-filter", False),
        ("error", False),
        ("other", False),
        ("unknown", False),
    ],
)
def test_only_successful_finish_reasons_are_cacheable(reason: str, cacheable: bool) -> None:
    assert is_cacheable([Chunk("text-delta", "", TextPayload("t1", "x")), _finish(reason)]) is cacheable


@pytest.mark.parametrize("kind", ["error", "tripwire", "abort"])
def test_a_step_with_a_failure_chunk_is_not_cacheable(kind: str) -> None:
    assert not is_cacheable([Chunk(kind, "", Payload()), _finish("stop")])


def test_a_step_without_a_finish_is_not_cacheable() -> None:
    assert not is_cacheable([Chunk("text-delta", "", TextPayload("t1", "x"))])


# ------------------------------------------------------------------ options and overrides


def test_context_and_apply_context_carry_per_call_overrides() -> None:
    def key_fn(i: ResponseCacheKeyInputs) -> str:
        return "k"

    ctx = ResponseCache.context(key=key_fn, scope=None, bust=True)
    assert isinstance(ctx, RequestContext)
    assert ctx.get(RESPONSE_CACHE_CONTEXT_KEY) == ResponseCacheOverrides(key=key_fn, scope=None, bust=True)

    existing = RequestContext({"caller-meta": {"user_id": "u-123"}})
    assert ResponseCache.apply_context(existing, bust=True) is existing
    assert existing.get("caller-meta") == {"user_id": "u-123"}
    overrides = existing.get(RESPONSE_CACHE_CONTEXT_KEY)
    assert overrides.bust is True
    assert (overrides.key, overrides.scope) == (UNSET, UNSET)  # left unset, not cleared


@pytest.mark.parametrize("bad", [{"key": 3}, {"key": ""}, {"scope": 3}, {"bust": "yes"}])
def test_bad_overrides_fail_when_the_context_is_built(bad: dict[str, Any]) -> None:
    with pytest.raises((TypeError, ValueError)):
        ResponseCache.context(**bad)


@pytest.mark.parametrize(
    "bad",
    [{"cache": object()}, {"ttl": 0}, {"ttl": -5}, {"key": 1}, {"scope": 1}, {"agent_id": ""}, {"bust": 1}],
)
def test_bad_constructor_options_are_rejected(bad: dict[str, Any]) -> None:
    options: dict[str, Any] = {"cache": InMemoryServerCache(), **bad}
    with pytest.raises((TypeError, ValueError)):
        ResponseCache(**options)


def test_defaults() -> None:
    processor = ResponseCache(cache=InMemoryServerCache())
    assert processor.id == "response-cache"
    assert processor.ttl == 300
    assert ResponseCache(cache=InMemoryServerCache(), ttl=None).ttl is None
