"""Elicitation: an MCP server asking the user for input in the middle of a tool call, as a
suspended run.

The tool suspends the run with the question (`tool-call-suspended`, its `suspend_payload` the
server's message and JSON schema) and `resume_stream(resume_data=...)` runs the tool again with
the answer: `{"action": "accept", "content": {...}}` (content checked against the server's
schema, by `MCPTool.validate_resume` before the run is claimed and again here), `{"action":
"decline"}` or `{"action": "cancel"}`. How the answer reaches the server depends on how it asked:

- The 2026-07-28 protocol: the call ends with the server's input requests and an opaque
  `request_state`. The round (state, the request being asked, answers so far, the requests
  still to ask) travels in the suspended run's payload, and the resumed tool makes the call
  again with the answers, from any process: the question survives a restart for as long as
  the server honours its state (a server that restarted refuses it: a tool error).
- The 2025 protocols: the server sends `elicitation/create` while the call is in flight. The
  call stays open in this process, parked under the run's tool call (`Questions`), and the
  resumed tool answers it and waits for the call's result (or next question). It is not made
  again (that would repeat its side effects): resuming it in another process, after the
  client closed, or after `elicitation_timeout` (it is answered `cancel` then) is an
  `MCPElicitationGoneError` the model reads, never a wait.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from typing import Any

import jsonschema
import pydantic

from sluicegate.errors import MissingExtraError, ToolError
from sluicegate.mcp.connection import MCPTimeoutError, ServerConnection
from sluicegate.tools import ToolContext
from sluicegate.tools.tool import ToolInputError

try:
    from mcp_types import (
        CallToolResult,
        ElicitRequest,
        ElicitRequestFormParams,
        ElicitRequestParams,
        ElicitResult,
        InputRequiredResult,
    )
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise MissingExtraError("mcp", extra="mcp", feature="sluicegate.mcp (elicitation)") from exc

PAYLOAD_TYPE = "mcp-elicitation"
"""`suspend_payload["type"]` of a run suspended by a server's question."""

DEFAULT_ELICITATION_TIMEOUT = 600.0
"""Seconds a server's question waits for a person before it is answered `cancel`."""

MAX_QUESTION_CHARS = 64_000
"""The largest question (message and schema, as JSON) a run suspends with: it is stored with the
run and shown to a person; a larger one is answered `cancel` and the call is a tool error."""

ACTIONS = ("accept", "decline", "cancel")


class MCPElicitationError(ToolError):
    """A server's question could not be asked or answered: the call ends as a tool error."""


class MCPElicitationGoneError(MCPElicitationError):
    """The server's question this resume answers is no longer open in this process."""


class MCPElicitationInputError(ToolInputError):
    """Resume data that does not answer the server's question (shape, or its JSON schema)."""


class Question:
    """One question from a server, and the future its answer is set on."""

    __slots__ = ("answer", "params")

    def __init__(self, params: ElicitRequestParams) -> None:
        self.params = params
        self.answer: asyncio.Future[ElicitResult] = asyncio.get_running_loop().create_future()

    def reply(self, result: ElicitResult) -> None:
        if not self.answer.done():
            self.answer.set_result(result)

    def payload(self, server: str) -> dict[str, Any]:
        return Question.describe(self.params, server)

    @staticmethod
    def describe(params: ElicitRequestParams, server: str) -> dict[str, Any]:
        """What the suspended run carries: the server, its message, its schema (form mode) or
        its URL (url mode)."""
        out: dict[str, Any] = {
            "type": PAYLOAD_TYPE,
            "server": server,
            "mode": params.mode,
            "message": params.message,
        }
        if isinstance(params, ElicitRequestFormParams):
            out["requestedSchema"] = params.requested_schema
        else:
            out["url"] = params.url
        return out


