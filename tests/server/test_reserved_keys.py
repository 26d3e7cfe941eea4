"""The in-process API honours the reserved request-context keys as the server does: an
application's own web app that authenticates a user and sets `RESOURCE_ID_KEY` (and maybe
`THREAD_ID_KEY`) gets the same protection from `Agent.generate` / `stream`."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluicegate import RESOURCE_ID_KEY, THREAD_ID_KEY, Agent, RequestContext
from sluicegate.agent.reserved_keys import apply_reserved_keys
from sluicegate.errors import AccessDeniedError, IdentityMismatchError
from sluicegate.memory import Memory
from sluicegate.storage import SQLiteStore
from sluicegate.testing import MockModel, text_step


def _agent(storage: SQLiteStore, answers: int = 3) -> tuple[Agent, MockModel]:
    model = MockModel([text_step("ok") for _ in range(answers)])
    return Agent(name="a", model=model, memory=Memory(storage=storage)), model


async def test_the_bound_resource_fills_an_option_without_one() -> None:
    storage = SQLiteStore(":memory:")
    agent, _ = _agent(storage)
    alice = RequestContext({RESOURCE_ID_KEY: "alice", "tenant": "acme"})
    await agent.generate("hi", memory={"thread": "t1"}, request_context=alice)
    thread = await storage.get_thread("t1")
    assert thread is not None and thread.resource_id == "alice"
    await agent.generate("again", memory={"thread": "t1", "resource": "alice"}, request_context=alice)
    assert len(await storage.list_messages("t1")) == 4
    assert alice.to_dict() == {RESOURCE_ID_KEY: "alice", "tenant": "acme"}  # never written


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("bound", "memory"),
    [
        ({RESOURCE_ID_KEY: "alice"}, {"thread": "t-new", "resource": "bob"}),
        ({RESOURCE_ID_KEY: "alice", THREAD_ID_KEY: "t-pin"}, {"thread": "t-new", "resource": "alice"}),
        ({RESOURCE_ID_KEY: "alice", THREAD_ID_KEY: "t-pin"}, {"thread": {"id": "t-new"}}),
        ({THREAD_ID_KEY: "t-pin"}, {"thread": "t-new", "resource": "alice"}),
    ],
)
async def test_naming_another_id_is_refused_before_anything_happens(
    bound: dict[str, str], memory: dict[str, Any], stream: bool
) -> None:
    storage = SQLiteStore(":memory:")
    agent, model = _agent(storage)
    context = RequestContext(bound)
    with pytest.raises(IdentityMismatchError) as raised:
        if stream:
            await agent.stream("hi", memory=memory, request_context=context)
        else:
            await agent.generate("hi", memory=memory, request_context=context)
    assert isinstance(raised.value, AccessDeniedError)
    assert "'alice'" not in str(raised.value) or memory.get("resource") == "alice"  # bound id not echoed
    assert model.calls == []
    assert await storage.get_thread("t-new") is None
    assert await storage.list_threads("bob") == []


async def test_a_bound_thread_is_used_when_the_option_names_none() -> None:
    storage = SQLiteStore(":memory:")
    agent, _ = _agent(storage)
    pinned = RequestContext({RESOURCE_ID_KEY: "alice", THREAD_ID_KEY: "t-pin"})
    await agent.generate("hi", memory={"resource": "alice"}, request_context=pinned)
    await agent.generate("hi", memory={"thread": "t-pin"}, request_context=pinned)
    assert [t.id for t in await storage.list_threads("alice")] == ["t-pin"]
    assert len(await storage.list_messages("t-pin")) == 4


async def test_another_resources_thread_stays_refused() -> None:
    storage = SQLiteStore(":memory:")
    agent, _ = _agent(storage)
    await agent.generate("bob's", memory={"thread": "t-bob", "resource": "bob"})
    with pytest.raises(AccessDeniedError):
        await agent.generate(
            "hi", memory={"thread": "t-bob"}, request_context=RequestContext({RESOURCE_ID_KEY: "alice"})
        )
    assert len(await storage.list_messages("t-bob")) == 2


async def test_without_reserved_keys_the_option_decides_as_before() -> None:
    storage = SQLiteStore(":memory:")
    agent, _ = _agent(storage)
    await agent.generate("hi", memory={"thread": "t1", "resource": "bob"}, request_context=RequestContext())
    thread = await storage.get_thread("t1")
    assert thread is not None and thread.resource_id == "bob"


ids = st.text(alphabet="abc", min_size=1, max_size=2)


@given(
    bound_resource=st.none() | ids,
    bound_thread=st.none() | ids,
    resource=st.none() | ids,
    thread=st.none() | ids | st.builds(lambda i: {"id": i}, ids),
)
def test_the_bound_ids_always_win_or_the_call_is_refused(
    bound_resource: str | None, bound_thread: str | None, resource: str | None, thread: Any
) -> None:
    context = RequestContext()
    if bound_resource is not None:
        context.set(RESOURCE_ID_KEY, bound_resource)
    if bound_thread is not None:
        context.set(THREAD_ID_KEY, bound_thread)
    option: dict[str, Any] = {"options": {"read_only": True}}
    if resource is not None:
        option["resource"] = resource
    if thread is not None:
        option["thread"] = thread
    before = dict(option)
    thread_id = thread["id"] if isinstance(thread, dict) else thread
    conflict = (bound_resource is not None and resource is not None and resource != bound_resource) or (
        bound_thread is not None and thread_id is not None and thread_id != bound_thread
    )
    if conflict:
        with pytest.raises(IdentityMismatchError):
            apply_reserved_keys(option, context)
        return
    result = apply_reserved_keys(option, context)
    assert option == before  # the caller's dict is not changed
    assert result["options"] == {"read_only": True}
    assert result.get("resource") == (bound_resource if bound_resource is not None else resource)
    result_thread = result.get("thread")
    result_thread_id = result_thread["id"] if isinstance(result_thread, dict) else result_thread
    assert result_thread_id == (bound_thread if bound_thread is not None else thread_id)
