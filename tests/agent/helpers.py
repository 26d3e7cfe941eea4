"""Small builders shared by the core tests."""

from __future__ import annotations

from typing import Any

from sluicegate import create_tool
from sluicegate.stream import Chunk

OBJECT = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}


async def weather_execute(input: Any, context: Any) -> dict[str, Any]:
    return {"city": input["city"], "forecast": "sunny"}


def weather_tool() -> Any:
    return create_tool(
        id="weather", description="Get the weather", input_schema=OBJECT, execute=weather_execute
    )


async def collect(output: Any) -> list[Chunk]:
    return [chunk async for chunk in output.full_stream]


def types(chunks: list[Chunk]) -> list[str]:
    return [c.type for c in chunks]


def prompt_texts(prompt: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(role, text) for every message of a V2 prompt (tool parts shown by type)."""
    out = []
    for message in prompt:
        content = message["content"]
        if isinstance(content, str):
            out.append((message["role"], content))
        else:
            out.append((message["role"], " ".join(p.get("text", p["type"]) for p in content)))
    return out
