"""A run's chunks as the AI SDK's UI message stream parts (`x-vercel-ai-ui-message-stream: v1`).

Each part is one server-sent event, `data: <part JSON>`, and the stream ends with
`data: [DONE]`, as the AI SDK's `createUIMessageStreamResponse` writes it. The parts follow
`@mastra/ai-sdk`'s mapping of Mastra's chunks: `start`, `start-step` / `finish-step`, text and
reasoning `*-start` / `*-delta` / `*-end`, `tool-input-start` / `-delta` / `-available`,
`tool-output-available` / `-error`, `data-*`, `finish`, `error`. Where sluicegate goes further:

- a tripwire is a `data-tripwire` part (`reason`, `processorId`, `metadata`, `retry`), then
  `finish` (`finishReason: "other"`), so a front end shows why the answer stopped;
- a tool call waiting for approval is the AI SDK's own `tool-approval-request` (ai v6 and later;
  its `approvalId` is `<runId>::<toolCallId>`), plus Mastra's `data-tool-call-approval` part,
  which is all an ai v5 client gets (v5 has no approval parts and refuses unknown ones);
- a stream that ends without the run's `finish` (a run waiting for a person) still gets one.

The parts are built from the chunks the client would get on `/stream`, after the output
processors: a redaction or a held-back value is the same here. One encoder serves one response.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any, Literal

from sluicegate.errors import public_error
from sluicegate.stream.payload import to_json

Version = Literal["v5", "v6"]
"""`v5`: ai 5.x (no approval parts); `v6`: ai 6.x and later (the current major included)."""

APPROVAL_ID_SEPARATOR = "::"
"""Between the run id and the tool call id in a `tool-approval-request`'s `approvalId`."""

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
_FINISH_REASONS = frozenset(("stop", "length", "content-filter", "tool-calls", "error", "other"))


def _sse(part: dict[str, Any]) -> bytes:
    return b"data: " + _dumps(part).encode() + b"\n\n"


def approval_id(run_id: str, tool_call_id: str) -> str:
    return f"{run_id}{APPROVAL_ID_SEPARATOR}{tool_call_id}"


