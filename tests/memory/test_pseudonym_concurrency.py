"""Concurrent runs on one conversation with `PIIDetector(strategy="pseudonymize")`: every run
gets its tokens (none fails because others were writing), every value ends with exactly one
token and every token with one value, on SQLite, PostgreSQL and in memory; and a store that
refuses the write still stops the run before the model sees anything."""

from __future__ import annotations

import asyncio
import gc
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from sluicegate import Agent, RequestContext
from sluicegate.errors import StorageError
from sluicegate.guardrails.pseudonyms import _CONVERSATION_LOCKS, Pseudonymizer, PseudonymMap
from sluicegate.processors import InMemoryPseudonymStore, PIIDetector, new_pseudonym_key
from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY
from sluicegate.storage import MemoryStore, SQLiteStore
from sluicegate.testing import MockModel, text_step

RUNS = 30
SHARED = "shared.person@example.com"
ADA = "ada@example.com"


def where(thread: str = "t1", resource: str = "u1") -> RequestContext:
    context = RequestContext()
    context.set(THREAD_ID_KEY, thread)
    context.set(RESOURCE_ID_KEY, resource)
    return context


class Run:
    """What a processor sees of one run: its own state and its conversation."""

    def __init__(self, context: RequestContext | None = None) -> None:
        self.state: dict[str, Any] = {}
        self.request_context = context or where()


def own_email(i: int) -> str:
    return f"person{i}@example.com"


def own_phone(i: int) -> str:
    return f"+1 555 01{i:02d}"


def assert_one_to_one(mapping: PseudonymMap, values: list[str]) -> None:
    tokens = [mapping.token(value) for value in values]
    assert None not in tokens, [v for v, t in zip(values, tokens, strict=True) if t is None]
    assert len(set(tokens)) == len(values)  # no token names two values
    assert len(mapping) == len(values)  # and no value got a second token
    for value, token in zip(values, tokens, strict=True):
        assert mapping.value(token or "") == value


async def thirty_runs_through_agents(pii: PIIDetector) -> tuple[list[Any], list[MockModel]]:
    models = [MockModel([text_step("noted")]) for _ in range(RUNS)]
    agents = [Agent("crm", model=m, input_processors=[pii], output_processors=[pii]) for m in models]
    outcomes = await asyncio.gather(
        *(
            agent.generate(f"write to {own_email(i)} and {SHARED}", request_context=where())
            for i, agent in enumerate(agents)
        ),
        return_exceptions=True,
    )
    return outcomes, models


async def check_thirty_runs(pii: PIIDetector) -> None:
    outcomes, models = await thirty_runs_through_agents(pii)
    failures = [o for o in outcomes if isinstance(o, BaseException)]
    assert failures == [], f"{len(failures)} of {RUNS} runs failed: {failures[0]!r}"
    assert pii.pseudonyms is not None
    final = await pii.pseudonyms.current(Run())
    assert_one_to_one(final, [SHARED, *(own_email(i) for i in range(RUNS))])
    for model in models:  # each model saw tokens only, and the shared value's token
        sent = json.dumps(model.calls[0].prompt)
        assert "example.com" not in sent and final.token(SHARED) in sent


async def test_thirty_concurrent_runs_on_one_thread_in_memory() -> None:
    await check_thirty_runs(PIIDetector(strategy="pseudonymize"))


async def test_thirty_concurrent_runs_on_one_thread_in_a_database(store: MemoryStore) -> None:
    await check_thirty_runs(
        PIIDetector(strategy="pseudonymize", pseudonym_key=new_pseudonym_key(), pseudonym_store=store)
    )


async def test_processes_sharing_a_database_never_fail_or_clash(store_factory: Any) -> None:
    # Six processors, each on its own store object (as six processes would be), five runs each:
    # the writes race across connections, not only inside one process.
    key = new_pseudonym_key()
    workers = [Pseudonymizer(key=key, store=await store_factory()) for _ in range(6)]

    async def one_run(i: int) -> PseudonymMap:
        found = [(own_email(i), "email"), (SHARED, "email"), (own_phone(i), "phone")]
        return await workers[i % len(workers)].assign(Run(), found)

    outcomes = await asyncio.gather(*(one_run(i) for i in range(RUNS)), return_exceptions=True)
    failures = [o for o in outcomes if isinstance(o, BaseException)]
    assert failures == [], f"{len(failures)} of {RUNS} runs failed: {failures[0]!r}"
    final = await workers[0].current(Run())
    values = [SHARED, *(own_email(i) for i in range(RUNS)), *(own_phone(i) for i in range(RUNS))]
    assert_one_to_one(final, values)
    assert sorted(final.token(own_phone(i)) or "" for i in range(RUNS)) == sorted(
        f"<PHONE_{n}>" for n in range(1, RUNS + 1)
    )
    for i, seen in enumerate(outcomes):  # what each run used agrees with the stored mapping
        assert isinstance(seen, PseudonymMap)
        for value in (own_email(i), SHARED, own_phone(i)):
            assert seen.token(value) == final.token(value)


async def test_the_bound_holds_under_concurrent_runs(store: MemoryStore) -> None:
    pii = Pseudonymizer(key=new_pseudonym_key(), store=store, max_values=10)
    await asyncio.gather(*(pii.assign(Run(), [(own_email(i), "email")]) for i in range(RUNS)))
    final = await pii.current(Run())
    assert len(final) == 10
    assert len({final.token(own_email(i)) for i in range(RUNS)} - {None}) == 10


