"""A run's chunks (after the output processors) as AG-UI events, SSE-framed.

Lifecycle events are built as the `ag-ui-protocol` package's pydantic models. Building one costs
tens of microseconds, so the per-token events (`TEXT_MESSAGE_CONTENT`,
`REASONING_MESSAGE_CONTENT`) are written from a template the package made for the message
(its own serialization of the event with a placeholder delta, split around it): the bytes are
the package's, and a token costs one string encode.

Which chunk becomes what (`@ag-ui/mastra`'s mapping, plus what it leaves out):

- `text-*` / `reasoning-*`: `TEXT_MESSAGE_*` / `REASONING_*`, the message id the step's (the id
  memory stores the answer under, so a client sending its history back repeats no message);
- `tool-call`: `TOOL_CALL_START` / `ARGS` (the whole arguments, as processed) / `END`;
  `tool-result`, `tool-error`, `tool-output-denied`: `TOOL_CALL_RESULT`;
- `tool-call-approval` and a server tool's `tool-call-suspended`: an interrupt of the
  `RUN_FINISHED` outcome; a frontend tool's `tool-call-suspended`: a pending tool call of the
  success outcome, for the client to run;
- `data-state`: `STATE_SNAPSHOT`; `data-state-delta`: `STATE_DELTA` (a JSON Patch); any other
  `data-*`: `CUSTOM` named after it;
- `tripwire`: `RUN_ERROR` with code `tripwire:<processor id>`; `error`: `RUN_ERROR` with the
  error's public summary; `abort`: `RUN_FINISHED` with the cancelled outcome. Each ends the run.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from types import ModuleType
from typing import Any

from sluicegate.errors import public_error
from sluicegate.server.serialize import schema_json

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode
_HOLE = "\x00sluicegate-delta\x00"
_PROVIDER_FIELDS = frozenset(("statusCode", "isRetryable", "responseBody", "url"))
TRIPWIRE_CODE = "tripwire:"
"""A tripwire's `RUN_ERROR.code` is this and the id of the processor that tripped."""
APPROVAL_RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
}
"""What a resume entry answering an approval interrupt carries as its payload."""
FRONTEND_SUSPEND = "sluicegate:frontend-tool"
"""The suspend payload of a frontend tool's call (the client runs it)."""


def interrupt_id(run_id: str, tool_call_id: str) -> str:
    """An interrupt names the suspended run and its call: `<run id>:<tool call id>`."""
    return f"{run_id}:{tool_call_id}"


def frame(event: Any) -> bytes:
    """One event as a server-sent event, by the package's own serialization."""
    text: str = event.model_dump_json(by_alias=True)
    return b"data: " + text.encode() + b"\n\n"


def _template(event: Any) -> tuple[bytes, bytes]:
    """The bytes around the placeholder delta of `event`, as the package serializes it."""
    whole = frame(event)
    prefix, _, suffix = whole.partition(_dumps(_HOLE).encode())
    return prefix, suffix


