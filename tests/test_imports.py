"""Import cost and optional extras: the core imports load no optional SDK, and a missing extra
is a clear `MissingExtraError` naming it (each case runs in a fresh interpreter)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

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
    "mcp",
)


def run(code: str) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


DEFERRED = (
    "pydantic",  # tools and structured output import it when a schema is built
    "pydantic_core",
    "opentelemetry",  # only `configure()`, a provider or a propagated trace context brings it
    "importlib.metadata",  # pydantic's plugin lookup, at its first model
    "sluicegate.processors.step_schema",  # the one pydantic model of `sluicegate.processors`
    "sluicegate.tracing.spans",  # the tracing glue: the runner counts nothing untraced
    "sluicegate.tracing.stream",
    "sluicegate.tracing.record",
    "sluicegate.models.openai_compatible",  # adapters load when a model string resolves to them
    "sluicegate.models.openai_chat",
    "sluicegate.models.structured_outputs",
    "sluicegate.registry",  # `Sluicegate`, and the storage types it names
    "sluicegate.storage",
    "email.utils",  # Retry-After HTTP-dates
    "difflib",  # "did you mean" hints
)


def test_import_and_an_untraced_run_do_no_deferred_work() -> None:
    """`import sluicegate` and a plain run (no tools, no schema, no tracing) build no pydantic
    model, load no OpenTelemetry and no provider adapter: they are paid for where they are used."""
    result = run(
        f"""
import json, sys
import sluicegate
from sluicegate import Agent
from sluicegate.processors import Processor
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step
at_import = [m for m in {DEFERRED!r} if m in sys.modules]

class Passthrough(Processor):
    id = "passthrough"
    def process_output_result(self, args):
        return None

agent = Agent("plain", model=MockModel([text_step("hi")]), output_processors=[Passthrough()])
text = agent.generate_sync("x").text
after_run = [m for m in {DEFERRED!r} if m in sys.modules]
print(json.dumps({{"at_import": at_import, "after_run": after_run, "text": text}}))
"""
    )
    assert result == {"at_import": [], "after_run": [], "text": "hi"}


def test_tracing_configured_after_an_untraced_run_records_the_next_run() -> None:
    """Whether OpenTelemetry is in use is decided per run, not at import."""
    pytest.importorskip("opentelemetry.sdk", reason="the `otel` extra is not installed")
    result = run(
        """
import json, sys
from sluicegate import Agent
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step
agent = Agent("late", model=MockModel([text_step("one"), text_step("two")]))
first = agent.generate_sync("x")
loaded_before = "opentelemetry" in sys.modules
from sluicegate.tracing import configure
telemetry = configure(in_memory=True, set_global=False)
second = agent.generate_sync("y")
names = [span.name for span in telemetry.spans()]
telemetry.shutdown()
print(json.dumps({"loaded_before": loaded_before, "first": first.trace_id, "second": bool(second.trace_id),
                  "run_span": "invoke_agent late" in names}))
"""
    )
    assert result == {"loaded_before": False, "first": "", "second": True, "run_span": True}


def test_deferred_names_still_import_and_list() -> None:
    """The lazily exported names resolve to the real objects, appear in `dir()` before first
    use, and `from ... import` works for each of them."""
    result = run(
        """
