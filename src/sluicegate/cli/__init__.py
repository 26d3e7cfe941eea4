"""The `sluicegate` command: serve an application, develop with the studio, run one prompt.

    sluicegate init my-app       # a new app: one guarded agent, a test, a README
    sluicegate serve app.py [--host 127.0.0.1] [--port 4111] [--workers N] [--studio]
                            [--request-read-timeout SECONDS] [--max-connections N]
                            [--allowed-hosts HOST,...] [--allow-unapproved-tool-execution]
    sluicegate dev app.py        # the studio at /studio, reloads when files change
    sluicegate run app.py:agent "prompt" [--thread T --resource R]
    sluicegate chat app.py[:agent] [--thread T --resource R]
    sluicegate approve app.py RUN_ID / decline app.py RUN_ID [--reason TEXT] / resume app.py RUN_ID JSON
    sluicegate agents app.py     # the app's agents, models, tools and processors
    sluicegate mcp app.py [--server main]   # one of the app's MCP servers over stdio
    sluicegate eval app.py DATASET.jsonl [--agent ID] [--processor ID ...] [--phase input|output]
                    [--format table|json|html] [--out FILE]   # see docs/evaluation.md
    sluicegate demo

Every command takes `--debug`: an error in the app or the command is one line without it.
Exit status: 0 done, 1 the run failed, 2 a mistake in the command or the app, 3 a guardrail
blocked the run, 4 the run waits on a person (approve, decline or resume it).

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
import traceback
from collections.abc import Sequence
from typing import Any

from sluicegate.cli import serving, worker
from sluicegate.errors import SluicegateError

EXAMPLES = {
    "serve": "examples:\n  sluicegate serve app.py\n"
    "  sluicegate serve app.py:registry --host 0.0.0.0 --port 8000 --workers 4",
    "dev": "examples:\n  sluicegate dev app.py\n  sluicegate dev app.py --port 4200",
    "run": 'examples:\n  sluicegate run app.py:support "Where is my order A-1001?"\n'
    '  sluicegate run app.py "hi" --thread t-1 --resource ada\n'
    '  sluicegate run app.py:support "hi" --debug',
    "eval": "examples:\n  sluicegate eval app.py pii.jsonl --agent support\n"
    "  sluicegate eval app.py pii.jsonl --phase output --format html --out report.html",
    "demo": "example:\n  sluicegate demo",
    "init": "examples:\n  sluicegate init my-app && cd my-app && sluicegate dev app.py",
    "chat": "examples:\n  sluicegate chat app.py\n"
    "  sluicegate chat app.py:support --thread t-1 --resource ada",
    "approve": "examples:\n  sluicegate approve app.py 3f2c9a0e-...\n"
    "  sluicegate approve app.py:support RUN_ID --tool-call call_1",
    "decline": 'examples:\n  sluicegate decline app.py RUN_ID --reason "not this month"',
    "resume": "examples:\n  sluicegate resume app.py RUN_ID '{\"confirmed\": true}'",
    "agents": "example:\n  sluicegate agents app.py",
    "mcp": "example:\n  sluicegate mcp app.py --server main   # the command a desktop client runs",
    "worker": "examples:\n  sluicegate worker app.py --temporal 127.0.0.1:7233\n"
    "  sluicegate worker app.py --temporal temporal:7233 --task-queue agents --namespace prod",
}
"""An example command for each subcommand's `--help` (the `epilog`)."""


