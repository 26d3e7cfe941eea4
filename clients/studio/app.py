"""The app Mastra's Studio is tried against: a guarded agent (PII redacted, a forbidden word
blocked) and an agent with memory, both on the offline `EchoModel`.

    sluicegate dev clients/studio/app.py      # then: npx mastra studio (in clients/studio)
"""

from __future__ import annotations

import os

from sluicegate import Agent, Sluicegate
from sluicegate.memory import Memory
from sluicegate.processors import PIIDetector, RegexFilter
from sluicegate.storage import SQLiteStore
from sluicegate.testing.echo_model import EchoModel

storage = SQLiteStore(os.environ.get("SLUICEGATE_STUDIO_DB", "studio.db"))
pii = PIIDetector(strategy="redact", redaction_method="placeholder", detection_types=["email", "phone"])
forbidden = RegexFilter(rules=[{"name": "forbidden", "pattern": r"(?i)\bforbidden\b"}], strategy="block")

guarded = Agent(
    name="guarded",
    description="Redacts emails and phone numbers; refuses the word 'forbidden'.",
    instructions="You repeat the user.",
    model=EchoModel(deltas=4),
    input_processors=[pii, forbidden],
)
remembering = Agent(
    name="remembering",
    description="Remembers the conversation of each thread.",
    instructions="You repeat the user.",
    model=EchoModel(deltas=4),
    memory=Memory(storage=storage),
)

registry = Sluicegate(
    agents={"guarded": guarded, "remembering": remembering}, processors=[pii, forbidden], storage=storage
)
