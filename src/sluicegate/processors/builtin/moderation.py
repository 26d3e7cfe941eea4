"""`ModerationProcessor`: an LLM judges text against moderation categories (OpenAI's by
default) and the processor blocks, warns about or filters what scores at or above a threshold —
in the input, in each streamed text chunk, and in the final response."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, get_args

import pydantic

from sluicegate.guardrails.detector import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DetectorModel,
    Verdict,
    judged,
    restrict_enum,
)
from sluicegate.guardrails.guard_options import (
    ChecksInputOnly,
    ErrorStrategy,
    check_choice,
    check_parallel,
    check_threshold,
    default_error_strategy,
)
from sluicegate.guardrails.judge_schema import JudgeLimits
from sluicegate.guardrails.judgement import (
    DEFAULT_MAX_HOLD_MS,
    DEFAULT_OVERLAP_CHARS,
    DEFAULT_WINDOW_CHARS,
    Judgement,
    Release,
)
from sluicegate.guardrails.message_checks import (
    flagged_messages,
    flagged_text,
    input_ids,
    replace_messages,
    response_ids,
    to_check,
)
from sluicegate.guardrails.violations import enforce
from sluicegate.guardrails.windowed_guard import WindowedGuard
from sluicegate.messages import Message
from sluicegate.models.base import LanguageModel
from sluicegate.processors.args import ProcessInputArgs, ProcessOutputResultArgs
from sluicegate.processors.base import Processor

log = logging.getLogger(__name__)

ModerationStrategy = Literal["block", "warn", "filter"]

DEFAULT_CATEGORIES: tuple[str, ...] = (
    "hate",
    "hate/threatening",
    "harassment",
    "harassment/threatening",
    "self-harm",
    "self-harm/intent",
    "self-harm/instructions",
    "sexual",
    "sexual/minors",
    "violence",
    "violence/graphic",
)


class CategoryScore(Verdict):
    category: str = pydantic.Field(description="The moderation category being evaluated")
    score: float = pydantic.Field(
        ge=0,
        le=1,
        description="Confidence between 0 and 1 of how strongly the content matches this category",
    )


class ModerationVerdict(Verdict):
    category_scores: list[CategoryScore] | None = pydantic.Field(
        default=None, description="Array of flagged categories with their confidence scores"
    )
    reason: str | None = pydantic.Field(
        default=None, description="Brief explanation of why content was flagged"
    )


def default_instructions(categories: Sequence[str]) -> str:
    listed = "\n".join(f"- {category}" for category in categories)
    return (
        "You are a content moderation specialist. You evaluate text for policy violations.\n\n"
        f"Evaluate the content against these categories:\n{listed}\n\n"
        "IMPORTANT: list only the categories that are actually flagged. When nothing is wrong, "
        "return an empty array for category_scores.\n\n"
        "Guidelines:\n"
        "- Be thorough but not overly strict\n"
        "- Consider context and intent\n"
        "- Educational, historical or creative content may be fine even when it touches sensitive topics\n"
        "- Focus on content that could cause real harm\n"
        "- Give a brief reason when any category is flagged\n"
        "- List each category at most once"
    )


class ModerationProcessor(ChecksInputOnly, WindowedGuard, Processor):
    """Content moderation by an LLM, for input and output.

    Each message (or streamed text chunk) goes to `model`, which scores it against
    `categories`; content is flagged when a score reaches `threshold` (default 0.5). Then
    `strategy` decides: `"block"` (default) aborts the run with the flagged categories as
    tripwire metadata, `"warn"` lets it through and reports to `on_violation`, `"filter"` drops
    the message or withholds the streamed window. `include_scores` adds every score to the
    report. As an output processor it judges the stream in windows of `window_chars`
    characters (a window also closes after `chunk_window` chunks when that is set, or when text
    has waited `max_hold_ms`), judged while the model keeps generating; with
    `release="vetted"` (the default except for warn) text reaches the client only once a verdict
    covered it. `error_strategy` says what a failed detector call means (see `guardrails.detector`).
    `provider_options`
    go with each detector call; `json_prompt_injection` also states the answer's JSON schema in
    the detector's system message, for models without a native JSON mode.

    Example::

        moderation = ModerationProcessor(
            model="openai/gpt-5-nano", categories=["hate", "harassment", "violence"], threshold=0.7
        )
        moderation.on_violation = lambda v: audit.record(v.detail)
        agent = Agent(name="support", model="openai/gpt-5", input_processors=[moderation])
    """

    id = "moderation"
    name = "Moderation"

    def __init__(
        self,
        *,
        model: str | LanguageModel,
        categories: Sequence[str] | None = None,
        threshold: float = 0.5,
        strategy: ModerationStrategy = "block",
        instructions: str | None = None,
        include_scores: bool = False,
        chunk_window: int = 0,
        window_chars: int = DEFAULT_WINDOW_CHARS,
        overlap_chars: int = DEFAULT_OVERLAP_CHARS,
        max_hold_ms: float = DEFAULT_MAX_HOLD_MS,
        release: Release | None = None,
        provider_options: dict[str, Any] | None = None,
        json_prompt_injection: bool = False,
        error_strategy: ErrorStrategy | None = None,
        run_in_parallel: bool = False,
        max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS,
    ) -> None:
        super().__init__()
        check_choice("strategy", strategy, get_args(ModerationStrategy))
        check_threshold(threshold)
        self.init_windows(
            strategy=strategy,
            window_chars=window_chars,
            overlap_chars=overlap_chars,
            max_hold_ms=max_hold_ms,
            release=release,
            chunk_window=chunk_window,
        )
        self.categories: tuple[str, ...] = tuple(categories) if categories else DEFAULT_CATEGORIES
        self.threshold = threshold
        self.strategy: ModerationStrategy = strategy
        self.include_scores = include_scores
        self.detector = DetectorModel(
            model,
            instructions=instructions or default_instructions(self.categories),
            schema=ModerationVerdict,
            json_schema=restrict_enum(
                ModerationVerdict.model_json_schema(), "CategoryScore", "category", self.categories
            ),
            judge_limits=JudgeLimits(
                order=("category_scores", "reason"),
                findings={"category_scores": len(self.categories)},
                enums={"category": self.categories},
                lengths={"reason": 160},
            ),
            schema_name="moderation_result",
            provider_options=provider_options,
            json_prompt_injection=json_prompt_injection,
            label="ModerationProcessor",
            max_output_tokens=max_output_tokens,
        )
        self.error_strategy: ErrorStrategy = default_error_strategy(strategy, error_strategy)
        self.run_in_parallel = check_parallel(strategy, run_in_parallel)

    # ------------------------------------------------------------------ hooks

    async def process_input(self, args: ProcessInputArgs) -> list[Message] | None:
        return await self._moderate_messages(
            args.messages, to_check(args.messages, input_ids(args)), args.abort
        )

    async def process_output_result(self, args: ProcessOutputResultArgs) -> list[Message] | None:
        checked = to_check(args.messages, response_ids(args))
        return await self._moderate_messages(args.messages, checked, args.abort, self.response_detector(args))

    async def judge_response(self, text: str, args: Any) -> ModerationVerdict | None:
        return await self.moderate(text)

    async def judge_window(self, text: str, args: Any) -> Judgement:
        """One streamed window's verdict (see `guardrails.windows`): block aborts, filter withholds it."""
        verdict = await flagged_text(text, lambda window: self.moderate(window, stream=True), self.is_flagged)
        if verdict is None:
            return Judgement()
        self._handle(verdict, args.abort)
        return Judgement(flagged=True, drop=self.strategy == "filter", reason=verdict.reason or "moderation")

    # ------------------------------------------------------------------ moderation

    async def moderate(self, content: str, *, stream: bool = False) -> ModerationVerdict | None:
        """The detector's verdict on `content` (None when the detector failed), keeping only
        the configured categories."""
        verdict = await judged(
            self, self.detector, self._prompt(content, stream), error_strategy=self.error_strategy
        )
        if verdict is not None and verdict.category_scores:
            verdict.category_scores = [s for s in verdict.category_scores if s.category in self.categories]
        return verdict

    def is_flagged(self, verdict: ModerationVerdict) -> bool:
        return any(score.score >= self.threshold for score in verdict.category_scores or ())

    def _prompt(self, content: str, stream: bool) -> str:
        note = (
            " This is part of a stream: you see one window of the answer (its beginning may repeat "
            "the end of the previous window). Make your best judgement on the content."
            if stream
            else ""
        )
        return f'Please evaluate the following content for moderation.{note}\n\nContent: "{content}"'

    async def _moderate_messages(
        self,
        messages: list[Message],
        checked: list[Message],
        abort: Any,
        detect: Callable[[str], Awaitable[ModerationVerdict | None]] | None = None,
    ) -> list[Message] | None:
        dropped: set[str] = set()
        async for message, _, verdict in flagged_messages(checked, detect or self.moderate, self.is_flagged):
            self._handle(verdict, abort)
            if self.strategy == "filter":
                dropped.add(message.id)
        return replace_messages(messages, dict.fromkeys(dropped))

    def _handle(self, verdict: ModerationVerdict, abort: Any) -> None:
        scores = verdict.category_scores or []
        flagged = [s.category for s in scores if s.score >= self.threshold]
        message = f"Content flagged for moderation. Categories: {', '.join(flagged)}"
        if verdict.reason:
            message += f". Reason: {verdict.reason}"
        detail: dict[str, Any] = {"categories": flagged, "reason": verdict.reason}
        if self.include_scores:
            message += ". Scores: " + ", ".join(f"{s.category}: {s.score}" for s in scores)
            detail["scores"] = {s.category: s.score for s in scores}
        enforce(self, self.strategy, message, detail, abort, label="ModerationProcessor", log=log)
