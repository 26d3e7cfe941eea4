"""`ServerSettings`: the limits and switches of one server, from arguments or the environment.

Every value has a safe default; `from_env` reads the `SLUICEGATE_*` variables that
`sluicegate serve` documents, so worker processes started by uvicorn or gunicorn agree.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from sluicegate.errors import ConfigurationError
from sluicegate.server.hosts import ENV as HOSTS_ENV
from sluicegate.server.hosts import allowed_names

TEMPORAL_ENV = "SLUICEGATE_TEMPORAL"
"""Set by `sluicegate serve --temporal` to the Temporal address: runs are workflows."""


def durable_runs() -> bool:
    """Whether this server runs agents as Temporal workflows (`serve --temporal`), read through
    the run log; every route and protocol adapter asks here (no Temporal import needed)."""
    return bool(os.environ.get(TEMPORAL_ENV))


def _float(name: str, default: float | None) -> float | None:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be a number of seconds, got {raw!r}") from None
    return value if value > 0 else None


def _web_url(name: str, raw: str) -> str:
    """`raw` as an http(s) URL without a trailing slash: the studio puts it in a link, so no
    other scheme (`javascript:`) and nothing a page could misread gets through."""
    from urllib.parse import urlsplit

    value = raw.strip().rstrip("/")
    parts = urlsplit(value)
    bad = any(c.isspace() or not c.isprintable() or c in "\"'<>" for c in value)
    if bad or parts.scheme not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ConfigurationError(f"{name} must be an http(s) URL such as http://127.0.0.1:8233, got {raw!r}")
    return value


def _int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be an integer, got {raw!r}") from None
    if value <= 0:
        raise ConfigurationError(f"{name} must be positive, got {value}")
    return value


def _seconds(name: str, default: float) -> float:
    """A positive number of seconds (no "0 for none": the guard it sets cannot be switched off)."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ConfigurationError(f"{name} must be a number of seconds, got {raw!r}") from None
    if not value > 0 or value == float("inf"):
        raise ConfigurationError(f"{name} must be a positive number of seconds, got {raw!r}")
    return value


def _flag(name: str, default: bool) -> bool:
    raw = os.environ.get(name, "").strip().lower()
    if raw == "":
        return default
    if raw in {"1", "true", "yes", "on"}:
        return True
    if raw in {"0", "false", "no", "off"}:
        return False
    raise ConfigurationError(f"{name} must be 1 or 0 (true/false, yes/no, on/off), got {raw!r}")


DEV_CORS_ORIGIN = "http://localhost:3000"
"""Where `npx mastra studio` serves Mastra's Studio; `sluicegate dev` allows it by default."""

CORS_HEADERS = ("authorization", "content-type", "x-mastra-client-type", "x-mastra-dev-playground")
"""Request headers a browser client may send: the bearer token, JSON, and the two that
`@mastra/client-js` and Mastra's Studio add to every request."""


LOOPBACK_ORIGINS = r"^http://(localhost|127\.0\.0\.1|\[::1\])(:[0-9]{1,5})?\Z"
"""Every page served from this machine (`http://localhost:*`, `http://127.0.0.1:*`,
`http://[::1]:*`): what `sluicegate dev` allows (`cors_loopback`), whatever port Mastra's Studio
or a local front end runs on."""


def cors_options(origins: tuple[str, ...], *, loopback: bool = False) -> dict[str, Any]:
    """Starlette `CORSMiddleware` options for `origins` (and, with `loopback`, any origin on
    this machine, matched whole by `LOOPBACK_ORIGINS`).

    Credentialed requests (Studio fetches with `credentials: "include"`) are allowed only for
    origins named one by one: with `*`, any site could make a logged-in browser call the API
    with its cookies, so the wildcard stays credential-free (and Studio needs its origin named).
    """
    return {
        "allow_origins": list(origins),
        "allow_origin_regex": LOOPBACK_ORIGINS if loopback else None,
        "allow_credentials": "*" not in origins,
        "allow_methods": ["GET", "POST", "PATCH", "DELETE", "OPTIONS"],
        "allow_headers": list(CORS_HEADERS),
        "expose_headers": ["x-sluicegate-trace-id"],
    }


