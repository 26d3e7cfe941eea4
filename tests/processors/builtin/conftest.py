"""Fixtures for the built-in processor tests, which drive a real Agent with a MockModel."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from sluicegate.stream import Chunk


async def _collect(output: Any) -> list[Chunk]:
    return [chunk async for chunk in output.full_stream]


def _user_texts(prompt: list[dict[str, Any]]) -> list[str]:
    return [p["text"] for m in prompt if m["role"] == "user" for p in m["content"] if p["type"] == "text"]


@pytest.fixture
def collect() -> Callable[[Any], Awaitable[list[Chunk]]]:
    """Drain a `ModelOutput`'s full stream into a list."""
    return _collect


@pytest.fixture
def user_texts() -> Callable[[list[dict[str, Any]]], list[str]]:
    """The user text parts of a V2 prompt."""
    return _user_texts
