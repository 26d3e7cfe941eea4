"""`sluicegate worker`: the app's agents as Temporal workflows, until interrupted."""

from __future__ import annotations

import argparse
import asyncio
import sys


def run(args: argparse.Namespace) -> int:
    """`sluicegate worker`: until interrupted (SIGINT/SIGTERM drain the running activities)."""
    from sluicegate.durable.temporal.worker import exit_worker_process, run_worker
    from sluicegate.errors import ConfigurationError
    from sluicegate.server.loader import load_registry
    from sluicegate.server.worker_spans import kept_spans

    if not 0 < args.sticky_timeout < float("inf"):
        print(
            f"--sticky-timeout must be a positive number of seconds, got {args.sticky_timeout}",
            file=sys.stderr,
        )
        return 2
    if not 0 < args.list_timeout < float("inf"):
        print(
            f"--list-timeout must be a positive number of seconds, got {args.list_timeout}", file=sys.stderr
        )
        return 2
    app = load_registry(args.app)

    async def work() -> None:
        async with kept_spans(app):  # written to the app's storage; the rest once the worker stops
            await run_worker(
                app,
                args.temporal,
                task_queue=args.task_queue,
                namespace=args.namespace,
                sticky_timeout=args.sticky_timeout,
                list_timeout=args.list_timeout,
            )

    try:
        asyncio.run(work())
    except ConfigurationError as exc:  # an MCP server that could not list its tools, by name
        print(f"sluicegate worker: {exc}", file=sys.stderr)
        return 1
    exit_worker_process(0)  # stopped by SIGINT/SIGTERM, drained: see its docstring
