"""`WorkingMemory`: a persistent note about the user (or the thread) that the model reads as a
system instruction every turn and rewrites with the `update_working_memory` tool."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal, TypedDict

from sluicegate.memory.errors import MemoryConfigurationError, ThreadAccessError
from sluicegate.memory.ownership import readable_context
from sluicegate.processors.args import ProcessInputArgs
from sluicegate.processors.base import Processor
from sluicegate.storage.base import MemoryStore
from sluicegate.storage.errors import ThreadNotFoundError
from sluicegate.tools.tool import Tool, ToolContext, create_tool

Scope = Literal["thread", "resource"]
UPDATE_TOOL_NAME = "update_working_memory"
WORKING_MEMORY_KEY = "workingMemory"
"""Where thread-scoped working memory lives in the thread's metadata (Mastra's key)."""

DEFAULT_TEMPLATE_CONTENT = """
# User Information
- **First Name**:
- **Last Name**:
- **Location**:
- **Occupation**:
- **Interests**:
- **Goals**:
- **Events**:
- **Facts**:
- **Projects**:
"""


class WorkingMemoryTemplate(TypedDict):
    format: Literal["markdown", "json"]
    content: Any


DEFAULT_TEMPLATE: WorkingMemoryTemplate = {"format": "markdown", "content": DEFAULT_TEMPLATE_CONTENT}


def resolve_template(template: WorkingMemoryTemplate | dict[str, Any] | str | None) -> WorkingMemoryTemplate:
    """A complete template: a bare string is markdown; None is the default template."""
    if template is None:
        return DEFAULT_TEMPLATE
    if isinstance(template, str):
        return {"format": "markdown", "content": template}
    if not isinstance(template, Mapping):
        raise MemoryConfigurationError(
            "working memory template must be a string or a {format, content} object, "
            f"got {type(template).__name__}"
        )
    fmt = template.get("format", "markdown")
    if fmt not in ("markdown", "json"):
        raise MemoryConfigurationError(
            f"working memory template format must be 'markdown' or 'json', got {fmt!r}"
        )
    content = template.get("content", DEFAULT_TEMPLATE_CONTENT if fmt == "markdown" else {})
    return {"format": fmt, "content": content}


def _check_scope(scope: str) -> Scope:
    if scope not in ("thread", "resource"):
        raise MemoryConfigurationError(f"working memory scope must be 'thread' or 'resource', got {scope!r}")
    return scope  # type: ignore[return-value]


def _empty_from_schema(schema: Any) -> Any:
    """The blank object a JSON template describes (`{"name": {"type": "string"}}` -> `{"name": ""}`)."""
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except ValueError:
            return None
    if not isinstance(schema, dict):
        return None
    if schema.get("type") == "object" and isinstance(schema.get("properties"), dict):
        schema = schema["properties"]
    empty: dict[str, Any] = {}
    for key, spec in schema.items():
        kind = spec.get("type") if isinstance(spec, dict) else None
        if kind == "object":
            empty[key] = _empty_from_schema(spec.get("properties", {})) or {}
        elif kind == "array":
            empty[key] = []
        elif kind is None and isinstance(spec, dict) and spec:
            # A nested group without a "type" (the documents' `{"user": {"name": {...}, ...}}`).
            empty[key] = _empty_from_schema(spec) or {}
        else:
            empty[key] = ""
    return empty


def working_memory_instruction(
    template: WorkingMemoryTemplate, data: str | None, *, read_only: bool = False
) -> str:
    """The system instruction carrying the working memory (and, unless read-only, how to update it)."""
    is_json = template["format"] == "json"
    kind = "JSON" if is_json else "Markdown"
    if is_json:
        blank = _empty_from_schema(template["content"])
        shape = f"The JSON object has this shape:\n{json.dumps(blank)}" if blank else ""
    else:
        shape = f"<working_memory_template>\n{template['content']}\n</working_memory_template>"
    current = f"<working_memory_data>\n{data if data is not None else ''}\n</working_memory_data>"
    if read_only:
        return (
            "WORKING_MEMORY_SYSTEM_INSTRUCTION (READ-ONLY):\n"
            "The working memory below holds what is known about the user from earlier conversations. "
            "Use it to personalise your answers. It is read-only in this conversation: do not try to "
            "update it, and do not mention it to the user.\n\n"
            f"{shape}\n\n{current}"
        )
    how = (
        f"Call {UPDATE_TOOL_NAME} with `memory` set to a JSON object holding only the fields that changed; "
        "it is merged into the stored object, and a field set to null is removed."
        if is_json
        else f"Call {UPDATE_TOOL_NAME} with `memory` set to the complete Markdown document, as a string; "
        "it replaces the stored one, so keep every section, including the empty ones."
    )
    return (
        "WORKING_MEMORY_SYSTEM_INSTRUCTION:\n"
        f"Keep a working memory of anything about the user that may matter later, by calling the "
        f"{UPDATE_TOOL_NAME} tool. If information might be referenced again, store it.\n\n"
        "Guidelines:\n"
        "1. Store anything that could be useful later in the conversation or in future conversations.\n"
        "2. Update it as soon as information changes, however small the change.\n"
        f"3. Use {kind} for the data and keep the structure of the template.\n"
        "4. Act naturally: do not mention the working memory to the user and do not ask for personal "
        "information just to fill it.\n"
        f"5. {how}\n\n"
        f"{shape}\n\n{current}\n\n"
        "The working memory lets you keep the conversation going when earlier messages are no longer in "
        f"your context. You MUST call {UPDATE_TOOL_NAME} in every response where you learned something "
        "relevant that is not stored yet."
    )


async def read_working_memory(
    storage: MemoryStore, *, scope: Scope, thread_id: str | None, resource_id: str | None
) -> str | None:
    """The stored working memory for the scope (None when there is none yet)."""
    if scope == "thread":
        if not thread_id:
            return None
        thread = await storage.get_thread(thread_id)
        if thread is not None and resource_id is not None and thread.resource_id != resource_id:
            raise ThreadAccessError(thread_id, resource_id)
        value = thread.metadata.get(WORKING_MEMORY_KEY) if thread else None
        return value if isinstance(value, str) else (json.dumps(value) if value is not None else None)
    if not resource_id:
        return None
    resource = await storage.get_resource(resource_id)
    return resource.working_memory if resource else None


async def write_working_memory(
    storage: MemoryStore, value: str, *, scope: Scope, thread_id: str | None, resource_id: str | None
) -> None:
    """Replace the stored working memory for the scope."""
    if scope == "thread":
        if not thread_id:
            raise MemoryConfigurationError("thread-scoped working memory needs a thread id")
        thread = await storage.get_thread(thread_id)
        if thread is None:
            raise ThreadNotFoundError(thread_id)
        if resource_id is not None and thread.resource_id != resource_id:
            raise ThreadAccessError(thread_id, resource_id)
        await storage.update_thread(thread_id, metadata={**thread.metadata, WORKING_MEMORY_KEY: value})
        return
    if not resource_id:
        raise MemoryConfigurationError("resource-scoped working memory needs a resource id")
    await storage.update_resource(resource_id, working_memory=value)


def merge_json(base: Any, update: Any) -> Any:
    """Deep-merge `update` into `base`: objects merge key by key, a None value removes the key,
    anything else (arrays included) replaces."""
    if not isinstance(base, dict) or not isinstance(update, dict):
        return update
    merged = dict(base)
    for key, value in update.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_json(merged.get(key), value)
    return merged


def create_update_working_memory_tool(
    storage: MemoryStore,
    *,
    scope: Scope = "resource",
    template: WorkingMemoryTemplate | dict[str, Any] | None = None,
) -> Tool:
    """The `update_working_memory` tool: markdown replaces the document, JSON merges into it.
    It writes to the thread and resource of the calling request."""
    resolved = resolve_template(template)
    scope = _check_scope(scope)
    is_json = resolved["format"] == "json"
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "memory": (
                {"type": ["object", "string"], "description": "The fields to change, as a JSON object"}
                if is_json
                else {"type": "string", "description": "The complete working memory, as Markdown"}
            )
        },
        "required": ["memory"],
        "additionalProperties": False,
    }

    async def execute(input: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        where = await readable_context(storage, context.request_context)
        if where.read_only:
            return {"success": False, "reason": "working memory is read-only in this conversation"}
        value = input["memory"]
        if is_json:
            update = json.loads(value) if isinstance(value, str) else value
            current = await read_working_memory(
                storage, scope=scope, thread_id=where.thread_id, resource_id=where.resource_id
            )
            try:
                existing = json.loads(current) if current else {}
            except ValueError:
                existing = {}
            value = json.dumps(merge_json(existing, update), ensure_ascii=False)
        await write_working_memory(
            storage, value, scope=scope, thread_id=where.thread_id, resource_id=where.resource_id
        )
        return {"success": True}

    return create_tool(
        id=UPDATE_TOOL_NAME,
        description="Update the working memory with new information",
        input_schema=schema,
        execute=execute,
    )


class WorkingMemory(Processor):
    """Inject the working memory as a system instruction (source `memory`).

    It reads the thread's metadata (`scope="thread"`) or the resource record (`scope="resource"`,
    the default) for the request's thread/resource, and adds the instruction built from the
    template (`{"format": "markdown" | "json", "content": ...}`; a default markdown profile when
    None) and the current data. Updates happen through the `update_working_memory` tool that
    `Memory` exposes (`create_update_working_memory_tool`); with `read_only=True` the instruction
    says the memory cannot be changed. A thread owned by another resource than the request's
    raises `ThreadAccessError` (from this processor and from the tool).

    ```python
    wm = WorkingMemory(storage=store, scope="resource",
                       template={"format": "markdown", "content": "# Profile\\n- **Name**:\\n"})
    agent = Agent(name="a", model=model, input_processors=[wm],
                  tools=[create_update_working_memory_tool(store, scope="resource")])
    ```
    """

    id = "working-memory"
    loads_context = True
    name = "WorkingMemory"

    def __init__(
        self,
        *,
        storage: MemoryStore,
        scope: Scope = "resource",
        template: WorkingMemoryTemplate | dict[str, Any] | str | None = None,
        read_only: bool = False,
    ) -> None:
        super().__init__()
        self.storage = storage
        self.scope = _check_scope(scope)
        self.template = resolve_template(template)
        self.read_only = read_only

    async def process_input(self, args: ProcessInputArgs) -> Any:
        where = await readable_context(self.storage, args.request_context, args.state)
        if not where.thread_id and not where.resource_id:
            return args.message_list
        data = await read_working_memory(
            self.storage, scope=self.scope, thread_id=where.thread_id, resource_id=where.resource_id
        )
        instruction = working_memory_instruction(
            self.template, data, read_only=self.read_only or where.read_only
        )
        args.message_list.add_system(instruction, tag="memory")
        return args.message_list
