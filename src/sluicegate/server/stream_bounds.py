"""Bounds on what outlives its request: runs `send-message` starts (they belong to no request,
so the connection cap that bounds `/stream` never counts them) and thread subscriptions (one
connection each, held for as long as the client likes).

Each kind is counted per server process and per resource; past either bound the request is
answered 429 with `Retry-After` and a body naming the bound (`bound`, `limit`) and the setting
that raises it. A slot is taken before the work starts and given back however it ends (a
finished, failed, cancelled, tripped or suspended run; a subscription the client left, or that
reached its lifetime). The resource is the one the request is bound to (the identity's, else
the body's `resourceId`); a server without an identity hook trusts its clients to name it,
so there only the per-process bound holds against a client that names a new one each time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Request

from sluicegate.server.connections import ConnectionLimits
from sluicegate.server.deps import settings_of
from sluicegate.server.errors import ApiError


@dataclass(frozen=True)
class Bound:
    """One limit, and how an operator sets it."""

    setting: str
    env: str
    flag: str
    limit: int

    def where(self) -> str:
        return f"{self.setting} / {self.flag} / {self.env}"


class Slots:
    """The held slots of one kind of long-lived work, per process and per resource."""

    def __init__(self, kind: str, total: Bound, per_resource: Bound, retry_after: int) -> None:
        self.kind = kind
        self.total = total
        self.per_resource = per_resource
        self.retry_after = retry_after
        self.held = 0
        self._by_resource: dict[str | None, int] = {}

    def held_by(self, resource: str | None) -> int:
        return self._by_resource.get(resource, 0)

    def take(self, resource: str | None) -> Callable[[], None]:
        """A slot for `resource` (429 past a bound); call the returned function to give it
        back (once; later calls do nothing)."""
        if self.held >= self.total.limit:
            raise self._refusal(self.total, f"this server process has {self.held}")
        mine = self._by_resource.get(resource, 0)
        if mine >= self.per_resource.limit:
            raise self._refusal(self.per_resource, f"this resource has {mine}")
        self.held += 1
        self._by_resource[resource] = mine + 1
        given_back = False

        def release() -> None:
            nonlocal given_back
            if given_back:
                return
            given_back = True
            self.held -= 1
            left = self._by_resource[resource] - 1
            if left:
                self._by_resource[resource] = left
            else:
                del self._by_resource[resource]

        return release

    def _refusal(self, bound: Bound, held: str) -> ApiError:
        return ApiError(
            429,
            f"too many {self.kind}: {held}, the limit is {bound.limit} ({bound.where()}); "
            "retry when one has ended",
            extra={"bound": bound.setting, "limit": bound.limit},
            headers={"retry-after": str(self.retry_after)},
        )


def detached_runs(request: Request) -> Slots:
    """The app's bound on runs that belong to no request (made on first use)."""
    slots: Slots | None = getattr(request.app.state, "detached_runs", None)
    if slots is None:
        settings = settings_of(request)
        slots = Slots(
            "detached runs",
            Bound(
                "max_detached_runs",
                "SLUICEGATE_MAX_DETACHED_RUNS",
                "--max-detached-runs",
                settings.max_detached_runs,
            ),
            Bound(
                "max_detached_runs_per_resource",
                "SLUICEGATE_MAX_DETACHED_RUNS_PER_RESOURCE",
                "--max-detached-runs-per-resource",
                settings.max_detached_runs_per_resource,
            ),
            retry_after=5,
        )
        request.app.state.detached_runs = slots
    return slots


def subscriptions(request: Request) -> Slots:
    """The app's bound on open thread subscriptions (made on first use). The per-process
    default is half the connection cap, so subscriptions never hold every connection."""
    slots: Slots | None = getattr(request.app.state, "subscriptions", None)
    if slots is None:
        settings = settings_of(request)
        total = settings.max_subscriptions
        if total is None:
            total = max(1, ConnectionLimits.from_settings(settings).max_connections // 2)
        slots = Slots(
            "thread subscriptions",
            Bound("max_subscriptions", "SLUICEGATE_MAX_SUBSCRIPTIONS", "--max-subscriptions", total),
            Bound(
                "max_subscriptions_per_resource",
                "SLUICEGATE_MAX_SUBSCRIPTIONS_PER_RESOURCE",
                "--max-subscriptions-per-resource",
                settings.max_subscriptions_per_resource,
            ),
            retry_after=30,
        )
        request.app.state.subscriptions = slots
    return slots
