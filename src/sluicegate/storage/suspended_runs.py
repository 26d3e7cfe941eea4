"""Suspended runs: what a run that stopped for a human (a tool approval, a tool's `suspend()`)
leaves in storage, so that another process, after a restart if need be, can resume it.

The contract every backend keeps (`SuspendedRunStore`; `InMemorySuspendedRunStore` here, and
`SQLiteStore` / `PostgresStore` through `sqlite_suspended` / `postgres_suspended`):

- A run is saved as version 1. It is listed and can be claimed until it expires (`expires_at`,
  set by the run layer from `suspended_run_ttl`) or is claimed.
- `claim_suspended_run` takes it for resuming, atomically: of any number of concurrent claimers
  on any number of store instances, exactly one gets the run; the others get
  `SuspendedRunNotFoundError`. A claim names the tool call it decides; an unknown, stale or
  already decided id raises `ToolCallNotPendingError` and changes nothing.
- The claimer then either ends the run (`finish_suspended_run`: the row is deleted), suspends it
  again (`save_suspended_run` with `version + 1`: the new snapshot replaces the claimed row and
  is claimable again), or gives the claim back untouched (`release_suspended_run`) when it failed
  before anything ran.
- A claimed run whose resuming process died stays claimed: it is never handed out again, because
  running an approved tool twice is worse than losing the run. It is no longer listed, `get`
  still shows it (with `claimed_at`), and `purge_expired_suspended_runs` deletes it once it
  expires. (Durable execution, which can tell "crashed before the tool ran" from "after", is
  the place to do better.)
- The pending calls' `args` are stored with the snapshot and nothing but the claimer's next
  version can change them: an approval cannot edit what runs.
- The owner (`agent_id`, `resource_id`, `thread_id`) is fixed for the run's life; a claim may
  name the resource it acts for, and then only that resource's run can be claimed.
- Every refusal is a typed `SuspendedRunError` naming the run and leaves the stored run as it
  was. Payloads must be JSON that reads back equal (no NaN, no non-string keys, no tuples) and,
  encoded, at most `max_snapshot_bytes` (8 MiB by default).

`now` arguments exist for tests and for callers with their own clock; they default to the
current UTC time of the calling process (not the database's).
"""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Literal, Protocol, runtime_checkable

from sluicegate.storage.errors import (
    AmbiguousToolCallError,
    InvalidSuspendedRunError,
    SnapshotTooLargeError,
    SuspendedRunConflictError,
    SuspendedRunNotFoundError,
    ToolCallNotPendingError,
)
from sluicegate.storage.types import utc_now

__all__ = [
    "DEFAULT_MAX_SNAPSHOT_BYTES",
    "DEFAULT_SUSPENDED_RUN_TTL",
    "EncodedRun",
    "InMemorySuspendedRunStore",
    "PendingToolCall",
    "SuspendedRun",
    "SuspendedRunStore",
    "ToolCallKind",
    "decode_pending",
    "encode_run",
    "resolve_tool_call",
]

DEFAULT_SUSPENDED_RUN_TTL = timedelta(days=7)
"""How long a suspended run waits by default (`suspended_run_ttl`): `expires_at - suspended_at`."""

DEFAULT_MAX_SNAPSHOT_BYTES = 8 * 1024 * 1024
"""The default limit on a run's stored JSON (snapshot plus pending calls), in UTF-8 bytes."""

MAX_ID_LENGTH = 1024

ToolCallKind = Literal["approval", "suspend"]
_KINDS = ("approval", "suspend")


@dataclass(frozen=True, slots=True)
class PendingToolCall:
    """One tool call the run waits on: an approval, or a tool that called `suspend()`.

    `args` are the arguments the call runs with once decided; `suspend_payload` is what the
    tool passed to `suspend()` (None for approvals)."""

    tool_call_id: str
    tool_name: str
    args: Any
    kind: ToolCallKind = "approval"
    suspend_payload: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "toolCallId": self.tool_call_id,
            "toolName": self.tool_name,
            "args": self.args,
            "kind": self.kind,
            "suspendPayload": self.suspend_payload,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> PendingToolCall:
        return cls(
            tool_call_id=data["toolCallId"],
            tool_name=data["toolName"],
            args=data.get("args"),
            kind=data.get("kind", "approval"),
            suspend_payload=data.get("suspendPayload"),
        )