class OpenCall:
    """One `tools/call` in flight whose server may ask questions: `next()` waits (bounded by
    the server's timeout) for its result or its next question."""

    def __init__(
        self,
        connection: ServerConnection,
        name: str,
        arguments: dict[str, Any],
        answers: dict[str, Any] | None = None,
        state: str | None = None,
    ) -> None:
        self.connection = connection
        self.name = name
        self._waiting: deque[Question] = deque()  # asked, not yet returned by `next()`
        self._asked: list[Question] = []  # returned or not, the ones still unanswered
        self._waiter: asyncio.Future[None] | None = None
        connection.open_calls.append(self)
        responses = {k: ElicitResult.model_validate(v) for k, v in answers.items()} if answers else None

        async def call(client: Any) -> Any:
            # The session's call hands back the 2026 protocol's input requests (with their
            # request state) instead of answering them itself, so they can outlive this process.
            return await client.session.call_tool(
                name, arguments, input_responses=responses, request_state=state, allow_input_required=True
            )

        self.task = asyncio.ensure_future(
            connection.request(call, f"the call of tool {name!r}", bounded=False)
        )
        self.task.add_done_callback(self._wake)

    @property
    def asking(self) -> bool:
        return any(not q.answer.done() for q in self._asked)

    @property
    def finished(self) -> bool:
        return self.task.done()

    def ask(self, params: ElicitRequestParams) -> asyncio.Future[ElicitResult]:
        """A question for this call: `next()` returns it, in the order asked."""
        question = Question(params)
        self._asked = [q for q in self._asked if not q.answer.done()] + [question]
        self._waiting.append(question)
        self._wake()
        return question.answer

    def _wake(self, _: Any = None) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def next(self) -> CallToolResult | InputRequiredResult | Question:
        """The call's result (raising what the call raised) or the server's next question."""
        if not self.task.done() and not self._waiting:
            timeout = self.connection.config.timeout
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                async with asyncio.timeout(timeout):
                    await self._waiter
            except TimeoutError as exc:
                self.cancel()
                raise MCPTimeoutError(
                    f"MCP server {self.connection.config.name!r}: the call of tool {self.name!r} "
                    f"got no answer within {timeout:g} s"
                ) from exc
            except BaseException:
                self.cancel()
                raise
            finally:
                self._waiter = None
        if self.task.done():
            self._finish()
            result: CallToolResult | InputRequiredResult = self.task.result()
            return result
        return self._waiting.popleft()

    def _finish(self) -> None:
        if self in self.connection.open_calls:
            self.connection.open_calls.remove(self)
        for question in self._asked:  # asked as the call ended or was dropped: nobody will answer
            question.reply(ElicitResult(action="cancel"))

    def cancel(self) -> None:
        """Give up on the call: its open question is answered `cancel`, the request cancelled."""
        self._finish()
        self.task.cancel()
        self.task.add_done_callback(_quiet)


def _quiet(task: asyncio.Future[Any]) -> None:
    if not task.cancelled():
        task.exception()  # retrieved: an abandoned call's failure is not "never retrieved"


class Questions:
    """The questions waiting for a person, by `run_id:tool_call_id`, each with its open call;
    one waits at most `wait` seconds, then is answered `cancel` and its call dropped."""

    def __init__(self, wait: float) -> None:
        self.wait = wait
        self._parked: dict[str, tuple[OpenCall, Question, asyncio.TimerHandle]] = {}

    def __len__(self) -> int:
        return len(self._parked)

    def park(self, key: str, call: OpenCall, question: Question) -> None:
        self._drop(key)
        timer = asyncio.get_running_loop().call_later(self.wait, self._drop, key)
        self._parked[key] = (call, question, timer)

    def peek(self, key: str) -> Question | None:
        entry = self._parked.get(key)
        return None if entry is None else entry[1]

    def take(self, key: str) -> OpenCall | None:
        entry = self._parked.pop(key, None)
        if entry is None:
            return None
        entry[2].cancel()
        return entry[0]

    def _drop(self, key: str) -> None:
        entry = self._parked.pop(key, None)
        if entry is not None:
            entry[2].cancel()
            entry[0].cancel()

    def close(self) -> None:
        """Every parked question answered `cancel`, every call dropped (the client closes)."""
        for key in list(self._parked):
            self._drop(key)


async def call_tool(
    connection: ServerConnection,
    questions: Questions,
    name: str,
    arguments: dict[str, Any],
    context: ToolContext,
) -> CallToolResult | None:
    """Call tool `name`, or continue it with the resume data (the answer to its question);
    None when the run suspends on a question (`context.suspend` was called)."""
    key = context.idempotency_key
    if context.resume_data is not None:
        answer, asked = _resumed(context.resume_data)
        question = questions.peek(key) if key is not None else None
        round_ = asked.get("round") if isinstance(asked, dict) else None
        if question is not None:  # the call is open in this process: answer it
            reply = check_answer(answer, question.params, connection.config.name)
            call = questions.take(key)  # type: ignore[arg-type]
            assert call is not None
            question.reply(reply)
        elif isinstance(round_, dict):  # the 2026 protocol: the call is made again with the answers
            reply = check_answer(answer, asked, connection.config.name)
            answers = {
                **round_["answers"],
                round_["inputKey"]: reply.model_dump(mode="json", exclude_none=True),
            }
            return await _ask(
                connection,
                questions,
                name,
                arguments,
                context,
                round_["requestState"],
                answers,
                round_["waiting"],
            )
        else:
            raise MCPElicitationGoneError(
                f"MCP server {connection.config.name!r}: the question tool {name!r} asked is no longer "
                "open (it was asked in another process or before a restart, its client closed, or it "
                "waited too long); the call did not finish: call the tool again"
            )
    elif key is None or not connection.elicitation:  # nobody to ask: a plain call, no task
        return await connection.request(
            lambda client: client.call_tool(name, arguments), f"the call of tool {name!r}"
        )
    else:
        call = OpenCall(connection, name, arguments)
    return await _settle(connection, questions, name, arguments, context, call)


