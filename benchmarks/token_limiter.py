"""Time TokenLimiter fitting a 10,000-message prompt (target: under 50 ms per model call).

Prints the first (cold: every part tokenized) and repeated (warm: counts cached per part) call,
with the budget large enough that every message is counted, and with a tight budget.
"""

from __future__ import annotations

import statistics
import time

from sluicegate.messages import Message, MessageList
from sluicegate.processors import ProcessInputStepArgs, ProcessLLMRequestArgs, TokenLimiter
from sluicegate.request_context import RequestContext
from sluicegate.tokens import get_encoding


def _abort(reason: str | None = None, **_: object) -> None:
    raise RuntimeError(reason)


def history(n: int) -> list[Message]:
    words = [
        "the",
        "quick",
        "brown",
        "fox",
        "jumps",
        "over",
        "a",
        "lazy",
        "dog",
        "while",
        "processors",
        "count",
        "every",
        "token",
    ]
    return [
        Message.text_message(
            "user" if i % 2 == 0 else "assistant",
            " ".join(words[(i + j) % len(words)] for j in range(20 + i % 30)) + f" #{i}",
        )
        for i in range(n)
    ]


def run(limit: int, messages: list[Message], repeats: int = 20) -> tuple[float, float, int]:
    limiter = TokenLimiter(limit)
    timings = []
    kept = 0
    for _ in range(repeats + 1):
        message_list = MessageList()
        message_list.add(messages, "memory")
        message_list.add_system("You are a helpful assistant.")
        state: dict[str, object] = {}
        common = {"abort": _abort, "request_context": RequestContext(), "state": state}
        prompt = message_list.get.all.model()  # built by the agent for every call anyway
        start = time.perf_counter()
        limiter.process_input_step(ProcessInputStepArgs(**common, message_list=message_list))  # type: ignore[arg-type]
        result = limiter.process_llm_request(
            ProcessLLMRequestArgs(**common, prompt=prompt, message_list=message_list)  # type: ignore[arg-type]
        )
        timings.append(time.perf_counter() - start)
        kept = len(prompt if result is None or result.prompt is None else result.prompt) - 1
    return timings[0] * 1000, statistics.median(timings[1:]) * 1000, kept


def main() -> None:
    get_encoding("o200k_base")  # loading the encoding once per process is not per-call cost
    messages = history(10_000)
    for label, limit in (("everything fits", 10_000_000), ("127k budget", 127_000), ("4k budget", 4_000)):
        cold, warm, kept = run(limit, messages)
        print(
            f"TokenLimiter, 10,000 messages, {label:15s}: first call {cold:7.2f} ms, "
            f"repeat calls {warm:6.2f} ms/call (median), kept {kept} messages"
        )


if __name__ == "__main__":
    main()