@dataclass(frozen=True, slots=True)
class SuspendedRun:
    """A run stopped before a tool call, as stored.

    `snapshot` is opaque JSON made by the run layer (messages, step state, options): the store
    keeps it byte-for-byte equal in value and never looks inside. `pending` is what the run
    waits on, in the order the run asked (`tool_calls` is the same, as API.md lists it).
    `version` starts at 1 and grows by one each time the resumed run suspends again.
    `claimed_at` is set on a run taken for resuming (and ignored by `save`)."""

    run_id: str
    agent_id: str
    resource_id: str | None
    thread_id: str | None
    pending: tuple[PendingToolCall, ...]
    snapshot: dict[str, Any]
    suspended_at: datetime
    expires_at: datetime
    version: int = 1
    claimed_at: datetime | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not isinstance(self.pending, tuple):
            object.__setattr__(self, "pending", tuple(self.pending))
        _validate(self)

    @property
    def tool_calls(self) -> tuple[PendingToolCall, ...]:
        return self.pending

    def resuspended(
        self,
        *,
        pending: Sequence[PendingToolCall],
        snapshot: dict[str, Any],
        suspended_at: datetime,
        expires_at: datetime,
    ) -> SuspendedRun:
        """The next version of this run, for a resumed run that suspends again (same owner)."""
        return dataclasses.replace(
            self,
            pending=tuple(pending),
            snapshot=snapshot,
            suspended_at=suspended_at,
            expires_at=expires_at,
            version=self.version + 1,
            claimed_at=None,
        )


def _validate(run: SuspendedRun) -> None:
    run_id = run.run_id
    if not isinstance(run_id, str) or not run_id or len(run_id) > MAX_ID_LENGTH:
        raise InvalidSuspendedRunError(
            str(run_id)[:80], f"run_id must be a non-empty string of at most {MAX_ID_LENGTH} characters"
        )
    for name in ("agent_id", "resource_id", "thread_id"):
        value = getattr(run, name)
        if value is None and name != "agent_id":
            continue
        if not isinstance(value, str) or not value or len(value) > MAX_ID_LENGTH:
            raise InvalidSuspendedRunError(
                run_id, f"{name} must be a non-empty string of at most {MAX_ID_LENGTH} characters"
            )
    if not isinstance(run.version, int) or isinstance(run.version, bool) or run.version < 1:
        raise InvalidSuspendedRunError(run_id, f"version must be an integer >= 1, got {run.version!r}")
    if not isinstance(run.snapshot, dict):
        raise InvalidSuspendedRunError(run_id, "snapshot must be a dict")
    for name in ("suspended_at", "expires_at"):
        value = getattr(run, name)
        if not isinstance(value, datetime) or value.tzinfo is None:
            raise InvalidSuspendedRunError(run_id, f"{name} must be a timezone-aware datetime")
    if run.expires_at <= run.suspended_at:
        raise InvalidSuspendedRunError(run_id, "expires_at must be after suspended_at")
    if not run.pending:
        raise InvalidSuspendedRunError(run_id, "a suspended run waits on at least one tool call")
    seen: set[str] = set()
    for call in run.pending:
        if not isinstance(call, PendingToolCall):
            raise InvalidSuspendedRunError(run_id, "pending holds PendingToolCall objects only")
        if (
            not isinstance(call.tool_call_id, str)
            or not call.tool_call_id
            or len(call.tool_call_id) > MAX_ID_LENGTH
        ):
            raise InvalidSuspendedRunError(run_id, "each pending tool_call_id must be a non-empty string")
        if call.tool_call_id in seen:
            raise InvalidSuspendedRunError(run_id, f"tool call {call.tool_call_id!r} is pending twice")
        seen.add(call.tool_call_id)
        if not isinstance(call.tool_name, str) or not call.tool_name:
            raise InvalidSuspendedRunError(run_id, f"tool call {call.tool_call_id!r} has no tool_name")
        if call.kind not in _KINDS:
            raise InvalidSuspendedRunError(
                run_id, f"tool call {call.tool_call_id!r} has kind {call.kind!r}; expected one of {_KINDS}"
            )


