"""The body of `POST /api/v1/responses`, in Mastra's shape of OpenAI's Responses API, and its
`input` read into the messages an agent run takes.

`input` is a string or a list of items: messages (`{"role", "content"}`, the content a string
or `input_text` / `output_text` parts) and `mcp_approval_response` items that answer the
previous response's `mcp_approval_request`s. Anything else is refused with a 400 naming the
item: a guardrail cannot check what the server does not read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sluicegate.server.errors import bad_request
from sluicegate.server.plain_json import check_plain_json

_ROLES = {"user": "user", "assistant": "assistant", "system": "system", "developer": "system"}
_TEXT_PARTS = frozenset(("input_text", "output_text", "text"))


class TextFormat(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: Literal["text", "json_object", "json_schema"]
    name: str | None = Field(default=None, max_length=64)
    json_schema: dict[str, Any] | None = Field(default=None, alias="schema")
    strict: bool | None = None


class TextOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: TextFormat | None = None
    verbosity: str | None = None


class ResponsesBody(BaseModel):
    """`agent_id` picks the agent (or the stored `previous_response_id`'s agent); `model` is
    echoed back and never replaces the agent's model."""

    model_config = ConfigDict(extra="forbid")

    agent_id: str | None = Field(default=None, min_length=1, max_length=256)
    model: str | None = Field(default=None, max_length=256)
    input: str | list[dict[str, Any]]
    instructions: str | None = None
    stream: bool = False
    store: bool = False
    previous_response_id: str | None = Field(default=None, min_length=1, max_length=256)
    conversation_id: str | None = Field(default=None, min_length=1, max_length=256)
    conversation: str | dict[str, Any] | None = None
    text: TextOptions | None = None
    metadata: dict[str, str] | None = Field(default=None, max_length=16)
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    max_output_tokens: int | None = Field(default=None, ge=1)
    requestContext: dict[str, Any] | None = None

    @model_validator(mode="before")
    @classmethod
    def _plain_json(cls, data: Any) -> Any:
        return check_plain_json(data)

    def conversation_ref(self) -> str | None:
        """`conversation_id`, or OpenAI's `conversation` (an id or `{"id"}`)."""
        conversation = self.conversation
        named = conversation.get("id") if isinstance(conversation, dict) else conversation
        if named is not None and not isinstance(named, str):
            raise bad_request("conversation.id", "must be a string")
        if named is not None and self.conversation_id is not None and named != self.conversation_id:
            raise bad_request("conversation", "names another conversation than conversation_id")
        return self.conversation_id or named

    def model_settings(self) -> dict[str, Any] | None:
        settings = {
            key: value
            for key, value in (
                ("temperature", self.temperature),
                ("top_p", self.top_p),
                ("max_output_tokens", self.max_output_tokens),
            )
            if value is not None
        }
        return settings or None

    def output_schema(self) -> dict[str, Any] | None:
        """The JSON schema `text.format` asks the answer to follow, if any."""
        text_format = self.text.format if self.text is not None else None
        if text_format is None or text_format.type == "text":
            return None
        if text_format.type == "json_object":
            return {"type": "object"}
        if not text_format.json_schema:
            raise bad_request("text.format.schema", "a json_schema format needs its schema")
        return text_format.json_schema


@dataclass(frozen=True)
class ApprovalAnswer:
    """An `mcp_approval_response` item: approve or decline the call `approval_request_id` names."""

    tool_call_id: str
    approve: bool
    reason: str | None


def _text_of(content: Any, where: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise bad_request(where, "must be a string or a list of text parts")
    texts: list[str] = []
    for index, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else type(part).__name__
        if not isinstance(kind, str) or kind not in _TEXT_PARTS:
            raise bad_request(f"{where}.{index}", f"{kind!r} parts are not supported; send input_text")
        text = part.get("text")
        if not isinstance(text, str):
            raise bad_request(f"{where}.{index}.text", "must be a string")
        texts.append(text)
    return "".join(texts)


def read_input(value: str | list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[ApprovalAnswer]]:
    """The messages (model shape) and the approval answers `input` holds."""
    if isinstance(value, str):
        if not value:
            raise bad_request("input", "must not be empty")
        return [{"role": "user", "content": value}], []
    if not value:
        raise bad_request("input", "at least one item is required")
    messages: list[dict[str, Any]] = []
    answers: list[ApprovalAnswer] = []
    for index, item in enumerate(value):
        where = f"input.{index}"
        kind = item.get("type", "message")
        if not isinstance(kind, str):
            raise bad_request(f"{where}.type", "must be a string")
        if kind == "mcp_approval_response":
            request_id, approve = item.get("approval_request_id"), item.get("approve")
            if not isinstance(request_id, str) or not isinstance(approve, bool):
                raise bad_request(where, "an mcp_approval_response needs approval_request_id and approve")
            reason = item.get("reason")
            answers.append(ApprovalAnswer(request_id, approve, reason if isinstance(reason, str) else None))
            continue
        if kind != "message":
            raise bad_request(f"{where}.type", f"{kind!r} items are not supported by this server")
        named = item.get("role")
        role = _ROLES.get(named) if isinstance(named, str) else None
        if role is None:
            raise bad_request(f"{where}.role", "must be user, assistant, system or developer")
        messages.append({"role": role, "content": _text_of(item.get("content"), f"{where}.content")})
    return messages, answers
