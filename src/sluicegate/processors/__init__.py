"""Processors: the `Processor` base class, its hook types, and the built-in processors.

Built-ins are imported on first use, so `import sluicegate.processors` stays cheap and a
built-in's optional dependencies load only when it is used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from sluicegate.errors import TripWire
from sluicegate.processors.args import (
    OutputResult,
    ProcessAPIErrorArgs,
    ProcessAPIErrorResult,
    ProcessInputArgs,
    ProcessInputStepArgs,
    ProcessInputStepResult,
    ProcessLLMRequestArgs,
    ProcessLLMRequestResult,
    ProcessLLMResponseArgs,
    ProcessorViolation,
    ProcessOutputResultArgs,
    ProcessOutputStepArgs,
    ProcessOutputStreamArgs,
    ProcessToolCallArgs,
    ProcessToolCallResult,
    ProcessToolResultArgs,
    ProcessToolResultResult,
)
from sluicegate.processors.base import Processor, implements
from sluicegate.processors.types import ErrorProcessor, InputProcessor, OutputProcessor

if TYPE_CHECKING:
    from sluicegate.guardrails.presidio import PresidioRecognizer
    from sluicegate.guardrails.pseudonyms import (
        InMemoryPseudonymStore,
        PseudonymKeyError,
        PseudonymStore,
        new_pseudonym_key,
    )
    from sluicegate.processors.builtin.batch_parts import BatchPartsProcessor
    from sluicegate.processors.builtin.classifier import ClassifierProcessor
    from sluicegate.processors.builtin.context_compactor import ContextCompactor
    from sluicegate.processors.builtin.cost_guard import CostGuardProcessor, InMemoryUsageStore
    from sluicegate.processors.builtin.evaluation_moderation import (
        EvaluationModerationProcessor,
        EvaluationVerdict,
    )
    from sluicegate.processors.builtin.language_detector import LanguageDetector
    from sluicegate.processors.builtin.message_history import MessageHistory
    from sluicegate.processors.builtin.model_call_limit import ModelCallLimit
    from sluicegate.processors.builtin.model_router import ModelRouterProcessor
    from sluicegate.processors.builtin.model_selection import ModelSelectionDecision, ModelSelectionProcessor
    from sluicegate.processors.builtin.moderation import ModerationProcessor
    from sluicegate.processors.builtin.pii_detector import PIIDetector
    from sluicegate.processors.builtin.prefill_error_handler import PrefillErrorHandler
    from sluicegate.processors.builtin.prompt_injection_detector import PromptInjectionDetector
    from sluicegate.processors.builtin.provider_history_compat import CompatRule, ProviderHistoryCompat
    from sluicegate.processors.builtin.refusal_handler import RefusalHandler
    from sluicegate.processors.builtin.regex_filter import RegexFilter, RegexFilterProcessor
    from sluicegate.processors.builtin.response_cache import ResponseCache, build_response_cache_key
    from sluicegate.processors.builtin.semantic_recall import SemanticRecall
    from sluicegate.processors.builtin.stream_error_retry import (
        RetryMatcher,
        StreamErrorRetryProcessor,
        is_bad_request_error,
        is_retryable_openai_responses_stream_error,
    )
    from sluicegate.processors.builtin.system_prompt_scrubber import SystemPromptScrubber
    from sluicegate.processors.builtin.token_limiter import TokenLimiter, TokenLimiterProcessor
    from sluicegate.processors.builtin.tool_call_filter import ToolCallFilter
    from sluicegate.processors.builtin.tool_call_limit import ToolCallLimit
    from sluicegate.processors.builtin.tool_result_token_limiter import ToolResultTokenLimiter
    from sluicegate.processors.builtin.tool_retry import RetryingTool, ToolRetry
    from sluicegate.processors.builtin.tool_search import ToolSearchProcessor
    from sluicegate.processors.builtin.unicode_normalizer import UnicodeNormalizer
    from sluicegate.processors.builtin.working_memory import WorkingMemory
    from sluicegate.processors.step_schema import ProcessorStepSchema
    from sluicegate.storage.call_counts import CallCountStore, InMemoryCallCountStore
    from sluicegate.storage.context_summaries import ContextSummaryStore, InMemoryContextSummaryStore

_BUILTINS: dict[str, str] = {
    "UnicodeNormalizer": "unicode_normalizer",
    "TokenLimiter": "token_limiter",
    "TokenLimiterProcessor": "token_limiter",
    "ToolCallFilter": "tool_call_filter",
    "ToolResultTokenLimiter": "tool_result_token_limiter",
    "BatchPartsProcessor": "batch_parts",
    "ToolSearchProcessor": "tool_search",
    "CostGuardProcessor": "cost_guard",
    "InMemoryUsageStore": "cost_guard",
    "RegexFilter": "regex_filter",
    "RegexFilterProcessor": "regex_filter",
    "ResponseCache": "response_cache",
    "build_response_cache_key": "response_cache",
    "ProviderHistoryCompat": "provider_history_compat",
    "CompatRule": "provider_history_compat",
    "PrefillErrorHandler": "prefill_error_handler",
    "StreamErrorRetryProcessor": "stream_error_retry",
    "is_retryable_openai_responses_stream_error": "stream_error_retry",
    "is_bad_request_error": "stream_error_retry",
    "RetryMatcher": "stream_error_retry",
    "MessageHistory": "message_history",
    "SemanticRecall": "semantic_recall",
    "WorkingMemory": "working_memory",
    "ModerationProcessor": "moderation",
    "PIIDetector": "pii_detector",
    "PromptInjectionDetector": "prompt_injection_detector",
    "LanguageDetector": "language_detector",
    "SystemPromptScrubber": "system_prompt_scrubber",
    "ModelRouterProcessor": "model_router",
    "ClassifierProcessor": "classifier",
    "RefusalHandler": "refusal_handler",
    "EvaluationModerationProcessor": "evaluation_moderation",
    "EvaluationVerdict": "evaluation_moderation",
    "ToolCallLimit": "tool_call_limit",
    "ModelCallLimit": "model_call_limit",
    "ToolRetry": "tool_retry",
    "RetryingTool": "tool_retry",
    "ContextCompactor": "context_compactor",
    "ModelSelectionProcessor": "model_selection",
    "ModelSelectionDecision": "model_selection",
}


_DEFERRED: dict[str, str] = {
    # A pydantic model: built when first named, not by every `import sluicegate`.
    "ProcessorStepSchema": "sluicegate.processors.step_schema",
    # PIIDetector's pseudonym mappings, kept with the shared guardrail machinery.
    "new_pseudonym_key": "sluicegate.guardrails.pseudonyms",
    "PseudonymKeyError": "sluicegate.guardrails.pseudonyms",
    "PseudonymStore": "sluicegate.guardrails.pseudonyms",
    "InMemoryPseudonymStore": "sluicegate.guardrails.pseudonyms",
    # PIIDetector's offline recognizer for names, places and dates (the `presidio` extra).
    "PresidioRecognizer": "sluicegate.guardrails.presidio",
    # The counters ToolCallLimit and ModelCallLimit keep per thread.
    "CallCountStore": "sluicegate.storage.call_counts",
    "InMemoryCallCountStore": "sluicegate.storage.call_counts",
    # The summaries ContextCompactor keeps per thread.
    "ContextSummaryStore": "sluicegate.storage.context_summaries",
    "InMemoryContextSummaryStore": "sluicegate.storage.context_summaries",
}


def __getattr__(name: str) -> Any:
    builtin = _BUILTINS.get(name)
    module = f"sluicegate.processors.builtin.{builtin}" if builtin is not None else _DEFERRED.get(name)
    if module is None:
        raise AttributeError(f"module 'sluicegate.processors' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


__all__ = [
    "BatchPartsProcessor",
    "CallCountStore",
    "ClassifierProcessor",
    "CompatRule",
    "ContextCompactor",
    "ContextSummaryStore",
    "CostGuardProcessor",
    "ErrorProcessor",
    "EvaluationModerationProcessor",
    "EvaluationVerdict",
    "InMemoryCallCountStore",
    "InMemoryContextSummaryStore",
    "InMemoryPseudonymStore",
    "InMemoryUsageStore",
    "InputProcessor",
    "LanguageDetector",
    "MessageHistory",
    "ModelCallLimit",
    "ModelRouterProcessor",
    "ModelSelectionDecision",
    "ModelSelectionProcessor",
    "ModerationProcessor",
    "OutputProcessor",
    "OutputResult",
    "PIIDetector",
    "PrefillErrorHandler",
    "PresidioRecognizer",
    "ProcessAPIErrorArgs",
    "ProcessAPIErrorResult",
    "ProcessInputArgs",
    "ProcessInputStepArgs",
    "ProcessInputStepResult",
    "ProcessLLMRequestArgs",
    "ProcessLLMRequestResult",
    "ProcessLLMResponseArgs",
    "ProcessOutputResultArgs",
    "ProcessOutputStepArgs",
    "ProcessOutputStreamArgs",
    "ProcessToolCallArgs",
    "ProcessToolCallResult",
    "ProcessToolResultArgs",
    "ProcessToolResultResult",
    "Processor",
    "ProcessorStepSchema",
    "ProcessorViolation",
    "PromptInjectionDetector",
    "ProviderHistoryCompat",
    "PseudonymKeyError",
    "PseudonymStore",
    "RefusalHandler",
    "RegexFilter",
    "RegexFilterProcessor",
    "ResponseCache",
    "RetryMatcher",
    "RetryingTool",
    "SemanticRecall",
    "StreamErrorRetryProcessor",
    "SystemPromptScrubber",
    "TokenLimiter",
    "TokenLimiterProcessor",
    "ToolCallFilter",
    "ToolCallLimit",
    "ToolResultTokenLimiter",
    "ToolRetry",
    "ToolSearchProcessor",
    "TripWire",
    "UnicodeNormalizer",
    "WorkingMemory",
    "build_response_cache_key",
    "implements",
    "is_bad_request_error",
    "is_retryable_openai_responses_stream_error",
    "new_pseudonym_key",
]
