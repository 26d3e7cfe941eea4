"""The prompt work of `ContextCompactor`: which messages a summary may replace, old tool results
cleared to a placeholder, the digest that tells a stored summary still fits, and the transcript
the summarizing model reads. Pure functions over V2 prompt messages; nothing here calls a model.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from sluicegate.messages.convert import PromptMessage

CLEARED_TOOL_RESULT = "[tool result cleared to save context]"
"""What an old tool result becomes in the prompt (the stored messages keep it whole)."""
SUMMARY_HEADER = (
    "Summary of the earlier conversation (it stands for the messages before this one, which are not shown):"
)


def conversation(prompt: list[PromptMessage]) -> list[int]:
    """The positions of the prompt's conversation messages (all but the system messages)."""
    return [i for i, m in enumerate(prompt) if m.get("role") != "system"]


TAIL = 3
"""How many of the last covered messages a summary's digest is taken over."""


def digest(messages: list[PromptMessage]) -> str:
    """A digest of exactly these messages (as sent)."""
    h = hashlib.sha256()
    for message in messages:
        h.update(json.dumps(message, sort_keys=True, ensure_ascii=False, default=str).encode())
        h.update(b"\x00")
    return h.hexdigest()


def tail_digest(convo: list[PromptMessage], end: int) -> str:
    """The digest a summary covering `convo[:end]` is found again by: of its last `TAIL`
    messages (memory's history window may have dropped the first ones by the next turn)."""
    return digest(convo[max(0, end - TAIL) : end])


def covered_end(convo: list[PromptMessage], covered: int, covered_hash: str) -> int | None:
    """Where a summary that covered `covered` messages ending in `covered_hash`'s ends in this
    prompt's conversation (the index after its last message), or None when the prompt does not
    hold that end, or holds nothing after it. Conversation history only grows, so every message
    before that end is one the summary stands for."""
    width = min(TAIL, covered)
    if covered < len(convo) and covered >= width and tail_digest(convo, covered) == covered_hash:
        return covered  # the common case: the prompt starts where it did
    for end in range(len(convo) - 1, width - 1, -1):
        if end != covered and digest(convo[end - width : end]) == covered_hash:
            return end
    return None


def _tool_ids(message: PromptMessage, kind: str) -> list[str]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [str(p.get("toolCallId")) for p in content if isinstance(p, dict) and p.get("type") == kind]


def cut_point(convo: list[PromptMessage], covered: int, keep_last: int) -> int:
    """How many of the conversation's first messages may be summarized: all but the last
    `keep_last`, never past the newest user message (the current turn stays whole, or the
    model would call the tools it just called again), never between a tool call and its
    result, and never past a tool call without a result in the prompt. Not above `covered`
    means there is nothing new to summarize."""
    cut = len(convo) - keep_last
    newest_user = max((i for i, m in enumerate(convo) if m.get("role") == "user"), default=0)
    cut = min(cut, newest_user)
    answered = {i for m in convo for i in _tool_ids(m, "tool-result")}
    for index in range(min(cut, len(convo))):
        if any(call not in answered for call in _tool_ids(convo[index], "tool-call")):
            cut = index
            break
    while cut > covered and convo[cut].get("role") == "tool":
        cut -= 1  # a tool message answers the assistant message before it: they go together
    return max(cut, covered)


def clear_old_tool_results(
    convo: list[PromptMessage], start: int, keep: int, protect_from: int
) -> tuple[list[PromptMessage], int]:
    """`convo` with the tool results from `start` on cleared to `CLEARED_TOOL_RESULT`, but the
    newest `keep` of them and every one at or after `protect_from` (the current turn's); how
    many it cleared. Changed messages are copies: the prompt's own objects are left as they are."""
    positions = [
        (i, j)
        for i in range(start, min(protect_from, len(convo)))
        if convo[i].get("role") == "tool" and isinstance(convo[i].get("content"), list)
        for j, part in enumerate(convo[i]["content"])
        if isinstance(part, dict) and part.get("type") == "tool-result"
    ]
    after = sum(
        1
        for m in convo[protect_from:]
        if m.get("role") == "tool" and isinstance(m.get("content"), list)
        for p in m["content"]
        if isinstance(p, dict) and p.get("type") == "tool-result"
    )
    kept_here = max(keep - after, 0)
    clear = positions[: max(len(positions) - kept_here, 0)]
    if not clear:
        return convo, 0
    out = list(convo)
    by_message: dict[int, list[int]] = {}
    for i, j in clear:
        by_message.setdefault(i, []).append(j)
    cleared = 0
    for i, parts in by_message.items():
        content = list(out[i]["content"])
        for j in parts:
            output = content[j].get("output")
            if isinstance(output, dict) and output.get("value") == CLEARED_TOOL_RESULT:
                continue
            content[j] = {**content[j], "output": {"type": "text", "value": CLEARED_TOOL_RESULT}}
            cleared += 1
        out[i] = {**out[i], "content": content}
    return out, cleared


def summary_message(summary: str) -> PromptMessage:
    """The prompt message that stands for the summarized messages (a user message: the summary
    passed the input guards as user input does, and carries no more authority than it)."""
    return {"role": "user", "content": [{"type": "text", "text": f"{SUMMARY_HEADER}\n{summary}"}]}


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" [... {len(text) - limit} characters cut]"


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def _part_lines(role: str, part: dict[str, Any], clip: int) -> list[str]:
    kind = part.get("type")
    if kind == "text":
        return [f"[{role}] {_clip(str(part.get('text') or ''), clip)}"]
    if kind == "tool-call":
        arguments = _value_text(part.get("input", part.get("args")))
        return [f"[assistant called {part.get('toolName')}] {_clip(arguments, clip)}"]
    if kind == "tool-result":
        output = part.get("output")
        value = output.get("value") if isinstance(output, dict) else output
        return [f"[{part.get('toolName')} returned] {_clip(_value_text(value), clip)}"]
    if kind == "file":
        return [f"[{role} attached a file: {part.get('mediaType') or 'unknown type'}]"]
    return []


def transcript(previous: str | None, messages: list[PromptMessage], clip: int) -> str:
    """What the summarizing model reads: the summary so far, then the messages to fold in, one
    line per part, each part clipped to `clip` characters."""
    lines: list[str] = []
    if previous:
        lines += ["Summary so far:", previous, "", "Messages since:"]
    for message in messages:
        role = str(message.get("role"))
        content = message.get("content")
        if isinstance(content, str):
            lines.append(f"[{role}] {_clip(content, clip)}")
            continue
        for part in content if isinstance(content, list) else []:
            if isinstance(part, dict):
                lines += _part_lines(role, part, clip)
    return "\n".join(lines)
