"""`RegexFilter` covers every channel the client sees: text across text ids, reasoning,
tool-call arguments (streamed and final), tool results (through `process_tool_result`) and,
when asked, `data-*` chunks."""

from __future__ import annotations

import json
from typing import Any

from sluicegate import Agent, create_tool
from sluicegate.processors import RegexFilter
from sluicegate.testing import MockModel, text_step, tool_call_step

KEY = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWx"


async def collect(agent: Agent) -> tuple[list[Any], Any]:
    output = await agent.stream("hi")
    chunks = [c async for c in output.full_stream]
    return chunks, await output.response


def dump(value: Any) -> str:
    return json.dumps(value, default=str)


async def test_a_key_split_across_two_text_ids_is_redacted() -> None:
    step = text_step("x")
    parts = [
        step[0],
        {"type": "text-start", "id": "a"},
        {"type": "text-delta", "id": "a", "delta": "key " + KEY[:10]},
        {"type": "text-end", "id": "a"},
        {"type": "text-start", "id": "b"},
        {"type": "text-delta", "id": "b", "delta": KEY[10:] + " end"},
        {"type": "text-end", "id": "b"},
        step[-1],
    ]
    agent = Agent(
        name="r",
        model=MockModel([parts]),
        output_processors=[RegexFilter(presets=["secrets"], strategy="redact")],
    )
    chunks, response = await collect(agent)
    text = "".join(c.payload.text for c in chunks if c.type == "text-delta")
    assert text == "key [API_KEY] end"
    assert KEY[:8] not in dump([c.to_dict() for c in chunks]) and KEY[:8] not in dump(
        [m.to_dict() for m in response.messages]
    )
    types = [c.type for c in chunks]
    assert types.count("text-start") == 2 and types.count("text-end") == 2


async def test_streamed_tool_call_arguments_and_the_final_call_are_redacted() -> None:
    args_json = json.dumps({"token": KEY})
    step = [
        {"type": "stream-start", "warnings": []},
        {"type": "tool-input-start", "id": "c1", "toolName": "save"},
        *(
            {"type": "tool-input-delta", "id": "c1", "delta": args_json[i : i + 5]}
            for i in range(0, len(args_json), 5)
        ),
        {"type": "tool-input-end", "id": "c1"},
        {"type": "tool-call", "toolCallId": "c1", "toolName": "save", "input": args_json},
        {"type": "finish", "finishReason": "tool-calls", "usage": {"inputTokens": 1, "outputTokens": 1}},
    ]
    received: list[Any] = []

    async def save(args: Any, context: Any) -> str:
        received.append(args)
        return "saved"

    tool = create_tool(id="save", description="Save", input_schema={"type": "object"}, execute=save)
    agent = Agent(
        name="r",
        model=MockModel([step, text_step("done")]),
        tools=[tool],
        output_processors=[RegexFilter(presets=["secrets"], strategy="redact")],
    )
    chunks, response = await collect(agent)
    streamed = "".join(c.payload.args_text_delta for c in chunks if c.type == "tool-call-delta")
    assert json.loads(streamed) == {"token": "[API_KEY]"}
    call = next(c for c in chunks if c.type == "tool-call")
    assert call.payload.args == {"token": "[API_KEY]"}
    assert KEY[:8] not in dump([c.to_dict() for c in chunks]) + dump([m.to_dict() for m in response.messages])


async def test_tool_results_are_redacted_for_the_model_the_client_and_the_store() -> None:
    async def lookup(args: Any, context: Any) -> dict[str, Any]:
        return {"config": {"api_key": KEY}, "rows": [f"owner ann@example.com key {KEY}"]}

    tool = create_tool(id="lookup", description="Look up", input_schema={"type": "object"}, execute=lookup)
    model = MockModel([tool_call_step(("c1", "lookup", {})), text_step("done")])
    agent = Agent(
        name="r",
        model=model,
        tools=[tool],
        output_processors=[RegexFilter(presets=["pii", "secrets"], strategy="redact")],
    )
    chunks, response = await collect(agent)
    result = next(c for c in chunks if c.type == "tool-result").payload.result
    assert result == {"config": {"api_key": "[API_KEY]"}, "rows": ["owner [EMAIL] key [API_KEY]"]}
    everything = dump([c.to_dict() for c in chunks]) + dump([m.to_dict() for m in response.messages])
    assert KEY[:8] not in everything and "ann@" not in everything
    assert KEY[:8] not in dump(model.calls[1].prompt)


