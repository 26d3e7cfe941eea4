"""PIIDetector(strategy="pseudonymize") through real Agent runs: stable per-thread tokens, the
model never sees a value, tools get the real one, the answer is restored on request, and the
mapping is sealed under the application's key."""

from __future__ import annotations

import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluicegate import Agent, RequestContext, ToolContext, create_tool
from sluicegate.errors import ConfigurationError, StorageError
from sluicegate.guardrails.pseudonyms import (
    Pseudonymizer,
    PseudonymMap,
    SealedMapping,
    hold_point,
)
from sluicegate.memory import Memory
from sluicegate.processors import (
    InMemoryPseudonymStore,
    PIIDetector,
    PseudonymKeyError,
    new_pseudonym_key,
)
from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY
from sluicegate.storage import SQLiteStore
from sluicegate.testing import MockModel, text_step, tool_call_step

from .conftest import deltas_step, detector, stream_text, user_texts

ADA = "ada@example.com"
BOB = "bob@example.org"
CARD = "4111 1111 1111 1111"


def prompt_text(model: MockModel) -> str:
    """Everything the main model was ever sent, as one string."""
    return json.dumps([call.prompt for call in model.calls], default=str)


def recorder() -> tuple[Any, list[dict[str, Any]]]:
    """A `send_email` tool recording the arguments it receives."""
    received: list[dict[str, Any]] = []

    async def send(input: dict[str, Any], context: ToolContext) -> dict[str, str]:
        received.append(dict(input))
        return {"status": "sent", "to": input["to"]}

    tool = create_tool(
        id="send_email",
        description="Send an email",
        input_schema={"type": "object", "properties": {"to": {"type": "string"}}, "required": ["to"]},
        execute=send,
    )
    return tool, received


def context(thread: str, resource: str) -> RequestContext:
    ctx = RequestContext()
    ctx.set(THREAD_ID_KEY, thread)
    ctx.set(RESOURCE_ID_KEY, resource)
    return ctx


def agent_with(pii: PIIDetector, model: MockModel, **options: Any) -> Agent:
    return Agent("crm", model=model, input_processors=[pii], output_processors=[pii], **options)


# ---------------------------------------------------------------------- tokens


async def test_the_same_value_gets_the_same_token_across_turns_of_a_thread() -> None:
    pii = PIIDetector(strategy="pseudonymize")
    memory = Memory(storage=SQLiteStore(":memory:"))
    model = MockModel([text_step("ok"), text_step("ok again")])
    agent = agent_with(pii, model, memory=memory)
    where = {"thread": "t1", "resource": "u1"}

    await agent.generate(f"Write to {ADA} and {BOB}, then {ADA} again", memory=where)
    await agent.generate(f"Did you write to {BOB}?", memory=where)

    first, second = user_texts(model.calls[0]), user_texts(model.calls[1])
    assert first == ["Write to <EMAIL_1> and <EMAIL_2>, then <EMAIL_1> again"]
    assert second[-1] == "Did you write to <EMAIL_2>?"
    assert ADA not in prompt_text(model) and BOB not in prompt_text(model)


async def test_types_are_numbered_separately_and_the_llm_detector_still_decides() -> None:
    answer = {
        "detections": [
            {"type": "name", "value": "Ada Lovelace", "confidence": 0.9},
            {"type": "email", "value": ADA, "confidence": 0.9},
        ]
    }
    pii = PIIDetector(model=detector(answer), strategy="pseudonymize")
    model = MockModel([text_step("ok")])
    await agent_with(pii, model).generate(f"I am Ada Lovelace, {ADA}")
    assert user_texts(model.calls[0]) == ["I am <NAME_1>, <EMAIL_1>"]


async def test_a_detector_failure_blocks_by_default() -> None:
    pii = PIIDetector(model=detector("not json"), strategy="pseudonymize")
    model = MockModel([text_step("ok")])
    result = await agent_with(pii, model).generate(f"mail {ADA}")
    assert result.tripwire is not None and result.tripwire.metadata["detector_failed"] is True
    assert model.calls == []


