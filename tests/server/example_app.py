"""The app the server tests (and the Node client test) serve: two agents, a guardrail that
trips, a tool and SQLite memory — all offline."""

from __future__ import annotations

import os

from sluicegate import Agent, Sluicegate, tool
from sluicegate.memory import Memory
from sluicegate.processors import Processor, UnicodeNormalizer
from sluicegate.processors.args import ProcessInputArgs
from sluicegate.storage import SQLiteStore
from sluicegate.testing.echo_model import EchoModel


class BlockWord(Processor):
    """Blocks any input that contains the word "forbidden"."""

    id = "block-word"
    name = "Block word"

    def process_input(self, args: ProcessInputArgs) -> None:
        for message in args.messages:
            if "forbidden" in message.text.lower():
                args.abort("The word 'forbidden' is not allowed", metadata={"word": "forbidden"})


@tool
async def add(a: int, b: int) -> dict[str, int]:
    """Add two integers."""
    return {"sum": a + b}


storage = SQLiteStore(os.environ.get("SLUICEGATE_TEST_DB", ":memory:"))
memory = Memory(storage=storage)
delay = float(os.environ.get("ECHO_DELAY", "0"))

echo = Agent(
    name="echo",
    description="Echoes what you say.",
    instructions="You repeat the user.",
    model=EchoModel(deltas=5, delay=delay),
    tools=[add],
    input_processors=[UnicodeNormalizer(), BlockWord()],
    memory=memory,
)
plain = Agent(name="plain", instructions="No processors.", model=EchoModel(deltas=3))

registry = Sluicegate(agents={"echo": echo, "plain": plain}, processors=[BlockWord()], storage=storage)
