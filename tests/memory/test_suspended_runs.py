"""The suspended-run store contract (`sluicegate.storage.suspended_runs`), one suite run on the
in-process store, a SQLite file and a real PostgreSQL: JSON fidelity, versioned saves, listing,
expiry, exactly-once claims (also across two store instances on one database), refusals that
change nothing, the size limit, purging, and a run that survives a restart."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from memory_pg_server import create_database

from sluicegate.storage import (
    AmbiguousToolCallError,
    InMemorySuspendedRunStore,
    InvalidSuspendedRunError,
    PendingToolCall,
    PostgresStore,
    SnapshotTooLargeError,
    SQLiteStore,
    StorageError,
    SuspendedRun,
    SuspendedRunConflictError,
    SuspendedRunNotFoundError,
    SuspendedRunStore,
    ToolCallNotPendingError,
)
from sluicegate.storage.suspended_runs import DEFAULT_MAX_SNAPSHOT_BYTES, DEFAULT_SUSPENDED_RUN_TTL

T0 = datetime(2026, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)
TTL = DEFAULT_SUSPENDED_RUN_TTL
NOW = T0 + timedelta(minutes=1)

Factory = Callable[..., Awaitable[Any]]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
async def run_store_factory(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Factory]:
    """`await make(**options)` opens a store on one shared location per test (the in-process
    store has no location to share: every call returns a new, separate store)."""
    opened: list[Any] = []
    location = ""
    if request.param == "postgres":
        location = await create_database(request.getfixturevalue("postgres_dsn"))
    elif request.param == "sqlite":
        location = str(tmp_path / "runs.db")

    async def make(**options: Any) -> Any:
        if request.param == "memory":
            return InMemorySuspendedRunStore(**options)
        store = (
            PostgresStore(location, **options)
            if request.param == "postgres"
            else SQLiteStore(location, **options)
        )
        opened.append(store)
        return store

    yield make
    await asyncio.gather(*(s.close() for s in opened))


@pytest.fixture
async def runs(run_store_factory: Factory) -> Any:
    return await run_store_factory()


def call(tool_call_id: str = "call_1", **kw: Any) -> PendingToolCall:
    return PendingToolCall(
        tool_call_id=tool_call_id,
        tool_name=kw.pop("tool_name", "delete_record"),
        args=kw.pop("args", {"id": 7}),
        **kw,
    )


def run(
    run_id: str = "run_1",
    *,
    pending: tuple[PendingToolCall, ...] | None = None,
    at: datetime = T0,
    agent_id: str = "agent",
    resource_id: str | None = "u1",
    thread_id: str | None = "t1",
    snapshot: dict[str, Any] | None = None,
    version: int = 1,
) -> SuspendedRun:
    return SuspendedRun(
        run_id=run_id,
        agent_id=agent_id,
        resource_id=resource_id,
        thread_id=thread_id,
        pending=(call(),) if pending is None else pending,
        snapshot={"step": 0, "messages": ["hi"]} if snapshot is None else snapshot,
        suspended_at=at,
        expires_at=at + TTL,
        version=version,
    )


async def stored(runs: Any, run_id: str = "run_1") -> SuspendedRun | None:
    return await runs.get_suspended_run(run_id, now=NOW)


# ---------------------------------------------------------------- round trip


async def test_every_backend_is_a_suspended_run_store(runs: Any) -> None:
    assert isinstance(runs, SuspendedRunStore)


async def test_round_trip_keeps_json_exactly(runs: Any) -> None:
    snapshot = {
        "zeta": 1,
        "alpha": {"nested": [1, [2, [3, {"deep": None}]]], "empty": {}, "list": []},
        "unicode": "héllo 世界 🚀 \u0000 nul \u2028 sep",
        "lone_surrogate": "\ud800",
        "big": 2**100,
        "negative_big": -(2**70),
        "floats": [0.1, 1e300, 1.0, -2.5e-300],
        "bools": [True, False, None],
    }
    original = run(
        pending=(
            call("call_1", args={"name": "Zoë", "n": 2**64 + 1}),
            call("call_2", kind="suspend", suspend_payload={"question": "sure? ✔"}),
        ),
        snapshot=snapshot,
        resource_id=None,
        thread_id=None,
    )
    await runs.save_suspended_run(original)
    got = await stored(runs)
    assert got == original
    assert list(got.snapshot) == list(snapshot)  # key order too
    assert got.snapshot["big"] == 2**100 and type(got.snapshot["floats"][2]) is float
    assert got.pending[1].suspend_payload == {"question": "sure? ✔"} and got.pending[1].kind == "suspend"
    assert got.tool_calls == got.pending and got.claimed_at is None
    assert got.suspended_at == T0 and got.expires_at == T0 + TTL and got.version == 1


async def test_changing_what_was_saved_or_read_does_not_change_the_stored_run(runs: Any) -> None:
    original = run(snapshot={"messages": ["a"]})
    await runs.save_suspended_run(original)
    original.snapshot["messages"].append("injected")
    got = await stored(runs)
    assert got is not None
    got.snapshot["messages"].append("again")
    assert (await stored(runs)).snapshot == {"messages": ["a"]}  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("snapshot", "words"),
    [
        ({"x": float("nan")}, "not JSON"),
        ({"x": float("inf")}, "not JSON"),
        ({"x": {1: "int key"}}, "read back"),
        ({"x": (1, 2)}, "read back"),
        ({"x": {1, 2}}, "not JSON"),
        ({"x": datetime(2026, 1, 1)}, "not JSON"),
    ],
)
async def test_payloads_that_would_not_read_back_are_refused(runs: Any, snapshot: Any, words: str) -> None:
    with pytest.raises(InvalidSuspendedRunError, match=words) as caught:
        await runs.save_suspended_run(run(snapshot=snapshot))
    assert caught.value.run_id == "run_1"
    assert await stored(runs) is None


async def test_malformed_runs_are_refused_when_built() -> None:
    with pytest.raises(InvalidSuspendedRunError, match="at least one tool call"):
        run(pending=())
    with pytest.raises(InvalidSuspendedRunError, match="pending twice"):
        run(pending=(call("a"), call("a")))
    with pytest.raises(InvalidSuspendedRunError, match="kind"):
        run(pending=(call(kind="maybe"),))
    with pytest.raises(InvalidSuspendedRunError, match="timezone-aware"):
        run(at=datetime(2026, 1, 1))
    with pytest.raises(InvalidSuspendedRunError, match="run_id"):
        run(run_id="")
    with pytest.raises(InvalidSuspendedRunError, match="resource_id"):
        run(resource_id="")
    with pytest.raises(InvalidSuspendedRunError, match="version"):
        run(version=0)
    with pytest.raises(InvalidSuspendedRunError, match="expires_at"):
        dataclasses.replace(run(), expires_at=T0)
    assert isinstance(InvalidSuspendedRunError("r", "x"), (StorageError, ValueError))


# ---------------------------------------------------------------- versions


async def test_a_second_version_replaces_only_the_claimed_predecessor(runs: Any) -> None:
    first = run(pending=(call("call_1"),))
    await runs.save_suspended_run(first)
    with pytest.raises(SuspendedRunConflictError, match="already stored"):
        await runs.save_suspended_run(run(snapshot={"other": True}))
    second = first.resuspended(
        pending=(call("call_2"),),
        snapshot={"step": 1},
        suspended_at=T0 + timedelta(seconds=5),
        expires_at=T0 + TTL,
    )
    with pytest.raises(SuspendedRunConflictError, match="claim it first"):
        await runs.save_suspended_run(second)
    assert await stored(runs) == first

    await runs.claim_suspended_run("run_1", "call_1", now=NOW)
    with pytest.raises(SuspendedRunConflictError, match="but version 1 is stored"):
        await runs.save_suspended_run(dataclasses.replace(second, version=3))
    with pytest.raises(SuspendedRunConflictError, match="agent, resource or thread"):
        await runs.save_suspended_run(dataclasses.replace(second, resource_id="intruder"))
    with pytest.raises(SuspendedRunConflictError, match="no run with this id"):
        await runs.save_suspended_run(dataclasses.replace(second, run_id="run_9"))
    still = await stored(runs)
    assert still == first and still is not None and still.claimed_at == NOW

    await runs.save_suspended_run(second)
    got = await stored(runs)
    assert got == second and got is not None and got.claimed_at is None and got.version == 2
    assert [r.run_id for r in await runs.list_suspended_runs("agent", now=NOW)] == ["run_1"]


async def test_a_stale_approval_cannot_land_on_the_next_suspension(runs: Any) -> None:
    """Mastra #19633: approving call_1 again after the run moved on to call_2 must not decide call_2."""
    first = run(pending=(call("call_1"),))
    await runs.save_suspended_run(first)
    await runs.claim_suspended_run("run_1", "call_1", now=NOW)
    second = first.resuspended(
        pending=(call("call_2"),), snapshot={"step": 1}, suspended_at=NOW, expires_at=NOW + TTL
    )
    await runs.save_suspended_run(second)
    with pytest.raises(ToolCallNotPendingError) as caught:
        await runs.claim_suspended_run("run_1", "call_1", now=NOW)
    assert (caught.value.run_id, caught.value.tool_call_id, caught.value.pending) == (
        "run_1",
        "call_1",
        ("call_2",),
    )
    assert "call_1" in str(caught.value) and "run_1" in str(caught.value)
    got = await runs.claim_suspended_run("run_1", "call_2", now=NOW)
    assert got.version == 2 and got.pending[0].args == {"id": 7}


