"""The shared conformance suite's own code (../shared/conformance/run.py), importable by tests:
its scenario builders (`build_model`, `build_agent`, `call_options`, `Context`), its
normalization (`run_stream`, `run_generate`, `label_runs`, `plain`) and its comparison
(`first_difference`), so a test that runs the scenarios another way (on Temporal) reduces and
compares them exactly as `run.py` does, from one copy of that code."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

PROJECT_ROOT = Path(__file__).resolve().parents[1]
SUITE = PROJECT_ROOT.parent / "shared" / "conformance"
DEFAULT_SCENARIOS = SUITE / "scenarios"
DEFAULT_EXPECTED = SUITE / "expected"


def available() -> bool:
    return (SUITE / "run.py").exists()


def load_runner() -> ModuleType:
    """`run.py` as the module `conformance_run` (its `library` beside it, on the import path)."""
    loaded = sys.modules.get("conformance_run")
    if loaded is not None:
        return loaded
    if str(SUITE) not in sys.path:
        sys.path.insert(0, str(SUITE))  # run.py imports `library` from its own folder
    spec = importlib.util.spec_from_file_location("conformance_run", SUITE / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["conformance_run"] = module
    spec.loader.exec_module(module)
    return module


def scenario_paths(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.json"))


def read_scenario(path: Path) -> dict[str, Any]:
    scenario: dict[str, Any] = json.loads(path.read_text())
    return scenario


def expected_for(folder: Path, name: str) -> dict[str, Any] | None:
    path = folder / f"{name}.json"
    if not path.exists():
        return None
    expected: dict[str, Any] = json.loads(path.read_text())
    return expected


def resolve_folder(value: str | None, default: Path) -> Path:
    """A `--conformance-*` option: relative to the project root; the default when unset."""
    if not value:
        return default
    path = Path(value)
    return path if path.is_absolute() else PROJECT_ROOT / path
