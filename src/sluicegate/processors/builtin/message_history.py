"""`MessageHistory`: load a thread's recent messages before a run and store the run's new ones
after it succeeded."""

from __future__ import annotations

from typing import Any

from sluicegate.memory.context import memory_context
from sluicegate.memory.history import add_remembered, without_incomplete_tool_calls
from sluicegate.memory.ownership import check_message_ids, readable_context, writable_context
from sluicegate.messages.message import Message
from sluicegate.processors.args import ProcessInputArgs, ProcessOutputResultArgs
from sluicegate.processors.base import Processor
from sluicegate.storage.base import MemoryStore


class MessageHistory(Processor):
    """Conversation history for the request's thread (`THREAD_ID_KEY` in the request context).

    The thread must belong to the request's resource (`RESOURCE_ID_KEY`), as with `Memory`: a
    thread of another resource raises `ThreadAccessError`, and an input message whose id is
    stored in another thread raises `MessageOwnershipError`, both before the model is called.

    On input it adds the newest `last_messages` stored messages (all when None) with source
    `memory`, skipping ids already present and any system message. On output — in
    `process_output_result`, so a failed or aborted run stores nothing — it saves the run's input
    and response messages, without system messages or tool calls that never got a result, and
    bumps the thread's `updated_at`. `read_only=True` (or `readOnly` in the memory config of the
    request) loads without saving.

    ```python
    store = SQLiteStore("memory.db")
    history = MessageHistory(storage=store, last_messages=20)
    agent = Agent(name="a", model=model, input_processors=[history], output_processors=[history])
    await agent.generate("Hi", request_context=RequestContext({THREAD_ID_KEY: "t1", RESOURCE_ID_KEY: "u1"}))
    ```
    """

    id = "message-history"
    loads_context = True
    name = "MessageHistory"

    def __init__(
        self, *, storage: MemoryStore, last_messages: int | None = None, read_only: bool = False
    ) -> None:
        super().__init__()
        if last_messages is not None and last_messages < 0:
            raise ValueError("last_messages must be >= 0 or None (all)")
        self.storage = storage
        self.last_messages = last_messages
        self.read_only = read_only

    async def process_input(self, args: ProcessInputArgs) -> Any:
        where = await readable_context(self.storage, args.request_context, args.state)
        thread_id = where.thread_id
        if not thread_id:
            return args.message_list
        # Before any model call: an input id stored in another thread is refused, not moved.
        await check_message_ids(self.storage, args.message_list.get.input.db(), where)
        if self.last_messages == 0:
            return args.message_list
        stored = await self.storage.list_messages(thread_id, last=self.last_messages)
        add_remembered(
            args.message_list, without_incomplete_tool_calls(m for m in stored if m.role != "system")
        )
        return args.message_list

    async def process_output_result(self, args: ProcessOutputResultArgs) -> Any:
        context = memory_context(args.request_context)
        if not context.thread_id or self.read_only or context.read_only:
            return args.message_list
        context = await writable_context(self.storage, args.request_context, args.state)
        thread_id = context.thread_id
        if not thread_id:
            return args.message_list
        fresh = [*args.message_list.get.input.db(), *args.message_list.get.response.db()]
        to_save = [
            _stamped(m, thread_id, context.resource_id)
            for m in without_incomplete_tool_calls(fresh)
            if m.role != "system"
        ]
        if not to_save:
            return args.message_list
        await self.storage.save_messages(to_save)
        await self.storage.update_thread(thread_id)
        return args.message_list


def _stamped(message: Message, thread_id: str, resource_id: str | None) -> Message:
    """The message as stored: in this thread, for this resource (the live message is left alone)."""
    if message.thread_id == thread_id and (resource_id is None or message.resource_id == resource_id):
        return message
    copy = message.copy()
    copy.thread_id = thread_id
    copy.resource_id = resource_id if resource_id is not None else message.resource_id
    copy.created_at = message.created_at
    return copy
