"""The public names of shared/API.md §1 import exactly as written there, and every built-in
processor's docstring shows how to use it."""

from __future__ import annotations

API_IMPORTS = """
from sluicegate import Agent, RequestContext, create_tool, tool
from sluicegate.processors import Processor, TripWire, ProcessInputStepResult, ProcessAPIErrorResult
from sluicegate.processors import (UnicodeNormalizer, TokenLimiter, TokenLimiterProcessor, ToolCallFilter,
    ToolSearchProcessor, ProviderHistoryCompat, CompatRule, PrefillErrorHandler, StreamErrorRetryProcessor,
    BatchPartsProcessor, RegexFilter, ResponseCache, CostGuardProcessor, ModerationProcessor, PIIDetector,
    PromptInjectionDetector, LanguageDetector, SystemPromptScrubber, MessageHistory, SemanticRecall,
    WorkingMemory)
from sluicegate.messages import Message, MessageList
from sluicegate.models import OpenAICompatible
from sluicegate.cache import InMemoryServerCache, RedisCache
from sluicegate.memory import Memory
from sluicegate.storage import SQLiteStore, PostgresStore
from sluicegate.errors import APICallError
from sluicegate.stream import Chunk
from sluicegate.testing import MockModel
from sluicegate.request_context import RESOURCE_ID_KEY, THREAD_ID_KEY
from sluicegate.workflows import create_workflow, create_step
"""


def test_every_public_name_imports():
    namespace: dict[str, object] = {}
    exec(API_IMPORTS, namespace)
    assert namespace["TokenLimiter"] is namespace["TokenLimiterProcessor"] or callable(
        namespace["TokenLimiter"]
    )
    assert namespace["RegexFilter"] is not None


def test_every_builtin_processor_documents_a_usage_example():
    import sluicegate.processors as processors

    names = [
        n
        for n in processors.__all__
        if n[0].isupper()
        and n.endswith(
            (
                "Processor",
                "Filter",
                "Detector",
                "Normalizer",
                "Limiter",
                "Cache",
                "Handler",
                "Compat",
                "Scrubber",
                "History",
                "Recall",
                "Memory",
            )
        )
    ]
    missing = []
    for name in names:
        cls = getattr(processors, name)
        if cls is processors.Processor or not isinstance(cls, type):  # type aliases
            continue
        doc = cls.__doc__ or ""
        spellings = {cls.__name__, *(n for n in names if getattr(processors, n) is cls)}
        if not any(f"{spelling}(" in doc for spelling in spellings):
            missing.append(name)
    assert missing == []
