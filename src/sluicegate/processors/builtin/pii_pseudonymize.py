"""`PIIDetector`'s pseudonymization (`strategy="pseudonymize"`): each detected value replaced
by its token in messages, tool results and prompts, and restored for tools and (with
`restore_output`) in the streamed answer. The detector owns the verdicts; this module turns them
into tokens."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from sluicegate.guardrails.judgement import Judgement
from sluicegate.guardrails.message_checks import flagged_text, message_text, replace_messages, with_text
from sluicegate.guardrails.pseudonym_tokens import HELD, HELD_AT, release_held, tokens_of
from sluicegate.guardrails.pseudonyms import Pseudonymizer, hold_point, is_token, map_prompt, value_pieces
from sluicegate.guardrails.spans import locate, map_strings, map_texts, substitute, value_texts
from sluicegate.guardrails.violations import WITHHELD_TOOL_RESULT
from sluicegate.messages import Message
from sluicegate.processors.args import (
    ProcessLLMRequestArgs,
    ProcessLLMRequestResult,
    ProcessOutputStreamArgs,
    ProcessToolCallArgs,
    ProcessToolCallResult,
    ProcessToolResultArgs,
    ProcessToolResultResult,
)
from sluicegate.processors.builtin.pii_verdict import PIIDetection, PIIVerdict
from sluicegate.stream.chunk import Chunk, text_delta

log = logging.getLogger("sluicegate.processors.builtin.pii_detector")

Detect = Callable[[str], Awaitable[PIIVerdict | None]]


class PIIPseudonymization:
    """The pseudonymizing side of one `PIIDetector`: `detect`, `is_flagged`, `act` (report or
    block a flagged verdict) and `pattern_verdict` are the detector's; `pseudonyms` keeps the
    value-to-token mapping of each conversation."""

    def __init__(
        self,
        pseudonyms: Pseudonymizer,
        *,
        threshold: float,
        detect: Detect,
        is_flagged: Callable[[PIIVerdict], bool],
        act: Callable[[PIIVerdict, Any], None],
        pattern_verdict: Callable[[str], PIIVerdict],
    ) -> None:
        self.pseudonyms = pseudonyms
        self.threshold = threshold
        self.detect = detect
        self.is_flagged = is_flagged
        self.act = act
        self.pattern_verdict = pattern_verdict

    async def window_judgement(self, text: str, verdict: PIIVerdict, args: Any) -> Judgement:
        """A flagged streamed window's judgement: its values replaced by their tokens, or the
        window withheld when a detection cannot be located."""
        spans = locate(text, self.findings(verdict))
        if not spans:
            return Judgement(flagged=True, drop=True, reason="PII detected")
        mapping = await self.pseudonyms.assign(args, [(text[s.start : s.end], s.type) for s in spans])
        return Judgement(flagged=True, spans=spans, replace=tokens_of(mapping), reason="PII detected")

    def findings(self, verdict: PIIVerdict) -> list[PIIDetection]:
        """The confident detections, minus what is a token already (a detector may report
        `<EMAIL_1>` as an email): a value holding tokens counts as its other pieces."""
        findings: list[PIIDetection] = []
        for detection in verdict.detections or ():
            if detection.confidence < self.threshold or is_token(detection.value.strip()):
                continue
            pieces = value_pieces(detection.value)
            if pieces == [detection.value]:
                findings.append(detection)
            else:
                findings.extend(
                    detection.model_copy(update={"value": p, "start": -1, "end": -1}) for p in pieces
                )
        return findings

    async def pseudonymize_text(self, args: Any, text: str, verdict: PIIVerdict) -> str | None:
        """`text` with each detected value replaced by its token (and known values too); None
        when a detection cannot be located (the caller drops the text rather than pass it on)."""
        findings = self.findings(verdict)
        spans = locate(text, findings)
        if not spans and (findings or not verdict.detections):
            return None
        mapping = await self.pseudonyms.assign(args, [(text[s.start : s.end], s.type) for s in spans])
        return mapping.conceal(substitute(text, spans, tokens_of(mapping)))

    async def messages(
        self,
        args: Any,
        messages: list[Message],
        checked: list[Message],
        detect: Detect,
    ) -> list[Message] | None:
        """`process_input`/`process_output_result`: each checked message with known values
        concealed and new findings replaced by tokens; a message whose finding cannot be
        located is dropped."""
        replaced: dict[str, Message | None] = {}
        for message in checked:
            text = message_text(message)
            if not text:
                continue
            concealed = (await self.pseudonyms.current(args)).conceal(text)
            verdict = await detect(concealed)
            if verdict is not None and self.is_flagged(verdict):
                self.act(verdict, args.abort)
                pseudonymized = await self.pseudonymize_text(args, concealed, verdict)
                if pseudonymized is None:
                    log.warning("[PIIDetector] a detection could not be located; dropping the message")
                    replaced[message.id] = None
                    continue
                concealed = pseudonymized
            if concealed != text:
                replaced[message.id] = with_text(message, concealed)
        return replace_messages(messages, replaced)

    async def tool_result(self, args: ProcessToolResultArgs) -> ProcessToolResultResult | None:
        """`process_tool_result`: a tool's result with its values tokenized before the model
        sees it (withheld when a finding cannot be located)."""
        result = map_texts(args.result, (await self.pseudonyms.current(args)).conceal)
        verdict = await flagged_text("\n".join(value_texts(result)), self.detect, self.is_flagged)
        if verdict is not None:
            self.act(verdict, args.abort)
            findings = [d.model_copy(update={"start": -1, "end": -1}) for d in self.findings(verdict)]
            found = [
                (leaf[s.start : s.end], s.type)
                for leaf in value_texts(result)
                for s in locate(leaf, findings)
            ]
            if not found and (findings or not verdict.detections):
                return ProcessToolResultResult(WITHHELD_TOOL_RESULT.format(label="PIIDetector"))
            mapping = await self.pseudonyms.assign(args, found)
            tokens = tokens_of(mapping)
            result = map_texts(
                result, lambda leaf: mapping.conceal(substitute(leaf, locate(leaf, findings), tokens))
            )
        return None if result == args.result else ProcessToolResultResult(result)

    async def conceal_prompt(self, args: ProcessLLMRequestArgs) -> ProcessLLMRequestResult | None:
        """`process_llm_request` when pseudonymizing: every text of the prompt (remembered
        history, system messages, tool calls and results) with known values and what the
        pattern pass finds replaced by tokens, right before the model call (not stored)."""
        found: list[tuple[str, str]] = []

        def collect(text: str) -> str:
            found.extend((d.value, d.type) for d in self.pattern_verdict(text).detections or ())
            return text

        map_prompt(args.prompt, collect)
        mapping = await (self.pseudonyms.assign(args, found) if found else self.pseudonyms.current(args))
        prompt = map_prompt(args.prompt, mapping.conceal)
        return None if prompt == args.prompt else ProcessLLMRequestResult(prompt=prompt)

    async def restore_tool_args(self, args: ProcessToolCallArgs) -> ProcessToolCallResult | None:
        """`process_tool_call` when pseudonymizing: the tool receives the real values of the
        tokens in its arguments (tokens this conversation never issued stay as they are)."""
        restored = map_strings(args.args, (await self.pseudonyms.current(args)).restore)
        return None if restored == args.args else ProcessToolCallResult(restored)

    async def restore_stream(self, args: ProcessOutputStreamArgs) -> Chunk | list[Chunk] | None:
        """The answer text with tokens restored; a trailing part that may still grow into a
        token (`<EMAIL_`) is held until the next chunk or the end of the step."""
        part = args.part
        state = args.state
        if part.type != "text-delta":
            held = release_held(state)
            return [*held, part] if held else part
        if "<" not in part.payload.text and not state.get(HELD):
            return part  # no token in it, none being completed: as it is
        mapping = await self.pseudonyms.current(args)
        out: list[Chunk] = []
        if state.get(HELD) and state[HELD_AT] != (part.run_id, part.payload.id):
            out.extend(release_held(state))  # a new text id: what was held cannot grow any more
        text = state.pop(HELD, "") + part.payload.text
        cut = hold_point(text)
        if cut < len(text):
            state[HELD], state[HELD_AT] = text[cut:], (part.run_id, part.payload.id)
        if cut:
            out.append(text_delta(part.run_id, part.payload.id, mapping.restore(text[:cut])))
        if not out:
            return None
        return out[0] if len(out) == 1 else out