async def test_tool_results_block_with_the_block_strategy() -> None:
    async def lookup(args: Any, context: Any) -> str:
        return f"key {KEY}"

    tool = create_tool(id="lookup", description="Look up", input_schema={"type": "object"}, execute=lookup)
    model = MockModel([tool_call_step(("c1", "lookup", {})), text_step("done")])
    agent = Agent(name="r", model=model, tools=[tool], output_processors=[RegexFilter(presets=["secrets"])])
    chunks, _ = await collect(agent)
    assert chunks[-1].type == "tripwire" and len(model.calls) == 1
    assert KEY[:8] not in dump([c.to_dict() for c in chunks])


async def test_data_parts_are_checked_only_when_asked() -> None:
    def agent(process_data_parts: bool) -> Agent:
        guard = RegexFilter(presets=["secrets"], strategy="redact", process_data_parts=process_data_parts)
        tool = create_tool(
            id="noop",
            description="Emit a note",
            input_schema={"type": "object"},
            execute=lambda args, context: _write_note(context),
        )
        model = MockModel([tool_call_step(("c1", "noop", {})), text_step("done")])
        return Agent(name="r", model=model, tools=[tool], output_processors=[guard])

    chunks, _ = await collect(agent(True))
    notes = [c.data for c in chunks if c.type == "data-note"]
    assert notes and all(n == {"note": "key [API_KEY]"} for n in notes)
    chunks, _ = await collect(agent(False))
    assert any(c.type == "data-note" and KEY in c.data["note"] for c in chunks)


async def _write_note(context: Any) -> str:
    await context.writer.custom({"type": "data-note", "data": {"note": f"key {KEY}"}})
    return "ok"


async def test_unreadable_tool_input_is_redacted_and_stays_a_tool_error() -> None:
    raw = '{"token": "' + KEY + '", oops'
    step = [
        {"type": "stream-start", "warnings": []},
        {"type": "tool-call", "toolCallId": "c1", "toolName": "save", "input": raw},
        {"type": "finish", "finishReason": "tool-calls", "usage": {"inputTokens": 1, "outputTokens": 1}},
    ]
    ran: list[Any] = []
    tool = create_tool(
        id="save", description="Save", input_schema={"type": "object"}, execute=lambda a, c: ran.append(a)
    )
    agent = Agent(
        name="r",
        model=MockModel([step, text_step("done")]),
        tools=[tool],
        output_processors=[RegexFilter(presets=["secrets"], strategy="redact")],
    )
    chunks, response = await collect(agent)
    assert ran == [] and any(c.type == "tool-error" for c in chunks)
    assert KEY[:8] not in dump([c.to_dict() for c in chunks]) + dump([m.to_dict() for m in response.messages])


async def test_numbers_and_keys_in_tool_call_arguments_are_checked() -> None:
    # A card number sent as a JSON number, an address used as a key: both reach the tool and
    # the client as much as a string does.
    # The call is shown redacted; the tool receives the model's arguments (`tool_arguments`
    # "shown", the default) or the redacted ones ("rewritten").
    card = 4111111111111111
    for strategy, arguments, expected in (
        ("redact", {"card": card, "n": 3}, {"card": "[CREDIT_CARD]", "n": 3}),
        ("redact", {"ann@example.com": "x", "[EMAIL]": "y"}, {"[EMAIL]_2": "x", "[EMAIL]": "y"}),
        ("block", {"card": card}, None),
        ("block", {"ann@example.com": "x"}, None),
    ):
        for tool_arguments in ("shown", "rewritten"):
            received: list[Any] = []

            async def send(args: Any, context: Any, received: list[Any] = received) -> str:
                received.append(args)
                return "sent"

            tool = create_tool(id="send", description="Send", input_schema={"type": "object"}, execute=send)
            agent = Agent(
                name="r",
                model=MockModel([tool_call_step(("c1", "send", arguments)), text_step("done")]),
                tools=[tool],
                output_processors=[
                    RegexFilter(presets=["pii"], strategy=strategy, tool_arguments=tool_arguments)  # type: ignore[arg-type]
                ],
            )
            chunks, _ = await collect(agent)
            if expected is None:
                assert chunks[-1].type == "tripwire" and received == [], arguments
            else:
                assert received == [expected if tool_arguments == "rewritten" else arguments]
                assert next(c for c in chunks if c.type == "tool-call").payload.args == expected
