"""The agent `benchmarks/server.py` serves: a mock model answering with 50 text deltas, no
processors (the HTTP and streaming path is what is measured)."""

from __future__ import annotations

from sluicegate import Agent, Sluicegate
from sluicegate.testing.echo_model import EchoModel

bench = Agent(name="bench", instructions="Echo.", model=EchoModel(deltas=50))
app = Sluicegate(agents=[bench])
