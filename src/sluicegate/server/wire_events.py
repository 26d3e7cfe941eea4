"""Chunks as the events Mastra's server sends: what `@mastra/client-js` and the AI SDK adapters
read from `start`, `step-start`, `step-finish` and `finish`.

A chunk's own JSON (`Chunk.to_dict()`) is the in-process shape; the server adds what Mastra's
wire carries beside it: the agent and message ids on `start`, and on `step-finish` / `finish`
the run's text, tool calls, steps (with their model messages), the model's metadata and the
response. Those are built from the run's results (`ModelOutput.snapshot()`) when such an event
goes out: once per step and once per run. Every other chunk pays one dictionary lookup.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

from sluicegate.agent.results import FullOutput
from sluicegate.errors import public_error
from sluicegate.server.serialize import model_parts, schema_json
from sluicegate.server.wire_steps import (
    APPROVAL_RESUME_SCHEMA,
    model_messages,
    model_of,
    now_ms,
    prompt_echo,
    response_metadata,
    stream_output,
)
from sluicegate.stream.payload import to_json

Fix = Callable[[Any, dict[str, Any]], None]


class WireEvents:
    """Turns one run's chunks into Mastra's wire events (`event(chunk)`).

    `agent_id` names the agent in `start`; `output` is the run's `ModelOutput` (anything with a
    `snapshot()` returning its `FullOutput` so far; without one, `step-finish` and `finish`
    carry only what their chunks hold); `model` is the agent's (provider, model id), for a step
    whose model did not say; `error_details`: a provider's own error text may go out; `tools`:
    the agent's, whose `resume_schema` a `tool-call-suspended` event names."""

    def __init__(
        self,
        agent_id: str,
        output: Any,
        model: tuple[str, str],
        *,
        error_details: bool = False,
        tools: dict[str, Any] | None = None,
    ) -> None:
        self.agent_id = agent_id
        self._tools = tools or {}
        self.message_id = str(uuid.uuid4())
        self._snapshot: Callable[[], FullOutput[Any]] | None = getattr(output, "snapshot", None)
        self._model = model
        self._details = error_details
        self._fixes: dict[str, Fix] = {
            "start": self._start,
            "step-start": self._step_start,
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

    # ---- lifecycle events

    def _start(self, chunk: Any, event: dict[str, Any]) -> None:
        event["payload"] = {"id": self.agent_id, "messageId": self.message_id, **event["payload"]}

    def _step_start(self, chunk: Any, event: dict[str, Any]) -> None:
        payload = event["payload"]
        payload.setdefault("messageId", self.message_id)
        payload.setdefault("request", {})
        payload.setdefault("warnings", [])
        payload.setdefault("startedAt", now_ms())

    def _text_end(self, chunk: Any, event: dict[str, Any]) -> None:
        event["payload"]["type"] = "text-end"

    def _step_finish(self, chunk: Any, event: dict[str, Any]) -> None:
        self._finished(event, with_response=False)

    def _finish(self, chunk: Any, event: dict[str, Any]) -> None:
        self._finished(event, with_response=True)

    def _finished(self, event: dict[str, Any], *, with_response: bool) -> None:
        """`messageId`, `metadata`, `output.{text, toolCalls, steps}` and, on `finish`,
        `response.{id, timestamp, model…, messages}` from the run's results so far."""
        payload = event["payload"]
        payload["messageId"] = self.message_id
        payload["processorRetryCount"] = 0
        step_result = payload.setdefault("stepResult", {})
        step_result.setdefault("isContinued", False)
        if not step_result.get("warnings"):  # sluicegate's own (the max_steps warning) when there is one
            step_result.pop("warnings", None)
        if not with_response:
            step_result["messageId"] = self.message_id
        if self._snapshot is None:
            return
        result = self._snapshot()
        last = result.steps[-1] if result.steps else None
        model = model_of(last, self._model)
        meta = response_metadata(last, model)
        payload["metadata"] = {**meta, "modelMetadata": _model_metadata(meta)}
        output = stream_output(result, self._model)
        chunk_usage = payload.get("output", {}).get("usage")
        if chunk_usage is not None and not with_response:  # a step's own usage, with its raw report
            output["usage"] = {**chunk_usage, "raw": chunk_usage}
        payload["output"] = output
        payload["messages"] = prompt_echo(result)
        if with_response and result.object is not None:
            payload["output"]["object"] = to_json(result.object)
        if with_response:
            response = payload.setdefault("response", {})
            response.update(meta)
            response["modelMetadata"] = _model_metadata(meta)
            response["messages"] = model_messages(result.response.messages)

    # ---- other events

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
        error = chunk.payload.get("error")
        if isinstance(error, BaseException):
            event["payload"]["error"] = public_error(error, details=self._details)


def _model_metadata(meta: dict[str, Any]) -> dict[str, Any]:
    return {
        "modelId": meta["modelId"],
        "modelVersion": meta["modelVersion"],
        "modelProvider": meta["modelProvider"],
    }


def events_for(agent_id: str, agent: Any, output: Any) -> Callable[[Any], dict[str, Any]]:
    """The `events` of `ChunkStreamResponse` for one run of `agent` (its `output`)."""
    return WireEvents(
        agent_id, output, model_parts(agent), error_details=agent.provider_error_details, tools=agent.tools
    ).event