async def test_a_detector_reporting_a_token_does_not_nest_tokens() -> None:
    answer = {"detections": [{"type": "email", "value": "<EMAIL_1>", "confidence": 0.9}]}
    pii = PIIDetector(model=detector(answer, answer), strategy="pseudonymize", llm="always")
    model = MockModel([text_step("ok")])
    await agent_with(pii, model).generate("mail <EMAIL_1> please")
    assert user_texts(model.calls[0]) == ["mail <EMAIL_1> please"]


async def test_a_full_mapping_redacts_new_values_for_good(caplog: pytest.LogCaptureFixture) -> None:
    pii = PIIDetector(strategy="pseudonymize", max_pseudonyms=2)
    memory = Memory(storage=SQLiteStore(":memory:"))
    model = MockModel([text_step("ok"), text_step("ok again")])
    agent = agent_with(pii, model, memory=memory)
    where = {"thread": "t1", "resource": "u1"}
    carol = "carol@example.net"

    await agent.generate(f"Write to {ADA} and {BOB}", memory=where)
    with caplog.at_level("WARNING", logger="sluicegate.processors.pii"):
        await agent.generate(f"Now {carol}, and {ADA} again", memory=where)

    assert user_texts(model.calls[1])[-1] == "Now <EMAIL>, and <EMAIL_1> again"
    assert carol not in prompt_text(model)
    warnings = [r.getMessage() for r in caplog.records]
    assert any("limit of 2 values" in w and "1 new value" in w for w in warnings)
    assert pii.pseudonyms is not None
    sealed = await pii.pseudonyms.store.load(("u1", "t1"))
    assert sealed is not None
    mapping = PseudonymMap.from_json(pii.pseudonyms.cipher.open(sealed.data, ("u1", "t1")))
    assert len(mapping) == 2 and mapping.token(carol) is None


# ---------------------------------------------------------------------- tenancy


async def test_a_token_from_another_thread_or_resource_never_restores_its_value() -> None:
    pii = PIIDetector(strategy="pseudonymize")
    tool, received = recorder()

    def turn() -> MockModel:
        return MockModel([tool_call_step(("c1", "send_email", {"to": "<EMAIL_1>"})), text_step("done")])

    owner = turn()
    await agent_with(pii, owner, tools=[tool]).generate(f"mail {ADA}", request_context=context("t1", "u1"))
    assert received == [{"to": ADA}]

    other_thread = turn()
    await agent_with(pii, other_thread, tools=[tool]).generate("hi", request_context=context("t2", "u1"))
    same_thread_id_other_resource = turn()
    await agent_with(pii, same_thread_id_other_resource, tools=[tool]).generate(
        "hi", request_context=context("t1", "u2")
    )
    with_own_mapping = turn()
    await agent_with(pii, with_own_mapping, tools=[tool]).generate(
        f"mail {BOB}", request_context=context("t3", "u2")
    )
    assert received == [{"to": ADA}, {"to": "<EMAIL_1>"}, {"to": "<EMAIL_1>"}, {"to": BOB}]


async def test_a_mapping_copied_into_another_thread_fails_to_open() -> None:
    store = InMemoryPseudonymStore()
    pii = PIIDetector(strategy="pseudonymize", pseudonym_store=store, pseudonym_key=new_pseudonym_key())
    await agent_with(pii, MockModel([text_step("ok")])).generate(
        f"mail {ADA}", request_context=context("t1", "u1")
    )
    stolen = await store.load(("u1", "t1"))
    assert stolen is not None
    assert await store.save(("u2", "t9"), stolen.data, expected_version=0)
    model = MockModel([text_step("ok")])
    with pytest.raises(PseudonymKeyError, match="t9"):
        await agent_with(pii, model).generate("hi", request_context=context("t9", "u2"))
    assert model.calls == []


async def test_a_thread_without_a_resource_is_refused() -> None:
    pii = PIIDetector(strategy="pseudonymize")
    ctx = RequestContext()
    ctx.set(THREAD_ID_KEY, "t1")
    with pytest.raises(Exception, match="resource id"):
        await agent_with(pii, MockModel([text_step("ok")])).generate(f"mail {ADA}", request_context=ctx)


