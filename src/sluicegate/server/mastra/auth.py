"""`GET /api/auth/capabilities`: what Studio needs to know about sign-in.

Mastra answers `{enabled: false, login: null}` without an auth provider, `{enabled: true,
login}` for an anonymous caller, and adds `user`, `capabilities` and `access` for a signed-in
one. Here auth is the bearer token or the identity hook; signing in is the application's
business, so `login` is always null (Studio then offers no login form), and the identity
hook's resource is the user.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request

from sluicegate.server.deps import ERRORS, registry_of, settings_of
from sluicegate.server.identity import identity_of

router = APIRouter(prefix="/api/auth", tags=["auth"], responses=ERRORS)

_NO_FEATURES = {"user": False, "session": False, "sso": False, "rbac": False, "acl": False}


@router.get("/capabilities", responses=ERRORS)
async def capabilities(request: Request) -> dict[str, Any]:
    """Whether requests are authenticated, and as whom (never how: no token is echoed)."""
    enabled = settings_of(request).api_token is not None or registry_of(request).resolve_identity is not None
    if not enabled:
        return {"enabled": False, "login": None}
    identity = identity_of(request)
    if identity is None:
        return {"enabled": True, "login": None}
    return {
        "enabled": True,
        "login": None,
        "user": {"id": identity.resource_id},
        "capabilities": {**_NO_FEATURES, "user": True},
        "access": None,
    }


@router.get("/me", responses=ERRORS)
async def current_user(request: Request) -> dict[str, Any] | None:
    """The identity hook's resource as Mastra's current user; null without one."""
    identity = identity_of(request)
    return None if identity is None else {"id": identity.resource_id}
