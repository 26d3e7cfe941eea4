"""The wire-harness agents for `sluicegate serve`: the same agents as mastra_server.mjs, on the same
scripted models. echo (memory, in-memory SQLite), guarded (an input processor that aborts on
'forbidden'), approver (one `lookup` tool that needs approval; memory, its approval flows run in
threads as Studio's chat does), json (answers JSON, for structured output), asker (one `ask` tool
that suspends for a person's answer).

Like the `Mastra` instance there, the app has storage (`Sluicegate(storage=...)`): the one store
echo's and approver's memory use, which the memory routes answer from for an agent without
memory."""

import json

from sluicegate import Agent, Sluicegate, create_tool
from sluicegate.memory import Memory
from sluicegate.processors import Processor
from sluicegate.storage import SQLiteStore
from sluicegate.testing import MockModel


def usage(n):
    return {"inputTokens": 5, "outputTokens": n, "totalTokens": 5 + n}


def last_user(prompt):
    users = [m for m in prompt if m["role"] == "user"]
    if not users:
        return ""
    content = users[-1]["content"]
    return (
        content
        if isinstance(content, str)
        else "".join(p.get("text", "") for p in content if p.get("type") == "text")
    )


def echo_parts(options):
    words = f"You said: {last_user(options.prompt)}".split(" ")
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t1"},
        *[{"type": "text-delta", "id": "t1", "delta": w + " "} for w in words],
        {"type": "text-end", "id": "t1"},
        {"type": "finish", "finishReason": "stop", "usage": usage(len(words))},
    ]


def approver_parts(options):
    last = options.prompt[-1]
    if last["role"] == "tool":
        part = next((p for p in last["content"] if p.get("type") == "tool-result"), {})
        output = part.get("output")
        out = json.dumps(
            output["value"] if isinstance(output, dict) and output.get("type") == "json" else output,
            separators=(",", ":"),
        )
        return [
            {"type": "stream-start", "warnings": []},
            {"type": "text-start", "id": "t1"},
            {"type": "text-delta", "id": "t1", "delta": f"Lookup returned {out}"},
            {"type": "text-end", "id": "t1"},
            {"type": "finish", "finishReason": "stop", "usage": usage(3)},
        ]
    n = sum(1 for m in options.prompt if m["role"] == "user")
    return [
        {"type": "stream-start", "warnings": []},
        {
            "type": "tool-call",
            "toolCallId": f"call_{n}",
            "toolName": "lookup",
            "input": json.dumps({"query": last_user(options.prompt)}),
        },
        {"type": "finish", "finishReason": "tool-calls", "usage": usage(2)},
    ]


class Forbidden(Processor):
    id = "forbidden-word"

    def process_input(self, args):
        for m in args.messages:
            for p in m.content.parts:
                if p.get("type") == "text" and "forbidden" in p.get("text", ""):
                    args.abort("The word 'forbidden' is not allowed", metadata={"word": "forbidden"})
        return args.messages


async def lookup_execute(input, context):
    query = input["query"] if isinstance(input, dict) else input.query
    return {"answer": f"found {query}"}


STORE = SQLiteStore(":memory:")

echo = Agent(
    name="echo",
    instructions="You echo the user.",
    model=MockModel([echo_parts] * 10_000),
    memory=Memory(storage=STORE, options={"last_messages": 10}),
)

guarded = Agent(
    name="guarded",
    instructions="You are guarded.",
    model=MockModel([echo_parts] * 10_000),
    input_processors=[Forbidden()],
)

approver = Agent(
    name="approver",
    instructions="You look things up, with approval.",
    model=MockModel([approver_parts] * 10_000),
    tools={
        "lookup": create_tool(
            id="lookup",
            description="Look something up",
            input_schema={
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
            execute=lookup_execute,
            require_approval=True,
        )
    },
    memory=Memory(storage=STORE, options={"last_messages": 10}),
)


def json_parts(options):
    return [
        {"type": "stream-start", "warnings": []},
        {"type": "text-start", "id": "t1"},
        {"type": "text-delta", "id": "t1", "delta": '{"answer":'},
        {"type": "text-delta", "id": "t1", "delta": '"42"}'},
        {"type": "text-end", "id": "t1"},
        {"type": "finish", "finishReason": "stop", "usage": usage(2)},
    ]


def asker_parts(options):
    last = options.prompt[-1]
    if last["role"] == "tool":
        part = next((p for p in last["content"] if p.get("type") == "tool-result"), {})
        output = part.get("output")
        value = output["value"] if isinstance(output, dict) and output.get("type") == "json" else output
        out = json.dumps(value, separators=(",", ":"))
        return [
            {"type": "stream-start", "warnings": []},
            {"type": "text-start", "id": "t1"},
            {"type": "text-delta", "id": "t1", "delta": f"Asked: {out}"},
            {"type": "text-end", "id": "t1"},
            {"type": "finish", "finishReason": "stop", "usage": usage(2)},
        ]
    call = {"type": "tool-call", "toolCallId": "ask_1", "toolName": "ask"}
    return [
        {"type": "stream-start", "warnings": []},
        {**call, "input": json.dumps({"topic": last_user(options.prompt)})},
        {"type": "finish", "finishReason": "tool-calls", "usage": usage(2)},
    ]


async def ask_execute(input, context):
    topic = input["topic"] if isinstance(input, dict) else input.topic
    if context.resume_data is None:
        return await context.suspend({"question": f"About {topic}?"})
    colour = (
        context.resume_data["colour"] if isinstance(context.resume_data, dict) else context.resume_data.colour
    )
    return {"topic": topic, "colour": colour}


def _object(**properties):
    return {
        "type": "object",
        "properties": {name: {"type": "string"} for name in properties},
        "required": list(properties),
    }


json_agent = Agent(
    name="json",
    instructions="You answer in JSON.",
    model=MockModel([json_parts] * 10_000),
)

asker = Agent(
    name="asker",
    instructions="You ask a person.",
    model=MockModel([asker_parts] * 10_000),
    tools={
        "ask": create_tool(
            id="ask",
            description="Ask a person",
            input_schema=_object(topic=1),
            suspend_schema=_object(question=1),
            resume_schema=_object(colour=1),
            execute=ask_execute,
        )
    },
)

app = Sluicegate(agents=[echo, guarded, approver, json_agent, asker], storage=STORE)