# ---------------------------------------------------------------------- tools


async def test_the_tool_gets_the_real_value_while_model_client_and_store_see_tokens(tmp_path: Path) -> None:
    path = tmp_path / "memory.db"
    storage = SQLiteStore(path)
    pii = PIIDetector(strategy="pseudonymize", pseudonym_key=new_pseudonym_key(), pseudonym_store=storage)
    tool, received = recorder()
    model = MockModel(
        [tool_call_step(("c1", "send_email", {"to": "<EMAIL_1>"})), text_step("Sent to <EMAIL_1>.")]
    )
    agent = agent_with(pii, model, tools=[tool], memory=Memory(storage=storage))

    output = await agent.stream(f"Please email {ADA}", memory={"thread": "t1", "resource": "u1"})
    text, chunks = await stream_text(output)

    assert received == [{"to": ADA}]
    assert ADA not in prompt_text(model)
    call = next(c for c in chunks if c.type == "tool-call")
    result = next(c for c in chunks if c.type == "tool-result")
    assert call.payload.args == {"to": "<EMAIL_1>"}
    assert result.payload.result == {"status": "sent", "to": "<EMAIL_1>"}  # the tool echoed the value
    assert text == "Sent to <EMAIL_1>."
    assert ADA not in json.dumps([c.to_dict() for c in chunks], default=str)
    stored = await storage.list_messages("t1")
    assert ADA not in json.dumps([m.to_dict() for m in stored], default=str)
    await storage.close()
    raw = b"".join(p.read_bytes() for p in sorted(tmp_path.glob("memory.db*")))  # noqa: ASYNC240
    assert b"<EMAIL_1>" in raw  # the history is there, with the token
    assert ADA.encode() not in raw  # the value is nowhere on disk: not in messages, not in the mapping


async def test_values_a_tool_returns_are_pseudonymized_and_restored_for_the_next_tool() -> None:
    async def lookup(input: dict[str, Any], context: ToolContext) -> dict[str, str]:
        return {"name": "Bob", "email": BOB}

    customer = create_tool(id="customer", input_schema={"type": "object"}, execute=lookup)
    send, received = recorder()
    pii = PIIDetector(strategy="pseudonymize")
    model = MockModel(
        [
            tool_call_step(("c1", "customer", {})),
            tool_call_step(("c2", "send_email", {"to": "<EMAIL_1>"})),
            text_step("done"),
        ]
    )
    result = await agent_with(pii, model, tools=[customer, send]).generate("write to customer 7")
    assert result.tool_results[0].payload.result == {"name": "Bob", "email": "<EMAIL_1>"}
    assert received == [{"to": BOB}]
    assert BOB not in prompt_text(model)


async def test_a_made_up_token_reaches_the_tool_as_it_is() -> None:
    pii = PIIDetector(strategy="pseudonymize")
    tool, received = recorder()
    model = MockModel([tool_call_step(("c1", "send_email", {"to": "<EMAIL_7>"})), text_step("done")])
    await agent_with(pii, model, tools=[tool]).generate(f"mail {ADA}")
    assert received == [{"to": "<EMAIL_7>"}]


# ---------------------------------------------------------------------- the answer


ANSWER = "Sent to <EMAIL_1> (card <CREDIT_CARD_1>), not <EMAIL_9> or <EMAIL_1 or <b>."
RESTORED = f"Sent to {ADA} (card {CARD}), not <EMAIL_9> or <EMAIL_1 or <b>."


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(min_value=1, max_value=len(ANSWER) - 1), max_size=12, unique=True))
def test_restore_output_restores_tokens_split_across_any_chunking(cuts: list[int]) -> None:
    bounds = [0, *sorted(cuts), len(ANSWER)]
    pieces = [ANSWER[a:b] for a, b in itertools.pairwise(bounds)]

    async def run() -> tuple[str, str]:
        pii = PIIDetector(strategy="pseudonymize", restore_output=True)
        model = MockModel([deltas_step(*pieces)])
        output = await agent_with(pii, model).stream(f"card {CARD}, mail {ADA}")
        text, _ = await stream_text(output)
        stored = (await output.response).messages[-1].text
        assert CARD not in prompt_text(model) and ADA not in prompt_text(model)
        return text, stored

    text, stored = asyncio.run(run())
    assert text == RESTORED
    assert stored == text  # what the user received is what is stored


