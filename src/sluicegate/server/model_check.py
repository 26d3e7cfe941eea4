"""The models an application's agents will call, checked when the app loads.

A model string (`"openai/gpt-5-mini"`) is resolved at each call, so an unknown provider, a
malformed string or a missing API key would otherwise surface at the first request, far from
the line that wrote it (and `serve` would start and fail every run). `check_app_models`
resolves what can be resolved without running anything — each agent's model string or fallback
list, and the detector and router models of its processors given as a list — and says which
line of the file built the agent (the loader raises it as an `AppLoadError`). A model object is the app's own
(`MockModel`, a custom adapter) and is not touched; models chosen per call (a request's
`model`, a processor's `process_input_step`) are checked when they are chosen.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sluicegate.agent import Agent
from sluicegate.agent.preflight import check_processor_models
from sluicegate.errors import ConfigurationError
from sluicegate.models.local_paths import MODELS_DIR_ENV, models_dir
from sluicegate.models.registry import resolve_model
from sluicegate.registry import Sluicegate


def check_app_models(
    registry: Sluicegate, path: Path, names: dict[int, str]
) -> tuple[int | None, str] | None:
    """The line of the agent (None: not found) and what is wrong, for the first model that
    cannot be used; None when all can. `names` maps `id(agent)` to the module-level name the
    agent is bound to, to find its line."""
    for key, agent in registry.agents.items():
        problem = _problem(agent)
        if problem is not None:
            return _Lines(path).of(agent, names.get(id(agent))), f"agent {key!r}: {problem}"
    return None


def _problem(agent: Agent) -> str | None:
    for what, model in _model_strings(agent.model):
        try:
            resolve_model(model)
        except ConfigurationError as exc:
            return f"{what} {model!r} cannot be used: {exc}{_folder_hint(model)}"
    processors = [
        processor
        for array in (agent.input_processors, agent.output_processors, agent.error_processors)
        if isinstance(array, (list, tuple))  # a function of the request context: chosen per call
        for processor in array
    ]
    try:
        check_processor_models(processors)
    except ConfigurationError as exc:
        return str(exc)
    return None


def _model_strings(model: Any) -> Iterator[tuple[str, str]]:
    if isinstance(model, str):
        yield "model", model
    elif isinstance(model, (list, tuple)):
        for index, entry in enumerate(model):
            value = entry.get("model") if isinstance(entry, dict) else entry
            if isinstance(value, str):
                yield f"model[{index}]", value


def _folder_hint(model: str) -> str:
    """For `local/...`: where such a model is looked for."""
    if not model.startswith("local/"):
        return ""
    folder = models_dir()
    if folder is None:
        return f" (no models folder is set: {MODELS_DIR_ENV} or sluicegate.models.local_paths.set_models_dir)"
    return f" (models folder: {folder})"


class _Lines:
    """Where in the application file an agent is built: the `Agent(...)` call naming it, else
    the line binding the name it is found under."""

    def __init__(self, path: Path) -> None:
        try:
            self.tree: ast.AST | None = ast.parse(path.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            self.tree = None

    def of(self, agent: Agent, name: str | None) -> int | None:
        if self.tree is None:
            return None
        wanted = {agent.name, agent.id}
        binding: int | None = None
        for node in ast.walk(self.tree):
            if isinstance(node, ast.Call) and _called(node) == "Agent" and _names(node) & wanted:
                return node.lineno
            if name is not None and isinstance(node, (ast.Assign, ast.AnnAssign)) and binding is None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    binding = node.lineno
        return binding


def _called(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _names(call: ast.Call) -> set[str]:
    """The literal `name`/`id` an `Agent(...)` call gives (positional name included)."""
    found = set()
    if call.args and isinstance(call.args[0], ast.Constant) and isinstance(call.args[0].value, str):
        found.add(call.args[0].value)
    for keyword in call.keywords:
        value = keyword.value
        if keyword.arg in ("name", "id") and isinstance(value, ast.Constant) and isinstance(value.value, str):
            found.add(value.value)
    return found
