"""Names `sluicegate.processors` and `sluicegate.models` import on first use keep their types
for a type checker: a wrong argument is an error, not `Any` passing through."""

from __future__ import annotations

from sluicegate.models import OpenAICompatible
from sluicegate.processors import ProcessorStepSchema, TokenLimiter

limiter = TokenLimiter(limit="many")
model = OpenAICompatible(42, base_url="http://127.0.0.1:8080/v1")
step = ProcessorStepSchema(phase="process_input")
phase: int = step.phase