def _command(sub: Any, name: str, helptext: str) -> argparse.ArgumentParser:
    """A subcommand whose `--help` ends with its examples and takes `--debug`."""
    cmd: argparse.ArgumentParser = sub.add_parser(
        name,
        help=helptext,
        description=helptext[0].upper() + helptext[1:] + ".",
        epilog=EXAMPLES[name],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    cmd.add_argument(
        "--debug",
        action="store_true",
        help="print the full traceback of an error instead of one line (e.g. --debug)",
    )
    return cmd


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


async def _eval(args: argparse.Namespace) -> int:
    """`sluicegate eval`: the chosen chain over a labelled dataset, scored and reported."""
    from sluicegate.guardrails.evaluation import LabelMap, evaluate, read_dataset, render
    from sluicegate.guardrails.evaluation.labels import parse_label_option
    from sluicegate.guardrails.evaluation.progress import ProgressBar
    from sluicegate.server.eval_chain import select_chain
    from sluicegate.server.loader import load_registry

    if args.chunk_chars < 1:
        print(f"--chunk-chars must be at least 1, got {args.chunk_chars}", file=sys.stderr)
        return 2
    try:
        labels = LabelMap(dict(parse_label_option(v) for v in args.label))
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 2
    examples = read_dataset(args.dataset)  # a bad line fails before the app is loaded
    registry = load_registry(args.app)
    chain = await select_chain(registry, agent_id=args.agent, processor_ids=args.processor, phase=args.phase)
    report = await evaluate(
        chain,
        examples,
        phase=args.phase,
        chunk_chars=args.chunk_chars,
        labels=labels,
        progress=ProgressBar(label=f"eval {args.dataset}"),
        share_loop=False,  # alone on its loop: no pauses
    )
    text = render(report, args.format, title=f"sluicegate eval: {args.dataset}")
    if args.out:
        try:
            await asyncio.to_thread(_write, args.out, text)
        except OSError as exc:
            print(f"cannot write {args.out}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    else:
        sys.stdout.write(text)
    return 0


def _add_eval_parser(sub: Any) -> None:
    cmd = _command(sub, "eval", "score a processor chain on a labelled JSONL dataset")
    cmd.add_argument("app", help="app.py or app.py:name, loaded as `serve` loads it (e.g. app.py)")
    cmd.add_argument(
        "dataset",
        help='JSONL: {"text", "spans": [{"start", "end", "label"}]} or {"text", "expected"} (e.g. pii.jsonl)',
    )
    cmd.add_argument(
        "--agent", help="the agent whose processors run (default: the only agent; e.g. --agent support)"
    )
    cmd.add_argument(
        "--processor",
        action="append",
        default=[],
        metavar="ID",
        help="run only these processors (repeat; without --agent: registered processors, in this order; "
        "e.g. --processor pii-detector)",
    )
    cmd.add_argument(
        "--phase",
        choices=("input", "output"),
        default="input",
        help="judge the text as the user's message or as the streamed answer (e.g. --phase output)",
    )
    cmd.add_argument(
        "--format",
        choices=("table", "json", "html"),
        default="table",
        help="the report's form (default table; e.g. --format html --out report.html)",
    )
    cmd.add_argument(
        "--out", metavar="FILE", help="write the report here instead of stdout (e.g. --out report.html)"
    )
    cmd.add_argument(
        "--chunk-chars",
        type=int,
        default=8,
        metavar="N",
        help="output phase: characters per streamed chunk (default 8; e.g. --chunk-chars 1)",
    )
    cmd.add_argument(
        "--label",
        action="append",
        default=[],
        metavar="NAME=LABEL",
        help="map a placeholder or label (repeat; e.g. --label EMAIL=EMAIL_ADDRESS)",
    )


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("sluicegate")
    except PackageNotFoundError:  # run from a source tree that is not installed
        from sluicegate import __version__

        return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="sluicegate",
        description="Serve and run sluicegate agents.",
        epilog="Run `sluicegate COMMAND --help` for a command's options and examples.\n"
        "Exit status: 0 done, 1 the run failed, 2 a mistake in the command or the app,\n"
        "3 a guardrail blocked the run, 4 the run waits on a person (approve, decline or resume it).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"sluicegate {_version()}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, helptext in (
        ("serve", "serve the app's agents over HTTP"),
        ("dev", "serve with the studio at /studio, reloading when a file changes"),
    ):
        cmd = _command(sub, name, helptext)
        cmd.add_argument(
            "app",
            help="the application file, or file:name for one registry or agent in it "
            "(e.g. app.py, or app.py:registry)",
        )
        cmd.add_argument(
            "--host",
            default="127.0.0.1",
            help="the address to listen on (default 127.0.0.1, this machine only; e.g. --host 0.0.0.0)",
        )
        cmd.add_argument(
            "--port",
            type=int,
            default=4111,
            help="the TCP port to listen on (default 4111; e.g. --port 8000)",
        )
        cmd.add_argument(
            "--request-read-timeout",
            type=float,
            metavar="SECONDS",
            help="close a connection whose request headers and body take longer "
            "(default 30; e.g. --request-read-timeout 10)",
        )
        cmd.add_argument(
            "--max-connections",
            type=int,
            metavar="N",
            help="answer 503 beyond N open connections per process "
            "(default: half the open-file limit, at most 2048; e.g. --max-connections 500)",
        )
        serving.add_stream_bound_options(cmd)
        cmd.add_argument(
            "--allowed-hosts",
            action="append",
            metavar="HOST[,HOST...]",
            help="more host names the server answers to, any port (SLUICEGATE_ALLOWED_HOSTS): on a "
            "loopback address (the default) it answers only to localhost, 127.0.0.1 and [::1] and "
            "these; elsewhere, when given, only to these; '*' for any (e.g. --allowed-hosts dev.internal)",
        )
        cmd.add_argument(
            "--allow-unapproved-tool-execution",
            action="store_true",
            help="let POST /api/tools/{id}/execute run a tool that requires approval, skipping the "
            "person who approves it (default: refused with 403; SLUICEGATE_ALLOW_UNAPPROVED_TOOL_EXECUTION; "
            "e.g. --allow-unapproved-tool-execution on a server only operators reach)",
        )
        if name == "serve":
            serving.add_temporal_serve_options(cmd)
            cmd.add_argument(
                "--workers",
                type=int,
                default=1,
                help="worker processes, each with the whole app (default 1; e.g. --workers 4)",
            )
            cmd.add_argument(
                "--studio", action="store_true", help="also serve the studio at /studio (e.g. --studio)"
            )
    run = _command(sub, "run", "run one prompt, streamed to the terminal")
    run.add_argument(
        "target",
        help="the application file and the agent's registry key, id or name "
        "(e.g. app.py:support; app.py alone for an app with one agent)",
    )
    run.add_argument("prompt", help='the user message (e.g. "Where is my order A-1001?")')
    _add_conversation_options(run)
    _add_eval_parser(sub)
    _add_first_hour_parsers(sub)
    _command(sub, "demo", "the processor demo (offline model when no API key is set)")
    _add_worker_parser(sub)
    return parser


def _add_conversation_options(cmd: argparse.ArgumentParser) -> None:
    cmd.add_argument("--thread", help="the memory thread of the conversation (e.g. --thread t-1)")
    cmd.add_argument("--resource", help="whose thread it is: a user or account id (e.g. --resource ada)")


def _add_first_hour_parsers(sub: Any) -> None:
    init = _command(sub, "init", "make a new app folder: one guarded agent, a test and a README")
    init.add_argument("directory", help="the folder to create (e.g. my-app)")
    chat = _command(sub, "chat", "a conversation with an agent in the terminal")
    chat.add_argument("target", help="app.py, or app.py:agent when it has several (e.g. app.py:support)")
    _add_conversation_options(chat)
    for verb, helptext in (
        ("approve", "approve the tool call a run waits on, and stream the rest of the run"),
        ("decline", "decline the tool call a run waits on (it never runs), and stream the rest"),
        ("resume", "resume a suspended tool with its resume data, and stream the rest"),
    ):
        cmd = _command(sub, verb, helptext)
        cmd.add_argument("target", help="app.py, or app.py:agent (e.g. app.py)")
        cmd.add_argument(
            "run_id",
            metavar="RUN_ID",
            help="the run id `sluicegate run` printed (e.g. 3f2c9a0e-7d1b-4c55-9a8e-0b6f2d4e1c7a)",
        )
        if verb == "resume":
            cmd.add_argument("data", help="the resume data, JSON (e.g. '{\"confirmed\": true}')")
        cmd.add_argument(
            "--tool-call",
            metavar="ID",
            help="which call, when the run waits on several (e.g. --tool-call call_1)",
        )
        if verb == "decline":
            cmd.add_argument("--reason", help='what the model is told (e.g. --reason "not this month")')
    agents = _command(sub, "agents", "list the app's agents: model, tools, processors, memory")
    agents.add_argument("app", help="app.py or app.py:name (e.g. app.py)")
    mcp = _command(sub, "mcp", "serve one of the app's MCP servers over stdio, for desktop clients")
    mcp.add_argument("app", help="app.py or app.py:name (e.g. app.py)")
    mcp.add_argument("--server", help="its id in mcp_servers; optional when there is one (e.g. main)")


def _first_hour(args: argparse.Namespace) -> int | None:
    """The commands of `cli.run` and `cli.scaffold`; None for the others."""
    import json

    from sluicegate.cli import run as runs
    from sluicegate.server.loader import load_registry

    if args.command == "init":
        from sluicegate.cli.scaffold import scaffold

        for path in scaffold(args.directory):
            print(f"wrote {path}")
        print(f"next: cd {args.directory} && sluicegate dev app.py")
        return 0
    if args.command == "agents":
        print(runs.describe_agents(load_registry(args.app)))
        return 0
    if args.command == "mcp":
        from sluicegate.cli.mcp_serve import serve_mcp

        return serve_mcp(args.app, args.server)
    if args.command not in ("run", "chat", "approve", "decline", "resume"):
        return None
    app, agent_id = runs.split_agent_target(args.target)
    registry = load_registry(app)
    if args.command == "run":
        return asyncio.run(runs.run_once(registry, app, agent_id, args.prompt, args.thread, args.resource))
    if args.command == "chat":
        return asyncio.run(runs.chat(registry, app, agent_id, args.thread, args.resource))
    data = None
    if args.command == "resume":
        try:
            data = json.loads(args.data)
        except ValueError as exc:
            print(f"the resume data is not JSON: {exc}", file=sys.stderr)
            return 2
    decision = runs.decide(
        registry,
        app,
        agent_id,
        args.run_id,
        args.command,
        tool_call_id=args.tool_call,
        reason=getattr(args, "reason", None),
        resume_data=data,
    )
    return asyncio.run(decision)


def _add_worker_parser(sub: Any) -> None:
    worker = _command(sub, "worker", "run the app's agents as Temporal workflows (durable runs)")
    worker.add_argument("app", help="app.py or app.py:name (e.g. app.py)")
    worker.add_argument(
        "--temporal",
        required=True,
        metavar="HOST:PORT",
        help="the Temporal frontend (e.g. --temporal 127.0.0.1:7233)",
    )
    worker.add_argument(
        "--task-queue",
        default="sluicegate",
        metavar="Q",
        help="the task queue to poll (default sluicegate; e.g. --task-queue agents)",
    )
    worker.add_argument(
        "--namespace",
        default="default",
        help="the Temporal namespace (default default; e.g. --namespace prod)",
    )
    worker.add_argument(
        "--sticky-timeout",
        type=float,
        default=3.0,
        metavar="SECONDS",
        help="how long a run cached by a dead worker waits before another worker takes it "
        "(default 3; e.g. --sticky-timeout 10)",
    )
    worker.add_argument(
        "--list-timeout",
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="how long the agents' MCP servers may take to list their tools at the start "
        "(default 60; e.g. --list-timeout 20)",
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command in ("serve", "dev"):
            problem = serving.check_serve_options(args) or serving.stream_bound_env(args)
            if problem:
                print(problem, file=sys.stderr)
                return 2
            dev = args.command == "dev"
            if dev:
                # the studio's per-run model and instructions overrides (unless set to 0), and
                # Mastra's Studio (`npx mastra studio`) or a local front end on any port of this
                # machine; `serve` allows only the origins named
                os.environ.setdefault("SLUICEGATE_ALLOW_CLIENT_OVERRIDES", "1")
                os.environ.setdefault("SLUICEGATE_CORS_LOOPBACK", "1")
            serving.temporal_env(args)
            if args.allow_unapproved_tool_execution:
                os.environ["SLUICEGATE_ALLOW_UNAPPROVED_TOOL_EXECUTION"] = "1"
            return serving.serve(
                args.app,
                host=args.host,
                port=args.port,
                workers=1 if dev else args.workers,
                studio=dev or args.studio,
                reload=dev,
                read_timeout=args.request_read_timeout,
                max_connections=args.max_connections,
                allowed_hosts=args.allowed_hosts,
            )
        done = _first_hour(args)
        if done is not None:
            return done
        if args.command == "eval":
            return asyncio.run(_eval(args))
        if args.command == "worker":
            return worker.run(args)
        from sluicegate.demo import run as demo

        demo()
        return 0
    except SluicegateError as exc:
        # A mistake in the app or the command: one line; the traceback only with --debug.
        if args.debug:
            traceback.print_exc()
        print(f"sluicegate: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
