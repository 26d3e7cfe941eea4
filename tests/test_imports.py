"""Import cost and optional extras: the core imports load no optional SDK, and a missing extra
is a clear `MissingExtraError` naming it (each case runs in a fresh interpreter)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = (
    "openai",
    "anthropic",
    "asyncpg",
    "numpy",
    "redis",
    "sqlite_vec",
    "xllamacpp",
    "onnxruntime",
    "jsonschema",
)


def run(code: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


def test_core_imports_load_no_heavy_module() -> None:
    result = run(
        f"""
import json, sys
import sluicegate
from sluicegate import Agent, tool
from sluicegate.memory import Memory
from sluicegate.storage import SQLiteStore, MemoryStore
from sluicegate.vector import VectorStore
from sluicegate.embeddings import Embedder
from sluicegate.cache import ServerCache
from sluicegate.models import resolve_model, OpenAICompatible
from sluicegate.processors import TokenLimiter
Memory()
print(json.dumps({{"loaded": [m for m in {HEAVY!r} if m in sys.modules]}}))
"""
    )
    assert result["loaded"] == []


BLOCKED = """
import json, sys
for name in {modules!r}:
    sys.modules[name] = None  # what a missing package looks like to `import`
from sluicegate.errors import MissingExtraError
try:
    {statement}
except MissingExtraError as exc:
    is_import_error = isinstance(exc, ImportError)
    print(json.dumps({{"extra": exc.extra, "message": str(exc), "import_error": is_import_error}}))
else:
    print(json.dumps({{"extra": None}}))
"""


@pytest.mark.parametrize(
    ("modules", "statement", "extra"),
    [
        (["asyncpg"], "from sluicegate.storage import PostgresStore", "postgres"),
        (["asyncpg"], "from sluicegate.vector import PgVector", "postgres"),
        (["numpy"], "from sluicegate.vector import SQLiteVector", "vector"),
        (["sqlite_vec"], "from sluicegate.vector import SQLiteVector", "vector"),
        (["redis", "redis.asyncio"], "from sluicegate.cache import RedisCache", "redis"),
        (["numpy"], "from sluicegate.embeddings import LocalEmbedder", "local"),
        (
            ["anthropic"],
            "from sluicegate.models import resolve_model; "
            "resolve_model('anthropic/claude-haiku-4-5').client()",
            "anthropic",
        ),
        (
            ["xllamacpp"],
            "from sluicegate.models import resolve_model; resolve_model('local/smollm2-135m')",
            "local",
        ),
    ],
)
def test_a_missing_extra_names_itself(modules: list[str], statement: str, extra: str) -> None:
    result = run(BLOCKED.format(modules=modules, statement=statement))
    assert result["extra"] == extra
    assert f"sluicegate[{extra}]" in str(result["message"])
    assert result["import_error"] is True