def resolve_tool_call(run: SuspendedRun, tool_call_id: str | None) -> PendingToolCall:
    """The pending call a claim decides. `None` means the run's only pending call, as in
    Mastra, where a run asks about one call at a time; with several pending it raises
    `AmbiguousToolCallError` rather than guess (an approval must not land on a call its sender
    never saw)."""
    ids = tuple(c.tool_call_id for c in run.pending)
    if tool_call_id is None:
        if len(run.pending) != 1:
            raise AmbiguousToolCallError(run.run_id, ids)
        return run.pending[0]
    for call in run.pending:
        if call.tool_call_id == tool_call_id:
            return call
    raise ToolCallNotPendingError(run.run_id, tool_call_id, ids)


# ---------------------------------------------------------------- encoding


@dataclass(frozen=True, slots=True)
class EncodedRun:
    """A run's JSON columns, checked: they decode to values equal to the run's."""

    pending: str
    snapshot: str

    @property
    def size(self) -> int:
        return len(self.pending.encode("utf-8")) + len(self.snapshot.encode("utf-8"))


def _encode(run_id: str, what: str, value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as error:
        raise InvalidSuspendedRunError(run_id, f"{what} is not JSON: {error}") from None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: kept, as escapes
        text = json.dumps(value, ensure_ascii=True, allow_nan=False, separators=(",", ":"))
    # What is stored must read back equal: catches non-string keys, tuples and the like,
    # which json.dumps accepts but turns into something else.
    if json.loads(text) != value:
        raise InvalidSuspendedRunError(
            run_id,
            f"{what} would not read back as given (non-string dict keys, tuples or other non-JSON types)",
        )
    return text


def encode_run(run: SuspendedRun, max_bytes: int) -> EncodedRun:
    """The run's `pending` and `snapshot` as JSON text, or a typed error naming the run."""
    encoded = EncodedRun(
        _encode(run.run_id, "pending", [c.to_dict() for c in run.pending]),
        _encode(run.run_id, "snapshot", run.snapshot),
    )
    if encoded.size > max_bytes:
        raise SnapshotTooLargeError(run.run_id, encoded.size, max_bytes)
    return encoded


def decode_pending(text: str) -> tuple[PendingToolCall, ...]:
    return tuple(PendingToolCall.from_dict(item) for item in json.loads(text))


def current(now: datetime | None) -> datetime:
    """`now`, or the current UTC time; naive datetimes are refused (backends would read them
    differently)."""
    if now is None:
        return utc_now()
    if not isinstance(now, datetime) or now.tzinfo is None:
        raise ValueError(f"now must be a timezone-aware datetime, got {now!r}")
    return now


def check_request(run_id: Any, tool_call_id: Any = None, version: Any = None) -> None:
    """Refuse ids and versions of the wrong type before they reach a query (a driver would
    raise its own error, or SQLite would compare them as something else)."""
    if not isinstance(run_id, str):
        raise InvalidSuspendedRunError(repr(run_id)[:80], "run_id must be a string")
    if tool_call_id is not None and not isinstance(tool_call_id, str):
        raise InvalidSuspendedRunError(run_id, "tool_call_id must be a string or None")
    if version is not None and (not isinstance(version, int) or isinstance(version, bool)):
        raise InvalidSuspendedRunError(run_id, "version must be an integer")


def check_owner(agent_id: Any = "", **ids: Any) -> None:
    """Refuse a listing or claim filter that is not a string (or None for the optional ones)."""
    if not isinstance(agent_id, str):
        raise TypeError(f"agent_id must be a string, got {type(agent_id).__name__}")
    for name, value in ids.items():
        if value is not None and not isinstance(value, str):
            raise TypeError(f"{name} must be a string or None, got {type(value).__name__}")


def check_max_bytes(max_bytes: int) -> int:
    if not isinstance(max_bytes, int) or isinstance(max_bytes, bool) or max_bytes < 1:
        raise ValueError(f"max_snapshot_bytes must be a positive integer, got {max_bytes!r}")
    return max_bytes


def replacement_conflict(
    run: SuspendedRun, *, stored_version: int | None, stored_owner: tuple[Any, ...] | None, claimed: bool
) -> str | None:
    """Why saving `run` over the stored row (None: no row) is refused, or None when it may."""
    if run.version == 1:
        return (
            None
            if stored_version is None
            else f"a run with this id is already stored (version {stored_version})"
        )
    if stored_version is None:
        return f"version {run.version} replaces version {run.version - 1}, but no run with this id is stored"
    if stored_version != run.version - 1:
        return (
            f"version {run.version} replaces version {run.version - 1}, "
            f"but version {stored_version} is stored"
        )
    if stored_owner != (run.agent_id, run.resource_id, run.thread_id):
        return "a new version cannot change the run's agent, resource or thread"
    if not claimed:
        return "only the claimer of a run may save its next version (claim it first)"
    return None


# ---------------------------------------------------------------- the protocol


@runtime_checkable
class SuspendedRunStore(Protocol):
    """Where suspended runs live. See the module docstring for the guarantees."""

    async def save_suspended_run(self, run: SuspendedRun) -> None:
        """Insert version 1, or replace the claimed version `run.version - 1` with `run`
        (unclaimed again). Raises `SuspendedRunConflictError`, `SnapshotTooLargeError`,
        `InvalidSuspendedRunError`."""
        ...

    async def get_suspended_run(self, run_id: str, *, now: datetime | None = None) -> SuspendedRun | None:
        """The run (claimed or not), or None when there is none or it expired."""
        ...

    async def claim_suspended_run(
        self,
        run_id: str,
        tool_call_id: str | None = None,
        *,
        resource_id: str | None = None,
        now: datetime | None = None,
    ) -> SuspendedRun:
        """Take the run for resuming the named call (see `resolve_tool_call` for None), for
        `resource_id` when given. Exactly one concurrent claimer wins. Raises
        `SuspendedRunNotFoundError`, `ToolCallNotPendingError`, `AmbiguousToolCallError`."""
        ...

    async def release_suspended_run(self, run_id: str, *, version: int) -> bool:
        """Give back a claim on `version` (nothing ran): the run is claimable again. False when
        that version is not stored or not claimed."""
        ...

    async def finish_suspended_run(self, run_id: str, *, version: int | None = None) -> bool:
        """Delete the run (its resumed run ended), only if it is still `version` when given.
        False when there was nothing to delete."""
        ...

    async def list_suspended_runs(
        self,
        agent_id: str,
        *,
        thread_id: str | None = None,
        resource_id: str | None = None,
        now: datetime | None = None,
    ) -> list[SuspendedRun]:
        """The agent's claimable runs (not expired, not claimed), newest `suspended_at` first
        (ties: `run_id` descending, by code point), filtered by thread and/or resource when given."""
        ...

    async def purge_expired_suspended_runs(self, *, now: datetime | None = None) -> int:
        """Delete every expired run, claimed or not; returns how many."""
        ...


# ---------------------------------------------------------------- in process


@dataclass(slots=True)
class _Row:
    run: SuspendedRun  # ids, times, version; its payloads are read from the JSON below
    pending: str
    snapshot: str
    claimed_at: datetime | None = None

    def materialise(self) -> SuspendedRun:
        return dataclasses.replace(
            self.run,
            pending=decode_pending(self.pending),
            snapshot=json.loads(self.snapshot),
            claimed_at=self.claimed_at,
        )


class InMemorySuspendedRunStore:
    """Suspended runs in this process (the default when an agent has no storage): they do not
    survive a restart. Same rules as the database backends, JSON round trip included, so what
    a caller mutates after saving or reading never reaches the stored run. Thread-safe."""

    def __init__(self, *, max_snapshot_bytes: int = DEFAULT_MAX_SNAPSHOT_BYTES) -> None:
        self.max_snapshot_bytes = check_max_bytes(max_snapshot_bytes)
        self._rows: dict[str, _Row] = {}
        self._lock = threading.Lock()

    async def save_suspended_run(self, run: SuspendedRun) -> None:
        if not isinstance(run, SuspendedRun):
            raise TypeError(f"expected a SuspendedRun, got {type(run).__name__}")
        encoded = encode_run(run, self.max_snapshot_bytes)
        with self._lock:
            row = self._rows.get(run.run_id)
            reason = replacement_conflict(
                run,
                stored_version=row.run.version if row else None,
                stored_owner=(row.run.agent_id, row.run.resource_id, row.run.thread_id) if row else None,
                claimed=row is not None and row.claimed_at is not None,
            )
            if reason is not None:
                raise SuspendedRunConflictError(run.run_id, reason)
            # The row keeps the payloads as JSON text only (decoded afresh on every read).
            self._rows[run.run_id] = _Row(
                dataclasses.replace(run, snapshot={}), encoded.pending, encoded.snapshot
            )

    async def get_suspended_run(self, run_id: str, *, now: datetime | None = None) -> SuspendedRun | None:
        check_request(run_id)
        now = current(now)
        with self._lock:
            row = self._rows.get(run_id)
            if row is None or row.run.expires_at <= now:
                return None
            return row.materialise()

    async def claim_suspended_run(
        self,
        run_id: str,
        tool_call_id: str | None = None,
        *,
        resource_id: str | None = None,
        now: datetime | None = None,
    ) -> SuspendedRun:
        check_request(run_id, tool_call_id)
        check_owner(resource_id=resource_id)
        now = current(now)
        with self._lock:
            row = self._rows.get(run_id)
            if row is None or (resource_id is not None and row.run.resource_id != resource_id):
                raise SuspendedRunNotFoundError(run_id, "unknown")
            if row.run.expires_at <= now:
                raise SuspendedRunNotFoundError(run_id, "expired")
            if row.claimed_at is not None:
                raise SuspendedRunNotFoundError(run_id, "already claimed")
            resolve_tool_call(row.run, tool_call_id)
            row.claimed_at = now
            return row.materialise()

    async def release_suspended_run(self, run_id: str, *, version: int) -> bool:
        check_request(run_id, version=version)
        with self._lock:
            row = self._rows.get(run_id)
            if row is None or row.run.version != version or row.claimed_at is None:
                return False
            row.claimed_at = None
            return True

    async def finish_suspended_run(self, run_id: str, *, version: int | None = None) -> bool:
        check_request(run_id, version=version)
        with self._lock:
            row = self._rows.get(run_id)
            if row is None or (version is not None and row.run.version != version):
                return False
            del self._rows[run_id]
            return True

    async def list_suspended_runs(
        self,
        agent_id: str,
        *,
        thread_id: str | None = None,
        resource_id: str | None = None,
        now: datetime | None = None,
    ) -> list[SuspendedRun]:
        check_owner(agent_id, thread_id=thread_id, resource_id=resource_id)
        now = current(now)
        with self._lock:
            rows = [
                row
                for row in self._rows.values()
                if row.run.agent_id == agent_id
                and row.claimed_at is None
                and row.run.expires_at > now
                and (thread_id is None or row.run.thread_id == thread_id)
                and (resource_id is None or row.run.resource_id == resource_id)
            ]
            rows.sort(key=lambda r: r.run.run_id, reverse=True)
            rows.sort(key=lambda r: r.run.suspended_at, reverse=True)
            return [row.materialise() for row in rows]

    async def purge_expired_suspended_runs(self, *, now: datetime | None = None) -> int:
        now = current(now)
        with self._lock:
            expired = [run_id for run_id, row in self._rows.items() if row.run.expires_at <= now]
            for run_id in expired:
                del self._rows[run_id]
            return len(expired)
