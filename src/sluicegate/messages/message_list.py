"""`MessageList`: the live conversation of one run.

It remembers where each message came from (`memory`, `input`, `response`, `context`), keeps
system messages apart, and hands out views (`all`, `input`, `response`, `remembered`) in three
formats: stored (`db`), UI (`ui`) and the V2 prompt (`model`). Processors mutate it in place;
the agent persists what is in it when the run ends.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from sluicegate.errors import InvalidMessageError
from sluicegate.messages.convert import PromptMessage, to_prompt_messages, to_ui_messages
from sluicegate.messages.message import Message

Source = Literal["input", "response", "memory", "context", "system"]
SOURCES: frozenset[str] = frozenset(("input", "response", "memory", "context", "system"))
SystemMessage = dict[str, Any]


class MessageView:
    """One filtered view of a `MessageList`, readable in each of the three formats."""

    __slots__ = ("_list", "_sources", "_with_system")

    def __init__(self, message_list: MessageList, sources: frozenset[str] | None, with_system: bool) -> None:
        self._list = message_list
        self._sources = sources
        self._with_system = with_system

    def db(self) -> list[Message]:
        return self._list._select(self._sources)

    def ui(self) -> list[dict[str, Any]]:
        return to_ui_messages(self.db())

    def model(self) -> list[PromptMessage]:
        messages = to_prompt_messages(self.db())
        if self._with_system:
            return [*self._list.get_system_messages(), *messages]
        return messages

    # Mastra spells the V2 prompt view `prompt()` / `core()` too.
    prompt = model
    core = model


class _Views:
    __slots__ = ("all", "context", "input", "remembered", "response")

    def __init__(self, message_list: MessageList) -> None:
        self.all = MessageView(message_list, None, with_system=True)
        self.input = MessageView(message_list, frozenset(("input",)), with_system=False)
        self.response = MessageView(message_list, frozenset(("response",)), with_system=False)
        self.remembered = MessageView(message_list, frozenset(("memory",)), with_system=False)
        self.context = MessageView(message_list, frozenset(("context",)), with_system=False)


class MessageList:
    """The messages of one run, with their sources, plus the system messages."""

    def __init__(
        self, messages: Any = None, *, thread_id: str | None = None, resource_id: str | None = None
    ) -> None:
        self._messages: list[Message] = []
        self._sources: dict[str, str] = {}
        self._system: list[tuple[SystemMessage, str | None]] = []
        self.thread_id = thread_id
        self.resource_id = resource_id
        self.get = _Views(self)
        if messages is not None:
            self.add(messages, "input")

    # ------------------------------------------------------------------ reading

    def _select(self, sources: frozenset[str] | None) -> list[Message]:
        if sources is None:
            return list(self._messages)
        return [m for m in self._messages if self._sources.get(m.id) in sources]

    def source_of(self, message: Message | str) -> str | None:
        return self._sources.get(message if isinstance(message, str) else message.id)

    def get_by_id(self, message_id: str) -> Message | None:
        for message in self._messages:
            if message.id == message_id:
                return message
        return None

    def get_system_messages(self, tag: str | None = None) -> list[SystemMessage]:
        """The system messages, as `{"role": "system", "content": str}` dicts."""
        return [dict(m) for m, t in self._system if tag is None or t == tag]

    def to_prompt(self) -> list[PromptMessage]:
        """The V2 prompt for the model: system messages first, then the conversation."""
        return [*self.get_system_messages(), *to_prompt_messages(self._messages)]

    def __len__(self) -> int:
        return len(self._messages)

    def __iter__(self) -> Any:
        return iter(list(self._messages))

    # ------------------------------------------------------------------ changing

    def add(self, messages: Any, source: Source = "input") -> list[Message]:
        """Add messages in any input shape. A message whose id is present replaces it;
        a tool-result message is folded into the assistant call it answers."""
        if source not in SOURCES:
            raise InvalidMessageError(f"message source must be one of {sorted(SOURCES)}, got {source!r}")
        added: list[Message] = []
        for message in Message.coerce_many(messages):
            if message.role == "system":
                self.add_system(message.text, tag=None if source in ("input", "system") else source)
                continue
            if message.role == "tool" and self._fold_tool_results(message):
                continue
            if self.thread_id and message.thread_id is None:
                message.thread_id = self.thread_id
            if self.resource_id and message.resource_id is None:
                message.resource_id = self.resource_id
            if message.id in self._sources:
                self._messages = [message if m.id == message.id else m for m in self._messages]
            else:
                self._messages.append(message)
                self._sources[message.id] = source
            added.append(message)
        return added

    def _fold_tool_results(self, message: Message) -> bool:
        pending = {
            p["toolInvocation"]["toolCallId"]: p["toolInvocation"]
            for p in message.content.parts
            if p.get("type") == "tool-invocation"
        }
        if not pending:
            return False
        for existing in reversed(self._messages):
            if existing.role != "assistant":
                continue
            for part in existing.content.parts:
                if part.get("type") == "tool-invocation":
                    inv = part["toolInvocation"]
                    if inv["toolCallId"] in pending:
                        answer = pending.pop(inv["toolCallId"])
                        inv["state"] = "result"
                        inv["result"] = answer.get("result")
            if not pending:
                return True
        return False

    def remove_by_ids(self, ids: Iterable[str]) -> list[Message]:
        doomed = set(ids)
        removed = [m for m in self._messages if m.id in doomed]
        self._messages = [m for m in self._messages if m.id not in doomed]
        for message in removed:
            self._sources.pop(message.id, None)
        return removed

    def clear(self) -> None:
        self._messages.clear()
        self._sources.clear()

    def reconcile(
        self,
        messages: Iterable[Any],
        default_source: Source = "input",
        scope: Iterable[Message] | None = None,
    ) -> None:
        """Make the messages in `scope` (all by default) equal `messages`: the ones missing are
        removed, new ones added with `default_source`, and the returned order kept."""
        wanted = list({m.id: m for m in Message.coerce_many(list(messages))}.values())
        scoped = list(self._messages if scope is None else scope)
        scoped_ids = {m.id for m in scoped}
        wanted_ids = {m.id for m in wanted}
        kept = [m for m in self._messages if m.id not in scoped_ids]
        for message in scoped:
            if message.id not in wanted_ids:
                self._sources.pop(message.id, None)
        # Keep the scoped block where it stood: after messages that preceded it.
        position = next((i for i, m in enumerate(self._messages) if m.id in scoped_ids), len(self._messages))
        before = [m for m in self._messages[:position] if m.id not in scoped_ids]
        after = [m for m in kept if m not in before]
        for message in wanted:
            if message.id not in self._sources:
                self._sources[message.id] = default_source
        self._messages = [*before, *wanted, *after]

    def add_system(self, message: str | SystemMessage | Message, tag: str | None = None) -> None:
        """Add a system message (a string, a `{"role": "system", "content": str}` dict or a Message)."""
        content: Any
        if isinstance(message, Message):
            content = message.text
        elif isinstance(message, dict):
            if message.get("role", "system") != "system":
                raise InvalidMessageError("add_system takes a system message")
            content = message.get("content")
        else:
            content = message
        if not isinstance(content, str):
            raise InvalidMessageError(f"a system message's content must be a string, got {content!r}")
        entry = {"role": "system", "content": content}
        if any(existing == entry and t == tag for existing, t in self._system):
            return
        self._system.append((entry, tag))

    def replace_system_messages(self, messages: Iterable[str | SystemMessage | Message]) -> None:
        self._system = []
        for message in messages:
            self.add_system(message)

    def clear_system_messages(self, tag: str | None = None) -> None:
        self._system = [(m, t) for m, t in self._system if tag is not None and t != tag]

    def system_snapshot(self) -> list[tuple[SystemMessage, str | None]]:
        return [(dict(m), t) for m, t in self._system]

    def restore_system(self, snapshot: list[tuple[SystemMessage, str | None]]) -> None:
        self._system = [(dict(m), t) for m, t in snapshot]

    # ------------------------------------------------------------------ JSON

    def to_dict(self) -> dict[str, Any]:
        return {
            "messages": [{**m.to_dict(), "source": self._sources.get(m.id)} for m in self._messages],
            "system": [{**m, "tag": t} for m, t in self._system],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MessageList:
        message_list = cls()
        for entry in data.get("messages", []):
            message_list.add(Message.from_dict(entry), entry.get("source") or "input")
        for entry in data.get("system", []):
            message_list.add_system({"role": "system", "content": entry["content"]}, tag=entry.get("tag"))
        return message_list