import json
import sluicegate, sluicegate.models, sluicegate.processors, sluicegate.tracing
processors = sluicegate.processors
lazy = {*processors._BUILTINS, *processors._DEFERRED}
listed = (
    lazy <= set(processors.__all__) and lazy <= set(dir(processors))
    and "Sluicegate" in dir(sluicegate) and "OpenAICompatible" in dir(sluicegate.models)
    and "TracingContext" in dir(sluicegate.tracing)
)
from sluicegate.processors import ProcessorStepSchema
from sluicegate.processors.types import ProcessorStepSchema as FromTypes
from sluicegate.models import OpenAICompatible
from sluicegate.tracing import TracingContext, configure
from sluicegate import Sluicegate
import sluicegate.tracing.configure
from sluicegate.tracing import configure as again
print(json.dumps({
    "listed": listed,
    "same_schema": ProcessorStepSchema is FromTypes,
    "is_model": hasattr(ProcessorStepSchema, "model_validate"),
    "schema_phase": ProcessorStepSchema(phase="process_input").phase,
    "compatible": OpenAICompatible.__name__,
    "tracing_context": TracingContext.__name__,
    "registry": Sluicegate.__name__,
    "configure_is_function": callable(configure) and configure is again,
}))
"""
    )
    assert result == {
        "listed": True,
        "same_schema": True,
        "is_model": True,
        "schema_phase": "process_input",
        "compatible": "OpenAICompatible",
        "tracing_context": "TracingContext",
        "registry": "Sluicegate",
        "configure_is_function": True,
    }


def test_a_provider_named_in_the_environment_makes_runs_ask_opentelemetry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """OpenTelemetry's API builds a global provider from `OTEL_PYTHON_TRACER_PROVIDER` on first
    ask, so a process that never imported it is still asked when that is set."""
    from sluicegate.tracing import state

    monkeypatch.delitem(sys.modules, "opentelemetry", raising=False)  # as if never imported
    for name in state.PROVIDER_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert not state.opentelemetry_in_use()
    assert not state.enabled()
    monkeypatch.setenv("OTEL_PYTHON_TRACER_PROVIDER", "sdk_tracer_provider")
    assert state.opentelemetry_in_use()


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
        (["mcp"], "from sluicegate.mcp import MCPClient", "mcp"),
        (["mcp"], "from sluicegate.mcp import MCPServer", "mcp"),
    ],
)
def test_a_missing_extra_names_itself(modules: list[str], statement: str, extra: str) -> None:
    result = run(BLOCKED.format(modules=modules, statement=statement))
    assert result["extra"] == extra
    assert f"sluicegate[{extra}]" in str(result["message"])
    assert result["import_error"] is True


def test_moved_names_keep_their_public_paths() -> None:
    """The names that moved to their layer stay importable where users name them (the lower
    packages offer the higher ones' names as attributes loaded on first access)."""
    result = run(
        """
import json
import sluicegate.stream
stream_listed = {"ModelOutput", "SyncModelOutput"} <= set(dir(sluicegate.stream))
from sluicegate.stream import ModelOutput, SyncModelOutput
from sluicegate.agent.output import ModelOutput as AgentModelOutput
from sluicegate.agent.sync_output import SyncModelOutput as AgentSyncModelOutput
from sluicegate.memory import Memory, MemoryOptions
from sluicegate.processors.memory import Memory as ProcessorsMemory, MemoryOptions as ProcessorsOptions
from sluicegate.agent import AgentMemory, MemoryBinding
from sluicegate.memory.binding import AgentMemory as Contract, MemoryBinding as Binding
from sluicegate.workflows import ProcessorWorkflow, create_step, create_workflow
from sluicegate.processors import workflow
print(json.dumps({
    "stream_listed": stream_listed,
    "model_output": ModelOutput is AgentModelOutput and SyncModelOutput is AgentSyncModelOutput,
    "memory": Memory is ProcessorsMemory and MemoryOptions is ProcessorsOptions,
    "binding": MemoryBinding is Binding and AgentMemory is Contract,
    "workflows": (ProcessorWorkflow, create_step, create_workflow)
        == (workflow.ProcessorWorkflow, workflow.create_step, workflow.create_workflow),
}))
"""
    )
    assert result == {
        "stream_listed": True,
        "model_output": True,
        "memory": True,
        "binding": True,
        "workflows": True,
    }


def test_identity_is_below_the_registry_and_still_in_the_server() -> None:
    """`Sluicegate(resolve_identity=...)` needs no HTTP layer; `sluicegate.server.Identity` is
    the same class."""
    pytest.importorskip("starlette", reason="the `server` extra is not installed")
    result = run(
        """
import json, sys
from sluicegate.identity import Identity
from sluicegate.registry import Sluicegate
server_loaded = [m for m in ("sluicegate.server", "starlette") if m in sys.modules]
from sluicegate.server import Identity as ServerIdentity
from sluicegate.server.identity import Identity as GateIdentity
print(json.dumps({"server_loaded": server_loaded, "same": Identity is ServerIdentity is GateIdentity}))
"""
    )
    assert result == {"server_loaded": [], "same": True}


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    """`lint-imports` with this project's contracts over the package copied under `root`."""
    env = {**os.environ, "PYTHONPATH": str(root / "src")}
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from importlinter.cli import lint_imports_command; sys.exit(lint_imports_command())",
            "--no-cache",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_an_upward_import_breaks_the_layers_contract(tmp_path: Path) -> None:
    """The contracts in pyproject.toml hold for the package, and fail, naming the import, as
    soon as a lower layer imports a higher one."""
    pytest.importorskip("importlinter", reason="import-linter is a dev dependency")
    project = Path(__file__).resolve().parent.parent
    shutil.copy(project / "pyproject.toml", tmp_path / "pyproject.toml")
    shutil.copytree(
        project / "src" / "sluicegate",
        tmp_path / "src" / "sluicegate",
        ignore=shutil.ignore_patterns("__pycache__", "static", "data"),
    )
    kept = _lint_imports(tmp_path)
    assert kept.returncode == 0, kept.stdout + kept.stderr
    chunk = tmp_path / "src" / "sluicegate" / "stream" / "chunk.py"
    chunk.write_text(chunk.read_text() + "\nfrom sluicegate.agent.run import AgentRun  # noqa\n")
    broken = _lint_imports(tmp_path)
    assert broken.returncode != 0
    assert "sluicegate.stream.chunk -> sluicegate.agent.run" in broken.stdout
