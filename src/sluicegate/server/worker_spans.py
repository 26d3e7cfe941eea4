"""`sluicegate worker` keeps its runs' spans in the app's storage, as a server with the studio does.

A durable run's spans are made in the worker processes (workflow code and activities), so the
studio of a `serve --temporal` server never sees them in its own process. When the app's
storage keeps spans (`SQLiteStore`, `PostgresStore`) and `SLUICEGATE_PERSIST_TRACES` is not
`0`, `sluicegate worker` writes them there with the studio's `RecentSpans` (same capacity and
age bounds: `SLUICEGATE_TRACE_CAPACITY`, `SLUICEGATE_TRACE_MAX_AGE`), and every server
instance's studio reads them back. The background writer runs on the worker's event loop (not
a workflow's: spans ending in workflow code are handed over to it); what is left is written
when the worker stops.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import TYPE_CHECKING

from sluicegate.server.settings import ServerSettings
from sluicegate.server.traces import RecentSpans, install_recent_spans
from sluicegate.storage.span_store import SpanStore
from sluicegate.tracing import state as tracing_state

if TYPE_CHECKING:
    from sluicegate.registry import Sluicegate

log = logging.getLogger("sluicegate.durable")


@asynccontextmanager
async def kept_spans(
    app: Sluicegate, settings: ServerSettings | None = None
) -> AsyncIterator[RecentSpans | None]:
    """While inside, the process's runs' spans are written to `app`'s storage (None: the
    storage keeps no spans, or persisting is off). Enter it on the loop the worker runs on."""
    settings = settings or ServerSettings.from_env()
    store = app.storage_for(None) if settings.persist_traces else None
    if not isinstance(store, SpanStore):
        yield None
        return
    if settings.capture_content:
        tracing_state.STATE.capture_content = True
        tracing_state.STATE.capture_changes = True
    spans = install_recent_spans(
        settings.trace_capacity,
        app_key=uuid.uuid4().hex,
        store=store,
        max_age=timedelta(seconds=settings.trace_max_age),
    )
    try:
        await spans.sync()  # starts the writer on this loop before any run's span ends
    except Exception:
        log.exception("could not reach the storage for the runs' spans; the writer retries")
    try:
        yield spans
    finally:
        await spans.aclose()  # the spans not yet written
