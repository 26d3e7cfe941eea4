"""Group commit for PostgreSQL budget reservations.

A reservation must be atomic (checked against the budget under the key's lock) and durable when
`reserve` returns. Made one call at a time, each pays a round trip (two, with the pool's reset
on release), a transaction and its commit, and the client and server work around them: that,
not the budget check, is what bounded the throughput. `ReservationBatcher` keeps the guarantees
and shares those costs: while one batch is in flight, the reservations that arrive wait in a
queue; the next batch sends all of them in one `sluicegate_reserve_many` call (one transaction,
one commit), which decides them in arrival order per key under the same per-key locks as a lone
reservation, and each caller gets its own answer once the batch has committed.

Cancellation: a reservation withdrawn (its caller cancelled) while it still waits in the queue is
never written. Once its batch was sent it is committed with the batch and stands as the charge,
exactly like a run that ends before the provider reported its usage.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime

import asyncpg
from asyncpg.pool import PoolConnectionProxy

from sluicegate.budget import Reservation, checked_amounts, checked_idempotency_key
from sluicegate.storage.codec import dumps
from sluicegate.storage.errors import StorageError

log = logging.getLogger(__name__)

DEFAULT_MAX_BATCH = 256
"""Reservations sent in one call at most (bounds the time the batch holds its keys' locks)."""

_RESERVE_MANY = (
    "SELECT ord, reserved_seq, spent FROM "
    "sluicegate_reserve_many($1::text[], $2::float8[], $3::float8[], $4::timestamptz[], "
    "$5::text[], $6::timestamptz[], $7::text[], $8)"
)


@dataclass(slots=True)
class PendingReservation:
    """One caller's reservation waiting for its batch; `answer` resolves when it committed."""

    key: str
    amount: float
    limit: float
    since: datetime | None
    usage: str
    at: datetime
    idempotency_key: str | None
    answer: asyncio.Future[Reservation] = field(repr=False)


def pending_reservation(
    key: str,
    amount: float,
    limit: float,
    since: datetime | None,
    usage: dict[str, int],
    at: datetime,
    idempotency_key: str | None = None,
) -> PendingReservation:
    """Check and encode one reservation on its own, so a bad one fails only its caller."""
    if not isinstance(key, str):
        raise TypeError(f"a usage key must be a string, got {type(key).__name__}")
    amount, limit = checked_amounts(amount, limit)
    idempotency_key = checked_idempotency_key(idempotency_key)
    if since is not None and not isinstance(since, datetime):
        raise TypeError(f"since must be a datetime or None, got {type(since).__name__}")
    if not isinstance(at, datetime):
        raise TypeError(f"at must be a datetime, got {type(at).__name__}")
    return PendingReservation(
        key,
        amount,
        limit,
        since,
        dumps(usage),
        at,
        idempotency_key,
        asyncio.get_running_loop().create_future(),
    )


class ReservationBatcher:
    """Coalesces concurrent reservations of one `PostgresStore` into batched commits.

    `pool` returns the store's connection pool; `seed` seeds the per-key advisory locks (the
    same as `sluicegate_reserve`'s, so batched and lone reservations exclude each other).
    """

    def __init__(
        self,
        pool: Callable[[], Awaitable[asyncpg.Pool]],
        seed: int,
        *,
        max_batch: int = DEFAULT_MAX_BATCH,
    ) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._pool = pool
        self._seed = seed
        self._max_batch = max_batch
        self._queue: deque[PendingReservation] = deque()
        self._sender: asyncio.Task[None] | None = None
        self._closed = False

    async def reserve(
        self,
        key: str,
        amount: float,
        *,
        limit: float,
        since: datetime | None,
        usage: dict[str, int],
        at: datetime,
        idempotency_key: str | None = None,
    ) -> Reservation:
        """Queue the reservation and wait until the batch that carries it has committed."""
        if self._closed:
            raise StorageError("the PostgreSQL store is closed")
        pending = pending_reservation(key, amount, limit, since, usage, at, idempotency_key)
        self._queue.append(pending)
        self._start_sender()
        # Cancelling the caller cancels `answer`: still queued, the sender drops it unsent.
        return await pending.answer

    async def close(self) -> None:
        """Refuse new reservations and wait until the queued ones were sent."""
        self._closed = True
        while (sender := self._sender) is not None:
            await asyncio.wait([sender])

    def _start_sender(self) -> None:
        """One batch in flight at a time: the ones that arrive meanwhile form the next batch
        (several batches at once would mostly wait on each other's key locks)."""
        if self._sender is None:
            self._sender = asyncio.get_running_loop().create_task(self._send_all())

    async def _send_all(self) -> None:
        """Send batches while reservations wait. Each batch borrows a pool connection only for
        its own call, so the store's other work is never starved by a steady reservation load."""
        try:
            pool = await self._pool()
            while batch := self._next_batch():
                try:
                    conn = await pool.acquire()
                except BaseException:
                    self._queue.extendleft(reversed(batch))  # unsent: failed below with the rest
                    raise
                try:
                    await self._send(conn, batch)
                finally:
                    with contextlib.suppress(Exception):  # the pool discards what it cannot reset
                        await pool.release(conn)
        except Exception as error:  # no connection to be had: every waiting caller learns why
            while self._queue:
                _fail(self._queue.popleft(), error)
        except BaseException:
            while self._queue:
                _fail(self._queue.popleft(), StorageError("reservations cancelled before they were sent"))
            raise
        finally:
            self._sender = None
            if self._queue:  # arrived while the last connection was being returned
                self._start_sender()

    def _next_batch(self) -> list[PendingReservation]:
        batch: list[PendingReservation] = []
        while self._queue and len(batch) < self._max_batch:
            pending = self._queue.popleft()
            if not pending.answer.done():  # done here means withdrawn (cancelled): never sent
                batch.append(pending)
        return batch

    async def _send(self, conn: PoolConnectionProxy[asyncpg.Record], batch: list[PendingReservation]) -> None:
        sent, slots = _distinct(batch)
        try:
            rows = await self._call(conn, sent)
        except asyncpg.PostgresError as error:
            if isinstance(error, asyncpg.PostgresConnectionError) or conn.is_closed():
                _fail_all(batch, error)  # the connection broke mid-call: outcome unknown
                return
            # The server refused the statement (or it was never sent), so nothing of the batch
            # was committed: retry each reservation alone, so only the bad one fails.
            if len(batch) == 1:
                _fail(batch[0], error)
                return
            for pending in batch:
                if not pending.answer.done():
                    await self._send(conn, [pending])
            return
        except Exception as error:
            _fail_all(batch, error)  # outcome unknown, as for a lone call that lost its link
            return
        except BaseException:
            _fail_all(batch, StorageError("reservation interrupted; it may have been recorded"))
            raise
        answers: dict[int, Reservation] = {}
        for row in rows:
            seq = row["reserved_seq"]
            answers[row["ord"] - 1] = Reservation(str(seq) if seq is not None else None, float(row["spent"]))
        for pending, slot in zip(batch, slots, strict=True):
            held = answers[slot]
            if pending.answer.done():
                # Cancelled while its batch was in flight: committed, so it stands as the charge.
                log.debug("reservation %s of a cancelled caller stands as its charge", held.id)
            else:
                pending.answer.set_result(held)

    async def _call(
        self, conn: PoolConnectionProxy[asyncpg.Record], batch: list[PendingReservation]
    ) -> list[asyncpg.Record]:
        return await conn.fetch(
            _RESERVE_MANY,
            [p.key for p in batch],
            [p.amount for p in batch],
            [p.limit for p in batch],
            [p.since for p in batch],
            [p.usage for p in batch],
            [p.at for p in batch],
            [p.idempotency_key for p in batch],
            self._seed,
        )


def _distinct(batch: list[PendingReservation]) -> tuple[list[PendingReservation], list[int]]:
    """The reservations to send (each (key, idempotency key) once: the function decides a batch
    against what was stored before it) and, for each of `batch`, the index of the one sent for it."""
    sent: list[PendingReservation] = []
    slots: list[int] = []
    first: dict[tuple[str, str], int] = {}
    for pending in batch:
        if pending.idempotency_key is not None:
            ident = (pending.key, pending.idempotency_key)
            if ident in first:
                slots.append(first[ident])
                continue
            first[ident] = len(sent)
        slots.append(len(sent))
        sent.append(pending)
    return sent, slots


def _fail(pending: PendingReservation, error: BaseException) -> None:
    if not pending.answer.done():
        pending.answer.set_exception(error)


def _fail_all(batch: list[PendingReservation], error: BaseException) -> None:
    for pending in batch:
        _fail(pending, error)
