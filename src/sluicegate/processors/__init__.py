"""Processors: the `Processor` base class, its hook types, and the built-in processors.

Built-ins are imported on first use, so `import sluicegate.processors` stays cheap and a
built-in's optional dependencies load only when it is used.
"""

from __future__ import annotations

import importlib
from typing import Any

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
from sluicegate.processors.types import ErrorProcessor, InputProcessor, OutputProcessor, ProcessorStepSchema

_BUILTINS: dict[str, str] = {
    "UnicodeNormalizer": "unicode_normalizer",
    "TokenLimiter": "token_limiter",
    "TokenLimiterProcessor": "token_limiter",
    "ToolCallFilter": "tool_call_filter",
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
    "new_pseudonym_key": "_pseudonyms",
    "PseudonymKeyError": "_pseudonyms",
    "PseudonymStore": "_pseudonyms",
    "InMemoryPseudonymStore": "_pseudonyms",
    "PromptInjectionDetector": "prompt_injection_detector",
    "LanguageDetector": "language_detector",
    "SystemPromptScrubber": "system_prompt_scrubber",
}


def __getattr__(name: str) -> Any:
    module = _BUILTINS.get(name)
    if module is None:
        raise AttributeError(f"module 'sluicegate.processors' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"sluicegate.processors.builtin.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "ErrorProcessor",
    "InputProcessor",
    "OutputProcessor",
    "OutputResult",
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
    "TripWire",
    "implements",
    *_BUILTINS,
]
