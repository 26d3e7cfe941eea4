"""Chunks as the events Mastra's server sends.

A chunk's own JSON (`Chunk.to_dict()`) already carries the run summary Mastra's `step-finish`
and `finish` have (the agent builds it, `agent/run_summary.py`). What the server adds depends
on the chunk alone: `text-end`'s repeated `type`, the model's `raw` usage beside the counts, no
`retry` on a tripwire that asks for none, the `resumeSchema` a question's answer takes, and an
error's public summary. So a replay (`observe`) gets the same events as the stream did. Every
chunk pays one dictionary lookup; the fixes run on lifecycle chunks only.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from sluicegate.server.serialize import schema_json
from sluicegate.server.streaming import publish_error
from sluicegate.server.wire_steps import APPROVAL_RESUME_SCHEMA

Fix = Callable[[Any, dict[str, Any]], None]


class WireEvents:
    """Turns a run's chunks into Mastra's wire events (`event(chunk)`).

    `error_details`: a provider's own error text may go out; `tools`: the agent's, whose
    `resume_schema` a `tool-call-suspended` event names."""

    def __init__(self, *, error_details: bool = False, tools: dict[str, Any] | None = None) -> None:
        self._tools = tools or {}
        self._details = error_details
        self._fixes: dict[str, Fix] = {
            "text-end": self._text_end,
            "step-finish": self._step_finish,
            "finish": self._finish,
            "tripwire": self._tripwire,
            "tool-call-approval": self._approval,
            "tool-call-suspended": self._suspended,
            "error": self._error,
            "tool-error": self._error,
        }

    def event(self, chunk: Any) -> dict[str, Any]:
        event: dict[str, Any] = chunk.to_dict()
        fix = self._fixes.get(chunk.type)
        if fix is not None:
            fix(chunk, event)
        return event

    def _text_end(self, chunk: Any, event: dict[str, Any]) -> None:
        event["payload"]["type"] = "text-end"

    def _step_finish(self, chunk: Any, event: dict[str, Any]) -> None:
        self._finished(event)

    def _finish(self, chunk: Any, event: dict[str, Any]) -> None:
        self._finished(event)
        event["payload"].setdefault("stepResult", {}).setdefault("isContinued", False)

    @staticmethod
    def _finished(event: dict[str, Any]) -> None:
        """The usage's `raw` report (the last step's, as the model gave it); no empty warnings."""
        payload = event["payload"]
        step_result = payload.get("stepResult")
        if isinstance(step_result, dict) and not step_result.get("warnings"):
            step_result.pop("warnings", None)
        output = payload.get("output")
        if not isinstance(output, dict) or not isinstance(output.get("usage"), dict):
            return
        steps = output.get("steps")
        last = (
            steps[-1].get("usage")
            if isinstance(steps, list) and steps and isinstance(steps[-1], dict)
            else None
        )
        usage = output["usage"]
        usage["raw"] = dict(last.get("raw", last)) if isinstance(last, dict) else dict(usage)

    def _tripwire(self, chunk: Any, event: dict[str, Any]) -> None:
        """Mastra leaves `retry` out of a tripwire that asks for none."""
        if event["payload"].get("retry") is False:
            del event["payload"]["retry"]

    def _approval(self, chunk: Any, event: dict[str, Any]) -> None:
        event["payload"].setdefault("resumeSchema", APPROVAL_RESUME_SCHEMA)

    def _suspended(self, chunk: Any, event: dict[str, Any]) -> None:
        """What `resume-stream` takes for this call: its tool's `resume_schema`, as a string."""
        tool = self._tools.get(event["payload"].get("toolName"))
        schema = schema_json(getattr(tool, "resume_schema", None))
        if schema is not None:
            event["payload"].setdefault("resumeSchema", json.dumps(schema, separators=(",", ":")))

    def _error(self, chunk: Any, event: dict[str, Any]) -> None:
        """The client gets an error's public summary (a provider's own text only with
        `error_details`); the in-process chunk keeps the exception, for the application."""
        publish_error(chunk, event, self._details)


def events_for(agent: Any) -> Callable[[Any], dict[str, Any]]:
    """The `events` of `ChunkStreamResponse` for a run (or a replay) of `agent`."""
    return WireEvents(error_details=agent.provider_error_details, tools=agent.tools).event
