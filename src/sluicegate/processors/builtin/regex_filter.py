"""`RegexFilter`: block, redact or flag text matching patterns (PII, secrets, URLs, your own),
in the input, the streamed output and the final result, with no model call.

Streaming never leaks a match split across chunks, yet holds back only what a match still in
progress needs: the `regex` package's partial matching tells where a match could still be
forming, and only the text from there on waits for the next chunk. Since that partial search is
costly, most rules are first ruled out per chunk by a stdlib "lead screen" (see `lead_screen`).

The rules, their presets and the matching live in `sluicegate.guardrails` (`regex_rules`,
`lead_screen`, `rule_matcher`, `holdback`); this module is the processor over them.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from sluicegate.guardrails.holdback import CONTEXT as _CONTEXT
from sluicegate.guardrails.holdback import MARKERS as _MARKERS
from sluicegate.guardrails.holdback import HoldBack as _StreamState
from sluicegate.guardrails.holdback import HoldBacks as _Streams
from sluicegate.guardrails.judgement import DEFAULT_MAX_VALUE_CHARS
from sluicegate.guardrails.lead_screen import lead_initials, lead_screen, required_char
from sluicegate.guardrails.regex_rules import (
    DEFAULT_REPLACEMENT,
    PII_RULES,
    PRESETS,
    SECRET_RULES,
    URL_RULES,
    RegexRule,
    luhn_valid,
)
from sluicegate.guardrails.rule_matcher import Region as _Region
from sluicegate.guardrails.rule_matcher import RuleMatcher
from sluicegate.guardrails.rule_matcher import merge_regions as _regions
from sluicegate.guardrails.shown_arguments import DEFAULT_TOOL_ARGUMENTS, ToolArguments, check_tool_arguments
from sluicegate.guardrails.shown_arguments import forget as forget_shown
from sluicegate.guardrails.spans import map_texts
from sluicegate.messages import Message
from sluicegate.processors.args import (
    ProcessInputArgs,
    ProcessOutputResultArgs,
    ProcessOutputStreamArgs,
    ProcessToolResultArgs,
    ProcessToolResultResult,
)
from sluicegate.processors.base import Processor, notify_violation
from sluicegate.processors.builtin.regex_filter_arguments import ToolArgumentChecks
from sluicegate.processors.builtin.regex_filter_options import Phase as Phase
from sluicegate.processors.builtin.regex_filter_options import Preset as Preset
from sluicegate.processors.builtin.regex_filter_options import Strategy as Strategy
from sluicegate.processors.builtin.regex_filter_options import check_regex_filter_options, collect_rules
from sluicegate.stream.chunk import Chunk
from sluicegate.stream.payload import Payload
from sluicegate.tracing.findings import redacted

log = logging.getLogger(__name__)

__all__ = [
    "DEFAULT_CARRYOVER",
    "DEFAULT_REPLACEMENT",
    "PII_RULES",
    "PRESETS",
    "SECRET_RULES",
    "URL_RULES",
    "RegexFilter",
    "RegexFilterProcessor",
    "RegexRule",
    "lead_initials",
    "lead_screen",
    "luhn_valid",
    "required_char",
]

_SPACE = re.compile(r"\s")
DEFAULT_CARRYOVER = 128
"""Characters the stream may hold back at most while a match is still forming (Mastra's default)."""


_STATE_KEY = "regex_filter_stream"
_ARGUMENT_ENDS = frozenset({"tool-call-input-streaming-end", "tool-call"})
"""Chunks that end one call's streamed arguments (its id in their payload)."""
_STEP_ENDS = frozenset({"step-finish", "finish"})


class RegexFilterProcessor(ToolArgumentChecks, Processor):
    """Pattern-based guardrail for input and output; no model call.

    - `rules`: your patterns, each a `RegexRule` or a dict with `name`, `pattern` (str or
      compiled) and optional `replacement` (default `[REDACTED]`).
    - `presets`: `"pii"` (emails, SSNs, and validated phone numbers, card numbers, IBANs, IP
      addresses and crypto wallets: see `guardrails.validators`), `"secrets"`
      (API keys and tokens: OpenAI, Anthropic, AWS, GitHub, Slack, Google, Stripe, JWTs, bearer
      tokens, private keys, `api_key=...` assignments), `"urls"`.
    - `strategy`: `"block"` (default) aborts the run; `"redact"` replaces each match (overlapping
      matches are redacted as one span); `"warn"` passes text through and reports to
      `on_violation`.
    - `phase`: `"input"` (new input messages), `"output"` (stream and final messages), `"all"`.
    - `include_redacted_values`: put the matched text in reports (`on_violation` detail and the
      tripwire metadata); off by default, since it is the data being removed.
    - `stream_carryover_size`: accepted for Mastra compatibility (default 128); a match still
      forming is never released in part, so it no longer bounds the hold (`max_value_chars`
      does). `None` lifts the `max_value_chars` bound too.
    - `max_value_chars`: a match still being written when the hold reaches
      `stream_carryover_size` is held whole until it ends, up to this many characters (default
      8,192); a longer one is withheld whole (fail closed), logged and reported.
    - `process_data_parts`: also check `data-*` chunks (on by default, unlike Mastra: what a
      tool writes to the client leaks as much as the answer; `False` opts out).
    - `tool_arguments`: what the tool of a redacted tool call receives: `"shown"` (default) the
      model's own arguments, while the client, approval cards, the stored history and spans
      see them redacted; `"rewritten"` the redacted arguments too (exfiltration control).
      `block` stops the call before it runs either way.

    Streaming covers every channel the client sees: text and reasoning deltas (a match split
    across chunks, or across two text ids, is held until it is settled), tool-call arguments as
    they stream (judged on what their JSON decodes to) and in the final `tool-call` chunk,
    `tool-result` payloads, and `data-*` chunks. What the stream releases is what the stored response holds.

    Example::

        guard = RegexFilter(presets=["pii", "secrets"], strategy="redact", phase="output")
        guard.on_violation = lambda v: audit.log(v.detail)
        agent = Agent(name="a", model=model, output_processors=[guard])
    """

    counts_redactions = True  # traced runs count its redactions per kind (tracing.findings)

    id = "regex-filter"
    name = "Regex Filter"

    def __init__(
        self,
        *,
        rules: Iterable[RegexRule | Mapping[str, Any]] | None = None,
        presets: Iterable[Preset] | None = None,
        strategy: Strategy = "block",
        phase: Phase = "all",
        include_redacted_values: bool = False,
        stream_carryover_size: int | None = DEFAULT_CARRYOVER,
        process_data_parts: bool = True,
        max_value_chars: int = DEFAULT_MAX_VALUE_CHARS,
        tool_arguments: ToolArguments = DEFAULT_TOOL_ARGUMENTS,
    ) -> None:
        super().__init__()
        self.tool_arguments = check_tool_arguments(tool_arguments)
        self.rules: tuple[RegexRule, ...] = collect_rules(rules, presets)
        check_regex_filter_options(
            strategy=strategy,
            phase=phase,
            stream_carryover_size=stream_carryover_size,
            max_value_chars=max_value_chars,
            process_data_parts=process_data_parts,
        )
        self.strategy: Strategy = strategy
        self.phase: Phase = phase
        self.include_redacted_values = include_redacted_values
        self.stream_carryover_size = stream_carryover_size
        self.max_value_chars = max_value_chars
        self.process_data_parts = process_data_parts
        self.replacement_for: Callable[[str, RegexRule], str] | None = None
        """When set, what replaces a match (from its text and rule) instead of `rule.replacement`."""
        self._matcher = RuleMatcher(self.rules)
        self._give_tools_model_arguments()

    # ------------------------------------------------------------------ matching

    def find(self, text: str, pos: int = 0) -> list[tuple[int, int, RegexRule]]:
        """Every validated match of every rule in `text[pos:]`, as `(start, end, rule)`."""
        return self._matcher.find(text, pos)

    def _apply(
        self, text: str, regions: list[_Region], start: int, end: int, redactions: list[dict[str, Any]] | None
    ) -> str:
        """`text[start:end]` with `regions` (inside it) replaced; offsets reported from `start`."""
        if not regions:
            return text[start:end]
        out: list[str] = []
        cursor = start
        for region in regions:
            out.append(text[cursor : region.start])
            replace = self.replacement_for
            if replace is None:  # a replacement_for counts its own (PIIDetector.redact_value)
                redacted(region.rule.name)
            out.append(
                region.rule.replacement
                if replace is None
                else replace(text[region.start : region.end], region.rule)
            )
            cursor = region.end
            if redactions is not None:
                entry: dict[str, Any] = {
                    "rule": region.rule.name,
                    "index": region.start - start,
                    "length": region.end - region.start,
                    "replacement": region.rule.replacement,
                }
                if region.rules is not None and len(set(region.rules)) > 1:
                    entry["overlapping_rules"] = sorted(set(region.rules))
                if self.include_redacted_values:
                    entry["value"] = text[region.start : region.end]
                redactions.append(entry)
        out.append(text[cursor:end])
        return "".join(out)

    def redact(self, text: str) -> str:
        """`text` with every match replaced: what the redact strategy makes of a whole text."""
        return self._apply(text, _regions(self.find(text)), 0, len(text), None)

    def _match_report(self, text: str, regions: list[_Region]) -> list[dict[str, Any]]:
        return [
            {
                "rule": r.rule.name,
                "index": r.start,
                "match": text[r.start : r.end] if self.include_redacted_values else "[REDACTED_MATCH]",
            }
            for r in regions
        ]

    # ------------------------------------------------------------------ reporting

    def _report(self, message: str, detail: dict[str, Any]) -> None:
        notify_violation(self, message, detail)  # an async callback is awaited in a task

    def _handle(
        self,
        args: Any,
        text: str,
        regions: list[_Region],
        where: str,
        phase: str,
        location: dict[str, Any] | None = None,
    ) -> None:
        """Block or warn about `regions` found in `text`."""
        names = ", ".join(dict.fromkeys(r.rule.name for r in regions))
        detail = {
            "strategy": self.strategy,
            "phase": phase,
            **(location or {}),
            "matches": self._match_report(text, regions),
        }
        if self.strategy == "block":
            args.abort(f"Regex filter: blocked {where} matching patterns: {names}", metadata=detail)
        log.warning("regex filter %s matched patterns: %s", self.id, names)
        self._report(f"Regex filter: matched patterns: {names}", detail)

    # ------------------------------------------------------------------ messages

    def _filter_messages(self, args: Any, messages: list[Message], phase: str) -> bool:
        """Check (and, for redact, rewrite in place) the text parts; whether any changed."""
        changed = False
        for message in messages:
            for index, part in enumerate(message.content.parts):
                text = part.get("text") if part.get("type") == "text" else None
                if not text:
                    continue
                regions = _regions(self.find(text))
                if not regions:
                    continue
                location = {"message_id": message.id, "part_index": index}
                if self.strategy != "redact":
                    self._handle(args, text, regions, "content", phase, location)
                    continue
                redactions: list[dict[str, Any]] = []
                part["text"] = self._apply(text, regions, 0, len(text), redactions)
                changed = True
                self._report_redactions(phase, redactions, location)
            if changed and message.content.parts:
                message.content.content = message.text
        return changed

    def _report_redactions(
        self, phase: str, redactions: list[dict[str, Any]], location: dict[str, Any] | None = None
    ) -> None:
        if redactions and self.on_violation is not None:
            names = ", ".join(dict.fromkeys(r["rule"] for r in redactions))
            self._report(
                f"Regex filter: redacted content matching patterns: {names}",
                {"strategy": "redact", "phase": phase, **(location or {}), "redactions": redactions},
            )

    def process_input(self, args: ProcessInputArgs) -> Any:
        if self.phase == "output":
            return None
        # Only this request's new input: remembered history was checked when it arrived.
        messages = args.message_list.get.input.db() if args.message_list is not None else args.messages
        self._filter_messages(args, messages, "process_input")
        return None

    def process_output_result(self, args: ProcessOutputResultArgs) -> Any:
        if self.phase == "input":
            return None
        self._filter_messages(args, args.message_list.get.response.db(), "process_output_result")
        return None

    def process_tool_result(self, args: ProcessToolResultArgs) -> ProcessToolResultResult | None:
        """A tool's result, checked before the model, the history and the client see it."""
        if self.phase == "input":
            return None
        value, changed = self._scrub_value(args, args.result, "tool-result")
        return ProcessToolResultResult(value) if changed else None

    # ------------------------------------------------------------------ stream

    def transforms_text(self) -> bool:
        """The stream hook rewrites text deterministically, so LLM guardrails after this filter
        judge its output ahead of time (see `guardrails.shadow`); not with `replacement_for`,
        which may keep state of its own (pseudonyms)."""
        return self.replacement_for is None

    def process_output_stream(self, args: ProcessOutputStreamArgs) -> Chunk | list[Chunk] | None:
        part = args.part
        if self.phase == "input":
            return part
        streams = args.state.get(_STATE_KEY)
        if streams is None:
            streams = args.state[_STATE_KEY] = _Streams()
        kind = part.type
        if kind == "text-delta":
            channel = streams.text
            emitted = self._feed(args, channel, part, part.payload.text, None)
            if emitted is part or not channel.deferred:
                return emitted
            return self._with_deferred(channel, emitted)
        if kind == "reasoning-delta":
            return self._delta(args, streams.reasoning, part, part.payload.text)
        marker = _MARKERS.get(kind)
        if marker is not None:
            channel = streams.text if marker == "text" else streams.reasoning
            if channel.carry:
                channel.deferred.append(part)
                return None
            return part
        if kind == "tool-call-delta":
            return self._argument_delta(args, part)
        out: list[Chunk] = []
        if kind == "step-finish" and _abandoned(part):
            # The attempt was cut off: what is held may be half a secret (a card number the
            # failed attempt never finished). It is never settled as final: drop it, and let
            # only the held markers out.
            for channel in streams.all:
                channel.carry = channel.context = ""
                out.extend(channel.deferred)
                channel.deferred = []
            self._drop_arguments(args)
            forget_shown(args.state)
            out.append(part)
            return out[0] if len(out) == 1 else out
        for channel in streams.all:
            if channel.carry or channel.deferred:
                out.extend(self._flush(args, channel))
        if kind in _ARGUMENT_ENDS or kind in _STEP_ENDS:
            out.extend(self._finish_arguments(args, part, None if kind in _STEP_ENDS else part))
            if kind == "step-finish":
                forget_shown(args.state)
        processed = self._structured(args, part)
        if processed is not None:
            out.append(processed)
        if not out:
            return None
        return out[0] if len(out) == 1 else out

    def flush_output_stream(self, args: ProcessOutputStreamArgs) -> list[Chunk]:
        """The end of a model step: every held channel is settled and released."""
        streams: _Streams | None = args.state.get(_STATE_KEY)
        if streams is None:
            return []
        out: list[Chunk] = []
        for channel in streams.all:
            if channel.carry or channel.deferred:
                out.extend(self._flush(args, channel))
        out.extend(self._finish_arguments(args, None, None))
        return out

    def _delta(
        self,
        args: ProcessOutputStreamArgs,
        channel: _StreamState,
        part: Chunk,
        text: str,
        id: str | None = None,
    ) -> Chunk | list[Chunk] | None:
        emitted = self._feed(args, channel, part, text, id)
        if not channel.deferred or emitted is part:
            return emitted
        return self._with_deferred(channel, emitted)

    @staticmethod
    def _with_deferred(channel: _StreamState, emitted: Chunk | None) -> Chunk | list[Chunk] | None:
        """Markers held with the text go out before it once text is released."""
        if channel.carry and emitted is None:
            return None
        deferred = channel.deferred
        channel.deferred = []
        return [*deferred, emitted] if emitted is not None else deferred

    def _feed(
        self, args: ProcessOutputStreamArgs, stream: _StreamState, part: Chunk, text: str, id: str | None
    ) -> Chunk | None:
        """Add one delta; return what can be emitted now (None when all of it must wait)."""
        if not text:
            return part
        if stream.oversized:
            text = self._drop_rest(stream, text)
            if not text:
                return None
            part = stream.make(part.run_id, part.payload.id if id is None else id, text)
        carry = stream.carry
        if stream.scan_at and len(carry) + len(text) < stream.scan_at:
            # A match longer than the carryover is still being held: holding it a little longer
            # is safe, so it is searched again only once it grew by half (linear in all).
            stream.carry = carry + text
            return None
        context = stream.context
        buffer = context + carry + text if (context or carry) else text
        pos = len(context)
        size = len(buffer)
        cut = self._matcher.hold_from(buffer, pos, size)
        regions: list[_Region] = []
        if cut < 0:  # a complete match: settle which matches are final, rule by rule
            cut, regions = self._matcher.settle(buffer, pos)
        elif cut == size and not carry:
            # Nothing can match or start anywhere in this chunk: it goes out as it is.
            stream.context = text[-_CONTEXT:] if len(text) >= _CONTEXT else buffer[-_CONTEXT:]
            return part
        cap = self.stream_carryover_size
        if cap is not None and size - cut > cap and size - cut > self.max_value_chars:
            # A match still forming at the end is held whole up to `max_value_chars` (releasing
            # its start would leak it in two pieces); past that, it is withheld whole (fail
            # closed), reported, and the rest of it is dropped as it arrives.
            regions = _regions([m for m in self.find(buffer, pos) if m[1] <= cut])
            self._withhold(args, stream, buffer, cut, size)
            stream.carry = ""
            stream.context = ""
            stream.scan_at = 0
            return self._emit(args, stream, buffer, regions, pos, cut) if cut > pos else None
        held = size - cut
        stream.scan_at = held + max(cap // 2, held // 2) if cap is not None and held > cap else 0
        stream.carry = buffer[cut:]
        stream.carry_id = part.payload.id if id is None else id
        stream.carry_run_id = part.run_id
        stream.context = buffer[cut - _CONTEXT if cut > _CONTEXT else 0 : cut]
        if cut <= pos:
            return None
        return self._emit(args, stream, buffer, regions, pos, cut)

    def _withhold(
        self, args: ProcessOutputStreamArgs, stream: _StreamState, buffer: str, start: int, end: int
    ) -> None:
        stream.oversized = True
        log.warning(
            "%s: a possible match of more than max_value_chars=%d characters was still being "
            "written; it is withheld whole",
            self.id,
            self.max_value_chars,
        )
        detail: dict[str, Any] = {"rule": "max_value_chars", "start": start, "end": end}
        if self.strategy == "redact":
            self._report_redactions("process_output_stream", [detail])
        else:
            self._report(
                "Regex filter: withheld a possible match longer than max_value_chars",
                {"strategy": self.strategy, "phase": "process_output_stream", "redactions": [detail]},
            )

    def _drop_rest(self, stream: _StreamState, text: str) -> str:
        """What follows a withheld over-long value: the rest of that value (up to whitespace)
        is dropped too."""
        found = _SPACE.search(text)
        if found is None:
            return ""
        stream.oversized = False
        return text[found.start() :]

    def _emit(
        self,
        args: ProcessOutputStreamArgs,
        stream: _StreamState,
        buffer: str,
        regions: list[_Region],
        start: int,
        end: int,
    ) -> Chunk | None:
        if not regions:  # the common chunk: nothing to report or replace
            if end <= start:
                return None
            return stream.make(stream.carry_run_id, stream.carry_id, buffer[start:end])
        if self.strategy != "redact":
            self._handle(args, buffer, regions, "streaming content", "process_output_stream")
        if self.strategy == "redact":
            redactions: list[dict[str, Any]] | None = [] if self.on_violation is not None else None
            text = self._apply(buffer, regions, start, end, redactions)
            if redactions:
                self._report_redactions("process_output_stream", redactions)
        else:
            text = buffer[start:end]
        if not text:
            return None
        return stream.make(stream.carry_run_id, stream.carry_id, text)

    def _flush(self, args: ProcessOutputStreamArgs, stream: _StreamState) -> list[Chunk]:
        """The held text, settled as final (the text run is over), after any deferred markers."""
        carry = stream.carry
        context = stream.context
        deferred = stream.deferred
        stream.carry = stream.context = ""
        stream.deferred = []
        stream.oversized = False
        stream.scan_at = 0
        if not carry:
            return deferred
        buffer = context + carry
        pos = len(context)
        regions = _regions(self.find(buffer, pos))
        emitted = self._emit(args, stream, buffer, regions, pos, len(buffer))
        if emitted is None:
            return deferred
        if all(marker.type.endswith("-end") for marker in deferred):
            return [emitted, *deferred]  # the held text belongs to the run that ended
        return [*deferred, emitted]

    # ------------------------------------------------------------------ whole values

    def _structured(self, args: ProcessOutputStreamArgs, part: Chunk) -> Chunk | None:
        """A chunk carrying a whole value the client sees (tool-call arguments, a tool
        result, `data-*` data unless opted out), with every string in it checked."""
        kind = part.type
        if kind == "tool-call-suspended":  # the tool's own payload can carry secrets too
            scrubbed = self._structured(
                args, Chunk("tool-call", part.run_id, part.payload, part.data, part.from_)
            )
            assert scrubbed is not None
            payload = scrubbed.payload
            value, changed = self._scrub_value(args, payload.get("suspend_payload"), kind)
            if changed:
                payload = Payload(**{**vars(payload), "suspend_payload": value})
            return (
                part if payload is part.payload else Chunk(kind, part.run_id, payload, part.data, part.from_)
            )
        if kind in ("tool-call", "tool-call-approval"):  # the arguments a person is asked about too
            field_name = "args"
        elif kind == "tool-result":
            field_name = "result"
        elif kind.startswith("data-"):
            if not self.process_data_parts:
                return part
            value, changed = self._scrub_value(args, part.data, kind)
            return Chunk(kind, part.run_id, part.payload, value, part.from_) if changed else part
        else:
            return part
        payload = part.payload
        original = payload.get(field_name)
        if field_name == "args" and isinstance(original, str):
            original = self._readable(original)
        value, changed = self._scrub_value(args, original, kind)
        changed = changed or original is not payload.get(field_name)
        if not changed:
            return part
        self._shown(args, part, value, payload.get(field_name))
        fields = dict(vars(payload))
        fields[field_name] = value
        return Chunk(kind, part.run_id, Payload(**fields), part.data, part.from_)

    def _scrub_value(self, args: Any, value: Any, where: str) -> tuple[Any, bool]:
        """`value` with every text in it (strings, dict keys and numbers, through dicts, lists
        and tuples: see `value_texts`) checked: redacted (the new value and True), or
        blocked/warned about (the value and False)."""

        def scrub(text: str) -> str:
            regions = _regions(self.find(text))
            if not regions:
                return text
            if self.strategy != "redact":
                self._handle(args, text, regions, where, "process_output_stream")
                return text
            redactions: list[dict[str, Any]] = []
            redacted = self._apply(text, regions, 0, len(text), redactions)
            self._report_redactions("process_output_stream", redactions, {"chunk": where})
            return redacted

        scrubbed = map_texts(value, scrub)
        return scrubbed, scrubbed is not value


def _abandoned(step_finish: Chunk) -> bool:
    """Whether a `step-finish` closes a step that failed (retried or errored) mid-answer."""
    step_result = step_finish.payload.get("step_result")
    reason = step_result.get("reason") if step_result is not None else None
    return reason in ("retry", "error")


RegexFilter = RegexFilterProcessor
"""Both names are exported, as in Mastra."""