async def test_without_restore_output_the_answer_keeps_tokens_and_new_values_become_tokens() -> None:
    pii = PIIDetector(strategy="pseudonymize")
    model = MockModel([deltas_step("Sent to <EMAIL_1>; cc ca", "rol@example.net too.")])
    output = await agent_with(pii, model).stream(f"mail {ADA}")
    text, _ = await stream_text(output)
    assert text == "Sent to <EMAIL_1>; cc <EMAIL_2> too."
    assert "carol" not in json.dumps([m.to_dict() for m in (await output.response).messages], default=str)


async def test_a_restored_answer_in_history_is_concealed_again_before_the_model() -> None:
    pii = PIIDetector(strategy="pseudonymize", restore_output=True)
    memory = Memory(storage=SQLiteStore(":memory:"))
    model = MockModel([text_step("Noted <EMAIL_1>."), text_step("ok")])
    agent = agent_with(pii, model, memory=memory)
    where = {"thread": "t1", "resource": "u1"}
    first = await agent.generate(f"remember {ADA}", memory=where)
    assert first.text == f"Noted {ADA}."
    await agent.generate("what did I say?", memory=where)
    history = json.dumps(model.calls[1].prompt)
    assert "Noted <EMAIL_1>." in history
    assert ADA not in prompt_text(model)


# ---------------------------------------------------------------------- the sealed mapping


async def test_the_stored_mapping_is_sealed() -> None:
    store = InMemoryPseudonymStore()
    pii = PIIDetector(strategy="pseudonymize", pseudonym_store=store)
    await agent_with(pii, MockModel([text_step("ok")])).generate(
        f"mail {ADA}", request_context=context("t1", "u1")
    )
    sealed = await store.load(("u1", "t1"))
    assert sealed is not None and sealed.version == 1
    assert ADA.encode() not in sealed.data and b"EMAIL" not in sealed.data


async def test_a_wrong_key_or_altered_bytes_fail_closed(tmp_path: Path) -> None:
    storage = SQLiteStore(tmp_path / "m.db")
    writer = PIIDetector(strategy="pseudonymize", pseudonym_key=new_pseudonym_key(), pseudonym_store=storage)
    await agent_with(writer, MockModel([text_step("ok")])).generate(
        f"mail {ADA}", request_context=context("t1", "u1")
    )

    reader = PIIDetector(strategy="pseudonymize", pseudonym_key=new_pseudonym_key(), pseudonym_store=storage)
    model = MockModel([text_step("ok")])
    with pytest.raises(PseudonymKeyError, match="wrong pseudonym_key"):
        await agent_with(reader, model).generate(f"again {ADA}", request_context=context("t1", "u1"))
    assert model.calls == []

    row = await storage.load_pseudonyms("u1", "t1")
    assert row is not None
    altered = bytearray(row[0])
    altered[-1] ^= 1
    assert await storage.save_pseudonyms("u1", "t1", bytes(altered), row[1])
    model = MockModel([text_step("ok")])
    with pytest.raises(PseudonymKeyError):
        await agent_with(writer, model).generate(f"again {ADA}", request_context=context("t1", "u1"))
    assert model.calls == []
    await storage.close()


async def test_the_mapping_survives_a_restart_with_the_same_key(tmp_path: Path) -> None:
    key = new_pseudonym_key()
    tool, received = recorder()
    first = SQLiteStore(tmp_path / "m.db")
    pii = PIIDetector(strategy="pseudonymize", pseudonym_key=key, pseudonym_store=first)
    await agent_with(pii, MockModel([text_step("ok")])).generate(
        f"mail {BOB}", request_context=context("t1", "u1")
    )
    await first.close()

    second = SQLiteStore(tmp_path / "m.db")
    restarted = PIIDetector(strategy="pseudonymize", pseudonym_key=key, pseudonym_store=second)
    model = MockModel([tool_call_step(("c1", "send_email", {"to": "<EMAIL_1>"})), text_step("done")])
    await agent_with(restarted, model, tools=[tool]).generate("send it", request_context=context("t1", "u1"))
    assert received == [{"to": BOB}]
    await second.close()


