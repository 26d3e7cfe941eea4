"""The tool-call side of `RegexFilter`: streamed arguments judged on what they decode to
(`guardrails.argument_stream`), unparsed input judged with its escapes read, and the arguments a
redacted call's tool receives (`tool_arguments`, see `guardrails.shown_arguments`)."""

from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any

from sluicegate.guardrails.argument_stream import ArgumentStream
from sluicegate.guardrails.holdback import HoldBack, tool_input_delta
from sluicegate.guardrails.json_stream import encode_text, lenient_text, number_texts
from sluicegate.guardrails.rule_matcher import Region, merge_regions
from sluicegate.guardrails.shown_arguments import ToolArguments, export, remember, restore
from sluicegate.processors.args import ProcessOutputStreamArgs, ProcessToolCallArgs, ProcessToolCallResult
from sluicegate.stream.chunk import Chunk

if TYPE_CHECKING:
    from sluicegate.guardrails.regex_rules import RegexRule

log = logging.getLogger("sluicegate.processors.builtin.regex_filter")

_ARGUMENTS_KEY = "regex_filter_arguments"


class ToolArgumentChecks:
    """Mixed into `RegexFilterProcessor` (which provides the matching and the text channels)."""

    tool_arguments: ToolArguments

    if TYPE_CHECKING:
        id: str
        strategy: str
        phase: str

        def find(self, text: str, pos: int = 0) -> list[tuple[int, int, RegexRule]]: ...
        def _feed(
            self, args: Any, stream: HoldBack, part: Chunk, text: str, id: str | None
        ) -> Chunk | None: ...
        def _flush(self, args: Any, stream: HoldBack) -> list[Chunk]: ...
        def _handle(self, args: Any, text: str, regions: list[Region], where: str, phase: str) -> None: ...
        def _apply(self, text: str, regions: list[Region], start: int, end: int, redactions: Any) -> str: ...
        def _report_redactions(
            self, phase: str, redactions: list[dict[str, Any]], location: dict[str, Any] | None = None
        ) -> None: ...

    # ------------------------------------------------------------------ what the tool receives

    def _restore_for_tool(self, args: ProcessToolCallArgs) -> ProcessToolCallResult | None:
        """`process_tool_call` when redacting for display only (`tool_arguments="shown"`, set
        by `_give_tools_model_arguments`): the tool receives the model's arguments where this
        filter redacted them."""
        restored, changed = restore(args.state, args.tool_call_id, args.args)
        return ProcessToolCallResult(restored) if changed else None

    def _give_tools_model_arguments(self) -> None:
        """Only a redacting filter that shows its redactions alone adds a hook per tool call."""
        if self.strategy == "redact" and self.tool_arguments == "shown" and self.phase != "input":
            setattr(self, "process_tool_call", self._restore_for_tool)  # noqa: B010

    def suspend_state(self, state: dict[str, Any]) -> dict[str, Any]:
        """A run waiting on a person keeps what its calls' tools will receive."""
        return export(state)

    def _shown(self, args: Any, part: Chunk, shown: Any, original: Any) -> None:
        """A `tool-call` chunk's arguments were redacted: remember them for the tool (shown)."""
        if part.type == "tool-call" and self.tool_arguments == "shown":
            remember(args.state, str(part.payload.get("tool_call_id") or ""), shown, original)

    # ------------------------------------------------------------------ streamed arguments

    @staticmethod
    def _drop_arguments(args: Any) -> None:
        """A failed attempt's half-streamed arguments are never settled: forgotten."""
        args.state.pop(_ARGUMENTS_KEY, None)

    def _argument_delta(self, args: ProcessOutputStreamArgs, part: Chunk) -> Chunk | None:
        """A streamed tool-call argument delta, judged on what it decodes to (see
        `guardrails.argument_stream`): what can be released of it now."""
        payload = part.payload
        call_id = str(payload.get("tool_call_id") or "")
        streams: dict[str, ArgumentStream] | None = args.state.get(_ARGUMENTS_KEY)
        if streams is None:
            streams = args.state[_ARGUMENTS_KEY] = {}
        stream = streams.get(call_id)
        if stream is None:
            stream = streams[call_id] = ArgumentStream()
        delta = payload.get("args_text_delta") or ""
        text = stream.feed(self, args, part.run_id, call_id, delta)
        if text == delta:
            return part
        return tool_input_delta(part.run_id, call_id, text) if text else None

    def _finish_arguments(
        self, args: ProcessOutputStreamArgs, part: Chunk | None, end: Chunk | None
    ) -> list[Chunk]:
        """The calls whose arguments are complete (`end`'s call, or every call at the end of the
        step, `end` None): what is still held of them, settled."""
        streams: dict[str, ArgumentStream] | None = args.state.get(_ARGUMENTS_KEY)
        if not streams:
            return []
        if end is not None:
            call_id = str(end.payload.get("tool_call_id") or "")
            stream = streams.pop(call_id, None)
            finished = [] if stream is None else [(call_id, stream)]
        else:
            finished = list(streams.items())
            streams.clear()
        run_id = part.run_id if part is not None else ""
        out: list[Chunk] = []
        for call_id, stream in finished:
            text = stream.finish(self, args, run_id or stream.channel.carry_run_id, call_id)
            if text:
                out.append(tool_input_delta(run_id or stream.channel.carry_run_id, call_id, text))
        return out

    def feed_value_text(self, args: Any, channel: HoldBack, part: Chunk, text: str, id: str) -> Chunk | None:
        """`ArgumentJudge`: a string value's decoded text, held and released like text."""
        return self._feed(args, channel, part, text, id)

    def settle_value_text(self, args: Any, channel: HoldBack) -> list[Chunk]:
        """`ArgumentJudge`: a string value ended; what its channel holds, settled."""
        return self._flush(args, channel)

    def judge_number(self, args: Any, token: str) -> str:
        """`ArgumentJudge`: a number judged in each form it shows (as written, and written out
        in full); a match makes it a string with the match redacted."""
        for form in number_texts(token):
            regions = merge_regions(self.find(form))
            if not regions:
                continue
            if self.strategy != "redact":
                self._handle(args, form, regions, "tool-call arguments", "process_output_stream")
                return token
            redactions: list[dict[str, Any]] = []
            redacted_form = self._apply(form, regions, 0, len(form), redactions)
            self._report_redactions("process_output_stream", redactions, {"chunk": "tool-call-delta"})
            return json.dumps(redacted_form, ensure_ascii=False)
        return token

    def judge_malformed(self, args: Any, context: str, held: str, raw: str) -> str:
        """`ArgumentJudge`: arguments that stopped being JSON, judged whole (raw, and with their
        escapes read); under redact a match drops all of it (it cannot be located reliably)."""
        for text in (context + held + lenient_text(raw), raw):
            regions = merge_regions(self.find(text))
            if not regions:
                continue
            if self.strategy != "redact":
                self._handle(args, text, regions, "tool-call arguments", "process_output_stream")
                break
            log.warning("%s: malformed tool-call arguments hold a match; their rest is dropped", self.id)
            self._report_redactions(
                "process_output_stream",
                [{"rule": r.rule.name, "index": r.start, "length": r.end - r.start} for r in regions],
                {"chunk": "tool-call-delta"},
            )
            return ""
        return encode_text(held) + raw

    def _readable(self, raw: str) -> str:
        """Unparsed tool input as judged: with its JSON escapes read when that shows a match
        the raw text hides (`jane\\u0040example.com`); the same `str` subclass."""
        decoded = lenient_text(raw)
        if decoded == raw or not self.find(decoded):
            return raw
        if type(raw) is str:
            return decoded
        readable = type(raw)(decoded)
        readable.__dict__.update(vars(raw))
        return readable