# ---------------------------------------------------------------- get, list, expiry


async def test_listing_filters_by_agent_thread_and_resource_newest_first(runs: Any) -> None:
    await runs.save_suspended_run(run("r_old", at=T0))
    await runs.save_suspended_run(run("r_new", at=T0 + timedelta(seconds=2)))
    await runs.save_suspended_run(run("r_tie_a", at=T0 + timedelta(seconds=1)))
    await runs.save_suspended_run(run("r_tie_b", at=T0 + timedelta(seconds=1)))
    await runs.save_suspended_run(run("r_other_thread", thread_id="t2", at=T0 + timedelta(seconds=3)))
    await runs.save_suspended_run(
        run("r_other_user", resource_id="u2", thread_id="t9", at=T0 + timedelta(seconds=4))
    )
    await runs.save_suspended_run(run("r_other_agent", agent_id="agent-2"))
    await runs.save_suspended_run(run("r_claimed", at=T0 + timedelta(seconds=9)))
    await runs.claim_suspended_run("r_claimed", now=NOW)

    def ids(found: list[SuspendedRun]) -> list[str]:
        return [r.run_id for r in found]

    assert ids(await runs.list_suspended_runs("agent", now=NOW)) == [
        "r_other_user",
        "r_other_thread",
        "r_new",
        "r_tie_b",
        "r_tie_a",
        "r_old",
    ]
    assert ids(await runs.list_suspended_runs("agent", thread_id="t1", now=NOW)) == [
        "r_new",
        "r_tie_b",
        "r_tie_a",
        "r_old",
    ]
    assert ids(await runs.list_suspended_runs("agent", resource_id="u2", now=NOW)) == ["r_other_user"]
    assert ids(await runs.list_suspended_runs("agent", thread_id="t2", resource_id="u1", now=NOW)) == [
        "r_other_thread"
    ]
    assert ids(await runs.list_suspended_runs("agent", thread_id="t2", resource_id="u2", now=NOW)) == []
    assert ids(await runs.list_suspended_runs("agent-2", now=NOW)) == ["r_other_agent"]
    assert ids(await runs.list_suspended_runs("nobody", now=NOW)) == []
    claimed = await runs.get_suspended_run("r_claimed", now=NOW)
    assert claimed is not None and claimed.claimed_at == NOW  # shown by get, never listed