async def test_concurrent_writers_never_give_one_token_two_values() -> None:
    store = InMemoryPseudonymStore()
    key = new_pseudonym_key()
    workers = [Pseudonymizer(key=key, store=store) for _ in range(6)]
    ctx = context("t1", "u1")

    class Args:
        def __init__(self) -> None:
            self.state: dict[str, Any] = {}
            self.request_context = ctx

    values = [f"user{i}@example.com" for i in range(6)]
    maps = await asyncio.gather(
        *(w.assign(Args(), [(v, "email")]) for w, v in zip(workers, values, strict=True))
    )
    final = await workers[0].current(Args())
    tokens = {final.token(v) for v in values}
    assert len(tokens) == 6 and None not in tokens
    for mapping, value in zip(maps, values, strict=True):
        assert final.value(mapping.token(value) or "") == value


async def test_a_store_that_keeps_losing_the_race_fails_closed() -> None:
    class Contended(InMemoryPseudonymStore):
        async def save(self, scope: Any, data: bytes, *, expected_version: int) -> bool:
            return False

    pii = PIIDetector(strategy="pseudonymize", pseudonym_store=Contended())
    model = MockModel([text_step("ok")])
    with pytest.raises(Exception) as caught:
        await agent_with(pii, model).generate(f"mail {ADA}", request_context=context("t1", "u1"))
    assert isinstance(caught.value.__cause__ or caught.value, StorageError)
    assert model.calls == []


# ---------------------------------------------------------------------- options


@pytest.mark.parametrize(
    "options",
    [
        {"strategy": "pseudonymize", "restore_output": "yes"},
        {"strategy": "redact", "restore_output": True},
        {"strategy": "redact", "pseudonym_key": new_pseudonym_key()},
        {"strategy": "block", "pseudonym_store": InMemoryPseudonymStore()},
        {"strategy": "pseudonymize", "pseudonym_key": b"short"},
        {"strategy": "pseudonymize", "pseudonym_key": "not base64 at all!"},
        {"strategy": "pseudonymize", "pseudonym_key": 1234},
        {"strategy": "pseudonymize", "pseudonym_store": object()},
        {"strategy": "pseudonymize", "pseudonym_store": SQLiteStore(":memory:")},  # persistent, no key
        {"strategy": "pseudonymize", "run_in_parallel": True},
        {"strategy": "pseudonymize", "max_pseudonyms": 0},
        {"strategy": "pseudonymize", "max_pseudonyms": 2.5},
        {"strategy": "redact", "max_pseudonyms": 5},
    ],
)
def test_options_that_cannot_work_are_refused(options: dict[str, Any]) -> None:
    with pytest.raises((ConfigurationError, ValueError)):
        PIIDetector(**options)


def test_a_misspelled_strategy_is_refused() -> None:
    with pytest.raises(ValueError, match="pseudonymize"):
        PIIDetector(strategy="pseudonymise")  # type: ignore[arg-type]


def test_other_strategies_add_no_tool_call_or_request_hook() -> None:
    from sluicegate.processors import implements

    for strategy in ("block", "warn"):
        assert not implements(PIIDetector(strategy=strategy), "process_tool_call")  # type: ignore[arg-type]
    # filter refuses the calls whose arguments it flagged (`args.reject`), in its tool-call hook
    assert implements(PIIDetector(strategy="filter"), "process_tool_call")
    # redact keeps a hook per tool call only to give the tool the model's arguments (shown)
    assert not implements(PIIDetector(tool_arguments="rewritten"), "process_tool_call")
    assert implements(PIIDetector(), "process_tool_call")
    assert not implements(PIIDetector(), "process_llm_request")
    pseudo = PIIDetector(strategy="pseudonymize")
    assert implements(pseudo, "process_tool_call") and implements(pseudo, "process_llm_request")


# ---------------------------------------------------------------------- units