@dataclass(frozen=True)
class ServerSettings:
    """How the server guards itself and who may call it."""

    api_token: str | None = None
    """When set, every `/api` request needs `Authorization: Bearer <token>`."""
    cors_origins: tuple[str, ...] = ()
    """Origins allowed to call the API from a browser (`*` for any)."""
    allowed_hosts: tuple[str, ...] = ()
    """Host names (any port) the server answers to; others get 400. Empty: any (no check);
    `sluicegate serve`/`dev` on a loopback address set the loopback names plus `--allowed-hosts`
    (`sluicegate.server.hosts`, against DNS rebinding). `*` turns the check off."""
    cors_loopback: bool = False
    """Also allow any origin on this machine (`http://localhost:<any port>`, `127.0.0.1`,
    `[::1]`): `sluicegate dev` turns it on; `serve` allows only the origins named."""
    request_timeout: float | None = 300.0
    """Seconds one agent run may take before it is cancelled (None: no limit)."""
    max_body_bytes: int = 1_000_000
    """Request bodies larger than this are refused with 413."""
    max_steps_limit: int = 50
    """The largest `maxSteps` a client may ask for."""
    allow_client_overrides: bool = False
    """Whether a request may replace the agent's model or instructions (Mastra's `model`,
    `instructions`, `system` body fields)."""
    allow_unapproved_tool_execution: bool = False
    """Whether `POST /api/tools/{id}/execute` (and the agent's tool route) may run a tool that
    requires approval; off, they answer 403, so no caller skips the person who approves."""
    studio: bool = False
    """Serve the studio at `/studio`."""
    trace_capacity: int = 200
    """How many recent runs' spans the studio keeps (in memory, and in the app's storage)."""
    trace_max_age: float = 7 * 86_400.0
    """Seconds a run's spans are kept in the app's storage (and shown by the studio)."""
    persist_traces: bool = True
    """With the studio and a storage that keeps spans (`SQLiteStore`, `PostgresStore`), write
    runs' spans there so they survive reloads and every server instance shows them."""
    trace_db: str | None = None
    """A SQLite file for the studio's runs when the app's storage cannot keep them (no storage,
    or one without spans): `sluicegate dev` sets `.sluicegate/traces.db` beside the app."""
    capture_content: bool = False
    """Record prompts, answers, tool arguments and results, and what each processor changed, on
    the spans the studio shows (`sluicegate dev` turns it on; see docs/observability.md)."""
    temporal_ui: str | None = None
    """Temporal's Web UI (an http(s) URL, e.g. `http://127.0.0.1:8233`): the studio links each
    durable run to `<ui>/namespaces/<ns>/workflows/<id>`; unset, it shows the CLI command."""
    max_eval_examples: int = 1000
    """The most examples one `POST /api/eval` dataset may hold (each may call a guardrail's
    judge model, which costs money); evaluations also run one at a time per server process."""
    max_eval_chunks: int = 200_000
    """The most stream chunks one output-phase `POST /api/eval` may push through the processors
    (the examples' characters over `chunkChars`, summed): at about 40 µs a chunk a processor,
    seconds of work, not minutes; more is refused with 413."""
    extra_headers: dict[str, str] = field(default_factory=dict)
    request_read_timeout: float = 30.0
    """Seconds a connection has to deliver a request's headers and whole body, counted from when
    it opens or its previous answer ends; a slower one is answered 408 and closed. Applies where
    the server runs the guarded protocol (`sluicegate serve`, `sluicegate.server.connections`)."""
    max_connections: int | None = None
    """Open connections one server process accepts; more are answered 503 at once. None: half
    the process's open-file limit, at most 2048. Applies where `request_read_timeout` does."""
    max_detached_runs: int = 64
    """Runs that belong to no request (`send-message`) one server process runs at once; more
    are answered 429. Each holds a model call (and its provider connection) for up to
    `request_timeout`, and no connection cap counts them."""
    max_detached_runs_per_resource: int = 4
    """Of those, how many one resource may have at once (429 beyond)."""
    max_subscriptions: int | None = None
    """Open thread subscriptions (`threads/subscribe`) per process; more are answered 429.
    None: half the connection cap (`max_connections`, or its default), so subscriptions never
    hold every connection."""
    max_subscriptions_per_resource: int = 8
    """Of those, how many one resource may hold at once (429 beyond)."""
    subscription_max_age: float = 3600.0
    """Seconds a thread subscription lasts: it ends (`[DONE]`) at the first moment after this
    when no run is being streamed on it, and the client subscribes again."""
    heartbeat_interval: float = 25.0
    """Seconds of silence after which a server-sent event stream gets a `: heartbeat` comment
    line (Mastra's interval): proxies keep the connection, and a write to a peer that is gone
    fails, which ends the stream."""

    def __post_init__(self) -> None:
        if not self.request_read_timeout > 0 or self.request_read_timeout == float("inf"):
            raise ConfigurationError(
                f"request_read_timeout must be a positive number of seconds, got {self.request_read_timeout}"
            )
        if isinstance(self.allowed_hosts, str) or not all(isinstance(h, str) for h in self.allowed_hosts):
            raise ConfigurationError(
                f"allowed_hosts must be a tuple of host names, got {self.allowed_hosts!r}"
            )
        object.__setattr__(self, "allowed_hosts", allowed_names(self.allowed_hosts))
        if not isinstance(self.allow_unapproved_tool_execution, bool):
            raise ConfigurationError(
                "allow_unapproved_tool_execution must be True or False, "
                f"got {self.allow_unapproved_tool_execution!r}"
            )
        if self.max_connections is not None and self.max_connections < 1:
            raise ConfigurationError(f"max_connections must be at least 1, got {self.max_connections}")
        self._check_stream_bounds()
        examples = self.max_eval_examples
        if isinstance(examples, bool) or not isinstance(examples, int) or examples < 1:
            raise ConfigurationError(f"max_eval_examples must be a positive integer, got {examples!r}")
        chunks = self.max_eval_chunks
        if isinstance(chunks, bool) or not isinstance(chunks, int) or chunks < 1:
            raise ConfigurationError(f"max_eval_chunks must be a positive integer, got {chunks!r}")
        if self.temporal_ui is not None:
            object.__setattr__(self, "temporal_ui", _web_url("temporal_ui", self.temporal_ui))
        capacity = self.trace_capacity
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:
            raise ConfigurationError(f"trace_capacity must be a positive integer, got {capacity!r}")
        if not self.trace_max_age > 0 or self.trace_max_age == float("inf"):
            raise ConfigurationError(
                f"trace_max_age must be a positive number of seconds, got {self.trace_max_age!r}"
            )

    def _check_stream_bounds(self) -> None:
        for name in ("max_detached_runs", "max_detached_runs_per_resource", "max_subscriptions_per_resource"):
            _positive_int(name, getattr(self, name))
        if self.max_subscriptions is not None:
            _positive_int("max_subscriptions", self.max_subscriptions)
        for name in ("subscription_max_age", "heartbeat_interval"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < float("inf"):
                raise ConfigurationError(f"{name} must be a positive number of seconds, got {value!r}")

    @classmethod
    def from_env(cls, *, studio: bool | None = None) -> ServerSettings:
        """Settings from `SLUICEGATE_API_TOKEN`, `SLUICEGATE_CORS_ORIGINS` (comma-separated),
        `SLUICEGATE_REQUEST_TIMEOUT`, `SLUICEGATE_MAX_BODY_BYTES`, `SLUICEGATE_STUDIO`,
        `SLUICEGATE_REQUEST_READ_TIMEOUT`, `SLUICEGATE_MAX_CONNECTIONS`, `SLUICEGATE_TRACE_CAPACITY`,
        `SLUICEGATE_TRACE_MAX_AGE` (seconds), `SLUICEGATE_PERSIST_TRACES` (`0` turns it off),
        `SLUICEGATE_TRACE_DB`, `SLUICEGATE_CAPTURE_CONTENT`, `SLUICEGATE_EVAL_MAX_EXAMPLES`,
        `SLUICEGATE_TEMPORAL_UI`, `SLUICEGATE_ALLOW_UNAPPROVED_TOOL_EXECUTION`,
        `SLUICEGATE_ALLOWED_HOSTS` (comma-separated), `SLUICEGATE_EVAL_MAX_CHUNKS`,
        `SLUICEGATE_CORS_LOOPBACK`, and the stream bounds (`_stream_bounds_from_env`)."""
        origins = tuple(
            o.strip() for o in os.environ.get("SLUICEGATE_CORS_ORIGINS", "").split(",") if o.strip()
        )
        hosts = tuple(h.strip() for h in os.environ.get(HOSTS_ENV, "").split(",") if h.strip())
        studio_env = os.environ.get("SLUICEGATE_STUDIO", "").lower() in {"1", "true", "yes"}
        return cls(
            api_token=os.environ.get("SLUICEGATE_API_TOKEN") or None,
            cors_origins=origins,
            allowed_hosts=hosts,
            cors_loopback=_flag("SLUICEGATE_CORS_LOOPBACK", False),
            request_timeout=_float("SLUICEGATE_REQUEST_TIMEOUT", 300.0),
            max_body_bytes=_int("SLUICEGATE_MAX_BODY_BYTES", 1_000_000),
            allow_client_overrides=os.environ.get("SLUICEGATE_ALLOW_CLIENT_OVERRIDES", "").lower()
            in {"1", "true", "yes"},
            allow_unapproved_tool_execution=_flag("SLUICEGATE_ALLOW_UNAPPROVED_TOOL_EXECUTION", False),
            studio=studio_env if studio is None else studio,
            request_read_timeout=_seconds("SLUICEGATE_REQUEST_READ_TIMEOUT", 30.0),
            max_connections=_int("SLUICEGATE_MAX_CONNECTIONS", 0) or None,  # unset: None
            trace_capacity=_int("SLUICEGATE_TRACE_CAPACITY", 200),
            trace_max_age=_seconds("SLUICEGATE_TRACE_MAX_AGE", 7 * 86_400.0),
            persist_traces=_flag("SLUICEGATE_PERSIST_TRACES", True),
            trace_db=os.environ.get("SLUICEGATE_TRACE_DB") or None,
            capture_content=_flag("SLUICEGATE_CAPTURE_CONTENT", False),
            max_eval_examples=_int("SLUICEGATE_EVAL_MAX_EXAMPLES", 1000),
            max_eval_chunks=_int("SLUICEGATE_EVAL_MAX_CHUNKS", 200_000),
            temporal_ui=os.environ.get("SLUICEGATE_TEMPORAL_UI") or None,
            **_stream_bounds_from_env(),
        )


def _positive_int(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigurationError(f"{name} must be a positive integer, got {value!r}")


def _stream_bounds_from_env() -> dict[str, Any]:
    """`SLUICEGATE_MAX_DETACHED_RUNS`, `SLUICEGATE_MAX_DETACHED_RUNS_PER_RESOURCE`,
    `SLUICEGATE_MAX_SUBSCRIPTIONS`, `SLUICEGATE_MAX_SUBSCRIPTIONS_PER_RESOURCE`,
    `SLUICEGATE_SUBSCRIPTION_MAX_AGE` and `SLUICEGATE_HEARTBEAT_INTERVAL` (seconds); unset:
    the defaults."""
    bounds: dict[str, Any] = {
        "max_detached_runs": _int("SLUICEGATE_MAX_DETACHED_RUNS", 64),
        "max_detached_runs_per_resource": _int("SLUICEGATE_MAX_DETACHED_RUNS_PER_RESOURCE", 4),
        "max_subscriptions_per_resource": _int("SLUICEGATE_MAX_SUBSCRIPTIONS_PER_RESOURCE", 8),
        "subscription_max_age": _seconds("SLUICEGATE_SUBSCRIPTION_MAX_AGE", 3600.0),
        "heartbeat_interval": _seconds("SLUICEGATE_HEARTBEAT_INTERVAL", 25.0),
    }
    if os.environ.get("SLUICEGATE_MAX_SUBSCRIPTIONS"):
        bounds["max_subscriptions"] = _int("SLUICEGATE_MAX_SUBSCRIPTIONS", 1)
    return bounds