async def test_expired_runs_are_gone_for_get_list_and_claim(runs: Any) -> None:
    await runs.save_suspended_run(run("run_1"))
    expiry = T0 + TTL
    just_before = expiry - timedelta(microseconds=1)
    assert await runs.get_suspended_run("run_1", now=just_before) is not None
    assert len(await runs.list_suspended_runs("agent", now=just_before)) == 1
    assert await runs.get_suspended_run("run_1", now=expiry) is None
    assert await runs.list_suspended_runs("agent", now=expiry) == []
    with pytest.raises(SuspendedRunNotFoundError) as caught:
        await runs.claim_suspended_run("run_1", "call_1", now=expiry)
    assert caught.value.reason == "expired" and caught.value.run_id == "run_1"
    assert await runs.get_suspended_run("missing", now=NOW) is None


async def test_purge_deletes_expired_runs_claimed_or_not(runs: Any) -> None:
    await runs.save_suspended_run(run("a", at=T0))
    await runs.save_suspended_run(run("b", at=T0 + timedelta(days=1)))
    await runs.save_suspended_run(run("c", at=T0 + timedelta(days=2)))
    await runs.claim_suspended_run("b", now=NOW)
    later = T0 + TTL + timedelta(days=1)  # a and b expired, c not
    assert await runs.purge_expired_suspended_runs(now=later) == 2
    assert await runs.purge_expired_suspended_runs(now=later) == 0
    assert await runs.get_suspended_run("b", now=NOW) is None
    assert [r.run_id for r in await runs.list_suspended_runs("agent", now=later)] == ["c"]


