"""Messages: the stored `Message` shape and the run's live `MessageList`."""

from sluicegate.messages.convert import to_prompt_messages, to_ui_messages
from sluicegate.messages.message import Message, MessageContent, Role
from sluicegate.messages.message_list import MessageList, MessageView, Source
from sluicegate.messages.part import Part

__all__ = [
    "Message",
    "MessageContent",
    "MessageList",
    "MessageView",
    "Part",
    "Role",
    "Source",
    "to_prompt_messages",
    "to_ui_messages",
]
