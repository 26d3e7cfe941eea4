"""Where the ids a run makes come from (message ids, tool call ids, run ids).

By default a random `uuid.uuid4()`. Code that must make the same ids again when it is replayed
(a durable run's workflow, see `sluicegate.durable.temporal.workflow`) installs its own source
for the current context with `use_id_source`; everything started from that context (the run's
tasks included) draws from it, and nothing else in the process does.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from contextvars import ContextVar, Token

IdSource = Callable[[], uuid.UUID]

_source: ContextVar[IdSource | None] = ContextVar("sluicegate_id_source", default=None)


def new_uuid() -> uuid.UUID:
    """A new id from the current context's source (`uuid.uuid4` unless one was installed)."""
    source = _source.get()
    return uuid.uuid4() if source is None else source()


def use_id_source(source: IdSource | None) -> Token[IdSource | None]:
    """Make `new_uuid` draw from `source` in the current context; `reset_id_source(token)` undoes it."""
    return _source.set(source)


def reset_id_source(token: Token[IdSource | None]) -> None:
    _source.reset(token)