# ---------------------------------------------------------------- claims


async def test_a_wrong_tool_call_id_raises_and_changes_nothing(runs: Any) -> None:
    await runs.save_suspended_run(run())
    with pytest.raises(ToolCallNotPendingError) as caught:
        await runs.claim_suspended_run("run_1", "call_x", now=NOW)
    assert caught.value.tool_call_id == "call_x" and isinstance(caught.value, StorageError)
    got = await stored(runs)
    assert got is not None and got.claimed_at is None
    assert len(await runs.list_suspended_runs("agent", now=NOW)) == 1
    claimed = await runs.claim_suspended_run("run_1", "call_1", now=NOW)
    assert claimed.claimed_at == NOW and claimed.pending == (call(),)


async def test_no_tool_call_id_means_the_only_pending_call(runs: Any) -> None:
    await runs.save_suspended_run(run("one"))
    await runs.save_suspended_run(run("two", pending=(call("call_1"), call("call_2"))))
    assert (await runs.claim_suspended_run("one", now=NOW)).run_id == "one"
    with pytest.raises(AmbiguousToolCallError) as caught:
        await runs.claim_suspended_run("two", now=NOW)
    assert caught.value.pending == ("call_1", "call_2") and "tool_call_id" in str(caught.value)
    got = await runs.get_suspended_run("two", now=NOW)
    assert got is not None and got.claimed_at is None
    assert (await runs.claim_suspended_run("two", "call_2", now=NOW)).run_id == "two"


async def test_a_claim_for_another_resource_finds_nothing(runs: Any) -> None:
    await runs.save_suspended_run(run(resource_id="u1"))
    with pytest.raises(SuspendedRunNotFoundError) as caught:
        await runs.claim_suspended_run("run_1", "call_1", resource_id="u2", now=NOW)
    assert caught.value.reason == "unknown"  # the same answer as for a run that does not exist
    assert (await stored(runs)).claimed_at is None  # type: ignore[union-attr]
    assert (await runs.claim_suspended_run("run_1", "call_1", resource_id="u1", now=NOW)).resource_id == "u1"


async def test_claimed_finished_and_unknown_runs_cannot_be_claimed(runs: Any) -> None:
    with pytest.raises(SuspendedRunNotFoundError, match="run_x"):
        await runs.claim_suspended_run("run_x", "call_1", now=NOW)
    await runs.save_suspended_run(run())
    await runs.claim_suspended_run("run_1", "call_1", now=NOW)
    with pytest.raises(SuspendedRunNotFoundError) as caught:
        await runs.claim_suspended_run("run_1", "call_1", now=NOW)
    assert caught.value.reason == "already claimed" and isinstance(caught.value, KeyError)
    assert not await runs.finish_suspended_run("run_1", version=2)  # another version: kept
    assert await runs.get_suspended_run("run_1", now=NOW) is not None
    assert await runs.finish_suspended_run("run_1", version=1)
    assert not await runs.finish_suspended_run("run_1")
    with pytest.raises(SuspendedRunNotFoundError) as caught:
        await runs.claim_suspended_run("run_1", "call_1", now=NOW)
    assert caught.value.reason == "unknown"
    assert await runs.get_suspended_run("run_1", now=NOW) is None


