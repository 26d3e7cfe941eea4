"""`ProviderHistoryCompat`: repair message history one provider rejects from another.

A `CompatRule` fixes one known incompatibility, either

- reactively (`error_patterns` + `fix`): after a provider rejection whose message or response
  body matches, `fix` mutates the persisted messages and the request is retried (once per
  request), so the repaired history is what memory saves; or
- preemptively (`apply_to_prompt`): rewrites the outbound V2 prompt of each call; nothing is
  persisted.

Built-in rules: `anthropic-tool-id-format` (reactive), `cerebras-strip-reasoning-content` and
`anthropic-strip-foreign-reasoning-content` (preemptive). Additional rules run after them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sluicegate.errors import APICallError
from sluicegate.messages import Message
from sluicegate.processors.args import (
    ProcessAPIErrorArgs,
    ProcessAPIErrorResult,
    ProcessLLMRequestArgs,
    ProcessLLMRequestResult,
)
from sluicegate.processors.base import Processor

Prompt = list[dict[str, Any]]


@dataclass
class CompatRule:
    """One provider-history fix.

    `error_patterns`: regexes (compiled or strings, searched case-sensitively as given) matched
    against the error message and an `APICallError`'s response body. `fix(messages)`: mutate the
    stored messages in place, return True when something changed. `apply_to_prompt(prompt=,
    model=)`: return a rewritten prompt, or None to leave it unchanged.
    """

    name: str
    error_patterns: Sequence[re.Pattern[str] | str] = field(default_factory=list)
    fix: Callable[[list[Message]], bool] | None = None
    apply_to_prompt: Callable[..., Prompt | None] | None = None

    def matches(self, error: BaseException | None) -> bool:
        if error is None or not self.error_patterns:
            return False
        candidates = [str(error)]
        if isinstance(error, APICallError) and isinstance(error.response_body, str):
            candidates.append(error.response_body)
        patterns = [re.compile(p) if isinstance(p, str) else p for p in self.error_patterns]
        return any(p.search(text) for text in candidates if text for p in patterns)


# ---------------------------------------------------------------------- provider detection


def matches_provider(model: Any, prefix: str) -> bool:
    """Whether `model` (a LanguageModel, a model string, or a list of either) is `prefix`'s:
    provider `prefix`, `prefix.<api>` or `prefix-...`, or a model id routed as `prefix/...`."""
    if model is None or (callable(model) and not hasattr(model, "provider")):
        return False
    if isinstance(model, (list, tuple)):
        return any(
            matches_provider(
                getattr(m, "model", None) or (m.get("model") if isinstance(m, dict) else m), prefix
            )
            for m in model
        )
    routed = re.compile(rf"^{re.escape(prefix)}[/:]", re.IGNORECASE)
    if isinstance(model, str):
        return bool(routed.match(model))
    provider = getattr(model, "provider", None)
    if isinstance(provider, str) and re.match(rf"^{re.escape(prefix)}($|[.\-])", provider, re.IGNORECASE):
        return True
    model_id = getattr(model, "model_id", None)
    return isinstance(model_id, str) and bool(routed.match(model_id))


def is_maybe_cerebras(model: Any) -> bool:
    return matches_provider(model, "cerebras")


def is_maybe_anthropic(model: Any) -> bool:
    return matches_provider(model, "anthropic")


# ---------------------------------------------------------------------- anthropic-tool-id-format

VALID_TOOL_ID = re.compile(r"^[a-zA-Z0-9_-]+$")


def sanitize_tool_id(tool_call_id: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_-]", "_", tool_call_id)


def _invocations(message: Message) -> list[dict[str, Any]]:
    found = [
        p["toolInvocation"]
        for p in message.content.parts
        if p.get("type") == "tool-invocation" and isinstance(p.get("toolInvocation"), dict)
    ]
    legacy = message.content.extra.get("toolInvocations")
    if isinstance(legacy, list):
        found.extend(inv for inv in legacy if isinstance(inv, dict))
    return found


def fix_tool_ids(messages: list[Message]) -> bool:
    """Rewrite tool-call ids outside `[a-zA-Z0-9_-]` (every occurrence, consistently)."""
    changed = False
    for message in messages:
        for invocation in _invocations(message):
            old = invocation.get("toolCallId")
            if isinstance(old, str) and old and not VALID_TOOL_ID.match(old):
                invocation["toolCallId"] = sanitize_tool_id(old)
                changed = True
    return changed


anthropic_tool_id_format = CompatRule(
    name="anthropic-tool-id-format",
    error_patterns=[
        re.compile(r"tool_use\.id:.*should match pattern", re.IGNORECASE),
        re.compile(r"tool_call_id.*invalid", re.IGNORECASE),
    ],
    fix=fix_tool_ids,
)


# ---------------------------------------------------------------------- reasoning strips


def strip_reasoning(
    prompt: Prompt, should_strip: Callable[[dict[str, Any]], bool] = lambda part: True
) -> Prompt | None:
    """A copy of `prompt` without the assistant reasoning parts `should_strip` selects; None when
    nothing was removed."""
    changed = False
    out: Prompt = []
    for message in prompt:
        content = message.get("content")
        if message.get("role") != "assistant" or not isinstance(content, list):
            out.append(message)
            continue
        kept = [p for p in content if p.get("type") != "reasoning" or not should_strip(p)]
        if len(kept) == len(content):
            out.append(message)
        else:
            changed = True
            out.append({**message, "content": kept})
    return out if changed else None


def is_anthropic_reasoning(part: dict[str, Any]) -> bool:
    for key in ("providerOptions", "providerMetadata"):
        value = part.get(key)
        if isinstance(value, dict) and "anthropic" in value:
            return True
    return False


def _strip_for_cerebras(*, prompt: Prompt, model: Any) -> Prompt | None:
    return strip_reasoning(prompt) if is_maybe_cerebras(model) else None


def _strip_foreign_for_anthropic(*, prompt: Prompt, model: Any) -> Prompt | None:
    if not is_maybe_anthropic(model):
        return None
    return strip_reasoning(prompt, lambda part: not is_anthropic_reasoning(part))


cerebras_strip_reasoning_content = CompatRule(
    name="cerebras-strip-reasoning-content", apply_to_prompt=_strip_for_cerebras
)
anthropic_strip_foreign_reasoning_content = CompatRule(
    name="anthropic-strip-foreign-reasoning-content", apply_to_prompt=_strip_foreign_for_anthropic
)

DEFAULT_COMPAT_RULES: tuple[CompatRule, ...] = (
    anthropic_tool_id_format,
    cerebras_strip_reasoning_content,
    anthropic_strip_foreign_reasoning_content,
)


class ProviderHistoryCompat(Processor):
    """Applies the built-in compatibility rules, then `additional_rules`.

    ```python
    from sluicegate import Agent
    from sluicegate.processors import CompatRule, ProviderHistoryCompat

    def drop_provider_options(*, prompt, model):
        ...  # return a rewritten prompt, or None

    agent = Agent(name="a", instructions="...", model="anthropic/claude-sonnet-4-5",
                  input_processors=[ProviderHistoryCompat(additional_rules=[
                      CompatRule(name="drop-provider-options", apply_to_prompt=drop_provider_options)])])
    ```
    """

    id = "provider-history-compat"
    name = "Provider History Compat"

    def __init__(self, *, additional_rules: Sequence[CompatRule] = ()) -> None:
        super().__init__()
        self.rules: list[CompatRule] = [*DEFAULT_COMPAT_RULES, *additional_rules]

    def process_llm_request(self, args: ProcessLLMRequestArgs) -> ProcessLLMRequestResult | None:
        prompt = args.prompt
        changed = False
        for rule in self.rules:
            if rule.apply_to_prompt is None:
                continue
            rewritten = rule.apply_to_prompt(prompt=prompt, model=args.model)
            if rewritten is not None:
                prompt = rewritten
                changed = True
        return ProcessLLMRequestResult(prompt=prompt) if changed else None

    def process_api_error(self, args: ProcessAPIErrorArgs) -> ProcessAPIErrorResult | None:
        if args.retry_count > 0:
            return None
        messages = args.message_list.get.all.db()
        for rule in self.rules:
            if rule.fix is not None and rule.matches(args.error) and rule.fix(messages):
                return ProcessAPIErrorResult(retry=True)
        return None
