"""`ToolSearchProcessor`: let the model find and load tools from a large library on demand,
instead of sending every tool definition on every call."""

from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from sluicegate.errors import ConfigurationError
from sluicegate.processors.args import ProcessInputStepArgs
from sluicegate.processors.base import Processor
from sluicegate.request_context import THREAD_ID_KEY
from sluicegate.tools import Tool, create_tool, normalize_tools

META_TOOLS = frozenset(("search_tools", "load_tool"))
_SPLIT = re.compile(r"[\s\-_.,;:!?()\[\]{}'\"/]+")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_K1, _B = 1.2, 0.75

INSTRUCTION = (
    "To discover available tools, call search_tools with a keyword query. To add one or more tools "
    "to the conversation, call load_tool with a toolName or toolNames array. Tools must be loaded "
    "before they can be used."
)


def _tokens(text: str) -> list[str]:
    return [t for t in _SPLIT.split(_CAMEL.sub(" ", text).lower()) if len(t) > 1]


class _Index:
    """BM25 over each tool's name, description and parameter names."""

    def __init__(self, tools: dict[str, Tool]) -> None:
        self.docs: dict[str, Counter[str]] = {}
        for name, tool in tools.items():
            params = " ".join((tool.json_schema().get("properties") or {}).keys())
            self.docs[name] = Counter(_tokens(f"{name} {name} {tool.description} {params}"))
        self.lengths = {name: sum(doc.values()) for name, doc in self.docs.items()}
        self.average = (sum(self.lengths.values()) / len(self.lengths)) if self.lengths else 1.0
        frequency: Counter[str] = Counter()
        for doc in self.docs.values():
            frequency.update(doc.keys())
        total = len(self.docs)
        self.idf = {term: math.log(1 + (total - n + 0.5) / (n + 0.5)) for term, n in frequency.items()}

    def search(self, query: str) -> list[tuple[str, float]]:
        terms = _tokens(query)
        scored: list[tuple[str, float]] = []
        for name, doc in self.docs.items():
            norm = _K1 * (1 - _B + _B * self.lengths[name] / self.average)
            score = 0.0
            for term in terms:
                tf = doc.get(term, 0)
                if tf:
                    score += self.idf[term] * tf * (_K1 + 1) / (tf + norm)
            lowered = name.lower()
            for term in terms:  # a query naming the tool outranks one that only describes it
                if lowered == term:
                    score += 5
                elif term in lowered:
                    score += 2
            if score > 0:
                scored.append((name, score))
        scored.sort(key=lambda item: (-item[1], item[0]))
        return scored


_SEARCH_KEYS = {"top_k": "top_k", "topK": "top_k", "min_score": "min_score", "minScore": "min_score"}


def _search_options(
    search: Mapping[str, Any] | None, top_k: int | None, min_score: float | None
) -> tuple[int, float]:
    """Mastra's `search: {topK, minScore}` (snake_case too) or the flat keywords, validated."""
    if search is not None:
        if not isinstance(search, Mapping):
            raise ConfigurationError(
                f"ToolSearchProcessor: search must be a dict, got {type(search).__name__}"
            )
        unknown = sorted(str(k) for k in search if k not in _SEARCH_KEYS)
        if unknown:
            raise ConfigurationError(
                f"ToolSearchProcessor: unknown search option(s) {unknown}; known: top_k, min_score"
            )
        fields = {_SEARCH_KEYS[k]: v for k, v in search.items()}
        if ("top_k" in fields and top_k is not None) or ("min_score" in fields and min_score is not None):
            raise ConfigurationError("ToolSearchProcessor: give top_k / min_score either in search= or flat")
        top_k = fields.get("top_k", top_k)
        min_score = fields.get("min_score", min_score)
    top_k = 5 if top_k is None else top_k
    min_score = 0.0 if min_score is None else min_score
    if isinstance(top_k, bool) or not isinstance(top_k, int) or top_k < 1:
        raise ConfigurationError(f"ToolSearchProcessor: top_k must be an integer >= 1, got {top_k!r}")
    if isinstance(min_score, bool) or not isinstance(min_score, (int, float)) or min_score != min_score:
        raise ConfigurationError(f"ToolSearchProcessor: min_score must be a number, got {min_score!r}")
    return top_k, float(min_score)


