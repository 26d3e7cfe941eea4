"""A run's chunks (after the output processors) as A2A 0.3 task events.

Text streams as `artifact-update` events of one artifact per run (each delta appended), and
the run's end is one final `status-update`: `completed`; `input-required` when a tool call
waits for approval (the status message names the call, as text and a data part); `rejected`
when a processor tripped (the message gives the reason, its metadata the processor);
`canceled` when `tasks/cancel` stopped it; `failed` with the error's public summary.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

from sluicegate.errors import public_error
from sluicegate.server.protocols.a2a.tasks import TaskRecord
from sluicegate.server.streaming import sse

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


def agent_message(task: TaskRecord, text: str, data: dict[str, Any] | None = None) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [{"kind": "text", "text": text}]
    if data is not None:
        parts.append({"kind": "data", "data": data})
    return {
        "kind": "message",
        "messageId": str(uuid.uuid4()),
        "role": "agent",
        "parts": parts,
        "taskId": task.id,
        "contextId": task.context_id,
    }


class TaskEvents:
    """Turns one run of `task` into A2A events (`events(chunks)`), updating the task as it goes."""

    def __init__(self, task: TaskRecord, *, error_details: bool = False) -> None:
        self.task = task
        self._details = error_details
        task.turns += 1
        self._artifact_id = f"{task.id}:response:{task.turns}"
        self._text: list[str] = []
        self._ending: tuple[str, dict[str, Any] | None] = ("completed", None)

    def status_event(self, final: bool) -> dict[str, Any]:
        task = self.task
        return {
            "kind": "status-update",
            "taskId": task.id,
            "contextId": task.context_id,
            "status": task.status(),
            "final": final,
        }

    async def frames(self, chunks: AsyncIterator[Any], request_id: Any) -> AsyncIterator[bytes]:
        """The run's events as SSE frames of JSON-RPC answers to `request_id`; closing this
        generator closes `chunks` (which cancels the run). A text delta's frame is a prefix,
        the text's JSON and a suffix: no dictionary per chunk."""
        task = self.task
        texts = self._text
        head = (
            b'data: {"jsonrpc":"2.0","id":%s,"result":{"kind":"artifact-update","taskId":"%s",'
            b'"contextId":%s,"lastChunk":false,"artifact":{"artifactId":"%s","name":"response.txt",'
            b'"parts":[{"kind":"text","text":'
            % (
                _dumps(request_id).encode(),
                task.id.encode(),
                _dumps(task.context_id).encode(),
                self._artifact_id.encode(),
            )
        )
        try:
            async for chunk in chunks:
                kind = chunk.type
                if kind == "text-delta":
                    text = chunk.payload.get("text") or ""
                    if not text:
                        continue
                    texts.append(text)
                    tail = b'}]},"append":true}}\n\n' if len(texts) > 1 else b'}]},"append":false}}\n\n'
                    yield head + _dumps(text).encode() + tail
                elif kind in _ENDINGS:
                    _ENDINGS[kind](self, chunk)
        except Exception as exc:  # the run failed outside its own error handling
            self._failed(public_error(exc, details=self._details)["message"])
        except BaseException:  # the client went away: the run was cancelled with its request
            self._ending = ("canceled", agent_message(task, "The run was canceled with its request."))
            self.settle()
            raise
        finally:
            closer = getattr(chunks, "aclose", None)
            if closer is not None:
                await closer()
        self.settle()
        yield sse({"jsonrpc": "2.0", "id": request_id, "result": self.status_event(final=True)})

    def settle(self) -> None:
        """The task's state and artifact once the run has ended."""
        task = self.task
        if texts := "".join(self._text):
            task.artifacts.append(
                {
                    "artifactId": self._artifact_id,
                    "name": "response.txt",
                    "parts": [{"kind": "text", "text": texts}],
                }
            )
        if task.abort is not None and task.abort.is_set():
            self._ending = ("canceled", agent_message(task, "The task was canceled."))
        task.abort = None
        state, message = self._ending
        if state == "completed" and texts:
            message = agent_message(task, texts)
        task.set_state(state, message)

    def _approval(self, chunk: Any) -> None:
        payload = chunk.payload
        call = {"toolCallId": payload.get("tool_call_id"), "toolName": payload.get("tool_name")}
        call["args"] = payload.get("args")
        self.task.run_id = chunk.run_id
        self.task.pending = str(call["toolCallId"])
        text = (
            f"The tool call {call['toolName']}({_dumps(call['args'])}) waits for approval: "
            'answer "approve" or "decline" (or a data part {"approved": true|false, "reason": "..."}).'
        )
        self._ending = ("input-required", agent_message(self.task, text, {"approval": call}))

    def _suspended(self, chunk: Any) -> None:
        self.task.run_id = chunk.run_id
        self._ending = (
            "failed",
            agent_message(self.task, "A tool suspended the run for resume data, which A2A cannot send."),
        )

    def _tripwire(self, chunk: Any) -> None:
        payload = chunk.payload
        tripwire = {
            "reason": payload.get("reason"),
            "processorId": payload.get("processor_id"),
            "metadata": payload.get("metadata"),
        }
        message = agent_message(self.task, str(payload.get("reason") or "blocked by a processor"))
        message["metadata"] = {"tripwire": tripwire}
        self.task.metadata["tripwire"] = tripwire
        self._ending = ("rejected", message)

    def _error(self, chunk: Any) -> None:
        error = chunk.payload.get("error")
        if isinstance(error, BaseException):
            self._failed(public_error(error, details=self._details)["message"])
        else:
            self._failed(str(error.get("message") if isinstance(error, dict) else error))

    def _failed(self, message: str) -> None:
        self._ending = ("failed", agent_message(self.task, message))

    def _abort(self, chunk: Any) -> None:
        self._ending = ("canceled", agent_message(self.task, "The task was canceled."))


_ENDINGS = {
    "tool-call-approval": TaskEvents._approval,
    "tool-call-suspended": TaskEvents._suspended,
    "tripwire": TaskEvents._tripwire,
    "error": TaskEvents._error,
    "abort": TaskEvents._abort,
}
