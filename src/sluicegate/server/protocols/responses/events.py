"""A run's chunks (after the output processors) as the Responses API's streamed events.

Text is one `message` output item per text block (`response.output_text.delta`), reasoning a
`reasoning` item (`response.reasoning_text.delta`). The agent's own tools run on the server,
so a finished call is an `mcp_call` item (arguments and output or error, server label
`sluicegate`), and a call waiting for a person's approval an `mcp_approval_request` item that
the next request answers with an `mcp_approval_response`. A tripwire ends the response
`incomplete` (`incomplete_details.reason: "content_filter"`) with a `tripwire` field naming the
processor; an error ends it `failed` with the error's public summary.

Every event carries `sequence_number` and goes out as OpenAI sends it (`event: <type>`, then
`data: <JSON>`; no `[DONE]`). A text delta is a prefix, its JSON text and a suffix: no dictionary.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from sluicegate.errors import public_error
from sluicegate.server.streaming import sse

SERVER_LABEL = "sluicegate"
_dumps = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


def frame(event: dict[str, Any]) -> bytes:
    """An event as OpenAI sends it: its type as the SSE `event` name, its JSON as the `data`."""
    kind: str = event["type"]
    return b"event: " + kind.encode() + b"\n" + sse(event)


_ITEM_OF = {"text-delta": "message", "reasoning-delta": "reasoning"}
_START_OF = {"text-delta": "text-start", "reasoning-delta": "reasoning-start"}


def _usage(usage: Any) -> dict[str, Any] | None:
    if not isinstance(usage, dict):
        return None
    inputs, outputs = int(usage.get("inputTokens") or 0), int(usage.get("outputTokens") or 0)
    return {
        "input_tokens": inputs,
        "input_tokens_details": {
            "cached_tokens": int(usage.get("cachedInputTokens") or 0),
            "cache_write_tokens": 0,
        },
        "output_tokens": outputs,
        "output_tokens_details": {"reasoning_tokens": int(usage.get("reasoningTokens") or 0)},
        "total_tokens": int(usage.get("totalTokens") or inputs + outputs),
    }


def _text_part(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": []}


class ResponseEvents:
    """Translates one run's chunks into the events of one response (`events(chunks)`), and
    keeps the response object they build (`response`).

    `base`: the response's fixed fields (id, model, instructions, ...); `on_end(self)` runs
    before the final event (the stored record is written there)."""

    def __init__(
        self,
        base: dict[str, Any],
        *,
        error_details: bool = False,
        on_end: Callable[[ResponseEvents], Awaitable[None]] | None = None,
    ) -> None:
        self.response: dict[str, Any] = {
            "object": "response",
            "created_at": int(time.time()),
            "status": "in_progress",
            "error": None,
            "incomplete_details": None,
            "output": [],
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "temperature": None,
            "top_p": None,
            "usage": None,
            "metadata": {},
            "text": {"format": {"type": "text"}},
            **base,
        }
        self.run_id: str | None = None
        self.pending: list[str] = []
        """Tool call ids waiting for approval."""
        self.tripwire: dict[str, Any] | None = None
        self._details = error_details
        self._on_end = on_end
        self._seq = 0
        self._item: dict[str, Any] | None = None  # the open message or reasoning item
        self._index = -1
        self._texts: list[str] = []
        self._delta_head = b""
        self._calls: dict[str, Any] = {}
        self._handlers: dict[str, Callable[[Any], list[dict[str, Any]]]] = {
            "text-start": self._text_start,
            "text-end": self._close,
            "reasoning-start": self._reasoning_start,
            "reasoning-end": self._close,
            "tool-call": self._tool_call,
            "tool-result": self._tool_result,
            "tool-error": self._tool_error,
            "tool-call-approval": self._approval,
            "tool-call-suspended": self._suspended,
            "tripwire": self._tripwire,
            "finish": self._finish,
            "error": self._error,
            "start": self._start,
        }

    def _event(self, event: dict[str, Any]) -> dict[str, Any]:
        event["sequence_number"] = self._seq
        self._seq += 1
        return event

    def opening(self) -> list[dict[str, Any]]:
        snapshot = dict(self.response, output=[])
        return [
            self._event({"type": "response.created", "response": snapshot}),
            self._event({"type": "response.in_progress", "response": snapshot}),
        ]

    async def frames(self, chunks: AsyncIterator[Any]) -> AsyncIterator[bytes]:
        """The response's events as SSE frames, from `response.created` to the final one;
        closing this generator closes `chunks` (which cancels the run). A delta's frame is its
        item's prefix, the text's JSON and the sequence number: no dictionary per chunk."""
        for event in self.opening():
            yield frame(event)
        handlers = self._handlers
        texts = self._texts
        try:
            async for chunk in chunks:
                kind = chunk.type
                if kind == "text-delta" or kind == "reasoning-delta":
                    item = self._item
                    if item is None or item["type"] != _ITEM_OF[kind]:  # a delta without its start
                        for event in self._handlers[_START_OF[kind]](chunk):
                            yield frame(event)
                        texts = self._texts
                    text = chunk.payload.get("text") or ""
                    texts.append(text)
                    seq = self._seq
                    self._seq = seq + 1
                    yield b'%s%s,"sequence_number":%d}\n\n' % (self._delta_head, _dumps(text).encode(), seq)
                    continue
                handler = handlers.get(kind)
                if handler is not None:
                    for event in handler(chunk):
                        yield frame(event)
                    texts = self._texts
        except Exception as exc:  # the run failed outside its own error handling
            self._fail(public_error(exc, details=self._details))
        finally:
            closer = getattr(chunks, "aclose", None)
            if closer is not None:
                await closer()
        for event in self._close(None):
            yield frame(event)
        for event in await self.finish():
            yield frame(event)

    # ------------------------------------------------------------------ items

    def _open(self, item: dict[str, Any]) -> list[dict[str, Any]]:
        events = self._close(None)
        self._index += 1
        self._item = item
        self._texts = []
        self.response["output"].append(item)
        kind = (
            b"response.output_text.delta" if item["type"] == "message" else b"response.reasoning_text.delta"
        )
        self._delta_head = b'event: %s\ndata: {"type":"%s","item_id":"%s","output_index":%d,' % (
            kind,
            kind,
            item["id"].encode(),
            self._index,
        )
        self._delta_head += b'"content_index":0,"logprobs":[],"delta":'
        events.append(
            self._event(
                {"type": "response.output_item.added", "output_index": self._index, "item": dict(item)}
            )
        )
        return events

    def _text_start(self, chunk: Any) -> list[dict[str, Any]]:
        item = {
            "id": f"msg_{self.response['id'][5:]}_{self._index + 1}",
            "type": "message",
            "role": "assistant",
            "status": "in_progress",
            "content": [],
        }
        events = self._open(item)
        events.append(
            self._event(
                {
                    "type": "response.content_part.added",
                    "item_id": item["id"],
                    "output_index": self._index,
                    "content_index": 0,
                    "part": _text_part(""),
                }
            )
        )
        return events

    def _reasoning_start(self, chunk: Any) -> list[dict[str, Any]]:
        item = {"id": f"rs_{self.response['id'][5:]}_{self._index + 1}", "type": "reasoning", "summary": []}
        return self._open(item)

    def _close(self, chunk: Any) -> list[dict[str, Any]]:
        item = self._item
        if item is None:
            return []
        self._item = None
        text = "".join(self._texts)
        base = {"item_id": item["id"], "output_index": self._index, "content_index": 0}
        if item["type"] == "message":
            item["status"] = "completed"
            item["content"] = [_text_part(text)]
            events = [
                self._event({"type": "response.output_text.done", **base, "text": text, "logprobs": []}),
                self._event({"type": "response.content_part.done", **base, "part": _text_part(text)}),
            ]
        else:
            item["content"] = [{"type": "reasoning_text", "text": text}]
            events = [self._event({"type": "response.reasoning_text.done", **base, "text": text})]
        events.append(
            self._event({"type": "response.output_item.done", "output_index": self._index, "item": item})
        )
        return events

    def _whole(self, item: dict[str, Any], *extra: dict[str, Any]) -> list[dict[str, Any]]:
        """A tool item that arrives complete: added, its own events, done."""
        events = self._open(item)
        self._item = None
        events.extend(self._event(e) for e in extra)
        events.append(
            self._event({"type": "response.output_item.done", "output_index": self._index, "item": item})
        )
        return events

    # ------------------------------------------------------------------ tools

    def _tool_call(self, chunk: Any) -> list[dict[str, Any]]:
        payload = chunk.payload
        self._calls[str(payload.get("tool_call_id"))] = payload
        return []

    def _mcp_call(self, payload: Any) -> dict[str, Any]:
        call = self._calls.pop(str(payload.get("tool_call_id")), payload)
        return {
            "id": f"mcp_{payload.get('tool_call_id')}",
            "type": "mcp_call",
            "name": payload.get("tool_name") or call.get("tool_name"),
            "arguments": _dumps(call.get("args", payload.get("args", {}))),
            "server_label": SERVER_LABEL,
            "output": None,
            "error": None,
            "status": "completed",
        }

    def _tool_result(self, chunk: Any) -> list[dict[str, Any]]:
        item = self._mcp_call(chunk.payload)
        item["output"] = _dumps(chunk.payload.get("result"))
        return self._whole(
            item,
            {"type": "response.mcp_call.completed", "item_id": item["id"], "output_index": self._index + 1},
        )

    def _tool_error(self, chunk: Any) -> list[dict[str, Any]]:
        item = self._mcp_call(chunk.payload)
        error = chunk.payload.get("error")
        item["status"] = "failed"
        item["error"] = (
            public_error(error, details=self._details)["message"]
            if isinstance(error, BaseException)
            else str((error or {}).get("message", error) if isinstance(error, dict) else error)
        )
        return self._whole(
            item, {"type": "response.mcp_call.failed", "item_id": item["id"], "output_index": self._index + 1}
        )

    def _approval(self, chunk: Any) -> list[dict[str, Any]]:
        payload = chunk.payload
        call_id = str(payload.get("tool_call_id"))
        self.run_id = chunk.run_id
        self.pending.append(call_id)
        item = {
            "id": call_id,
            "type": "mcp_approval_request",
            "name": payload.get("tool_name"),
            "arguments": _dumps(payload.get("args", {})),
            "server_label": SERVER_LABEL,
        }
        return self._whole(item)

    def _suspended(self, chunk: Any) -> list[dict[str, Any]]:
        """A tool that suspended itself waits for resume data, which this protocol has no item
        for: the response ends incomplete (the run stays suspended for the HITL routes)."""
        self.run_id = chunk.run_id
        self.response["incomplete_details"] = {"reason": "tool_suspended"}
        return []

    # ------------------------------------------------------------------ endings

    def _start(self, chunk: Any) -> list[dict[str, Any]]:
        self.run_id = chunk.run_id
        return []

    def _tripwire(self, chunk: Any) -> list[dict[str, Any]]:
        payload = chunk.payload
        self.tripwire = {
            "reason": payload.get("reason"),
            "processorId": payload.get("processor_id"),
            "metadata": payload.get("metadata"),
        }
        return []

    def _finish(self, chunk: Any) -> list[dict[str, Any]]:
        payload = chunk.payload.to_dict()
        output = payload.get("output")
        if isinstance(output, dict):
            self.response["usage"] = _usage(output.get("usage"))
        reason = (payload.get("stepResult") or {}).get("reason")
        if reason == "length":
            self.response["incomplete_details"] = {"reason": "max_output_tokens"}
        elif reason == "content-filter":
            self.response["incomplete_details"] = {"reason": "content_filter"}
        return []

    def _error(self, chunk: Any) -> list[dict[str, Any]]:
        error = chunk.payload.get("error")
        if isinstance(error, BaseException):
            self._fail(public_error(error, details=self._details))
        else:
            self._fail({"message": str(error.get("message") if isinstance(error, dict) else error)})
        return []

    def _fail(self, public: dict[str, Any]) -> None:
        self.response["error"] = {"code": "server_error", "message": str(public.get("message"))}

    def settle(self) -> None:
        """The response's final status, from how the run ended."""
        response = self.response
        if response["error"] is not None:
            response["status"] = "failed"
        elif self.tripwire is not None:
            response["status"] = "incomplete"
            response["incomplete_details"] = {"reason": "content_filter"}
            response["tripwire"] = self.tripwire
        elif response["incomplete_details"] is not None:
            response["status"] = "incomplete"
        else:
            response["status"] = "completed"
        response["completed_at"] = int(time.time()) if response["status"] == "completed" else None

    async def finish(self) -> list[dict[str, Any]]:
        self.settle()
        if self._on_end is not None:
            await self._on_end(self)
        status = self.response["status"]
        kind = {"failed": "response.failed", "incomplete": "response.incomplete"}.get(
            status, "response.completed"
        )
        return [self._event({"type": kind, "response": self.response})]

    def timeout_frame(self, message: str) -> bytes:
        """The request timeout as the Responses API's `error` event (the run was cancelled)."""
        return self.error_frame(message, "TimeoutError")

    def error_frame(self, message: str, name: str) -> bytes:
        """A failure outside the run's own events (the request timeout: code `timeout`) as the
        Responses API's `error` event."""
        return frame(
            {
                "type": "error",
                "code": "timeout" if name == "TimeoutError" else name,
                "message": message,
                "param": None,
                "sequence_number": self._seq,
            }
        )

    @property
    def output_text(self) -> str:
        return "".join(
            part.get("text", "")
            for item in self.response["output"]
            if item.get("type") == "message"
            for part in item.get("content", [])
        )
