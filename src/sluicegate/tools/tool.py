"""Tools: functions the model may call.

`create_tool` builds one from an id, a description, an input schema (a pydantic model or a
JSON-schema dict) and `execute(input, context)`. The `@tool` decorator builds one from a
function's signature and docstring (its `Args:` section describes the parameters) and stays
callable as that function. Input from the model is validated before `execute` runs; what fails
validation goes back to the model as an error result, as does anything `execute` raises. A
synchronous `execute` (or decorated function) runs in a worker thread, so a blocking tool does
not stall the event loop and the tool calls of one step run concurrently.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import inspect
import json
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar, get_type_hints, overload

from sluicegate.errors import ToolError
from sluicegate.request_context import RequestContext
from sluicegate.tools.docstring import parse_docstring

P = ParamSpec("P")
R = TypeVar("R")

if TYPE_CHECKING:
    import jsonschema
    import pydantic

# pydantic is imported where a schema is built or checked, not at module level: `import
# sluicegate` does not load it, and an agent without pydantic tools never does.


@dataclass
class ToolContext:
    """What `execute` receives besides its input."""

    tool_call_id: str
    messages: list[Any] = field(default_factory=list)
    request_context: RequestContext = field(default_factory=RequestContext)
    writer: Any = None
    """`await context.writer.custom({"type": "data-...", "data": ...})` streams a data chunk."""
    tool_name: str = ""
    resume_data: Any = None
    """What `resume_stream` was given, validated against the tool's `resume_schema`; None on a
    first run. A suspended tool runs again from the start when resumed: this tells the runs apart."""
    suspend_schema: Any = None
    suspended_with: Any = None
    """On a resumed run, the payload this call suspended with (as stored with the run, never
    from the caller): what the tool left itself to go on from. None on a first run."""
    idempotency_key: str | None = None
    """Stable for one tool call of one run (`run_id:tool_call_id`), across retries and the
    worker that runs it: a tool with side effects passes it on (a payment API's idempotency key)
    so a durable run's retried call (at least once, see docs/durable.md) takes effect once."""
    suspended: bool = False
    suspend_payload: Any = None

    async def suspend(self, payload: Any = None) -> None:
        """Stop the run here and wait for a human: the stream ends with a `tool-call-suspended`
        chunk carrying `payload` (checked against the tool's `suspend_schema`), and whatever
        `execute` returns after this is ignored. `resume_stream(data, run_id=...)` runs the tool
        again with `context.resume_data` set."""
        if self.suspend_schema is not None:
            payload = check_schema(self.suspend_schema, payload, f"tool {self.tool_name!r} suspend payload")
            payload = _plain(payload)
        self.suspended = True
        self.suspend_payload = payload


class ToolInputError(ToolError):
    """The model's arguments did not match the tool's input schema."""


def compile_schema(schema: Any, what: str) -> Any:
    """A pydantic model class as it is; a JSON-schema dict -> its checked validator."""
    if schema is None:
        return None
    if isinstance(schema, dict):
        import jsonschema  # here, not at module level: it adds ~100 ms to `import sluicegate`

        jsonschema.Draft202012Validator.check_schema(schema)
        return jsonschema.Draft202012Validator(schema)
    if not _is_pydantic_model(schema):
        raise ToolError(f"{what} must be a pydantic model or a JSON-schema dict")
    return schema


def check_schema(schema: Any, value: Any, what: str) -> Any:
    """`value` checked against a schema from `compile_schema`: a model instance for a pydantic
    model, the value itself for a JSON schema. Raises `ToolInputError` naming what failed."""
    if hasattr(schema, "iter_errors"):
        errors = sorted(schema.iter_errors(value), key=lambda e: list(e.path))
        if errors:
            detail = "; ".join(f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message}" for e in errors)
            raise ToolInputError(f"invalid {what}: {detail}")
        return value
    import pydantic

    try:
        return schema.model_validate(value)
    except pydantic.ValidationError as exc:
        problems = "; ".join(
            f"{'/'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}"
            for e in exc.errors(include_url=False, include_context=False)
        )
        raise ToolInputError(f"invalid {what}: {problems}") from exc


def _plain(value: Any) -> Any:
    pydantic = sys.modules.get("pydantic")
    if pydantic is not None and isinstance(value, pydantic.BaseModel):
        return value.model_dump(mode="json")
    return value


Execute = Callable[[Any, ToolContext], Awaitable[Any] | Any]


class Tool:
    """A callable tool with a validated input schema."""

    def __init__(
        self,
        *,
        id: str,
        description: str = "",
        input_schema: type[pydantic.BaseModel] | dict[str, Any] | None = None,
        execute: Execute | None = None,
        output_schema: type[pydantic.BaseModel] | dict[str, Any] | None = None,
        to_model_output: Callable[[Any], dict[str, Any]] | None = None,
        provider_options: dict[str, Any] | None = None,
        require_approval: bool = False,
        suspend_schema: type[pydantic.BaseModel] | dict[str, Any] | None = None,
        resume_schema: type[pydantic.BaseModel] | dict[str, Any] | None = None,
        annotations: dict[str, Any] | None = None,
        reads_context: bool = True,
    ) -> None:
        if not id or not isinstance(id, str):
            raise ToolError("a tool needs a non-empty string id")
        if not isinstance(require_approval, bool):
            raise ToolError(f"tool {id!r}: require_approval must be True or False, got {require_approval!r}")
        self.require_approval = require_approval
        """Every call waits for `approve_tool_call` / `decline_tool_call` before it runs."""
        if annotations is not None and not isinstance(annotations, dict):
            raise ToolError(f"tool {id!r}: annotations must be a dict, got {type(annotations).__name__}")
        self.annotations = annotations
        if not isinstance(reads_context, bool):
            raise ToolError(f"tool {id!r}: reads_context must be True or False, got {reads_context!r}")
        self.reads_context = reads_context
        """Whether `execute` looks at its `ToolContext` (`@tool` knows: a function without a
        `ToolContext` parameter never sees it). A durable run sends the conversation so far to a
        tool's activity only when it does: it is the largest part of a call's input."""
        """What the tool says about itself in MCP's `ToolAnnotations` shape (`readOnlyHint`,
        `destructiveHint`, `title`, ...): hints a person deciding on a call is shown with it."""
        self.suspend_schema = suspend_schema
        self.resume_schema = resume_schema
        self._suspend_check = compile_schema(suspend_schema, f"tool {id!r}: suspend_schema")
        self._resume_check = compile_schema(resume_schema, f"tool {id!r}: resume_schema")
        self.id = id
        self.description = description
        self.input_schema = input_schema
        self._execute = execute
        self.output_schema = output_schema
        self.to_model_output = to_model_output
        self.provider_options = provider_options
        self._validator: jsonschema.Draft202012Validator | None = None
        self._generated: tuple[Any, dict[str, Any]] | None = None
        """The pydantic model `input_schema` was and its generated JSON schema (`json_schema`)."""
        if isinstance(input_schema, dict):
            import jsonschema  # here, not at module level: it adds ~100 ms to `import sluicegate`

            jsonschema.Draft202012Validator.check_schema(input_schema)
            self._validator = jsonschema.Draft202012Validator(input_schema)
        elif input_schema is not None and not _is_pydantic_model(input_schema):
            raise ToolError(f"tool {id!r}: input_schema must be a pydantic model or a JSON-schema dict")

    def __repr__(self) -> str:
        return f"Tool(id={self.id!r})"

    def json_schema(self) -> dict[str, Any]:
        """The JSON schema of the input, as sent to the model.

        A pydantic model's schema is generated once (pydantic builds it anew on every call, about
        0.2 ms, and the loop asks for it on every step) and each caller gets its own copy: a
        processor that edits the tools of one request leaves every other request's alone."""
        schema = self.input_schema
        if schema is None:
            return {"type": "object", "properties": {}, "additionalProperties": False}
        if isinstance(schema, dict):
            return schema
        if self._generated is None or self._generated[0] is not schema:
            self._generated = (schema, schema.model_json_schema())
        return copy.deepcopy(self._generated[1])

    def to_v2(self, name: str | None = None) -> dict[str, Any]:
        """The AI SDK V2 function-tool definition."""
        definition: dict[str, Any] = {
            "type": "function",
            "name": name or self.id,
            "description": self.description,
            "inputSchema": self.json_schema(),
        }
        if self.provider_options:
            definition["providerOptions"] = self.provider_options
        return definition

    def validate(self, args: Any) -> Any:
        """The validated input: a model instance for a pydantic schema, a dict otherwise."""
        if isinstance(args, str):
            try:
                args = json.loads(args) if args.strip() else {}
            except ValueError as exc:
                raise ToolInputError(f"tool {self.id!r}: arguments are not valid JSON: {exc}") from exc
        if self.input_schema is None:
            return args if args is not None else {}
        if self._validator is not None:
            errors = sorted(self._validator.iter_errors(args), key=lambda e: list(e.path))
            if errors:
                detail = "; ".join(f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message}" for e in errors)
                raise ToolInputError(f"invalid input for tool {self.id!r}: {detail}")
            return args
        assert not isinstance(self.input_schema, dict)
        import pydantic  # loaded already: the schema is a pydantic model

        try:
            return self.input_schema.model_validate(args)
        except pydantic.ValidationError as exc:
            # Not `str(exc)`: it links to pydantic's documentation, and this text goes to the model.
            problems = "; ".join(
                f"{'/'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}"
                for e in exc.errors(include_url=False, include_context=False)
            )
            raise ToolInputError(f"invalid input for tool {self.id!r}: {problems}") from exc

    def validate_resume_data(self, data: Any) -> Any:
        """`resume_stream`'s data checked against `resume_schema` (as given when there is none)."""
        if self._resume_check is None:
            return data
        return _plain(check_schema(self._resume_check, data, f"resume data for tool {self.id!r}"))

    def validate_resume(self, data: Any, *, suspend_payload: Any = None) -> Any:
        """Resume data for a call that suspended with `suspend_payload`: `validate_resume_data`
        unless a tool's answer is checked against its question (an MCP server's elicitation
        carries its own schema in the payload)."""
        return self.validate_resume_data(data)

    def context_schema(self) -> Any:
        """What `ToolContext.suspend` checks its payload against."""
        return self._suspend_check

    async def execute(self, input: Any, context: ToolContext) -> Any:
        if self._execute is None:
            raise ToolError(f"tool {self.id!r} has no execute function")
        if _is_async(self._execute):
            result = self._execute(input, context)
        else:
            result = await asyncio.to_thread(self._execute, input, context)
        if inspect.isawaitable(result):
            result = await result
        pydantic = sys.modules.get("pydantic")  # a result can only be a model once pydantic is loaded
        if pydantic is not None and isinstance(result, pydantic.BaseModel):
            return result.model_dump(mode="json")
        return result


def create_tool(
    *,
    id: str,
    description: str = "",
    input_schema: type[pydantic.BaseModel] | dict[str, Any] | None = None,
    execute: Execute | None = None,
    output_schema: type[pydantic.BaseModel] | dict[str, Any] | None = None,
    to_model_output: Callable[[Any], dict[str, Any]] | None = None,
    provider_options: dict[str, Any] | None = None,
    require_approval: bool = False,
    suspend_schema: type[pydantic.BaseModel] | dict[str, Any] | None = None,
    resume_schema: type[pydantic.BaseModel] | dict[str, Any] | None = None,
    annotations: dict[str, Any] | None = None,
) -> Tool:
    """Build a tool; see `Tool`. `require_approval=True`: each call waits for a human's
    approval; `suspend_schema` / `resume_schema` check what `context.suspend(...)` sends and what
    `resume_stream` brings back; `annotations` (MCP's tool hints) go with an approval request."""
    return Tool(
        id=id,
        description=description,
        input_schema=input_schema,
        execute=execute,
        output_schema=output_schema,
        to_model_output=to_model_output,
        provider_options=provider_options,
        require_approval=require_approval,
        suspend_schema=suspend_schema,
        resume_schema=resume_schema,
        annotations=annotations,
    )


class FunctionTool(Tool, Generic[P, R]):
    """A tool made by `@tool`: still callable as the function it wraps (`get_weather("Paris")`),
    with that function's signature for type checkers."""

    def __init__(self, function: Callable[P, R], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.function = function
        functools.update_wrapper(self, function)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return f"Tool(id={self.id!r})"


@overload
def tool(func: Callable[P, R], /) -> FunctionTool[P, R]: ...


@overload
def tool(
    *,
    id: str | None = None,
    description: str | None = None,
    require_approval: bool = False,
    suspend_schema: type[pydantic.BaseModel] | dict[str, Any] | None = None,
    resume_schema: type[pydantic.BaseModel] | dict[str, Any] | None = None,
) -> Callable[[Callable[P, R]], FunctionTool[P, R]]: ...


def tool(
    func: Callable[P, R] | None = None,
    /,
    *,
    id: str | None = None,
    description: str | None = None,
    require_approval: bool = False,
    suspend_schema: type[pydantic.BaseModel] | dict[str, Any] | None = None,
    resume_schema: type[pydantic.BaseModel] | dict[str, Any] | None = None,
) -> FunctionTool[P, R] | Callable[[Callable[P, R]], FunctionTool[P, R]]:
    """Make a tool from a function: name from the function, description from its docstring,
    input schema from its parameters (described by the docstring's `Args:` section). A
    parameter annotated `ToolContext` receives the context. A plain `def` runs in a worker
    thread; an `async def` on the event loop."""

    def build(fn: Callable[P, R]) -> FunctionTool[P, R]:
        import pydantic

        hints = get_type_hints(fn)
        signature = inspect.signature(fn)
        doc = parse_docstring(inspect.cleandoc(fn.__doc__) if fn.__doc__ else "")  # own, not inherited
        fields: dict[str, Any] = {}
        context_param: str | None = None
        for name, param in signature.parameters.items():
            annotation = hints.get(name, Any)
            if annotation is ToolContext:
                context_param = name
                continue
            default = param.default if param.default is not inspect.Parameter.empty else ...
            described = doc.params.get(name)
            fields[name] = (
                annotation,
                pydantic.Field(default, description=described) if described else default,
            )
        model = pydantic.create_model(f"{fn.__name__}_input", **fields)
        model.__doc__ = None

        def arguments(input: pydantic.BaseModel, context: ToolContext) -> dict[str, Any]:
            kwargs = {name: getattr(input, name) for name in fields}
            if context_param:
                kwargs[context_param] = context
            return kwargs

        call: Callable[..., Any] = fn
        execute: Execute
        if _is_async(fn):

            async def execute_async(input: pydantic.BaseModel, context: ToolContext) -> Any:
                return await call(**arguments(input, context))

            execute = execute_async
        else:

            def execute_sync(input: pydantic.BaseModel, context: ToolContext) -> Any:
                return call(**arguments(input, context))

            execute = execute_sync

        return FunctionTool(
            fn,
            id=id or fn.__name__,
            description=description if description is not None else doc.description,
            input_schema=model,
            execute=execute,
            require_approval=require_approval,
            suspend_schema=suspend_schema,
            resume_schema=resume_schema,
            reads_context=context_param is not None,
        )

    return build(func) if func is not None else build


def requires_approval(tool: Any) -> bool:
    """Whether a call of `tool` waits for a person. Anything but an explicit `False` (a value set
    after construction, a callable, a tool type without the attribute) counts as yes: a guard
    that cannot tell does not let the call through."""
    return getattr(tool, "require_approval", True) is not False


def _is_pydantic_model(schema: Any) -> bool:
    import pydantic

    return isinstance(schema, type) and issubclass(schema, pydantic.BaseModel)


def _is_async(function: Callable[..., Any]) -> bool:
    """A coroutine function, or an object whose `__call__` is one."""
    if inspect.iscoroutinefunction(function):
        return True
    call = getattr(function, "__call__", None)  # noqa: B004
    return call is not None and inspect.iscoroutinefunction(call)


def normalize_tools(tools: Any) -> dict[str, Tool]:
    """`tools=` in any accepted form -> a name -> Tool dict."""
    if tools is None:
        return {}
    if isinstance(tools, dict):
        out: dict[str, Tool] = {}
        for name, value in tools.items():
            if not isinstance(value, Tool):
                raise ToolError(f"tools[{name!r}] is not a Tool (build it with create_tool or @tool)")
            out[name] = value
        return out
    if isinstance(tools, (list, tuple)):
        result: dict[str, Tool] = {}
        for value in tools:
            if not isinstance(value, Tool):
                raise ToolError(f"{value!r} is not a Tool (build it with create_tool or @tool)")
            result[value.id] = value
        return result
    raise ToolError(f"tools must be a list or a dict of tools, got {type(tools).__name__}")
