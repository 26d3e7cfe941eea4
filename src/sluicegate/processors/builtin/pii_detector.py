"""`PIIDetector`: an LLM finds personally identifiable information (emails, phone numbers, card
numbers, names, addresses, ...) and the processor redacts it, drops the message, warns,
blocks or pseudonymizes it — in the input, in each streamed text chunk, in tool results and in
the final response."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from sluicegate.guardrails.data_parts import check_flag, guard_data_part
from sluicegate.guardrails.detector import (
    DEFAULT_MAX_OUTPUT_TOKENS,
    DetectorModel,
    judged,
)
from sluicegate.guardrails.guard_options import (
    ChecksInputOnly,
    ErrorStrategy,
    LLMMode,
    check_parallel,
    default_error_strategy,
    describe_detection,
    resolve_llm,
)
from sluicegate.guardrails.judgement import (
    DEFAULT_MAX_HOLD_MS,
    DEFAULT_MAX_VALUE_CHARS,
    DEFAULT_OVERLAP_CHARS,
    DEFAULT_WINDOW_CHARS,
    Judgement,
    Release,
    redaction_judgement,
)
from sluicegate.guardrails.message_checks import (
    flagged_messages,
    flagged_text,
    input_ids,
    replace_messages,
    response_ids,
    to_check,
    with_text,
)
from sluicegate.guardrails.pseudonym_tokens import release_held
from sluicegate.guardrails.pseudonyms import (
    DEFAULT_MAX_PSEUDONYMS,
    Pseudonymizer,
)
from sluicegate.guardrails.recognizer import Recognizer
from sluicegate.guardrails.regex_rules import SECRET_RULES, URL_RULES, pii_rules
from sluicegate.guardrails.shown_arguments import DEFAULT_TOOL_ARGUMENTS, ToolArguments, check_tool_arguments
from sluicegate.guardrails.shown_arguments import export as export_shown
from sluicegate.guardrails.shown_arguments import forget as forget_shown
from sluicegate.guardrails.shown_arguments import restore as restore_shown
from sluicegate.guardrails.spans import locate, map_texts, substitute, value_texts
from sluicegate.guardrails.tool_calls import ARGUMENT_KINDS, ToolCallJudge, drop_held, refusal_for
from sluicegate.guardrails.violations import WITHHELD_TOOL_RESULT, enforce
from sluicegate.guardrails.windowed_guard import WindowedGuard
from sluicegate.messages import Message
from sluicegate.models.base import LanguageModel
from sluicegate.processors.args import (
    ProcessInputArgs,
    ProcessOutputResultArgs,
    ProcessOutputStreamArgs,
    ProcessToolCallArgs,
    ProcessToolCallResult,
    ProcessToolResultArgs,
    ProcessToolResultResult,
)
from sluicegate.processors.base import Processor
from sluicegate.processors.builtin.pii_masking import mask_value as mask_value
from sluicegate.processors.builtin.pii_options import PIIStrategy as PIIStrategy
from sluicegate.processors.builtin.pii_options import RedactionMethod as RedactionMethod
from sluicegate.processors.builtin.pii_options import check_pii_options
from sluicegate.processors.builtin.pii_pseudonymize import PIIPseudonymization
from sluicegate.processors.builtin.pii_verdict import DEFAULT_DETECTION_TYPES as DEFAULT_DETECTION_TYPES
from sluicegate.processors.builtin.pii_verdict import PIICategoryScore as PIICategoryScore
from sluicegate.processors.builtin.pii_verdict import PIIDetection as PIIDetection
from sluicegate.processors.builtin.pii_verdict import PIIVerdict as PIIVerdict
from sluicegate.processors.builtin.pii_verdict import default_instructions as default_instructions
from sluicegate.processors.builtin.pii_verdict import judge_json_schema
from sluicegate.processors.builtin.pii_verdict import judge_limits as judge_limits
from sluicegate.processors.builtin.regex_filter import RegexFilterProcessor
from sluicegate.stream.chunk import Chunk
from sluicegate.tracing.findings import redacted

log = logging.getLogger(__name__)


_PATTERN_TYPES = {
    kind: kind
    for kind in ("email", "credit-card", "ssn", "phone", "iban", "ip-address", "crypto-wallet", "url")
}
"""`RegexFilter` rule names as detection types; every secret rule counts as `api-key`."""


class PIIDetector(ChecksInputOnly, WindowedGuard, Processor):
    """PII detection and redaction by an LLM, for input and output.

    `model` looks for `detection_types` (emails, phones, card numbers, SSNs, API keys, IPs,
    names, addresses, dates of birth, URLs, UUIDs, crypto wallets, IBANs by default). Content is
    flagged when a detection's confidence (or, without detections, a type's score) reaches
    `threshold` (default 0.6). `strategy`: `"redact"` (default) rewrites the text, `"filter"`
    drops the message or chunk, `"warn"` lets it through and reports to `on_violation`,
    `"block"` aborts with the PII types as tripwire metadata. `redaction_method`: `"mask"`
    (default; `preserve_format` keeps shapes like `***-**-6789`), `"hash"` (`[HASH:1a2b3c4d]`,
    SHA-256), `"remove"`, or `"placeholder"` (`placeholder_text`, else `[EMAIL]`, `[PHONE]`, ...).
    When a flagged text cannot be redacted it is dropped rather than passed on. Reports never
    carry the PII itself; `include_detections` adds each detection's type, confidence and span.
    There is a deterministic pass (the `RegexFilter` PII, secret and URL presets);
    `llm` says when the model is asked: `"always"` (default with a `model`: the model decides),
    `"when-unsure"` (the patterns decide when they find something, the model otherwise) or
    `"never"` (default without a `model`: offline and deterministic).
    `recognizer` adds an offline recognizer to the pattern pass, for what patterns cannot find:
    `PresidioRecognizer()` (the `presidio` extra) finds names, places and dates with
    presidio-analyzer and spaCy, in a worker thread. What it reports counts, whatever
    `detection_types` and `threshold` say (its own options decide); the stream is then judged in
    windows, so a name split across chunks is judged whole.
    `phone_regions` (ISO 3166 codes; default `DEFAULT_PHONE_REGIONS`, Presidio's list and
    more) are the plans a phone number written without `+country code` is tried in.
    `error_strategy` says what a failed detector call means: `"block"` (default for block and
    redact), `"allow"` (logged and reported) or `"fallback"` (the pattern pass decides). The
    stream is judged in windows of `window_chars` (see `ModerationProcessor`); a value split
    across chunks is judged whole, and with `release="vetted"` nothing reaches the client
    before a verdict covered it. A value still being written at a window's end (a key, a JWT)
    is held until it ends, up to `max_value_chars` (default 8,192): a longer one is redacted
    whole and logged. The model's tool-call arguments (strings, keys and numbers) are judged
    whole, in one detector call, before the call reaches the client, an approval card or the
    tool: `"block"` stops the run, `"redact"` rewrites them (and their streamed text),
    `"filter"` drops the call; with a vetted release their streamed deltas wait for that
    verdict. A redaction is what people and stores see of the call (the client stream,
    approval cards, stored history, spans): the tool receives the model's own arguments, unless
    `tool_arguments="rewritten"` (then the redacted ones: exfiltration control).
    `data-*` chunks (what tools and processors write to the client)
    are checked too, their strings judged like text (see `guardrails.data_parts`; a chunk to filter is
    dropped); `process_data_parts=False` leaves them alone.

    `"pseudonymize"` replaces each value with a typed, numbered token (`<EMAIL_1>`), the same
    token for the same value throughout a conversation (a thread of a resource; without a
    thread, one run). The model sees only tokens: in the input, in tool results, and in every
    prompt (`process_llm_request` conceals known values in remembered history and system
    messages too). The tokens in a tool call's arguments are restored for the tool alone
    (`process_tool_call`): the `tool-call` chunk, the history and the client keep the tokens.
    `restore_output=True` also restores them in the streamed answer text (a token split across
    chunks is held until complete; a token the model made up stays as it is); what the client
    receives is what is stored. The mapping is sealed with AES-GCM under `pseudonym_key` (the
    `pii` extra) in `pseudonym_store`: in memory by default, or a `SQLiteStore` /
    `PostgresStore` (then the key is required). Put the same detector in both arrays: input
    (the user's messages) and output (tool results, tool arguments, the answer).

    Example::

        pii = PIIDetector(model="openai/gpt-5-nano", detection_types=["email", "phone", "ssn"],
                          strategy="redact", redaction_method="placeholder")
        agent = Agent(name="private", model="openai/gpt-5", input_processors=[pii])

        key = new_pseudonym_key()  # keep it with the application's secrets
        pseudo = PIIDetector(strategy="pseudonymize", restore_output=True,
                             pseudonym_key=key, pseudonym_store=SQLiteStore("memory.db"))
        agent = Agent(name="crm", model="openai/gpt-5", tools=[send_email],
                      input_processors=[pseudo], output_processors=[pseudo])
    """

    counts_redactions = True  # traced runs count its redactions per kind (tracing.findings)

    id = "pii-detector"
    name = "PII Detector"

    def __init__(
        self,
        *,
        model: str | LanguageModel | None = None,
        llm: LLMMode | None = None,
        detection_types: Sequence[str] | None = None,
        threshold: float = 0.6,
        strategy: PIIStrategy = "redact",
        redaction_method: RedactionMethod = "mask",
        placeholder_text: str | None = None,
        preserve_format: bool = True,
        include_detections: bool = False,
        instructions: str | None = None,
        provider_options: dict[str, Any] | None = None,
        json_prompt_injection: bool = False,
        error_strategy: ErrorStrategy | None = None,
        run_in_parallel: bool = False,
        window_chars: int = DEFAULT_WINDOW_CHARS,
        overlap_chars: int = DEFAULT_OVERLAP_CHARS,
        max_hold_ms: float = DEFAULT_MAX_HOLD_MS,
        max_value_chars: int = DEFAULT_MAX_VALUE_CHARS,
        release: Release | None = None,
        max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS,
        restore_output: bool = False,
        pseudonym_key: bytes | str | None = None,
        pseudonym_store: Any = None,
        max_pseudonyms: int = DEFAULT_MAX_PSEUDONYMS,
        process_data_parts: bool = True,
        recognizer: Recognizer | None = None,
        phone_regions: Sequence[str] | None = None,
        tool_arguments: ToolArguments = DEFAULT_TOOL_ARGUMENTS,
    ) -> None:
        super().__init__()
        self.tool_arguments = check_tool_arguments(tool_arguments)
        check_pii_options(
            strategy=strategy,
            redaction_method=redaction_method,
            threshold=threshold,
            tool_arguments=tool_arguments,
            recognizer=recognizer,
            restore_output=restore_output,
            pseudonym_key=pseudonym_key,
            pseudonym_store=pseudonym_store,
            max_pseudonyms=max_pseudonyms,
        )
        self.recognizer = recognizer
        self.process_data_parts = check_flag(process_data_parts)
        self.restore_output = restore_output
        self.pseudonyms: Pseudonymizer | None = None
        self.pseudonymization: PIIPseudonymization | None = None
        if strategy == "pseudonymize":
            self.pseudonyms = Pseudonymizer(
                key=pseudonym_key, store=pseudonym_store, max_values=max_pseudonyms
            )
            self._pseudonymize_with(self.pseudonyms, threshold)
        if strategy == "redact" and tool_arguments == "shown":
            # A hook per tool call only where it can change what the tool receives.
            setattr(self, "process_tool_call", self._restore_for_tool)  # noqa: B010
        self.llm: LLMMode = resolve_llm("PIIDetector", model, llm)
        self.description = describe_detection(
            "PII detection and redaction", self.llm, "validated patterns", "input and output"
        )
        self.init_windows(
            strategy=strategy,
            window_chars=window_chars,
            overlap_chars=overlap_chars,
            max_hold_ms=max_hold_ms,
            release=release,
            max_value_chars=max_value_chars,
        )
        self.detection_types: tuple[str, ...] = (
            tuple(detection_types) if detection_types else DEFAULT_DETECTION_TYPES
        )
        self.threshold = threshold
        self.strategy: PIIStrategy = strategy
        self.redaction_method: RedactionMethod = redaction_method
        self.placeholder_text = placeholder_text
        self.preserve_format = preserve_format
        self.include_detections = include_detections
        self.patterns = RegexFilterProcessor(
            rules=[*pii_rules(phone_regions), *SECRET_RULES, *URL_RULES],
            strategy="redact",
            max_value_chars=max_value_chars,
        )
        self._exact_stream = self._offline_stream(tool_arguments) if recognizer is None else None
        self.detector: DetectorModel[PIIVerdict] | None = (
            None
            if self.llm == "never"
            else DetectorModel(
                model,
                instructions=instructions or default_instructions(self.detection_types),
                schema=PIIVerdict,
                json_schema=judge_json_schema(strategy, self.detection_types),
                judge_limits=judge_limits(self.detection_types),
                schema_name="pii_detection_result",
                provider_options=provider_options,
                json_prompt_injection=json_prompt_injection,
                label="PIIDetector",
                max_output_tokens=max_output_tokens,
            )
        )
        if self.restore_output or self._exact_stream is not None:
            # These streams hold text by content, never by time: no deadline timer per chunk
            # (a `None` stream_deadline tells the runner so).
            setattr(self, "stream_deadline", None)  # noqa: B010
        self.error_strategy: ErrorStrategy = default_error_strategy(
            "redact" if strategy == "pseudonymize" else strategy, error_strategy
        )
        self.run_in_parallel = check_parallel(strategy, run_in_parallel)
        self._tool_calls = self._tool_call_judge(tool_arguments)
        if strategy == "filter" and self._tool_calls is not None:
            # A call whose arguments the detector flagged is refused (`args.reject`), not dropped.
            setattr(self, "process_tool_call", self._refuse_flagged)  # noqa: B010

    def _pseudonymize_with(self, pseudonyms: Pseudonymizer, threshold: float) -> None:
        """Set up `strategy="pseudonymize"`: its helper and the hooks only it needs, set on
        this object alone (the other strategies add no hook call per model or tool call)."""
        self.pseudonymization = PIIPseudonymization(
            pseudonyms,
            threshold=threshold,
            detect=self.detect,
            is_flagged=self.is_flagged,
            act=self._handle,
            pattern_verdict=self.pattern_verdict,
        )
        setattr(self, "process_llm_request", self.pseudonymization.conceal_prompt)  # noqa: B010
        setattr(self, "process_tool_call", self.pseudonymization.restore_tool_args)  # noqa: B010

    def _offline_stream(self, tool_arguments: ToolArguments) -> RegexFilterProcessor | None:
        """Offline redaction streams like RegexFilter: exact hold-back, no windows (a recognizer
        judges windows: it needs words around a name to find it). None when the model is asked,
        the strategy is not `"redact"` or no pattern finds a wanted type."""
        wanted = [
            r for r in self.patterns.rules if _PATTERN_TYPES.get(r.name, "api-key") in self.detection_types
        ]
        if self.llm != "never" or self.strategy != "redact" or not wanted:
            return None
        stream = RegexFilterProcessor(
            rules=wanted, strategy="redact", process_data_parts=True, tool_arguments=tool_arguments
        )
        stream.replacement_for = lambda value, rule: self.redact_value(
            value, _PATTERN_TYPES.get(rule.name, "api-key")
        )
        return stream

    def _tool_call_judge(self, tool_arguments: ToolArguments) -> ToolCallJudge | None:
        """The model's tool-call arguments, judged whole before the call goes anywhere (the
        offline redaction stream does this itself; pseudonymized arguments hold tokens)."""
        if self.pseudonyms is not None or self._exact_stream is not None:
            return None
        return ToolCallJudge(
            detect=self.detect,
            is_flagged=self.is_flagged,
            act=self._handle,
            findings=self._confident,
            redact_value=self.redact_value,
            strategy=self.strategy,
            hold=self.release == "vetted",
            label="PIIDetector",
            tool_arguments=tool_arguments,
        )

    # ------------------------------------------------------------------ hooks

    async def process_input(self, args: ProcessInputArgs) -> list[Message] | None:
        checked = to_check(args.messages, input_ids(args))
        if self.pseudonymization is not None:
            return await self.pseudonymization.messages(args, args.messages, checked, self.detect)
        return await self._check_messages(args.messages, checked, args.abort)

    async def process_output_result(self, args: ProcessOutputResultArgs) -> list[Message] | None:
        checked = to_check(args.messages, response_ids(args))
        if self.pseudonymization is not None:
            if self.restore_output:
                return None  # the answer was restored for the user and stored as they received it
            return await self.pseudonymization.messages(
                args, args.messages, checked, self.response_detector(args)
            )
        return await self._check_messages(args.messages, checked, args.abort, self.response_detector(args))

    async def judge_response(self, text: str, args: Any) -> PIIVerdict | None:
        return await self.detect(text)

    async def process_tool_result(self, args: ProcessToolResultArgs) -> ProcessToolResultResult | None:
        """A tool's result, checked (one detector call for all its strings, keys and numbers)
        and redacted before the model, the history and the client see it."""
        if self.pseudonymization is not None:
            return await self.pseudonymization.tool_result(args)
        verdict = await flagged_text("\n".join(value_texts(args.result)), self.detect, self.is_flagged)
        if verdict is None:
            return None
        self._handle(verdict, args.abort)
        if self.strategy == "warn":
            return None
        detections = self._confident(verdict)
        if self.strategy == "filter" or not detections:
            return ProcessToolResultResult(WITHHELD_TOOL_RESULT.format(label="PIIDetector"))

        def redact_leaf(text: str) -> str:
            spans = locate(text, detections)
            return substitute(text, spans, self.redact_value) if spans else text

        return ProcessToolResultResult(map_texts(args.result, redact_leaf))

    def _restore_for_tool(self, args: ProcessToolCallArgs) -> ProcessToolCallResult | None:
        """`process_tool_call` when redacting for display only (`tool_arguments="shown"`): the
        tool receives the model's arguments where this detector redacted them."""
        restored, changed = restore_shown(args.state, args.tool_call_id, args.args)
        return ProcessToolCallResult(restored) if changed else None

    def _refuse_flagged(self, args: ProcessToolCallArgs) -> None:
        """`process_tool_call` with `strategy="filter"`: the calls the stream hook flagged."""
        reason = refusal_for(args.state, args.tool_call_id)
        if reason is not None:
            args.reject(reason)

    def suspend_state(self, state: dict[str, Any]) -> dict[str, Any]:
        """A run waiting on a person keeps what its calls' tools will receive."""
        return export_shown(state)

    async def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk | list[Chunk] | None:
        if self.restore_output and self.pseudonymization is not None:
            return await self.pseudonymization.restore_stream(args)
        if self._exact_stream is not None:
            return self._exact_stream.process_output_stream(args)
        part = args.part
        if part.type.startswith("data-"):
            return await guard_data_part(self, args, WindowedGuard.process_output_stream)
        released = await WindowedGuard.process_output_stream(self, args)
        if part.type not in ARGUMENT_KINDS or self._tool_calls is None:
            if part.type == "step-finish":
                forget_shown(args.state)
            return released
        # Text held before the call goes out first (the windows release it on any other
        # chunk); the call itself waits for its own verdict.
        before = released if isinstance(released, list) else [] if released is None else [released]
        if not any(chunk is part for chunk in before):
            return released  # the stream stopped (a failed verdict): nothing else goes out
        out = [chunk for chunk in before if chunk is not part]
        out.extend(await self._tool_calls.on_chunk(args, part))
        if not out:
            return None
        return out[0] if len(out) == 1 else out

    async def flush_output_stream(self, args: ProcessOutputStreamArgs) -> list[Chunk]:
        if self.restore_output:
            return release_held(args.state)
        if self._exact_stream is not None:
            return self._exact_stream.flush_output_stream(args)
        drop_held(args.state)
        return await WindowedGuard.flush_output_stream(self, args)

    def judges_windows(self) -> bool:
        return self._exact_stream is None

    async def judge_window(self, text: str, args: Any) -> Judgement:
        """One streamed window's verdict (see `guardrails.windows`): spans to redact, or the window
        withheld (filter, or a redaction that cannot be located)."""
        verdict = await flagged_text(text, self.detect, self.is_flagged)
        if verdict is None:
            return Judgement()
        self._handle(verdict, args.abort)
        if self.pseudonymization is not None:
            return await self.pseudonymization.window_judgement(text, verdict, args)
        return redaction_judgement(
            self.strategy,
            lambda: locate(text, [d for d in verdict.detections or () if d.confidence >= self.threshold]),
            self.redact_value,
            "PII detected",
        )

    # ------------------------------------------------------------------ detection

    async def detect(self, content: str) -> PIIVerdict | None:
        """The verdict on `content`: the pattern pass, then (per `llm`) the detector's; None
        when a failed detector was allowed through."""
        if self.detector is None:
            return await self.offline_verdict(content)
        if self.llm == "when-unsure":
            found = await self.offline_verdict(content)
            if found.detections:
                return found
        fell_back = False

        def fallback() -> PIIVerdict:
            nonlocal fell_back
            fell_back = True
            return self.pattern_verdict(content)

        verdict = await judged(
            self,
            self.detector,
            "Analyze the following content for PII (personally identifiable information):\n"
            f'Content: "{content}"',
            error_strategy=self.error_strategy,
            fallback=fallback,
        )
        if fell_back and verdict is not None and self.recognizer is not None:
            verdict.detections = [*(verdict.detections or ()), *await self._recognized(content)]
        return verdict

    async def offline_verdict(self, content: str) -> PIIVerdict:
        """The offline pass: the pattern pass and, when set, the recognizer (in a worker
        thread: its analysis is CPU-bound and must not stall the stream)."""
        verdict = self.pattern_verdict(content)
        if self.recognizer is not None:
            verdict.detections = [*(verdict.detections or ()), *await self._recognized(content)]
        return verdict

    async def _recognized(self, content: str) -> list[PIIDetection]:
        """The recognizer's findings in `content`; what it reports counts (its own threshold
        decided), whatever `detection_types` lists."""
        assert self.recognizer is not None
        if not content.strip():
            return []
        found = await asyncio.to_thread(self.recognizer.analyze, content)
        return [
            PIIDetection(
                type=f.type, value=content[f.start : f.end], confidence=1.0, start=f.start, end=f.end
            )
            for f in found
        ]

    def pattern_verdict(self, content: str) -> PIIVerdict:
        """What the `RegexFilter` PII, secret and URL presets find in `content`, as a verdict
        (no model call): emails, phones, card numbers, SSNs, IBANs, IP addresses, crypto
        wallets, URLs, API keys and tokens."""
        detections = [
            PIIDetection(
                type=_PATTERN_TYPES.get(rule.name, "api-key"),
                value=content[start:end],
                confidence=1.0,
                start=start,
                end=end,
            )
            for start, end, rule in self.patterns.find(content)
        ]
        wanted = [d for d in detections if d.type in self.detection_types]
        return PIIVerdict(detections=wanted, categories=None)

    def _confident(self, verdict: PIIVerdict) -> list[PIIDetection]:
        """The detections to redact in a value's pieces: their offsets (into the joined text
        the detector saw) do not apply there, so each is found by its value."""
        return [
            d.model_copy(update={"start": -1, "end": -1})
            for d in verdict.detections or ()
            if d.confidence >= self.threshold
        ]

    def is_flagged(self, verdict: PIIVerdict) -> bool:
        if verdict.detections:
            return any(d.confidence >= self.threshold for d in verdict.detections)
        return any(c.score >= self.threshold for c in verdict.categories or ())

    def redact(self, content: str, verdict: PIIVerdict) -> str | None:
        """`content` with every detection replaced by `redaction_method`; the model's own
        `redacted_content` only when no detection can be located. None: nothing usable."""
        spans = locate(content, verdict.detections or ())
        redacted = substitute(content, spans, self.redact_value) if spans else verdict.redacted_content or ""
        return redacted if redacted.strip() else None

    def redact_value(self, value: str, pii_type: str) -> str:
        redacted(pii_type)
        if self.redaction_method == "hash":
            return f"[HASH:{hashlib.sha256(value.encode()).hexdigest()[:8]}]"
        if self.redaction_method == "remove":
            return ""
        if self.redaction_method == "placeholder":
            return self.placeholder_text if self.placeholder_text is not None else f"[{pii_type.upper()}]"
        return mask_value(value, pii_type, self.preserve_format)

    async def _check_messages(
        self,
        messages: list[Message],
        checked: list[Message],
        abort: Any,
        detect: Callable[[str], Awaitable[PIIVerdict | None]] | None = None,
    ) -> list[Message] | None:
        replaced: dict[str, Message | None] = {}
        async for message, text, verdict in flagged_messages(checked, detect or self.detect, self.is_flagged):
            self._handle(verdict, abort)
            if self.strategy == "filter":
                replaced[message.id] = None
            elif self.strategy == "redact":
                redacted = self.redact(text, verdict)
                if redacted is None:
                    log.warning("[PIIDetector] no redaction available; dropping the message")
                replaced[message.id] = None if redacted is None else with_text(message, redacted)
        return replace_messages(messages, replaced)

    def _handle(self, verdict: PIIVerdict, abort: Any) -> None:
        types = [c.type for c in verdict.categories or () if c.score >= self.threshold]
        for detection in verdict.detections or ():
            if detection.confidence >= self.threshold and detection.type not in types:
                types.append(detection.type)
        message = f"PII detected. Types: {', '.join(types)}"
        detail: dict[str, Any] = {"types": types}
        if self.include_detections and verdict.detections:
            message += f". Detections: {len(verdict.detections)} items"
            detail["detections"] = [
                {"type": d.type, "confidence": d.confidence, "start": d.start, "end": d.end}
                for d in verdict.detections
            ]
        enforce(self, self.strategy, message, detail, abort, label="PIIDetector", log=log)