class ToolSearchProcessor(Processor):
    """Gives the model `search_tools` (ranked keyword search over tool names, descriptions and
    parameter names) and `load_tool` instead of the whole tool library.

    A loaded tool is offered to the model from the next step on and stays loaded for the rest of
    the request; when the request runs on a memory thread, it stays loaded for that thread (in
    this processor, for `ttl` milliseconds after the thread's last use).

    - `tools`: the searchable library (a list or a name -> tool dict).
    - `search={"top_k": 5, "min_score": 0}` (Mastra's `topK` / `minScore` spellings too, or the
      same flat keywords): how many results a search returns, and the lowest score shown.
    - `always_loaded`: library tools offered from the first step, without a search.
    - `ttl` (one hour, in milliseconds; 0 keeps threads forever).

    The agent's own tools stay available as they are.

    Example::

        search = ToolSearchProcessor(tools=big_library, search={"top_k": 3}, always_loaded=["get_time"])
        agent = Agent(name="a", model=model, input_processors=[search])
    """

    id = "tool-search"
    name = "Tool Search Processor"
    description = "Enables dynamic tool discovery and loading via search"

    def __init__(
        self,
        *,
        tools: Iterable[Tool] | dict[str, Tool],
        search: Mapping[str, Any] | None = None,
        top_k: int | None = None,
        min_score: float | None = None,
        always_loaded: Iterable[str] = (),
        ttl: float = 3_600_000,
    ) -> None:
        super().__init__()
        self.tools = normalize_tools(tools if isinstance(tools, dict) else list(tools))
        clash = META_TOOLS & set(self.tools)
        if clash:
            raise ConfigurationError(f"ToolSearchProcessor: tool names {sorted(clash)} are reserved")
        top_k, min_score = _search_options(search, top_k, min_score)
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or ttl < 0:
            raise ConfigurationError(f"ToolSearchProcessor: ttl must be milliseconds (>= 0), got {ttl!r}")
        self.top_k = top_k
        self.min_score = min_score
        self.always_loaded = tuple(always_loaded)
        missing = [name for name in self.always_loaded if name not in self.tools]
        if missing:
            raise ConfigurationError(f"ToolSearchProcessor: always_loaded names unknown tools: {missing}")
        self.ttl = ttl
        self._index = _Index(self.tools)
        self._threads: dict[str, tuple[set[str], float]] = {}

    # ------------------------------------------------------------------ loaded-tool store

    def loaded_names(self, thread_id: str | None, state: dict[str, Any]) -> set[str]:
        """The mutable set of loaded names for this thread (or, without one, this request)."""
        if thread_id is None:
            loaded: set[str] = state.setdefault("loaded", set())
            return loaded
        now = time.monotonic()
        if self.ttl:
            expired = [key for key, (_, seen) in self._threads.items() if now - seen > self.ttl / 1000]
            for key in expired:
                del self._threads[key]
        names = self._threads[thread_id][0] if thread_id in self._threads else set()
        self._threads[thread_id] = (names, now)
        return names

    def clear_state(self, thread_id: str | None = None) -> None:
        """Forget the loaded tools of one thread, or of all threads."""
        if thread_id is None:
            self._threads.clear()
        else:
            self._threads.pop(thread_id, None)

    # ------------------------------------------------------------------ search

    def search(self, query: str) -> list[dict[str, Any]]:
        """The best `top_k` matches for `query`, as `{name, description, score}`."""
        results = []
        for name, score in self._index.search(query):
            if score <= self.min_score:
                continue
            description = self.tools[name].description
            if len(description) > 150:
                description = description[:147] + "..."
            results.append({"name": name, "description": description, "score": round(score, 2)})
            if len(results) >= self.top_k:
                break
        return results

    def _meta_tools(self, loaded: set[str]) -> dict[str, Tool]:
        def search_tools(input: dict[str, Any], _context: Any) -> dict[str, Any]:
            query = str(input.get("query", ""))
            results = self.search(query)
            if not results:
                return {
                    "results": [],
                    "message": f'No tools found matching "{query}". Try different keywords.',
                }
            return {
                "results": results,
                "message": f"Found {len(results)} tool(s). Use load_tool with an exact "
                "toolName or a toolNames array to make them available.",
            }

        def load_tool(input: dict[str, Any], _context: Any) -> dict[str, Any]:
            requested = list(
                dict.fromkeys(
                    [*(input.get("toolNames") or []), *([input["toolName"]] if input.get("toolName") else [])]
                )
            )
            if not requested:
                return {
                    "success": False,
                    "message": "You must provide either toolName (string) or toolNames (array) to load.",
                }
            newly = [name for name in requested if name in self.tools and name not in loaded]
            already = [name for name in requested if name in loaded]
            missing = [name for name in requested if name not in self.tools]
            loaded.update(newly)
            message = []
            if newly:
                message.append(f"Loaded: {', '.join(newly)} — available on your next turn")
            if already:
                message.append(f"Already loaded: {', '.join(already)}")
            for name in missing:
                close = [t for t in self.tools if name.lower() in t.lower() or t.lower() in name.lower()][:3]
                hint = (
                    f" Did you mean: {', '.join(close)}?"
                    if close
                    else " Use search_tools to find available tools."
                )
                message.append(f'Tool "{name}" not found.{hint}')
            return {
                "success": not missing,
                "message": " | ".join(message),
                "loaded": newly,
                "alreadyLoaded": already,
                "notFound": missing,
            }

        return {
            "search_tools": create_tool(
                id="search_tools",
                description=(
                    "Search for available tools by keyword. Use this when you need a capability you "
                    "don't currently have. Returns matching tools with their names and descriptions. "
                    "After finding a useful tool, use load_tool to make it available."
                ),
                input_schema={
                    "type": "object",
                    "properties": {
                        "query": {
                            "type": "string",
                            "description": 'Search keywords (e.g. "weather", "github issue")',
                        }
                    },
                    "required": ["query"],
                },
                execute=search_tools,
            ),
            "load_tool": create_tool(
                id="load_tool",
                description=(
                    "Load one or more tools into your context after finding them with search_tools. "
                    "Pass a single toolName or an array of toolNames."
                ),
                input_schema={
                    "type": "object",
                    "properties": {
                        "toolName": {"type": "string", "description": "The exact name of a tool to load"},
                        "toolNames": {
                            "type": "array",
                            "items": {"type": "string"},
                            "description": "Exact names of several tools to load",
                        },
                    },
                },
                execute=load_tool,
            ),
        }

    # ------------------------------------------------------------------ the hook

    def process_input_step(self, args: ProcessInputStepArgs) -> dict[str, Any]:
        clash = META_TOOLS & set(args.tools or {})
        if clash:
            raise ConfigurationError(
                f"ToolSearchProcessor cannot add {sorted(clash)}: the agent already has them"
            )
        thread_id = args.request_context.get(THREAD_ID_KEY) if args.request_context is not None else None
        loaded = self.loaded_names(thread_id if isinstance(thread_id, str) else None, args.state)
        if args.step_number == 0 or "initial" not in args.state:
            args.state["initial"] = True
            loaded.update(self.always_loaded)
        active_now = sorted(loaded)  # a snapshot: tools loaded during this step count from the next
        args.message_list.add_system(INSTRUCTION)
        tools: dict[str, Any] = {
            **self._meta_tools(loaded),
            **(args.tools or {}),
            **{name: self.tools[name] for name in active_now if name not in (args.tools or {})},
        }
        result: dict[str, Any] = {"tools": tools}
        if args.active_tools is not None:
            result["active_tools"] = [*META_TOOLS, *args.active_tools, *active_now]
        return result
