"""WorkingMemory and the update_working_memory tool through real agent runs, on both backends."""

from __future__ import annotations

import json
from typing import Any

from memory_testkit import Spy, prompt_texts, system_texts

from sluicegate import Agent
from sluicegate.memory import Memory
from sluicegate.processors import WorkingMemory
from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY, RequestContext
from sluicegate.storage import Thread
from sluicegate.testing import MockModel, text_step, tool_call_step

MEM = {"thread": "t1", "resource": "u1"}


def wm_memory(store: Any, **working: Any) -> Memory:
    return Memory(storage=store, options={"working_memory": {"enabled": True, **working}})


def instruction(prompt: list[dict[str, Any]]) -> str:
    [text] = [s for s in system_texts(prompt) if s.startswith("WORKING_MEMORY_SYSTEM_INSTRUCTION")]
    return text


async def test_default_template_lists_the_profile_fields(store: Any) -> None:
    model = MockModel([text_step("ok")])
    await Agent(name="a", model=model, memory=wm_memory(store)).generate("hi", memory=MEM)
    text = instruction(model.calls[0].prompt)
    for label in (
        "First Name",
        "Last Name",
        "Location",
        "Occupation",
        "Interests",
        "Goals",
        "Events",
        "Facts",
        "Projects",
    ):
        assert f"**{label}**" in text
    assert "update_working_memory" in text and "<working_memory_data>\n\n</working_memory_data>" in text


async def test_resource_scope_is_shared_across_threads(store: Any) -> None:
    memory = wm_memory(store, scope="resource")
    model = MockModel(
        [
            tool_call_step(("c1", "update_working_memory", {"memory": "- **Name**: Ada"})),
            text_step("Noted"),
            text_step("Hi again"),
        ]
    )
    agent = Agent(name="a", model=model, memory=memory)
    await agent.generate("I'm Ada", memory=MEM)
    await agent.generate("Who am I?", memory={"thread": "t2", "resource": "u1"})
    assert "- **Name**: Ada" in instruction(model.calls[2].prompt)
    resource = await store.get_resource("u1")
    assert resource is not None and resource.working_memory == "- **Name**: Ada"
    assert await memory.get_working_memory(resource_id="u1") == "- **Name**: Ada"


async def test_thread_scope_lives_in_thread_metadata(store: Any) -> None:
    model = MockModel(
        [
            tool_call_step(("c1", "update_working_memory", {"memory": "topic: gardens"})),
            text_step("ok"),
            text_step("fresh"),
            text_step("back"),
        ]
    )
    agent = Agent(name="a", model=model, memory=wm_memory(store, scope="thread"))
    await agent.generate("Let's talk gardens", memory=MEM)
    await agent.generate("new thread", memory={"thread": "t2", "resource": "u1"})
    await agent.generate("back again", memory=MEM)
    assert "topic: gardens" not in instruction(model.calls[2].prompt)
    assert "topic: gardens" in instruction(model.calls[3].prompt)
    thread = await store.get_thread("t1")
    assert thread is not None and thread.metadata["workingMemory"] == "topic: gardens"
    assert await store.get_resource("u1") is None


async def test_custom_markdown_template_is_used(store: Any) -> None:
    template = {"format": "markdown", "content": "# Plant Profile\n- **Favourite plant**:\n"}
    model = MockModel([text_step("ok")])
    await Agent(name="a", model=model, memory=wm_memory(store, template=template)).generate("hi", memory=MEM)
    text = instruction(model.calls[0].prompt)
    assert "**Favourite plant**" in text and "First Name" not in text


async def test_json_template_shows_the_shape_and_updates_merge(store: Any) -> None:
    template = {
        "format": "json",
        "content": json.dumps(
            {
                "user": {
                    "type": "object",
                    "properties": {"name": {"type": "string"}, "city": {"type": "string"}},
                },
                "goals": {"type": "array"},
            }
        ),
    }
    memory = wm_memory(store, template=template)
    model = MockModel(
        [
            tool_call_step(
                ("c1", "update_working_memory", {"memory": {"user": {"name": "Ada", "city": "Paris"}}})
            ),
            tool_call_step(
                (
                    "c2",
                    "update_working_memory",
                    {"memory": json.dumps({"user": {"city": None}, "goals": ["write"]})},
                )
            ),
            text_step("done"),
            text_step("next"),
        ]
    )
    agent = Agent(name="a", model=model, memory=memory)
    await agent.generate("I'm Ada from Paris", memory=MEM)
    text = instruction(model.calls[0].prompt)
    assert '{"user": {"name": "", "city": ""}, "goals": []}' in text and "JSON" in text
    stored = json.loads(await memory.get_working_memory(resource_id="u1") or "{}")
    assert stored == {"user": {"name": "Ada"}, "goals": ["write"]}
    await agent.generate("next", memory=MEM)
    assert '"name": "Ada"' in instruction(model.calls[3].prompt)


async def test_instruction_is_a_memory_tagged_system_message_never_stored(store: Any) -> None:
    spy = Spy()
    agent = Agent(
        name="a", model=MockModel([text_step("ok")]), memory=wm_memory(store), input_processors=[spy]
    )
    await agent.generate("hi", memory=MEM)
    assert any(s.startswith("WORKING_MEMORY_SYSTEM_INSTRUCTION") for s in spy.memory_system)
    assert all(m.role != "system" for m in await store.list_messages("t1"))


async def test_the_update_tool_is_offered_to_the_model(store: Any) -> None:
    model = MockModel([text_step("ok")])
    await Agent(name="a", model=model, memory=wm_memory(store)).generate("hi", memory=MEM)
    assert "update_working_memory" in [t["name"] for t in model.calls[0].tools]


async def test_read_only_shows_memory_but_offers_no_tool(store: Any) -> None:
    await store.update_resource("u1", working_memory="- **Name**: Grace")
    model = MockModel([text_step("ok")])
    memory = Memory(storage=store, options={"working_memory": {"enabled": True}, "read_only": True})
    await Agent(name="a", model=model, memory=memory).generate("hi", memory=MEM)
    text = instruction(model.calls[0].prompt)
    assert "READ-ONLY" in text and "- **Name**: Grace" in text
    assert "update_working_memory" not in [t["name"] for t in (model.calls[0].tools or [])]


async def test_disabled_working_memory_adds_nothing(store: Any) -> None:
    model = MockModel([text_step("ok")])
    await Agent(name="a", model=model, memory=Memory(storage=store)).generate("hi", memory=MEM)
    assert not any(s.startswith("WORKING_MEMORY") for s in system_texts(model.calls[0].prompt))
    assert "update_working_memory" not in [t["name"] for t in (model.calls[0].tools or [])]


async def test_standalone_processor_uses_the_request_context(store: Any) -> None:
    await store.create_thread(Thread(id="t1", resource_id="u1"))
    await store.update_resource("u1", working_memory="likes: tea")
    model = MockModel([text_step("ok"), text_step("ok")])
    agent = Agent(name="a", model=model, input_processors=[WorkingMemory(storage=store)])
    await agent.generate("hi", request_context=RequestContext({THREAD_ID_KEY: "t1", RESOURCE_ID_KEY: "u1"}))
    assert "likes: tea" in instruction(model.calls[0].prompt)
    await agent.generate("hi")
    assert not any(s.startswith("WORKING_MEMORY") for s in system_texts(model.calls[1].prompt))
    assert prompt_texts(model.calls[1].prompt) == ["user: hi"]
