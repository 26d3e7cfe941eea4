"""The vector-store contract on SQLiteVector (sqlite-vec) and PgVector (pgvector)."""

from __future__ import annotations

import asyncio
import math
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluicegate.vector import InvalidFilterError, SQLiteVector, VectorStoreError, matches


def unit(*xs: float) -> list[float]:
    norm = math.sqrt(sum(x * x for x in xs))
    return [x / norm for x in xs]


async def test_index_lifecycle(vector_factory: Any) -> None:
    vector = vector_factory()
    await vector.create_index("docs", 3)
    await vector.create_index("docs", 3)  # idempotent
    assert "docs" in await vector.list_indexes()
    with pytest.raises(VectorStoreError):
        await vector.create_index("docs", 4)
    with pytest.raises(VectorStoreError):
        await vector.create_index("bad name;", 3)
    await vector.upsert("docs", [unit(1, 0, 0)], ["a"], [{"k": 1}])
    assert await vector.describe_index("docs") == {"dimension": 3, "metric": "cosine", "count": 1}
    with pytest.raises(VectorStoreError):
        await vector.upsert("docs", [[1.0, 0.0]], ["b"])
    await vector.delete_index("docs")
    assert "docs" not in await vector.list_indexes()
    with pytest.raises(VectorStoreError):
        await vector.query("docs", [1.0, 0.0, 0.0])


async def test_top_k_order_scores_upsert_and_delete(vector_factory: Any) -> None:
    vector = vector_factory()
    await vector.create_index("docs", 3)
    await vector.upsert(
        "docs",
        [unit(1, 0, 0), unit(1, 1, 0), unit(0, 1, 0), unit(-1, 0, 0)],
        ["x", "xy", "y", "minus"],
        [{"n": i} for i in range(4)],
    )
    hits = await vector.query("docs", unit(1, 0, 0), top_k=2)
    assert [h.id for h in hits] == ["x", "xy"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5) and hits[1].score == pytest.approx(
        math.sqrt(0.5), abs=1e-5
    )
    assert hits[0].metadata == {"n": 0}
    await vector.upsert("docs", [unit(0, 0, 1)], ["x"], [{"n": 9}])  # replace by id
    hits = await vector.query("docs", unit(0, 0, 1), top_k=1)
    assert [(h.id, h.metadata) for h in hits] == [("x", {"n": 9})]
    assert (await vector.describe_index("docs"))["count"] == 4
    await vector.delete("docs", ["x", "nope"])
    assert "x" not in [h.id for h in await vector.query("docs", unit(0, 0, 1), top_k=10)]


async def test_threshold(vector_factory: Any) -> None:
    vector = vector_factory()
    await vector.create_index("docs", 2)
    await vector.upsert("docs", [unit(1, 0), unit(1, 1), unit(0, 1)], ["a", "b", "c"])
    hits = await vector.query("docs", unit(1, 0), top_k=3, threshold=0.5)
    assert [h.id for h in hits] == ["a", "b"]


async def test_memory_filters_and_selective_filters_still_fill_top_k(vector_factory: Any) -> None:
    vector = vector_factory()
    await vector.create_index("docs", 8)
    rng = random.Random(7)
    vectors = [unit(*[rng.gauss(0, 1) for _ in range(8)]) for _ in range(600)]
    metas = [{"thread_id": f"t{i % 30}", "resource_id": f"u{i % 3}", "n": i} for i in range(600)]
    await vector.upsert("docs", vectors, [str(i) for i in range(600)], metas)
    query = vectors[0]
    hits = await vector.query("docs", query, top_k=5, filter={"thread_id": "t7"})
    assert len(hits) == 5 and all(h.metadata["thread_id"] == "t7" for h in hits)
    rare = await vector.query("docs", query, top_k=3, filter={"n": {"$in": [598, 599, 1]}})
    assert sorted(h.id for h in rare) == ["1", "598", "599"]
    expected = sorted(range(600), key=lambda i: -sum(a * b for a, b in zip(query, vectors[i], strict=True)))
    in_thread = [str(i) for i in expected if i % 30 == 7][:5]
    assert [h.id for h in hits] == in_thread


async def test_invalid_filters_are_rejected(vector_factory: Any) -> None:
    vector = vector_factory()
    await vector.create_index("docs", 2)
    with pytest.raises(InvalidFilterError):
        await vector.query("docs", [1.0, 0.0], filter={"$where": "1"})
    with pytest.raises(InvalidFilterError):
        await vector.query("docs", [1.0, 0.0], filter={"k": {"$regex": "x"}})


values = st.one_of(st.integers(-3, 3), st.sampled_from(["a", "b", "c"]), st.booleans())
leaf = st.one_of(
    st.builds(lambda k, v: {k: v}, st.sampled_from(["k1", "k2", "thread_id"]), values),
    st.builds(
        lambda k, op, v: {k: {op: v}},
        st.sampled_from(["k1", "k2"]),
        st.sampled_from(["$eq", "$ne", "$gt", "$gte", "$lt", "$lte"]),
        values,
    ),
    st.builds(
        lambda k, op, vs: {k: {op: vs}},
        st.sampled_from(["k1", "k2"]),
        st.sampled_from(["$in", "$nin"]),
        st.lists(values, min_size=1, max_size=3),
    ),
    st.builds(lambda k, b: {k: {"$exists": b}}, st.sampled_from(["k1", "k2"]), st.booleans()),
)
filters = st.recursive(
    leaf,
    lambda inner: st.one_of(
        st.builds(lambda fs: {"$and": fs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda fs: {"$or": fs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda f: {"$not": f}, inner),
    ),
    max_leaves=5,
)


@pytest.fixture
async def filter_corpus(vector_factory: Any) -> tuple[Any, list[dict[str, Any]]]:
    vector = vector_factory()
    await vector.create_index("corpus", 2)
    rng = random.Random(3)
    metas: list[dict[str, Any]] = []
    for _ in range(40):
        meta: dict[str, Any] = {"thread_id": rng.choice(["a", "b"])}
        for key in ("k1", "k2"):
            if rng.random() < 0.8:
                meta[key] = rng.choice([-2, 0, 1, 3, "a", "b", "c", True, False])
        metas.append(meta)
    await vector.upsert("corpus", [unit(1, i + 1) for i in range(40)], [str(i) for i in range(40)], metas)
    return vector, metas


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(flt=filters)
def test_backend_filtering_equals_the_reference_semantics(filter_corpus: Any, flt: dict[str, Any]) -> None:
    vector, metas = filter_corpus
    expected = {str(i) for i, m in enumerate(metas) if matches(flt, m)}
    loop = asyncio.get_event_loop()
    hits = loop.run_until_complete(vector.query("corpus", unit(1, 1), top_k=100, filter=flt))
    assert {h.id for h in hits} == expected


async def test_sqlite_vector_shares_a_file_with_the_store(tmp_path: Any) -> None:
    from sluicegate.storage import SQLiteStore

    path = tmp_path / "both.db"
    store, vector = SQLiteStore(path), SQLiteVector(path)
    await vector.create_index("docs", 2)
    await vector.upsert("docs", [unit(1, 0)], ["a"], [{"thread_id": "t"}])
    from sluicegate.storage.migrations import SQLITE_MIGRATIONS

    assert await store.schema_versions() == [m.version for m in SQLITE_MIGRATIONS]
    assert [h.id for h in await vector.query("docs", unit(1, 0), filter={"thread_id": "t"})] == ["a"]
    await store.close()
    await vector.close()