def test_hold_point_holds_only_what_may_still_become_a_token() -> None:
    assert hold_point("see <EMAIL_") == len("see ")
    assert hold_point("see <") == len("see ")
    assert hold_point("see <EMAIL_1>") == len("see <EMAIL_1>")
    assert hold_point("a < b") == len("a < b")
    assert hold_point("x <lowercase") == len("x <lowercase")
    long = "<" + "A" * 80
    assert hold_point(long) == len(long)  # longer than any token: released


def test_conceal_respects_word_boundaries_and_leaves_tokens_alone() -> None:
    mapping = PseudonymMap({"<NAME_1>": "Al", "<NAME_2>": "Alan", "<EMAIL_1>": ADA})
    assert mapping.conceal("Alan studies Algebra; mail ada@example.com.") == (
        "<NAME_2> studies Algebra; mail <EMAIL_1>."
    )
    assert mapping.conceal("xada@example.com") == "xada@example.com"  # another address
    assert mapping.restore("<NAME_2> <NAME_9> <EMAIL_1>") == f"Alan <NAME_9> {ADA}"


def test_sealed_mapping_round_trip_is_bound_to_its_scope() -> None:
    key = new_pseudonym_key()
    cipher = Pseudonymizer(key=key, store=None).cipher
    sealed = cipher.seal(b'{"v": 1, "tokens": {}}', ("u1", "t1"))
    assert cipher.open(sealed, ("u1", "t1")) == b'{"v": 1, "tokens": {}}'
    with pytest.raises(PseudonymKeyError):
        cipher.open(sealed, ("u1", "t2"))
    with pytest.raises(PseudonymKeyError):
        cipher.open(b"garbage", ("u1", "t1"))
    assert isinstance(SealedMapping(sealed, 1).data, bytes)


async def test_a_detected_value_with_blanks_around_it_keeps_them() -> None:
    answer = {"detections": [{"type": "name", "value": " Ada Lovelace ", "confidence": 0.9}]}
    pii = PIIDetector(model=detector(answer), strategy="pseudonymize")
    model = MockModel([text_step("ok")])
    await agent_with(pii, model).generate("I am Ada Lovelace today")
    assert user_texts(model.calls[0]) == ["I am <NAME_1> today"]


KNOWN = {"<EMAIL_1>": ADA, "<EMAIL_2>": "da@example.com", "<NAME_1>": "Ada", "<CARD_1>": CARD}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([*KNOWN.values(), " ", ", ", "x", "Adam", "(", ")", "<EMAIL_3>"]), max_size=20)
)
def test_conceal_then_restore_gives_the_text_back_and_no_value_stands_alone(pieces: list[str]) -> None:
    mapping = PseudonymMap(KNOWN)
    text = "".join(pieces)
    concealed = mapping.conceal(text)
    assert mapping.restore(concealed) == text
    for value in KNOWN.values():
        words = concealed.replace("(", " ").replace(")", " ").replace(",", " ").split()
        assert value not in words


def test_without_the_pii_extra_pseudonymize_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from sluicegate.errors import MissingExtraError

    monkeypatch.setitem(sys.modules, "cryptography.hazmat.primitives.ciphers.aead", None)
    with pytest.raises(MissingExtraError, match=r"sluicegate\[pii\]"):
        PIIDetector(strategy="pseudonymize")
    PIIDetector(strategy="redact")  # the other strategies do not need it


async def test_values_in_a_tool_results_keys_and_numbers_are_pseudonymized_too() -> None:
    # An address used as a key, or a card number sent as a JSON number, is as sensitive as one
    # inside a string: the model must see a token in its place.
    async def lookup(input: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        return {BOB: "customer", "card": 4111111111111111}

    customer = create_tool(id="customer", input_schema={"type": "object"}, execute=lookup)
    pii = PIIDetector(strategy="pseudonymize")
    model = MockModel([tool_call_step(("c1", "customer", {})), text_step("done")])
    await agent_with(pii, model, tools=[customer]).generate("look up customer 7")
    sent = prompt_text(model)
    assert BOB not in sent
    assert "4111111111111111" not in sent
    assert "<EMAIL_1>" in sent