async def test_a_released_claim_can_be_taken_again(runs: Any) -> None:
    await runs.save_suspended_run(run())
    assert not await runs.release_suspended_run("run_1", version=1)  # nothing claimed yet
    await runs.claim_suspended_run("run_1", now=NOW)
    assert not await runs.release_suspended_run("run_1", version=2)
    assert await runs.release_suspended_run("run_1", version=1)
    assert [r.run_id for r in await runs.list_suspended_runs("agent", now=NOW)] == ["run_1"]
    assert (await runs.claim_suspended_run("run_1", now=NOW)).claimed_at == NOW


async def _race(stores: list[Any], claimers: int) -> list[Any]:
    return await asyncio.gather(
        *(stores[i % len(stores)].claim_suspended_run("run_1", "call_1", now=NOW) for i in range(claimers)),
        return_exceptions=True,
    )


async def test_thirty_concurrent_claims_have_exactly_one_winner(runs: Any) -> None:
    await runs.save_suspended_run(run())
    results = await _race([runs], 30)
    winners = [r for r in results if isinstance(r, SuspendedRun)]
    losers = [r for r in results if not isinstance(r, SuspendedRun)]
    assert len(winners) == 1 and winners[0].claimed_at == NOW
    assert len(losers) == 29 and all(isinstance(e, SuspendedRunNotFoundError) for e in losers)


@pytest.mark.parametrize("run_store_factory", ["sqlite", "postgres"], indirect=True)
async def test_claims_from_two_stores_on_one_database_have_exactly_one_winner(
    run_store_factory: Factory,
) -> None:
    first, second = await run_store_factory(), await run_store_factory()
    for round_ in range(3):
        run_id = f"run_{round_}"
        await first.save_suspended_run(run(run_id))
        results = await asyncio.gather(
            *((first if i % 2 else second).claim_suspended_run(run_id, "call_1", now=NOW) for i in range(30)),
            return_exceptions=True,
        )
        assert sum(isinstance(r, SuspendedRun) for r in results) == 1
        assert all(isinstance(r, (SuspendedRun, SuspendedRunNotFoundError)) for r in results)
        # The other store sees the claim.
        assert await second.list_suspended_runs("agent", now=NOW) == []


# ---------------------------------------------------------------- size


async def test_a_snapshot_over_the_limit_is_refused_naming_run_and_size(run_store_factory: Factory) -> None:
    runs = await run_store_factory(max_snapshot_bytes=2_000)
    small = run(snapshot={"text": "x" * 1_000})
    await runs.save_suspended_run(small)
    with pytest.raises(SnapshotTooLargeError) as caught:
        await runs.save_suspended_run(run("run_big", snapshot={"text": "é" * 1_000}))  # 2 bytes each in UTF-8
    error = caught.value
    assert error.run_id == "run_big" and error.limit == 2_000 and error.size > 2_000
    assert "run_big" in str(error) and str(error.size) in str(error)
    assert await runs.get_suspended_run("run_big", now=NOW) is None
    # A replacement over the limit keeps the stored version.
    await runs.claim_suspended_run("run_1", now=NOW)
    with pytest.raises(SnapshotTooLargeError):
        await runs.save_suspended_run(
            small.resuspended(
                pending=small.pending, snapshot={"t": "x" * 3_000}, suspended_at=NOW, expires_at=NOW + TTL
            )
        )
    kept = await stored(runs)
    assert kept == small and kept is not None and kept.claimed_at == NOW


async def test_the_default_limit_is_eight_mebibytes(runs: Any) -> None:
    assert DEFAULT_MAX_SNAPSHOT_BYTES == 8 * 1024 * 1024
    assert timedelta(days=7) == DEFAULT_SUSPENDED_RUN_TTL
    with pytest.raises(SnapshotTooLargeError) as caught:
        await runs.save_suspended_run(run(snapshot={"blob": "x" * (8 * 1024 * 1024)}))
    assert caught.value.limit == DEFAULT_MAX_SNAPSHOT_BYTES
    await runs.save_suspended_run(run(snapshot={"blob": "x" * (8 * 1024 * 1024 - 200)}))
    got = await stored(runs)
    assert got is not None and len(got.snapshot["blob"]) == 8 * 1024 * 1024 - 200


