"""The `sluicegate` command: serve an application, develop with the studio, run one prompt.

    sluicegate serve app.py [--host 127.0.0.1] [--port 4111] [--workers N] [--studio]
                            [--request-read-timeout SECONDS] [--max-connections N]
    sluicegate dev app.py        # the studio at /studio, reloads when files change
    sluicegate run app.py:agent "prompt"
    sluicegate demo

Server settings come from the environment (`SLUICEGATE_API_TOKEN`, `SLUICEGATE_CORS_ORIGINS`,
`SLUICEGATE_REQUEST_TIMEOUT`, `SLUICEGATE_MAX_BODY_BYTES`, ...); see docs/server.md. The two
connection options travel to the worker processes the same way, as
`SLUICEGATE_REQUEST_READ_TIMEOUT` and `SLUICEGATE_MAX_CONNECTIONS`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Sequence
from typing import Any

from sluicegate.errors import SluicegateError


def _color(text: str, code: str) -> str:
    if sys.stdout.isatty() and not os.environ.get("NO_COLOR"):
        return f"\033[{code}m{text}\033[0m"
    return text


def _serve(
    target: str,
    *,
    host: str,
    port: int,
    workers: int,
    studio: bool,
    reload: bool,
    read_timeout: float | None,
    max_connections: int | None,
) -> int:
    try:
        import uvicorn
    except ImportError:
        print("sluicegate serve needs the server extra: pip install 'sluicegate[server]'", file=sys.stderr)
        return 2
    from sluicegate.server.connections import listen_backlog, protocol_class
    from sluicegate.server.identity import warn_if_exposed
    from sluicegate.server.loader import APP_ENV, load_registry, split_target
    from sluicegate.server.settings import ServerSettings

    # Options become environment variables, which uvicorn's worker processes inherit.
    if read_timeout is not None:
        os.environ["SLUICEGATE_REQUEST_READ_TIMEOUT"] = repr(read_timeout)
    if max_connections is not None:
        os.environ["SLUICEGATE_MAX_CONNECTIONS"] = str(max_connections)
    ServerSettings.from_env()  # a bad SLUICEGATE_* value fails here, not in every worker
    registry = load_registry(target)  # fail here, with a readable message, before workers start
    warn_if_exposed(host, registry)
    os.environ[APP_ENV] = target
    if studio:
        os.environ["SLUICEGATE_STUDIO"] = "1"
    path, _ = split_target(target)
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


async def _run_once(target: str, prompt: str) -> int:
    from sluicegate.server.loader import load_registry

    file, _, agent_id = target.rpartition(":")
    if not file or not agent_id:
        print("run needs app.py:agent (the agent's registry key, id or name)", file=sys.stderr)
        return 2
    registry = load_registry(file)
    agent = registry.get_agent(agent_id)
    if agent is None:
        print(f"no agent {agent_id!r} in {file}; agents: {', '.join(registry.agents)}", file=sys.stderr)
        return 2
    output = await agent.stream(prompt)
    status = 0
    async for chunk in output.full_stream:
        kind = chunk.type
        if kind == "text-delta":
            sys.stdout.write(chunk.payload.text)
            sys.stdout.flush()
        elif kind == "tool-call":
            print(_color(f"\n[tool {chunk.payload.tool_name}({chunk.payload.args})]", "2"))
        elif kind == "tool-result":
            print(_color(f"[result {chunk.payload.result}]", "2"))
        elif kind == "tripwire":
            payload = chunk.payload
            who = getattr(payload, "processor_id", None) or "a processor"
            retry = " (retry requested)" if getattr(payload, "retry", False) else ""
            print(_color(f"\n[tripwire] {who}: {payload.reason}{retry}", "1;31"))
            status = 3
        elif kind == "error":
            error = getattr(chunk.payload, "error", None)
            print(_color(f"\n[error] {getattr(error, 'message', error)}", "1;31"), file=sys.stderr)
            status = 1
        elif kind.startswith("data-"):
            print(_color(f"\n[{kind}] {chunk.data}", "2"))
    print()
    return status


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sluicegate", description="Serve and run sluicegate agents.")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, helptext in (
        ("serve", "serve the app's agents over HTTP"),
        ("dev", "serve with the studio, reloading on change"),
    ):
        cmd = sub.add_parser(name, help=helptext)
        cmd.add_argument("app", help="app.py or app.py:name")
        cmd.add_argument("--host", default="127.0.0.1")
        cmd.add_argument("--port", type=int, default=4111)
        cmd.add_argument(
            "--request-read-timeout",
            type=float,
            metavar="SECONDS",
            help="close a connection whose request headers and body take longer (default 30)",
        )
        cmd.add_argument(
            "--max-connections",
            type=int,
            metavar="N",
            help="answer 503 beyond N open connections per process "
            "(default: half the open-file limit, at most 2048)",
        )
        if name == "serve":
            _add_temporal_serve_options(cmd)
            cmd.add_argument("--workers", type=int, default=1)
            cmd.add_argument("--studio", action="store_true", help="also serve the studio at /studio")
    run = sub.add_parser("run", help="run one prompt, streamed to the terminal")
    run.add_argument("target", help="app.py:agent")
    run.add_argument("prompt")
    sub.add_parser("demo", help="the processor demo (offline model when no API key is set)")
    _add_worker_parser(sub)
    return parser


def _add_temporal_serve_options(cmd: Any) -> None:
    cmd.add_argument(
        "--temporal",
        metavar="HOST:PORT",
        help="start runs as Temporal workflows (durable runs; workers: `sluicegate worker`)",
    )
    cmd.add_argument(
        "--task-queue", default=None, metavar="Q", help="the workers' task queue (default sluicegate)"
    )


def _temporal_env(args: argparse.Namespace) -> None:
    """`serve --temporal`: options become environment variables, as the others do."""
    if getattr(args, "temporal", None):
        os.environ["SLUICEGATE_TEMPORAL"] = args.temporal
        if args.task_queue:
            os.environ["SLUICEGATE_TEMPORAL_TASK_QUEUE"] = args.task_queue


def _add_worker_parser(sub: Any) -> None:
    worker = sub.add_parser("worker", help="run the app's agents as Temporal workflows (durable runs)")
    worker.add_argument("app", help="app.py or app.py:name")
    worker.add_argument("--temporal", required=True, metavar="HOST:PORT", help="the Temporal frontend")
    worker.add_argument("--task-queue", default="sluicegate", metavar="Q")
    worker.add_argument("--namespace", default="default")
    worker.add_argument(
        "--sticky-timeout",
        type=float,
        default=3.0,
        metavar="SECONDS",
        help="how long a run cached by a dead worker waits before another worker takes it (default 3)",
    )


def _worker(args: argparse.Namespace) -> int:
    """`sluicegate worker`: until interrupted (SIGINT/SIGTERM drain the running activities)."""
    from sluicegate.durable.temporal.worker import run_worker
    from sluicegate.server.loader import load_registry

    if not 0 < args.sticky_timeout < float("inf"):
        print(
            f"--sticky-timeout must be a positive number of seconds, got {args.sticky_timeout}",
            file=sys.stderr,
        )
        return 2
    app = load_registry(args.app)
    asyncio.run(
        run_worker(
            app,
            args.temporal,
            task_queue=args.task_queue,
            namespace=args.namespace,
            sticky_timeout=args.sticky_timeout,
        )
    )
    return 0


def _check_serve_options(args: argparse.Namespace) -> str | None:
    if getattr(args, "workers", 1) < 1:
        return "--workers must be at least 1"
    timeout = args.request_read_timeout
    if timeout is not None and not (0 < timeout < float("inf")):
        return f"--request-read-timeout must be a positive number of seconds, got {timeout}"
    if args.max_connections is not None and args.max_connections < 1:
        return f"--max-connections must be at least 1, got {args.max_connections}"
    return None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command in ("serve", "dev"):
            problem = _check_serve_options(args)
            if problem:
                print(problem, file=sys.stderr)
                return 2
            dev = args.command == "dev"
            _temporal_env(args)
            return _serve(
                args.app,
                host=args.host,
                port=args.port,
                workers=1 if dev else args.workers,
                studio=dev or args.studio,
                reload=dev,
                read_timeout=args.request_read_timeout,
                max_connections=args.max_connections,
            )
        if args.command == "run":
            return asyncio.run(_run_once(args.target, args.prompt))
        if args.command == "worker":
            return _worker(args)
        from sluicegate.demo import run as demo

        demo()
        return 0
    except SluicegateError as exc:
        print(f"sluicegate: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