class UIMessageStream:
    """`StreamEncoder` for the UI message stream (see the module docstring).

    `message_id`: the assistant message the parts continue (the request's trailing assistant
    message after an approval), else the run's own response message id; `error_details`: a
    provider's own error text may go out (the agent's `provider_error_details`)."""

    def __init__(
        self,
        version: Version,
        *,
        message_id: str | None = None,
        error_details: bool = False,
        declined: str | None = None,
    ) -> None:
        self._version = version
        self._message_id = message_id
        self._declined = declined
        self._details = error_details
        self._started = False
        self._finished = False
        self._waiting = False
        self._parts: dict[str, Callable[[Any], bytes]] = {
            "start": self._start,
            "step-start": lambda c: b'data: {"type":"start-step"}\n\n',
            "step-finish": lambda c: b'data: {"type":"finish-step"}\n\n',
            "text-start": lambda c: _sse({"type": "text-start", "id": c.payload.id}),
            "text-delta": lambda c: _sse({"type": "text-delta", "id": c.payload.id, "delta": c.payload.text}),
            "text-end": lambda c: _sse({"type": "text-end", "id": c.payload.id}),
            "reasoning-start": lambda c: _sse({"type": "reasoning-start", "id": c.payload.id}),
            "reasoning-delta": lambda c: _sse(
                {"type": "reasoning-delta", "id": c.payload.id, "delta": c.payload.text}
            ),
            "reasoning-end": lambda c: _sse({"type": "reasoning-end", "id": c.payload.id}),
            "tool-call-input-streaming-start": self._tool_input_start,
            "tool-call-delta": lambda c: _sse(
                {
                    "type": "tool-input-delta",
                    "toolCallId": c.payload.tool_call_id,
                    "inputTextDelta": c.payload.args_text_delta,
                }
            ),
            "tool-call": self._tool_call,
            "tool-result": self._tool_result,
            "tool-error": self._tool_error,
            "tool-call-approval": self._approval,
            "tool-call-suspended": self._suspended,
            "source": self._source,
            "file": self._file,
            "tripwire": self._tripwire,
            "finish": self._finish,
            "error": self._error_chunk,
            "abort": self._abort,
        }

    # ------------------------------------------------------------------ StreamEncoder

    def chunk(self, chunk: Any) -> bytes:
        part = self._parts.get(chunk.type)
        if part is None:
            if not chunk.type.startswith("data-"):
                return b""  # Mastra's own kinds the protocol has no part for (raw, warning, ...)
            part = self._data
        if self._started:
            return part(chunk)
        if chunk.type == "start":
            return self._start(chunk)
        return self._start(None) + part(chunk)

    def error(self, message: str, name: str) -> bytes:
        self._finished = True  # an error ends the message: no finish after it
        return self._start_once() + _sse({"type": "error", "errorText": message})

    def end(self) -> bytes:
        if self._finished:
            return b""
        self._finished = True
        reason = "tool-calls" if self._waiting else "other"
        return self._start_once() + _sse({"type": "finish", "finishReason": reason})

    # ------------------------------------------------------------------ parts

    def _start_once(self) -> bytes:
        return b"" if self._started else self._start(None)

    def _start(self, chunk: Any) -> bytes:
        if self._started:
            return b""
        self._started = True
        part: dict[str, Any] = {"type": "start"}
        message_id = self._message_id
        if message_id is None and chunk is not None:
            message_id = chunk.payload.get("message_id")
        if isinstance(message_id, str) and message_id:
            part["messageId"] = message_id
        return _sse(part) + self._denied()

    def _denied(self) -> bytes:
        """The declined call's outcome, first in the stream that continues after it: the run
        itself has no chunk for a call that never ran. ai v5 has no `tool-output-denied`."""
        call = self._declined
        if call is None:
            return b""
        if self._version == "v5":
            return _sse({"type": "tool-output-error", "toolCallId": call, "errorText": "declined"})
        return _sse({"type": "tool-output-denied", "toolCallId": call})

    def _tool_input_start(self, chunk: Any) -> bytes:
        payload = chunk.payload
        return _sse(
            {"type": "tool-input-start", "toolCallId": payload.tool_call_id, "toolName": payload.tool_name}
        )

    def _tool_call(self, chunk: Any) -> bytes:
        payload = chunk.payload
        return _sse(
            {
                "type": "tool-input-available",
                "toolCallId": payload.tool_call_id,
                "toolName": payload.tool_name,
                "input": to_json(payload.get("args")),
            }
        )

    def _tool_result(self, chunk: Any) -> bytes:
        payload = chunk.payload
        return _sse(
            {
                "type": "tool-output-available",
                "toolCallId": payload.tool_call_id,
                "output": to_json(payload.get("result")),
            }
        )

    def _tool_error(self, chunk: Any) -> bytes:
        payload = chunk.payload
        return _sse(
            {
                "type": "tool-output-error",
                "toolCallId": payload.tool_call_id,
                "errorText": self._error_text(payload.get("error")),
            }
        )

    def _approval(self, chunk: Any) -> bytes:
        """ai v6+: the AI SDK's own approval request, then Mastra's data part (all v5 gets)."""
        self._waiting = True
        payload = chunk.payload
        run_id = str(chunk.run_id)
        data = {
            "state": "data-tool-call-approval",
            "runId": run_id,
            "toolCallId": payload.tool_call_id,
            "toolName": payload.tool_name,
            "args": to_json(payload.get("args")),
        }
        mastra = _sse({"type": "data-tool-call-approval", "id": payload.tool_call_id, "data": data})
        if self._version == "v5":
            return mastra
        request = {
            "type": "tool-approval-request",
            "approvalId": approval_id(run_id, payload.tool_call_id),
            "toolCallId": payload.tool_call_id,
        }
        return _sse(request) + mastra

    def _suspended(self, chunk: Any) -> bytes:
        self._waiting = True
        payload = chunk.payload
        data = {
            "state": "data-tool-call-suspended",
            "runId": str(chunk.run_id),
            "toolCallId": payload.tool_call_id,
            "toolName": payload.tool_name,
            "suspendPayload": to_json(payload.get("suspend_payload")),
        }
        return _sse({"type": "data-tool-call-suspended", "id": payload.tool_call_id, "data": data})

    def _source(self, chunk: Any) -> bytes:
        payload = chunk.payload
        if payload.get("source_type", "url") == "url":
            part = {"type": "source-url", "sourceId": payload.get("id", ""), "url": payload.get("url", "")}
            if payload.get("title") is not None:
                part["title"] = payload.get("title")
            return _sse(part)
        return _sse(
            {
                "type": "source-document",
                "sourceId": payload.get("id", ""),
                "mediaType": payload.get("media_type")
                or payload.get("mime_type")
                or "application/octet-stream",
                "title": payload.get("title") or "",
            }
        )

    def _file(self, chunk: Any) -> bytes:
        payload = chunk.payload
        media_type = payload.get("media_type") or payload.get("mime_type") or "application/octet-stream"
        data = payload.get("data")
        if isinstance(data, bytes | bytearray):
            data = base64.b64encode(data).decode()
        url = (
            data
            if isinstance(data, str) and data.startswith(("data:", "http:", "https:"))
            else f"data:{media_type};base64,{data}"
        )
        return _sse({"type": "file", "mediaType": media_type, "url": url})

    def _data(self, chunk: Any) -> bytes:
        part: dict[str, Any] = {"type": chunk.type, "data": to_json(chunk.data)}
        if chunk.is_transient:
            part["transient"] = True
        return _sse(part)

    def _tripwire(self, chunk: Any) -> bytes:
        """The processor that stopped the run, and why; then the message ends."""
        payload = chunk.payload
        self._finished = True
        data = {
            "reason": payload.get("reason"),
            "processorId": payload.get("processor_id"),
            "metadata": to_json(payload.get("metadata")),
            "retry": bool(payload.get("retry")),
        }
        return _sse({"type": "data-tripwire", "data": data}) + _sse(
            {"type": "finish", "finishReason": "other"}
        )

    def _finish(self, chunk: Any) -> bytes:
        if self._finished:
            return b""
        self._finished = True
        step = chunk.payload.get("step_result")
        reason = step.get("reason") if step is not None and hasattr(step, "get") else None
        if self._waiting:
            reason = "tool-calls"
        return _sse({"type": "finish", "finishReason": reason if reason in _FINISH_REASONS else "other"})

    def _error_chunk(self, chunk: Any) -> bytes:
        self._finished = True
        return _sse({"type": "error", "errorText": self._error_text(chunk.payload.get("error"))})

    def _abort(self, chunk: Any) -> bytes:
        self._finished = True
        return b'data: {"type":"abort"}\n\n'

    def _error_text(self, error: Any) -> str:
        """An error's public summary: a provider's own text only with `error_details`."""
        if isinstance(error, BaseException):
            public = public_error(error, details=self._details)
            detail = public.get("detail")  # a provider's own text, with `error_details` only
            return f"{public['message']}: {detail}" if detail else str(public["message"])
        if isinstance(error, dict):  # read back from a run log that serialized it
            if self._details or not {"statusCode", "responseBody", "url"} & error.keys():
                return str(error.get("message") or "the run failed")
            status = error.get("statusCode")
            return f"the model provider failed (status {status})" if status else "the model provider failed"
        return str(error) if error else "the run failed"