class EventStream:
    """Turns one AG-UI run's chunks into SSE bytes (`chunk(c)`; `b""` for a chunk with no
    event). After `ended` nothing more may be sent: `finished()` closes a run that did not end.

    `frontend`: the client's tool names (their suspensions are the client's to run);
    `tools`: the agent's, whose `resume_schema` an interrupt for a suspended tool names."""

    def __init__(
        self,
        core: ModuleType,
        *,
        thread_id: str,
        run_id: str,
        error_details: bool = False,
        frontend: frozenset[str] = frozenset(),
        tools: dict[str, Any] | None = None,
    ) -> None:
        self.core = core
        self.thread_id = thread_id
        self.run_id = run_id
        self.ended = False
        self._details = error_details
        self._frontend = frontend
        self._tools = tools or {}
        self._step_message: str | None = None
        self._used: set[str] = set()
        self._text: dict[str, tuple[str, bytes, bytes]] = {}
        self._reasoning: dict[str, tuple[str, bytes, bytes]] = {}
        self.interrupts: list[Any] = []
        self.pending: list[str] = []
        self._handlers: dict[str, Callable[[Any], bytes]] = {
            "text-delta": self._text_delta,
            "text-start": self._text_start,
            "text-end": self._text_end,
            "reasoning-delta": self._reasoning_delta,
            "reasoning-start": self._reasoning_start,
            "reasoning-end": self._reasoning_end,
            "step-start": self._step_start,
            "tool-call": self._tool_call,
            "tool-result": self._tool_result,
            "tool-error": self._tool_error,
            "tool-output-denied": self._tool_denied,
            "tool-call-approval": self._approval,
            "tool-call-suspended": self._suspended,
            "tripwire": self._tripwire,
            "error": self._error,
            "abort": self._abort,
        }

    # ------------------------------------------------------------------ the run's edges

    def started(self) -> bytes:
        return frame(self.core.RunStartedEvent(thread_id=self.thread_id, run_id=self.run_id))

    def chunk(self, chunk: Any) -> bytes:
        handler = self._handlers.get(chunk.type)
        if handler is not None:
            return handler(chunk)
        if chunk.type.startswith("data-"):
            return self._data(chunk)
        return b""

    def finished(self) -> bytes:
        """`RUN_FINISHED` (after closing what is open): the interrupts when the run waits on a
        person, else success with the frontend tool calls left to the client."""
        if self.ended:
            return b""
        core = self.core
        out = self._close_messages()
        if self.interrupts:
            outcome: Any = core.RunFinishedInterruptOutcome(interrupts=self.interrupts)
        else:
            outcome = core.RunFinishedSuccessOutcome(pending_tool_call_ids=self.pending or None)
        self.ended = True
        return out + frame(
            core.RunFinishedEvent(thread_id=self.thread_id, run_id=self.run_id, outcome=outcome)
        )

    def failed(self, message: str, code: str | None = None, metadata: dict[str, Any] | None = None) -> bytes:
        if self.ended:
            return b""
        self.ended = True
        return frame(self.core.RunErrorEvent(message=message, code=code, metadata=metadata))

    def failure(self, exc: BaseException) -> bytes:
        """`RUN_ERROR` for an exception the run raised: its public summary."""
        public = public_error(exc, details=self._details)
        return self.failed(str(public.get("message", "the run failed")), str(public.get("name", "Error")))

    def next_run(self) -> None:
        """A resumed run follows in the same response: what the last one waited on is answered."""
        self.interrupts = []

    # ------------------------------------------------------------------ messages

    def _message_id(self) -> str:
        """The step's message id for its first message, fresh ids after it."""
        step = self._step_message
        if step is not None and step not in self._used:
            self._used.add(step)
            return step
        return str(uuid.uuid4())

    def _step_start(self, chunk: Any) -> bytes:
        message_id = chunk.payload.get("message_id")
        self._step_message = message_id if isinstance(message_id, str) and message_id else None
        return b""

    def _text_start(self, chunk: Any) -> bytes:
        key = chunk.payload.get("id") or ""
        if key in self._text:
            return b""
        return self._open_text(key)

    def _open_text(self, key: str) -> bytes:
        core = self.core
        message_id = self._message_id()
        template = _template(core.TextMessageContentEvent(message_id=message_id, delta=_HOLE))
        self._text[key] = (message_id, *template)
        return frame(core.TextMessageStartEvent(message_id=message_id, role="assistant"))

    def _text_delta(self, chunk: Any) -> bytes:
        payload = chunk.payload
        open_ = self._text.get(payload.id)
        if open_ is None:  # a delta without its start (a processor's own text): open one
            opened = self._open_text(payload.id)
            _, prefix, suffix = self._text[payload.id]
            return opened + prefix + _dumps(payload.text).encode() + suffix
        return open_[1] + _dumps(payload.text).encode() + open_[2]

    def _text_end(self, chunk: Any) -> bytes:
        open_ = self._text.pop(chunk.payload.get("id") or "", None)
        if open_ is None:
            return b""
        return frame(self.core.TextMessageEndEvent(message_id=open_[0]))

    def _reasoning_start(self, chunk: Any) -> bytes:
        key = chunk.payload.get("id") or ""
        if key in self._reasoning:
            return b""
        return self._open_reasoning(key)

    def _open_reasoning(self, key: str) -> bytes:
        core = self.core
        message_id = str(uuid.uuid4())
        template = _template(core.ReasoningMessageContentEvent(message_id=message_id, delta=_HOLE))
        self._reasoning[key] = (message_id, *template)
        return frame(core.ReasoningStartEvent(message_id=message_id)) + frame(
            core.ReasoningMessageStartEvent(message_id=message_id, role="reasoning")
        )

    def _reasoning_delta(self, chunk: Any) -> bytes:
        payload = chunk.payload
        open_ = self._reasoning.get(payload.id)
        if open_ is None:
            opened = self._open_reasoning(payload.id)
            _, prefix, suffix = self._reasoning[payload.id]
            return opened + prefix + _dumps(payload.text).encode() + suffix
        return open_[1] + _dumps(payload.text).encode() + open_[2]

    def _reasoning_end(self, chunk: Any) -> bytes:
        open_ = self._reasoning.pop(chunk.payload.get("id") or "", None)
        if open_ is None:
            return b""
        return self._end_reasoning(open_[0])

    def _end_reasoning(self, message_id: str) -> bytes:
        core = self.core
        return frame(core.ReasoningMessageEndEvent(message_id=message_id)) + frame(
            core.ReasoningEndEvent(message_id=message_id)
        )

    def _close_messages(self) -> bytes:
        """End the text and reasoning messages still open (a tool call or the run's end)."""
        out = b"".join(frame(self.core.TextMessageEndEvent(message_id=m[0])) for m in self._text.values())
        out += b"".join(self._end_reasoning(m[0]) for m in self._reasoning.values())
        self._text.clear()
        self._reasoning.clear()
        return out

    # ------------------------------------------------------------------ tools

    def _tool_call(self, chunk: Any) -> bytes:
        core = self.core
        payload = chunk.payload
        call_id = str(payload.get("tool_call_id"))
        parent = self._step_message
        if parent is not None:
            self._used.add(parent)
        return (
            self._close_messages()
            + frame(
                core.ToolCallStartEvent(
                    tool_call_id=call_id,
                    tool_call_name=str(payload.get("tool_name")),
                    parent_message_id=parent,
                )
            )
            + frame(core.ToolCallArgsEvent(tool_call_id=call_id, delta=_dumps(payload.get("args") or {})))
            + frame(core.ToolCallEndEvent(tool_call_id=call_id))
        )

    def _result(self, call_id: Any, content: Any) -> bytes:
        text = content if isinstance(content, str) else _dumps(content)
        event = self.core.ToolCallResultEvent(
            message_id=str(uuid.uuid4()), tool_call_id=str(call_id), content=text, role="tool"
        )
        return frame(event)

    def _tool_result(self, chunk: Any) -> bytes:
        return self._result(chunk.payload.get("tool_call_id"), chunk.payload.get("result"))

    def _tool_error(self, chunk: Any) -> bytes:
        error = chunk.payload.get("error")
        if isinstance(error, BaseException):
            error = public_error(error, details=self._details)
        message = error.get("message") if isinstance(error, dict) else error
        return self._result(chunk.payload.get("tool_call_id"), {"error": message})

    def _tool_denied(self, chunk: Any) -> bytes:
        return self._result(chunk.payload.get("tool_call_id"), {"declined": chunk.payload.get("reason")})

    def _approval(self, chunk: Any) -> bytes:
        payload = chunk.payload
        name = payload.get("tool_name")
        self.interrupts.append(
            self.core.Interrupt(
                id=interrupt_id(chunk.run_id, str(payload.get("tool_call_id"))),
                reason="tool_approval",
                message=f"Approve the call of tool {name!r}?",
                tool_call_id=payload.get("tool_call_id"),
                response_schema=APPROVAL_RESPONSE_SCHEMA,
                metadata={"toolName": name, "args": payload.get("args")},
            )
        )
        return b""

    def _suspended(self, chunk: Any) -> bytes:
        payload = chunk.payload
        name = payload.get("tool_name")
        call_id = str(payload.get("tool_call_id"))
        if name in self._frontend and payload.get("suspend_payload") == FRONTEND_SUSPEND:
            self.pending.append(call_id)
            return b""
        schema = schema_json(getattr(self._tools.get(name), "resume_schema", None))
        self.interrupts.append(
            self.core.Interrupt(
                id=interrupt_id(chunk.run_id, call_id),
                reason="tool_suspended",
                message=f"Tool {name!r} waits for an answer.",
                tool_call_id=call_id,
                response_schema=schema,
                metadata={
                    "toolName": name,
                    "args": payload.get("args"),
                    "suspendPayload": payload.get("suspend_payload"),
                },
            )
        )
        return b""

    # ------------------------------------------------------------------ ends and data

    def _tripwire(self, chunk: Any) -> bytes:
        payload = chunk.payload
        processor = payload.get("processor_id") or "unknown"
        metadata = {"processorId": processor, "retry": bool(payload.get("retry"))}
        if payload.get("metadata") is not None:
            metadata["metadata"] = payload.get("metadata")
        reason = payload.get("reason") or f"blocked by processor {processor!r}"
        return self._close_messages() + self.failed(str(reason), TRIPWIRE_CODE + str(processor), metadata)

    def _error(self, chunk: Any) -> bytes:
        error = chunk.payload.get("error")
        if isinstance(error, BaseException):
            return self._close_messages() + self.failure(error)
        if isinstance(error, dict):  # read back from a run log that serialized it (Redis)
            name = str(error.get("name", "Error"))
            if not self._details and _PROVIDER_FIELDS & error.keys():  # not the provider's own text
                status = error.get("statusCode")
                said = f" (HTTP {status})" if isinstance(status, int) else ""
                return self._close_messages() + self.failed(f"the model provider failed{said}", name)
            return self._close_messages() + self.failed(str(error.get("message")), name)
        return self._close_messages() + self.failed(str(error), "Error")

    def _abort(self, chunk: Any) -> bytes:
        core = self.core
        out = self._close_messages()
        self.ended = True
        event = core.RunFinishedEvent(
            thread_id=self.thread_id, run_id=self.run_id, outcome=core.RunFinishedCancelledOutcome()
        )
        return out + frame(event)

    def _data(self, chunk: Any) -> bytes:
        core = self.core
        data = chunk.data
        if chunk.type == "data-state" and isinstance(data, dict):
            return frame(core.StateSnapshotEvent(snapshot=data))
        if chunk.type == "data-state-delta" and isinstance(data, list):
            return frame(core.StateDeltaEvent(delta=data))
        return frame(core.CustomEvent(name=chunk.type, value=data))
