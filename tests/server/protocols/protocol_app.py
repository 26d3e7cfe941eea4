"""The app the Responses API and A2A tests serve (offline): the echo agent of
`tests/server/example_app.py` (tools, one needing approval; the `block-word` tripwire; memory),
with an output guardrail that redacts e-mail addresses from the stream, and a slow agent whose
model records how its stream ended (for the disconnect tests).

The echo model splits a short answer into single characters, so an address it repeats reaches
the guardrail split across many chunks."""

from __future__ import annotations

import re
from typing import Any

from tests.server.example_app import BlockWord, ToolEcho, add, ask, wipe
from tests.server.test_cancellation import SlowModel

from sluicegate import Agent, Sluicegate
from sluicegate.memory import Memory
from sluicegate.processors import RegexFilter
from sluicegate.storage import SQLiteStore
from sluicegate.testing.echo_model import EchoModel

EMAIL = "alice.secret@example.com"
MODEL_PIECES = ToolEcho(deltas=64).pieces(EMAIL)
"""The echo model's text deltas for `EMAIL`: one character each."""
RAW = re.compile(r"alice\.secret|example\.com")
"""Any piece of the address that must never leave the server."""


class JSONEcho(EchoModel):
    """Repeats the user's text as it is (in two pieces): a JSON answer stays JSON."""

    def pieces(self, text: str) -> list[str]:
        return [text[: len(text) // 2], text[len(text) // 2 :]]


def build(*, identity: Any = None, storage: Any = None) -> tuple[Sluicegate, SlowModel]:
    """A registry with agents "echo" (guarded, memory) and "slow"; the slow agent's model."""
    storage = storage or SQLiteStore(":memory:")
    redact = RegexFilter(
        rules=[{"name": "email", "pattern": r"[\w.+-]+@[\w-]+\.[\w.]+"}], strategy="redact", phase="output"
    )
    echo = Agent(
        name="echo",
        description="Echoes what you say.",
        instructions="You repeat the user.",
        model=ToolEcho(deltas=64),
        tools=[add, wipe, ask],
        input_processors=[BlockWord()],
        output_processors=[redact],
        memory=Memory(storage=storage),
    )
    slow_model = SlowModel(deltas=200, delay=0.01)
    slow = Agent(name="slow", model=slow_model)
    plain = Agent(name="json", model=JSONEcho())
    agents = {"echo": echo, "slow": slow, "json": plain}
    registry = Sluicegate(agents=agents, storage=storage, resolve_identity=identity)
    return registry, slow_model


def user_header(request: Any) -> Any:
    """An identity hook for the tests: the `x-user` header names the resource."""
    from sluicegate.server import Identity

    user = request.headers.get("x-user")
    return Identity(resource_id=user) if user else None