async def _settle(
    connection: ServerConnection,
    questions: Questions,
    name: str,
    arguments: dict[str, Any],
    context: ToolContext,
    call: OpenCall,
) -> CallToolResult | None:
    """The call's result, or the run suspended on its next question."""
    outcome = await call.next()
    if isinstance(outcome, InputRequiredResult):
        waiting = [
            [k, r.model_dump(mode="json", by_alias=True, exclude_none=True)]
            for k, r in (outcome.input_requests or {}).items()
        ]
        return await _ask(connection, questions, name, arguments, context, outcome.request_state, {}, waiting)
    if isinstance(outcome, Question):
        key = context.idempotency_key
        assert key is not None
        payload = _bounded(outcome.payload(connection.config.name), connection, name, call)
        questions.park(key, call, outcome)
        await context.suspend(payload)
        return None
    return outcome


async def _ask(
    connection: ServerConnection,
    questions: Questions,
    name: str,
    arguments: dict[str, Any],
    context: ToolContext,
    state: str | None,
    answers: dict[str, Any],
    waiting: list[list[Any]],
) -> CallToolResult | None:
    """One round of the 2026 protocol's input requests: the run suspends on each question in
    turn, carrying the round (request state, answers so far) in its payload, so any process
    can make the call again once all are answered."""
    if waiting:
        key, request = waiting[0]
        if request.get("method") != "elicitation/create":
            raise MCPElicitationError(
                f"MCP server {connection.config.name!r}: tool {name!r} asked for "
                f"{request.get('method')!r}, which this client does not offer"
            )
        params = ElicitRequest.model_validate(request).params
        payload = Question.describe(params, connection.config.name)
        payload["round"] = {
            "requestState": state,
            "inputKey": key,
            "answers": answers,
            "waiting": waiting[1:],
        }
        await context.suspend(_bounded(payload, connection, name, None))
        return None
    call = OpenCall(connection, name, arguments, answers, state)
    return await _settle(connection, questions, name, arguments, context, call)


def _bounded(
    payload: dict[str, Any], connection: ServerConnection, name: str, call: OpenCall | None
) -> dict[str, Any]:
    size = len(json.dumps(payload, ensure_ascii=False))
    if size > MAX_QUESTION_CHARS:  # stored with the run and shown to a person: bounded
        if call is not None:
            call.cancel()
        raise MCPElicitationError(
            f"MCP server {connection.config.name!r}: tool {name!r} asked a question of {size} "
            f"characters (at most {MAX_QUESTION_CHARS}); it was answered 'cancel'"
        )
    return payload


ANSWER_KEY, QUESTION_KEY = "mcpAnswer", "mcpQuestion"
"""Resume data as the tool receives it once checked (`MCPTool.validate_resume`): the answer and
the question it answers (which an answer, `action` and `content` only, can never be confused with)."""


def resumed(answer: Any, question: Any) -> dict[str, Any]:
    return {ANSWER_KEY: answer, QUESTION_KEY: question}


def _resumed(data: Any) -> tuple[Any, Any]:
    if isinstance(data, dict) and set(data) == {ANSWER_KEY, QUESTION_KEY}:
        return data[ANSWER_KEY], data[QUESTION_KEY]
    return data, None


def check_answer(data: Any, params: ElicitRequestParams | dict[str, Any] | None, server: str) -> ElicitResult:
    """Resume data as the answer to a question (its params, or the suspended run's payload;
    None: the shape only): `MCPElicitationInputError` naming what is wrong, with the content
    checked against the server's schema."""
    where = f"the answer to MCP server {server!r}'s question"
    if not isinstance(data, dict) or data.get("action") not in ACTIONS or set(data) - {"action", "content"}:
        raise MCPElicitationInputError(
            f"{where} must be {{'action': 'accept', 'content': {{...}}}}, {{'action': 'decline'}} or "
            f"{{'action': 'cancel'}}; got {_short(data)}"
        )
    action, content = data["action"], data.get("content")
    if isinstance(params, dict):
        mode, schema = params.get("mode"), params.get("requestedSchema")
    elif params is not None:
        mode = params.mode
        schema = params.requested_schema if isinstance(params, ElicitRequestFormParams) else None
    else:
        mode, schema = None, None
    if action != "accept" or mode == "url":
        if content is not None:
            raise MCPElicitationInputError(f"{where}: content goes only with 'accept' on a form question")
        return ElicitResult(action=action)
    if not isinstance(content, dict):
        raise MCPElicitationInputError(f"{where}: 'accept' needs content, a dict of the form's values")
    if params is not None:
        _check_content(content, schema, where)
    try:
        return ElicitResult(action="accept", content=content)
    except pydantic.ValidationError as exc:
        raise MCPElicitationInputError(
            f"invalid content for {where}: values must be strings, numbers, booleans, string lists or null"
        ) from exc


def _check_content(content: dict[str, Any], schema: Any, where: str) -> None:
    if not isinstance(schema, dict):
        raise MCPElicitationInputError(f"{where}: the question has no schema to check the content against")
    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:  # fail closed: an answer that cannot be checked is refused
        raise MCPElicitationInputError(f"{where}: the server's schema is not valid: {exc.message}") from exc
    errors = sorted(jsonschema.Draft202012Validator(schema).iter_errors(content), key=lambda e: list(e.path))
    if errors:
        detail = "; ".join(f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message}" for e in errors[:5])
        raise MCPElicitationInputError(f"invalid content for {where}: {detail}")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "…"