@pytest.fixture
async def refusing_store(store: MemoryStore, backend: str) -> MemoryStore:
    """The store, with the database refusing every write to the pseudonym table."""
    await store.get_thread("warm-up")  # the schema exists
    if backend == "sqlite":
        statements = [
            f"CREATE TRIGGER refuse_{op} BEFORE {op} ON sluicegate_pseudonyms "
            "BEGIN SELECT RAISE(ABORT, 'pseudonyms are read-only here'); END"
            for op in ("INSERT", "UPDATE")
        ]
        await store._db.run(lambda c: [c.execute(s) for s in statements])  # type: ignore[attr-defined]
    else:
        pool = await store.pool()  # type: ignore[attr-defined]
        await pool.execute(
            "CREATE FUNCTION refuse() RETURNS trigger AS $$ BEGIN "
            "RAISE EXCEPTION 'pseudonyms are read-only here'; END $$ LANGUAGE plpgsql"
        )
        await pool.execute(
            "CREATE TRIGGER refuse BEFORE INSERT OR UPDATE ON sluicegate_pseudonyms "
            "FOR EACH ROW EXECUTE FUNCTION refuse()"
        )
    return store


async def test_a_store_that_refuses_the_write_fails_closed(refusing_store: MemoryStore) -> None:
    pii = PIIDetector(
        strategy="pseudonymize", pseudonym_key=new_pseudonym_key(), pseudonym_store=refusing_store
    )
    outcomes, models = await thirty_runs_through_agents(pii)
    causes = [o.__cause__ if o.__cause__ is not None else o for o in outcomes]
    assert all(isinstance(c, StorageError) and "read-only here" in str(c) for c in causes), causes
    assert all(model.calls == [] for model in models)  # no value, clear or tokenized, went out


class YieldingStore(InMemoryPseudonymStore):
    """A compare-and-swap-only store whose calls yield to other runs, as a network store does."""

    async def load(self, scope: Any) -> Any:
        await asyncio.sleep(0)
        return await super().load(scope)

    async def save(self, scope: Any, data: bytes, *, expected_version: int) -> bool:
        await asyncio.sleep(0)
        return await super().save(scope, data, expected_version=expected_version)


async def test_runs_in_one_process_queue_even_on_a_compare_and_swap_store() -> None:
    store = YieldingStore()
    key = new_pseudonym_key()
    workers = [Pseudonymizer(key=key, store=store) for _ in range(3)]  # one store, three processors
    outcomes = await asyncio.gather(
        *(workers[i % 3].assign(Run(), [(own_email(i), "email")]) for i in range(RUNS)),
        return_exceptions=True,
    )
    assert [o for o in outcomes if isinstance(o, BaseException)] == []
    assert_one_to_one(await workers[0].current(Run()), [own_email(i) for i in range(RUNS)])
    sealed = await store.load(("u1", "t1"))
    assert sealed is not None and sealed.version <= RUNS  # one write per run, no lost ones


async def test_the_per_conversation_locks_do_not_outlive_their_runs(store: MemoryStore) -> None:
    pii = Pseudonymizer(key=new_pseudonym_key(), store=store)
    await asyncio.gather(
        *(pii.assign(Run(where(f"t{i % 7}")), [(own_email(i), "email")]) for i in range(RUNS))
    )
    gc.collect()
    assert len(_CONVERSATION_LOCKS) == 0


def test_a_mapping_giving_one_value_two_tokens_does_not_open() -> None:
    with pytest.raises(ValueError, match="two tokens"):
        PseudonymMap({"<EMAIL_1>": ADA, "<EMAIL_2>": ADA})
    with pytest.raises(ValueError):
        PseudonymMap.from_json(json.dumps({"v": 1, "tokens": {"<EMAIL_1>": ADA, "<EMAIL_2>": ADA}}).encode())


_PROCESS = """
import asyncio, sys
from sluicegate.guardrails.pseudonyms import Pseudonymizer
from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY, RequestContext
from sluicegate.storage import SQLiteStore

path, key, name = sys.argv[1:4]


class Run:
    def __init__(self):
        self.state = {}
        self.request_context = RequestContext()
        self.request_context.set(THREAD_ID_KEY, "t1")
        self.request_context.set(RESOURCE_ID_KEY, "u1")


async def main():
    store = SQLiteStore(path)
    pseudonyms = Pseudonymizer(key=key, store=store)
    shared = ("shared.person@example.com", "email")
    found = [[(f"{name}-{i}@example.com", "email"), shared] for i in range(10)]
    await asyncio.gather(*(pseudonyms.assign(Run(), values) for values in found))
    await store.close()


asyncio.run(main())
"""


async def test_processes_sharing_a_sqlite_file_never_fail_or_clash(tmp_path: Path) -> None:
    path, key = tmp_path / "m.db", new_pseudonym_key()
    names = ["a", "b", "c"]
    children = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", _PROCESS, str(path), key, name, stderr=asyncio.subprocess.PIPE
        )
        for name in names
    ]
    for child in children:
        _, stderr = await child.communicate()
        assert child.returncode == 0, stderr.decode()
    store = SQLiteStore(path)
    final = await Pseudonymizer(key=key, store=store).current(Run())
    assert_one_to_one(final, [SHARED, *(f"{name}-{i}@example.com" for name in names for i in range(10))])
    await store.close()
