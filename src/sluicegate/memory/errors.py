"""Errors memory raises to callers."""

from __future__ import annotations

from sluicegate.errors import AccessDeniedError, ConfigurationError


class ThreadAccessError(AccessDeniedError):
    """A request named a thread that belongs to another resource; its messages stay private."""

    def __init__(self, thread_id: str, resource_id: str) -> None:
        super().__init__(
            f"thread {thread_id!r} belongs to another resource than {resource_id!r}; "
            "a thread can only be used by the resource that created it"
        )
        self.thread_id = thread_id
        self.resource_id = resource_id

    def __str__(self) -> str:
        return str(self.args[0])


class MemoryConfigurationError(ConfigurationError):
    """Memory options that cannot work together (or a missing thread/resource id)."""


class MemoryOptionError(MemoryConfigurationError):
    """One per-call memory option is malformed, or asks for more than the memory was configured
    with; `option` names it as the caller spelled it (`semanticRecall.topK`)."""

    def __init__(self, option: str, message: str) -> None:
        super().__init__(f"memory option {option}: {message}")
        self.option = option
        self.reason = message
