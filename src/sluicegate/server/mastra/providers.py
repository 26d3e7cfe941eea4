"""`GET /api/agents/providers`: the model providers this server can use, in Mastra's shape.

A provider is `connected` when its key variable is set (or it needs none); the key itself is
never sent. `models` lists the models the app's agents use with that provider: sluicegate
keeps no catalogue of every provider's models, and inventing one would go stale.
"""

from __future__ import annotations

import os
from typing import Any

from fastapi import APIRouter, Request

from sluicegate.models.compatible_providers import COMPATIBLE_PROVIDERS
from sluicegate.models.google_gemini import API_KEY_ENVS as GOOGLE_KEYS
from sluicegate.server.deps import ERRORS, registry_of
from sluicegate.server.serialize import model_parts

router = APIRouter(prefix="/api/agents", tags=["agents"], responses=ERRORS)

_NATIVE: dict[str, tuple[str, tuple[str, ...]]] = {
    "openai": ("OpenAI", ("OPENAI_API_KEY",)),
    "openai.chat": ("OpenAI (Chat Completions)", ("OPENAI_API_KEY",)),
    "anthropic": ("Anthropic", ("ANTHROPIC_API_KEY",)),
    "google": ("Google", GOOGLE_KEYS),
}


def _catalogue() -> dict[str, tuple[str, tuple[str, ...]]]:
    """Provider id -> (name, key variables; any one of them is enough)."""
    providers = dict(_NATIVE)
    for name, provider in COMPATIBLE_PROVIDERS.items():
        providers[name] = (name, (provider.api_key_env,) if provider.api_key_env else ())
    providers["local"] = ("Local (embedded, offline)", ())
    return providers


@router.get("/providers", responses=ERRORS)
async def list_providers(request: Request) -> dict[str, Any]:
    """Each provider with its key variable's name and whether it is set."""
    used: dict[str, list[str]] = {}
    for agent in registry_of(request).agents.values():
        provider, model_id = model_parts(agent)
        if provider and model_id and model_id not in used.setdefault(provider, []):
            used[provider].append(model_id)
    catalogue = _catalogue()
    for provider in used:  # an app's own model class: shown with what its agents use
        catalogue.setdefault(provider, (provider, ()))
    providers = [
        {
            "id": provider,
            "name": name,
            "label": name,
            "description": "",
            "envVar": keys[0] if len(keys) == 1 else list(keys) if keys else "",
            "connected": not keys or any(os.environ.get(key) for key in keys),
            "docUrl": None,
            "models": used.get(provider, []),
        }
        for provider, (name, keys) in catalogue.items()
    ]
    return {"providers": providers}
