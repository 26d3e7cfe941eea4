"""`sluicegate serve` and `dev`: their options, which travel to uvicorn's worker processes as
environment variables, and starting the server."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from sluicegate.cli.checks import refuse_local_run_logs
from sluicegate.cli.terminal import color
from sluicegate.errors import SluicegateError


def serve(
    target: str,
    *,
    host: str,
    port: int,
    workers: int,
    studio: bool,
    reload: bool,
    read_timeout: float | None,
    max_connections: int | None,
    allowed_hosts: Sequence[str] | None = None,
) -> int:
    try:
        import uvicorn
    except ImportError:
        print("sluicegate serve needs the server extra: pip install 'sluicegate[server]'", file=sys.stderr)
        return 2
    from sluicegate.server.connections import listen_backlog, protocol_class
    from sluicegate.server.hosts import ENV as HOSTS_ENV
    from sluicegate.server.hosts import loopback_rule
    from sluicegate.server.identity import warn_if_exposed
    from sluicegate.server.loader import APP_ENV, DEV_ENV, load_registry, split_target
    from sluicegate.server.settings import ServerSettings

    # Options become environment variables, which uvicorn's worker processes inherit.
    if read_timeout is not None:
        os.environ["SLUICEGATE_REQUEST_READ_TIMEOUT"] = repr(read_timeout)
    if max_connections is not None:
        os.environ["SLUICEGATE_MAX_CONNECTIONS"] = str(max_connections)
    # On a loopback address only loopback names (and those allowed) reach the app: DNS rebinding.
    if allowed_hosts is None:
        allowed_hosts = os.environ.get(HOSTS_ENV, "").split(",")
    hosts = loopback_rule(host, [h for entry in allowed_hosts for h in entry.split(",") if h.strip()])
    if hosts:
        os.environ[HOSTS_ENV] = ",".join(hosts)
    else:
        os.environ.pop(HOSTS_ENV, None)
    ServerSettings.from_env()  # a bad SLUICEGATE_* value fails here, not in every worker
    path, _ = split_target(target)
    try:
        registry = load_registry(target)  # fail here, with a readable message, before workers start
    except SluicegateError as exc:
        if not reload or not path.is_file():  # a wrong path is a typo in the command: stop
            raise
        # `dev` keeps serving (an error page) and reloads once the file is fixed.
        print(color(f"sluicegate: {exc}", "1;31"), file=sys.stderr)
    else:
        warn_if_exposed(host, registry)
        if os.environ.get("SLUICEGATE_TEMPORAL"):
            refuse_local_run_logs(registry)
    os.environ[APP_ENV] = target
    if reload:
        os.environ[DEV_ENV] = "1"
    if studio:
        os.environ["SLUICEGATE_STUDIO"] = "1"
        print(color(f"sluicegate studio: {studio_url(host, port)}", "1;36"), flush=True)
    if reload:  # `dev`: the inspector shows content, and runs outlive reloads even without storage
        os.environ.setdefault("SLUICEGATE_CAPTURE_CONTENT", "1")
        os.environ.setdefault("SLUICEGATE_TRACE_DB", str(path.resolve().parent / ".sluicegate" / "traces.db"))
    options: dict[str, Any] = {
        "host": host,
        "port": port,
        "factory": True,
        "log_level": "info",
        "http": protocol_class(),  # the read deadline and the connection cap
        "backlog": listen_backlog(),
    }
    if reload:
        options["reload"] = True
        options["reload_dirs"] = [str(path.resolve().parent)]
    elif workers > 1:
        options["workers"] = workers
    uvicorn.run("sluicegate.server.loader:app_from_env", **options)
    return 0


def studio_url(host: str, port: int) -> str:
    """Where a browser on this machine reaches the studio (a wildcard address is not one)."""
    shown = "127.0.0.1" if host in ("", "0.0.0.0") else "[::1]" if host == "::" else host
    if ":" in shown and not shown.startswith("["):
        shown = f"[{shown}]"
    return f"http://{shown}:{port}/studio"


def add_temporal_serve_options(cmd: Any) -> None:
    cmd.add_argument(
        "--temporal",
        metavar="HOST:PORT",
        help="start runs as Temporal workflows (durable runs; workers: `sluicegate worker`; "
        "e.g. --temporal 127.0.0.1:7233)",
    )
    cmd.add_argument(
        "--task-queue",
        default=None,
        metavar="Q",
        help="the workers' task queue (default sluicegate; e.g. --task-queue agents)",
    )
    cmd.add_argument(
        "--namespace",
        default=None,
        help="the workers' Temporal namespace (default default; e.g. --namespace prod)",
    )
    cmd.add_argument(
        "--open-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how long a stream waits for a worker to open (or, after a decision, continue) the "
        "run before answering 503 (default 30; e.g. --open-timeout 60)",
    )
    cmd.add_argument(
        "--temporal-ui",
        default=None,
        metavar="URL",
        help="Temporal's Web UI, which the studio links each durable run to "
        "(e.g. --temporal-ui http://127.0.0.1:8233)",
    )


STREAM_BOUNDS = (
    (
        "--max-detached-runs",
        "N",
        int,
        "SLUICEGATE_MAX_DETACHED_RUNS",
        "runs send-message starts, per process; 429 beyond (default 64; e.g. --max-detached-runs 200)",
    ),
    (
        "--max-detached-runs-per-resource",
        "N",
        int,
        "SLUICEGATE_MAX_DETACHED_RUNS_PER_RESOURCE",
        "of those, per resource; 429 beyond (default 4; e.g. --max-detached-runs-per-resource 2)",
    ),
    (
        "--max-subscriptions",
        "N",
        int,
        "SLUICEGATE_MAX_SUBSCRIPTIONS",
        "thread subscriptions per process; 429 beyond "
        "(default: half the connection cap; e.g. --max-subscriptions 100)",
    ),
    (
        "--max-subscriptions-per-resource",
        "N",
        int,
        "SLUICEGATE_MAX_SUBSCRIPTIONS_PER_RESOURCE",
        "of those, per resource; 429 beyond (default 8; e.g. --max-subscriptions-per-resource 4)",
    ),
    (
        "--subscription-max-age",
        "SECONDS",
        float,
        "SLUICEGATE_SUBSCRIPTION_MAX_AGE",
        "a thread subscription ends between runs after this (default 3600; e.g. --subscription-max-age 600)",
    ),
    (
        "--heartbeat-interval",
        "SECONDS",
        float,
        "SLUICEGATE_HEARTBEAT_INTERVAL",
        "a quiet event stream gets `: heartbeat` this often (default 25; e.g. --heartbeat-interval 10)",
    ),
)
"""Bounds on what outlives a request (docs/server.md, Settings): option, metavar, type,
environment variable (which uvicorn's worker processes inherit), help."""


def add_stream_bound_options(cmd: Any) -> None:
    for flag, metavar, kind, _, helptext in STREAM_BOUNDS:
        cmd.add_argument(flag, type=kind, metavar=metavar, help=helptext)


def stream_bound_env(args: argparse.Namespace) -> str | None:
    """The bound options as environment variables; a problem with one, or None."""
    for flag, _, _, env, _ in STREAM_BOUNDS:
        value = getattr(args, flag[2:].replace("-", "_"), None)
        if value is None:
            continue
        if not 0 < value < float("inf"):
            return f"{flag} must be positive, got {value}"
        os.environ[env] = repr(value) if isinstance(value, float) else str(value)
    return None


def temporal_env(args: argparse.Namespace) -> None:
    """`serve --temporal`: options become environment variables, as the others do."""
    if getattr(args, "temporal", None):
        os.environ["SLUICEGATE_TEMPORAL"] = args.temporal
        if args.task_queue:
            os.environ["SLUICEGATE_TEMPORAL_TASK_QUEUE"] = args.task_queue
        if args.namespace:
            os.environ["SLUICEGATE_TEMPORAL_NAMESPACE"] = args.namespace
        if args.open_timeout is not None:
            os.environ["SLUICEGATE_TEMPORAL_OPEN_TIMEOUT"] = repr(args.open_timeout)
    if getattr(args, "temporal_ui", None):
        os.environ["SLUICEGATE_TEMPORAL_UI"] = args.temporal_ui


def check_serve_options(args: argparse.Namespace) -> str | None:
    if getattr(args, "workers", 1) < 1:
        return "--workers must be at least 1"
    timeout = args.request_read_timeout
    if timeout is not None and not (0 < timeout < float("inf")):
        return f"--request-read-timeout must be a positive number of seconds, got {timeout}"
    if args.max_connections is not None and args.max_connections < 1:
        return f"--max-connections must be at least 1, got {args.max_connections}"
    open_timeout = getattr(args, "open_timeout", None)
    if open_timeout is not None and not (0 < open_timeout < float("inf")):
        return f"--open-timeout must be a positive number of seconds, got {open_timeout}"
    return None
