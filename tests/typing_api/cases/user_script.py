"""A first-hour script written against the public API only; `mypy --strict` must accept it and
infer the types asserted below."""

from __future__ import annotations

import asyncio
from typing import Any, assert_type

from pydantic import BaseModel

from sluicegate import Agent, RequestContext, tool
from sluicegate.agent import FullOutput
from sluicegate.errors import StructuredOutputError
from sluicegate.processors import Processor, TripWire
from sluicegate.processors.args import ProcessInputArgs
from sluicegate.stream import Chunk, ModelOutput, SyncModelOutput, is_chunk
from sluicegate.stream.usage import Usage
from sluicegate.testing import MockModel


class Ticket(BaseModel):
    title: str
    priority: int


@tool
def lookup_order(order_id: str) -> dict[str, str]:
    """Find an order.

    Args:
        order_id: The order number, like "A-1".
    """
    return {"id": order_id, "status": "shipped"}


class NoShouting(Processor):
    id = "no-shouting"

    def process_input(self, args: ProcessInputArgs) -> Any:
        if any(m.text.isupper() for m in args.messages):
            args.abort("please do not shout")
        return args.messages


async def main() -> None:
    plain = Agent("support", model=MockModel([]), tools=[lookup_order], input_processors=[NoShouting()])
    result = await plain.generate("Where is A-1?", max_steps=3, request_context=RequestContext())
    assert_type(result.text, str)
    print(result.object)

    typed = Agent("triage", model=MockModel([]), structured_output=Ticket, output_retries=2)
    ticket = await typed.generate("The app crashes", model_settings={"temperature": 0})
    assert_type(ticket, FullOutput[Ticket])
    assert_type(ticket.object, Ticket)
    print(ticket.object.priority + 1)

    other = await plain.generate("x", structured_output=Ticket, tool_choice="auto")
    assert_type(other.object, Ticket)

    output = await typed.stream("x", abort_signal=asyncio.Event(), processor_timeout=2.0, max_retries=1)
    assert_type(output, ModelOutput[Ticket])
    async for chunk in output.full_stream:
        assert_type(chunk, Chunk[Any])
        if is_chunk(chunk, "text-delta"):
            assert_type(chunk.payload.text, str)
        elif is_chunk(chunk, "tool-call"):
            assert_type(chunk.payload.tool_name, str)
        elif is_chunk(chunk, "tool-error"):
            assert_type(chunk.payload.error, BaseException)
        elif is_chunk(chunk, "finish"):
            assert_type(chunk.payload.output.usage, Usage)
        elif is_chunk(chunk, "tripwire"):
            assert_type(chunk.payload.reason, str)
    assert_type(await output.object, Ticket)

    blocking = typed.generate_sync("x", memory={"thread": "t1", "resource": "u1"})
    assert_type(blocking.object, Ticket)
    streamed = typed.stream_sync("x")
    assert_type(streamed, SyncModelOutput[Ticket])
    for text in streamed.text_stream:
        assert_type(text, str)

    assert_type(lookup_order("A-1"), dict[str, str])
    for call in result.tool_calls:
        assert_type(call.payload.tool_call_id, str)
    for step in result.steps:
        for done in step.tool_results:
            assert_type(done.payload.is_error, bool)
        for failed in step.tool_errors:
            assert_type(failed.payload.error, BaseException)
    try:
        await typed.generate("x")
    except StructuredOutputError as error:
        assert_type(error.text, str)
    except TripWire:
        pass


if __name__ == "__main__":
    asyncio.run(main())
