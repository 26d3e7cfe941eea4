"""Processor workflows as processors: then, parallel + map, branch, aborts, stream phase."""

from __future__ import annotations

import pytest

from sluicegate import Agent
from sluicegate.errors import ConfigurationError
from sluicegate.messages import Message
from sluicegate.processors import Processor
from sluicegate.testing import MockModel, text_step
from sluicegate.workflows import create_step, create_workflow


def user_texts(call) -> list[str]:
    return [p["text"] for m in call.prompt if m["role"] == "user" for p in m["content"]]


class Replace(Processor):
    def __init__(self, id: str, old: str, new: str) -> None:
        super().__init__()
        self.id = id
        self.old, self.new = old, new

    def process_input(self, args):
        out = []
        for message in args.messages:
            data = message.to_dict()
            for part in data["content"]["parts"]:
                if part["type"] == "text":
                    part["text"] = part["text"].replace(self.old, self.new)
            out.append(Message.from_dict(data))
        return out


class Block(Processor):
    id = "block"

    def process_input(self, args):
        if any("forbidden" in m.text for m in args.messages):
            args.abort("blocked by workflow step", metadata={"why": "forbidden"})


async def test_then_chains_processor_steps_in_order():
    workflow = (
        create_workflow(id="chain")
        .then(create_step(Replace("a-to-b", "a", "b")))
        .then(create_step(Replace("b-to-c", "b", "c")))
        .commit()
    )
    model = MockModel([text_step("ok")])
    await Agent("x", model=model, input_processors=[workflow]).generate("a")
    assert user_texts(model.calls[0]) == ["c"]


async def test_parallel_branches_are_keyed_by_processor_id_and_map_selects_one():
    seen = {}

    def pick(data):
        seen.update({k: v["messages"][0].text for k, v in data.items()})
        return data["processor:to-y"]

    workflow = (
        create_workflow(id="par")
        .parallel([create_step(Replace("to-x", "q", "x")), create_step(Replace("to-y", "q", "y"))])
        .map(pick)
        .commit()
    )
    model = MockModel([text_step("ok")])
    await Agent("x", model=model, input_processors=[workflow]).generate("q")
    assert seen == {"processor:to-x": "x", "processor:to-y": "y"}
    assert user_texts(model.calls[0]) == ["y"]


async def test_branch_runs_the_first_matching_step():
    workflow = (
        create_workflow(id="br")
        .branch(
            [
                (
                    lambda data: "urgent" in data["messages"][0].text,
                    create_step(Replace("flag", "urgent", "URGENT")),
                ),
                (lambda data: True, create_step(Replace("calm", "hello", "hi"))),
            ]
        )
        .commit()
    )
    model = MockModel([text_step("1"), text_step("2")])
    agent = Agent("x", model=model, input_processors=[workflow])
    await agent.generate("urgent hello")
    await agent.generate("hello")
    assert user_texts(model.calls[0]) == ["URGENT hello"]
    assert user_texts(model.calls[1]) == ["hi"]


async def test_an_abort_inside_a_workflow_is_a_tripwire_from_that_processor():
    block = Block()
    violations = []
    block.on_violation = violations.append
    workflow = create_workflow(id="guard").then(create_step(block)).commit()
    model = MockModel([text_step("never")])
    result = await Agent("x", model=model, input_processors=[workflow]).generate("forbidden thing")
    assert result.tripwire.processor_id == "block"
    assert result.tripwire.metadata == {"why": "forbidden"}
    assert model.calls == []
    assert [v.processor_id for v in violations] == ["block"]


async def test_stream_workflows_transform_and_drop_chunks():
    class Upper(Processor):
        id = "upper"

        def process_output_stream(self, args):
            if args.part.type == "text-delta":
                args.part.payload.text = args.part.payload.text.upper()
            return args.part

    class DropX(Processor):
        id = "drop-x"

        def process_output_stream(self, args):
            return None if args.part.type == "text-delta" and "X" in args.part.payload.text else args.part

    workflow = create_workflow(id="out").then(create_step(Upper())).then(create_step(DropX())).commit()
    assert hasattr(workflow, "process_output_stream") and not hasattr(workflow, "process_input")
    steps = [
        [
            {"type": "text-start", "id": "t"},
            {"type": "text-delta", "id": "t", "delta": "ab"},
            {"type": "text-delta", "id": "t", "delta": "x"},
            {"type": "text-delta", "id": "t", "delta": "cd"},
            {"type": "text-end", "id": "t"},
            {"type": "finish", "finishReason": "stop", "usage": {}},
        ]
    ]
    result = await Agent("x", model=MockModel(steps), output_processors=[workflow]).generate("go")
    assert result.text == "ABCD"


async def test_function_steps_and_validation():
    workflow = (
        create_workflow(id="fn")
        .then(create_step(Replace("r", "a", "b")))
        .then(
            create_step(
                id="extra",
                execute=lambda d: {**d, "messages": [*d["messages"], Message.text_message("user", "extra")]},
            )
        )
        .commit()
    )
    model = MockModel([text_step("ok")])
    await Agent("x", model=model, input_processors=[workflow]).generate("a")
    assert user_texts(model.calls[0]) == ["b", "extra"]
    with pytest.raises(ConfigurationError):
        create_workflow(id="empty").commit()
    with pytest.raises(ConfigurationError):
        workflow.then(create_step(Block()))
    with pytest.raises(ConfigurationError):
        create_step()