@pytest.mark.parametrize("bad", [0, -1, 1.5, True])
async def test_a_bad_size_limit_is_refused(run_store_factory: Factory, bad: Any) -> None:
    with pytest.raises(ValueError, match="max_snapshot_bytes"):
        await run_store_factory(max_snapshot_bytes=bad)


# ---------------------------------------------------------------- durability


async def test_a_run_saved_by_one_sqlite_store_is_claimed_after_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    before = SQLiteStore(path)
    await before.save_suspended_run(run(pending=(call(args={"id": 7, "force": True}),)))
    await before.close()
    after = SQLiteStore(path)
    try:
        assert 3 in await after.schema_versions()
        claimed = await after.claim_suspended_run("run_1", "call_1", now=NOW)
        assert claimed.pending[0].args == {"id": 7, "force": True}
        with pytest.raises(SuspendedRunNotFoundError):
            await after.claim_suspended_run("run_1", "call_1", now=NOW)
    finally:
        await after.close()


@pytest.mark.parametrize("run_store_factory", ["postgres"], indirect=True)
async def test_postgres_migration_adds_the_table(run_store_factory: Factory) -> None:
    store = await run_store_factory()
    assert 5 in await store.schema_versions()


_CLAIMER = """
import asyncio, sys
from datetime import datetime
from sluicegate.storage import SQLiteStore, SuspendedRunNotFoundError

async def main() -> None:
    store = SQLiteStore(sys.argv[1])
    won = 0
    for i in range(20):
        try:
            await store.claim_suspended_run(f"run_{i}", "call_1", now=datetime.fromisoformat(sys.argv[2]))
            won += 1
        except SuspendedRunNotFoundError:
            pass
    await store.close()
    print(won)

asyncio.run(main())
"""


async def test_claims_from_separate_processes_on_one_sqlite_file_have_one_winner_each(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = SQLiteStore(path)
    for i in range(20):
        await store.save_suspended_run(run(f"run_{i}"))
    processes = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", _CLAIMER, str(path), NOW.isoformat(), stdout=asyncio.subprocess.PIPE
        )
        for _ in range(3)
    ]
    outputs = [await p.communicate() for p in processes]
    assert all(p.returncode == 0 for p in processes)
    assert sum(int(out) for out, _ in outputs) == 20  # every run claimed once, by one process
    assert await store.list_suspended_runs("agent", now=NOW) == []
    await store.close()


async def test_arguments_of_the_wrong_type_get_a_typed_error_and_change_nothing(runs: Any) -> None:
    await runs.save_suspended_run(run())
    with pytest.raises(InvalidSuspendedRunError, match="run_id must be a string"):
        await runs.claim_suspended_run(123, "call_1", now=NOW)
    with pytest.raises(InvalidSuspendedRunError, match="tool_call_id"):
        await runs.claim_suspended_run("run_1", 1, now=NOW)
    with pytest.raises(TypeError, match="resource_id"):
        await runs.claim_suspended_run("run_1", "call_1", resource_id=5, now=NOW)
    with pytest.raises(InvalidSuspendedRunError, match="version"):
        await runs.finish_suspended_run("run_1", version="1")
    with pytest.raises(InvalidSuspendedRunError, match="run_id"):
        await runs.get_suspended_run(None, now=NOW)
    with pytest.raises(TypeError, match="thread_id"):
        await runs.list_suspended_runs("agent", thread_id=7, now=NOW)
    with pytest.raises(ValueError, match="timezone-aware"):
        await runs.claim_suspended_run("run_1", "call_1", now=datetime(2026, 1, 1))
    with pytest.raises(TypeError, match="SuspendedRun"):
        await runs.save_suspended_run({"run_id": "run_2"})
    got = await stored(runs)
    assert got == run() and got is not None and got.claimed_at is None
