"""Wire comparison: the same HTTP requests against real Mastra's server and `sluicegate serve`.

    python clients/wire/compare.py [--out DIR] [--node-dir DIR] [--mastra-port P] [--sluicegate-port P]
                                   [--only SUBSTRING] [--allowlist FILE]

Starts Mastra's server (`mastra_server.mjs`, run from --node-dir, which holds the packages
pinned in package.json: `bash clients/wire/run.sh --install-only` installs them here) and
`python -m sluicegate serve app.py` with this interpreter, both on 127.0.0.1; sends REQUESTS to
both (interleaved, each side keeping its own run ids); normalizes uuids, timestamps and
epoch-ms numbers; writes per request NN-name.{mastra,sluicegate}.json and NN-name.diff.txt,
plus summary.md and findings.json (every difference, one record each). With --allowlist, exits
1 when a difference is not allowed there, or an entry allows nothing (see allowlist.toml).
Stops the servers it started, by PID. Standard library only.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import fnmatch
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
ISO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?$")
HEADERS = ("content-type", "cache-control", "x-accel-buffering")
TIME_KEYS = {"createdAt", "updatedAt", "startedAt", "timestamp", "lastUpdated", "startTime", "endTime"}

# ---------------------------------------------------------------- the requests

MEM = {"thread": "wire-t1", "resource": "wire-user"}


def thread(thread_id: str) -> dict[str, str]:
    """`memory` of an approval flow: a thread of its own, apart from echo's resource."""
    return {"thread": thread_id, "resource": "wire-approvals"}


Body = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]] | None


def decision(key: str, **extra: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """Body of approve/decline/resume: the run and tool call remembered under `key`."""

    def body(ctx: dict[str, Any]) -> dict[str, Any]:
        seen = ctx.get(key) or {}
        return {"runId": seen.get("runId"), "toolCallId": seen.get("toolCallId"), **extra}

    return body


ANSWER_SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}

# (name, method, path, body or body(ctx), key to remember a run / tool call under)
REQUESTS: list[tuple[str, str, str, Body, str | None]] = [
    ("agents-list", "GET", "/api/agents", None, None),
    ("agent-echo", "GET", "/api/agents/echo", None, None),
    ("agent-approver", "GET", "/api/agents/approver", None, None),
    ("agent-missing", "GET", "/api/agents/nope", None, None),
    ("echo-generate", "POST", "/api/agents/echo/generate", {"messages": "hello there", "memory": MEM}, None),
    ("echo-stream", "POST", "/api/agents/echo/stream", {"messages": "stream me", "memory": MEM}, None),
    (
        "echo-generate-nomem",
        "POST",
        "/api/agents/echo/generate",
        {"messages": [{"role": "user", "content": "no memory here"}]},
        None,
    ),
    (
        "echo-stream-context",
        "POST",
        "/api/agents/echo/stream",
        {"messages": "with context", "requestContext": {"tenant": "acme"}},
        None,
    ),
    (
        "echo-stream-client-tools",
        "POST",
        "/api/agents/echo/stream",
        {
            "messages": "with a client tool",
            "clientTools": {
                "colour": {
                    "id": "colour",
                    "description": "Pick a colour in the browser",
                    "inputSchema": {"type": "object", "properties": {}},
                }
            },
        },
        None,
    ),
    (
        "json-generate-structured",
        "POST",
        "/api/agents/json/generate",
        {"messages": "answer in JSON", "structuredOutput": {"schema": ANSWER_SCHEMA}},
        None,
    ),
    (
        "json-stream-structured",
        "POST",
        "/api/agents/json/stream",
        {"messages": "answer in JSON", "structuredOutput": {"schema": ANSWER_SCHEMA}},
        None,
    ),
    ("guarded-generate", "POST", "/api/agents/guarded/generate", {"messages": "this is forbidden"}, None),
    ("guarded-stream", "POST", "/api/agents/guarded/stream", {"messages": "this is forbidden"}, None),
    ("guarded-stream-ok", "POST", "/api/agents/guarded/stream", {"messages": "this is fine"}, None),
    # each approval flow in a thread of its own, as Studio's chat runs: the pending approval is
    # kept with the thread's messages while the run waits, and taken off when it is decided
    (
        "approver-stream-1",
        "POST",
        "/api/agents/approver/stream",
        {"messages": "cats", "memory": thread("wire-a1")},
        "a1",
    ),
    ("approver-approve", "POST", "/api/agents/approver/approve-tool-call", decision("a1"), None),
    (
        "approver-stream-2",
        "POST",
        "/api/agents/approver/stream",
        {"messages": "dogs", "memory": thread("wire-a2")},
        "a2",
    ),
    (
        "approver-decline",
        "POST",
        "/api/agents/approver/decline-tool-call",
        decision("a2", reason="not today"),
        None,
    ),
    (
        "approver-generate",
        "POST",
        "/api/agents/approver/generate",
        {"messages": "birds", "memory": thread("wire-a3")},
        "a3",
    ),
    ("approver-suspended-runs", "GET", "/api/agents/approver/suspended-runs", None, None),
    (
        "approver-approve-generate",
        "POST",
        "/api/agents/approver/approve-tool-call-generate",
        decision("a3"),
        None,
    ),
    ("approver-approve-again", "POST", "/api/agents/approver/approve-tool-call", decision("a1"), None),
    ("asker-stream", "POST", "/api/agents/asker/stream", {"messages": "which colour"}, "s1"),
    (
        "asker-resume-stream",
        "POST",
        "/api/agents/asker/resume-stream",
        decision("s1", resumeData={"colour": "teal"}),
        None,
    ),
    ("memory-status", "GET", "/api/memory/status?agentId=echo", None, None),
    ("memory-threads", "GET", "/api/memory/threads?resourceId=wire-user&agentId=echo", None, None),
    (
        "memory-thread-create",
        "POST",
        "/api/memory/threads?agentId=echo",
        {"resourceId": "wire-user", "threadId": "wire-t2", "title": "Second thread"},
        None,
    ),
    ("memory-thread-get", "GET", "/api/memory/threads/wire-t1?agentId=echo", None, None),
    ("memory-thread-messages", "GET", "/api/memory/threads/wire-t1/messages?agentId=echo", None, None),
    ("memory-thread-messages-empty", "GET", "/api/memory/threads/wire-t2/messages?agentId=echo", None, None),
    ("memory-thread-missing", "GET", "/api/memory/threads/nope?agentId=echo", None, None),
    ("memory-no-memory-agent", "GET", "/api/memory/threads?resourceId=wire-user&agentId=guarded", None, None),
]

# ---------------------------------------------------------------- HTTP


def send(base: str, method: str, path: str, body: Any) -> dict[str, Any]:
    """One request: {status, headers (the ones compared), kind, body | events}."""
    url = urllib.parse.urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname or "127.0.0.1", url.port, timeout=30)
    data = None if body is None else json.dumps(body).encode()
    headers = {"content-type": "application/json"} if data is not None else {}
    conn.request(method, path, body=data, headers=headers)
    res = conn.getresponse()
    raw = res.read().decode("utf-8", "replace")
    conn.close()
    out: dict[str, Any] = {
        "status": res.status,
        "headers": {h: res.getheader(h) for h in HEADERS if res.getheader(h) is not None},
    }
    if "text/event-stream" in (res.getheader("content-type") or "").lower():
        out["kind"], out["events"] = "sse", parse_sse(raw)
    else:
        try:
            out["kind"], out["body"] = "json", json.loads(raw)
        except ValueError:
            out["kind"], out["body"] = "text", raw[:2000]
    return out


def parse_sse(raw: str) -> list[dict[str, Any]]:
    events = []
    for frame in re.split(r"\r?\n\r?\n", raw):
        if not frame.strip():
            continue
        data = [line[5:].removeprefix(" ") for line in frame.splitlines() if line.startswith("data:")]
        text = "\n".join(data)
        try:
            parsed = json.loads(text)
        except ValueError:
            parsed = text
        events.append({"type": parsed.get("type") if isinstance(parsed, dict) else parsed, "data": parsed})
    return events


def remember(ctx: dict[str, Any], key: str | None, response: dict[str, Any]) -> None:
    """The run id and tool call id of a question (stream) or a suspended generate, or the run id."""
    if key is None:
        return
    for event in response.get("events", []):
        data = event["data"]
        if isinstance(data, dict) and data.get("type") in ("tool-call-approval", "tool-call-suspended"):
            ctx[key] = {
                "runId": data.get("runId"),
                "toolCallId": (data.get("payload") or {}).get("toolCallId"),
            }
            return
        if isinstance(data, dict) and data.get("runId") and key not in ctx:
            ctx[key] = {"runId": data["runId"]}
    body = response.get("body")
    if isinstance(body, dict):
        suspended = body.get("suspendPayload") or {}
        calls = [c for c in body.get("toolCalls") or [] if isinstance(c, dict)]
        call_id = suspended.get("toolCallId") or next(
            ((c.get("payload") or c).get("toolCallId") for c in calls), None
        )
        ctx[key] = {"runId": body.get("runId"), "toolCallId": call_id}


# ---------------------------------------------------------------- normalization and diffing


def norm(value: Any, key: str | None = None) -> Any:
    if isinstance(value, dict):
        return {k: norm(v, k) for k, v in value.items()}
    if isinstance(value, list):
        return [norm(v) for v in value]
    if isinstance(value, str):
        if ISO.match(value):
            return "<time>"
        if key == "resumeSchema" and value.startswith("{"):
            return "<json-schema string>"
        return UUID.sub("<uuid>", value)
    if isinstance(value, (int, float)) and not isinstance(value, bool) and (key in TIME_KEYS or value > 1e12):
        return "<epoch-ms>"
    return value


def normalize(response: dict[str, Any]) -> dict[str, Any]:
    out = dict(response)
    if "body" in out:
        out["body"] = norm(out["body"])
    if "events" in out:
        out["events"] = [{**e, "data": norm(e["data"])} for e in out["events"]]
    return out


def flatten(value: Any, prefix: str = "", out: dict[str, Any] | None = None) -> dict[str, Any]:
    out = {} if out is None else out
    if isinstance(value, dict) and value:
        for k, v in value.items():
            flatten(v, f"{prefix}.{k}" if prefix else k, out)
    elif isinstance(value, list) and value:
        for i, v in enumerate(value):
            flatten(v, f"{prefix}[{i}]", out)
    else:
        out[prefix or "."] = value
    return out


def collapse(path: str) -> str:
    return re.sub(r"\[\d+\]", "[]", path)


def short(value: Any, n: int = 90) -> str:
    s = json.dumps(value, ensure_ascii=False)
    return s if len(s) <= n else s[: n - 3] + "..."


def _one_side(a: set[str], b: set[str]) -> list[str]:
    """Paths of `a` that `b` lacks, leaving out a leaf of `a` that `b` has structure under."""
    return sorted(p for p in a - b if not any(q.startswith((p + ".", p + "[")) for q in b))


def json_findings(m: Any, s: Any, prefix: str = "") -> list[dict[str, Any]]:
    fm, fs = flatten(m), flatten(s)
    cm, cs = {collapse(p) for p in fm}, {collapse(p) for p in fs}
    out = [{"kind": "mastra-only", "path": prefix + p} for p in _one_side(cm, cs)]
    out += [{"kind": "sluicegate-only", "path": prefix + p} for p in _one_side(cs, cm)]
    out += [
        {"kind": "value", "path": prefix + collapse(p), "mastra": fm[p], "sluicegate": fs[p]}
        for p in fm
        if p in fs and fm[p] != fs[p]
    ]
    return out


def sse_findings(m_events: list[dict[str, Any]], s_events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    tm, ts = [str(e["type"]) for e in m_events], [str(e["type"]) for e in s_events]
    out: list[dict[str, Any]] = []
    if tm != ts:
        out.append({"kind": "types", "path": "events", "mastra": tm, "sluicegate": ts})

    def paths(events: list[dict[str, Any]]) -> dict[str, set[str]]:
        per: dict[str, set[str]] = {}
        for e in events:
            if isinstance(e["data"], dict):
                per.setdefault(str(e["type"]), set()).update(collapse(p) for p in flatten(e["data"]))
        return per

    pm, ps = paths(m_events), paths(s_events)
    for t in sorted(set(pm) & set(ps)):
        out += [{"kind": "mastra-only", "path": f"{t}:{p}"} for p in _one_side(pm[t], ps[t])]
        out += [{"kind": "sluicegate-only", "path": f"{t}:{p}"} for p in _one_side(ps[t], pm[t])]
    by_m: dict[str, list[Any]] = {}
    by_s: dict[str, list[Any]] = {}
    for e in m_events:
        by_m.setdefault(str(e["type"]), []).append(e["data"])
    for e in s_events:
        by_s.setdefault(str(e["type"]), []).append(e["data"])
    for t in sorted(set(by_m) & set(by_s)):
        for a, b in zip(by_m[t], by_s[t], strict=False):
            fa, fb = flatten(a), flatten(b)
            out += [
                {"kind": "value", "path": f"{t}:{collapse(p)}", "mastra": fa[p], "sluicegate": fb[p]}
                for p in fa
                if p in fb and fa[p] != fb[p]
            ]
    return out


def findings(m: dict[str, Any], s: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if m["status"] != s["status"]:
        out.append({"kind": "status", "path": "status", "mastra": m["status"], "sluicegate": s["status"]})
    for h in sorted(set(m["headers"]) | set(s["headers"])):
        a, b = m["headers"].get(h), s["headers"].get(h)
        if a != b:
            out.append({"kind": "header", "path": h, "mastra": a, "sluicegate": b})
    if m["kind"] != s["kind"]:
        out.append({"kind": "body-kind", "path": "body", "mastra": m["kind"], "sluicegate": s["kind"]})
    elif m["kind"] == "sse":
        out += sse_findings(m["events"], s["events"])
    else:
        out += json_findings(m.get("body"), s.get("body"))
    return out


def diff_text(name: str, m: dict[str, Any], s: dict[str, Any], found: list[dict[str, Any]]) -> str:
    lines = [f"== {name}", f"  status: mastra {m['status']} | sluicegate {s['status']}"]
    if m.get("kind") == "sse" and s.get("kind") == "sse":
        tm, ts = [str(e["type"]) for e in m["events"]], [str(e["type"]) for e in s["events"]]
        lines.append(f"  event types {'identical' if tm == ts else 'DIFFER'}")
        if tm != ts:
            lines += [f"    {op}" for op in difflib.ndiff(tm, ts) if op[0] in "+- "]
    for f in found:
        if f["kind"] == "types":
            continue
        sides = (
            f": mastra {short(f['mastra'])} | sluicegate {short(f['sluicegate'])}" if "mastra" in f else ""
        )
        lines.append(f"  {f['kind']:16s} {f['path']}{sides}")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- the allowlist


def load_allowlist(path: Path) -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = tomllib.loads(path.read_text())["allow"]
    for i, entry in enumerate(entries):
        missing = [k for k in ("kind", "path", "reason") if not entry.get(k)]
        if missing:
            raise SystemExit(f"{path}: entry {i + 1} lacks {', '.join(missing)}")
    return entries


def _literal_brackets(text: str) -> str:
    """`[]` (a collapsed array index) as a literal, not a glob character class."""
    return text.replace("[]", "\x00")


def allowed(entry: dict[str, Any], request: str, finding: dict[str, Any]) -> bool:
    return (
        fnmatch.fnmatchcase(request, entry.get("requests", "*"))
        and entry["kind"] == finding["kind"]
        and fnmatch.fnmatchcase(_literal_brackets(finding["path"]), _literal_brackets(entry["path"]))
    )


def check(
    found: dict[str, list[dict[str, Any]]], entries: list[dict[str, Any]], *, complete: bool
) -> list[str]:
    """The differences no entry allows, and (after a `complete` run) the entries that allow nothing."""
    used = [False] * len(entries)
    problems = []
    for request, items in found.items():
        for f in items:
            hits = [i for i, e in enumerate(entries) if allowed(e, request, f)]
            for i in hits:
                used[i] = True
            if not hits:
                sides = (
                    f" (mastra {short(f['mastra'])}, sluicegate {short(f['sluicegate'])})"
                    if "mastra" in f
                    else ""
                )
                problems.append(f"{request}: {f['kind']} {f['path']}{sides}")
    problems += [
        f"allowlist entry {e['kind']} {e['path']!r} ({e.get('requests', '*')}) allows nothing: remove it"
        for e, u in zip(entries, used, strict=True)
        if complete and not u
    ]
    return problems


# ---------------------------------------------------------------- servers


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(base: str, proc: subprocess.Popen[bytes], what: str, log: Path, seconds: float = 60) -> None:
    deadline = time.time() + seconds
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        with contextlib.suppress(OSError):
            if send(base, "GET", "/api/agents", None)["status"] == 200:
                return
        time.sleep(0.3)
    raise RuntimeError(f"{what} not ready at {base} after {seconds:g} s:\n{log.read_text()[-3000:]}")


def start(command: list[str], cwd: Path, log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:  # the child keeps its own copy of the descriptor
        return subprocess.Popen(
            command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env
        )


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:  # each by its own PID (its session holds only what it started)
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(5)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def start_servers(args: argparse.Namespace, out: Path) -> list[subprocess.Popen[bytes]]:
    node_dir = Path(args.node_dir)
    if not (node_dir / "node_modules" / "@mastra" / "deployer").is_dir():
        raise SystemExit(f"no Mastra packages in {node_dir}: run `bash clients/wire/run.sh --install-only`")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    procs: list[subprocess.Popen[bytes]] = []
    try:
        # ESM resolves packages next to the running file: the server runs from the node folder.
        if node_dir.resolve() != HERE:
            (node_dir / "mastra_server.mjs").write_text((HERE / "mastra_server.mjs").read_text())
        m_log, s_log = out / "mastra-server.log", out / "sluicegate-server.log"
        procs.append(start(["node", "mastra_server.mjs", str(args.mastra_port)], node_dir, m_log, env))
        command = [sys.executable, "-m", "sluicegate", "serve", "app.py", "--host", "127.0.0.1"]
        procs.append(start([*command, "--port", str(args.sluicegate_port)], HERE, s_log, env))
        wait_ready(args.mastra_url, procs[0], "mastra server", m_log)
        wait_ready(args.sluicegate_url, procs[1], "sluicegate server", s_log)
    except BaseException:
        stop(procs)
        raise
    return procs


def run_requests(args: argparse.Namespace, out: Path) -> tuple[dict[str, list[dict[str, Any]]], list[str]]:
    found: dict[str, list[dict[str, Any]]] = {}
    rows = []
    ctx_m: dict[str, Any] = {}
    ctx_s: dict[str, Any] = {}
    for i, (name, method, path, body, key) in enumerate(REQUESTS, 1):
        if args.only and args.only not in name:
            continue
        results = {}
        for side, base, ctx in (
            ("mastra", args.mastra_url, ctx_m),
            ("sluicegate", args.sluicegate_url, ctx_s),
        ):
            b = body(ctx) if callable(body) else body
            try:
                r = send(base, method, path, b)
            except Exception as exc:  # a failed request is a finding
                r = {"status": 0, "headers": {}, "kind": "error", "body": repr(exc)}
            remember(ctx, key, r)
            results[side] = normalize({"request": {"method": method, "path": path, "body": b}, **r})
            text = json.dumps(results[side], indent=2, ensure_ascii=False) + "\n"
            (out / f"{i:02d}-{name}.{side}.json").write_text(text)
        m, s = results["mastra"], results["sluicegate"]
        found[name] = findings(m, s)
        (out / f"{i:02d}-{name}.diff.txt").write_text(
            diff_text(f"{method} {path}  ({name})", m, s, found[name])
        )
        count = {
            k: sum(1 for f in found[name] if f["kind"] == k)
            for k in ("mastra-only", "sluicegate-only", "value")
        }
        types = "DIFFER" if any(f["kind"] == "types" for f in found[name]) else "same"
        row = (
            f"{i:02d} {name:30s} status {m['status']}/{s['status']}  types {types:6s} "
            f"-{count['mastra-only']} +{count['sluicegate-only']} ~{count['value']}"
        )
        rows.append(row)
        print(row)
    return found, rows


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--node-dir", default=str(HERE), help="the folder holding the Mastra packages")
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "sluicegate-wire-project"))
    ap.add_argument("--mastra-port", type=int, default=0, help="default: a free port")
    ap.add_argument("--sluicegate-port", type=int, default=0, help="default: a free port")
    ap.add_argument("--only", help="run only requests whose name contains this")
    ap.add_argument("--allowlist", help="fail on a difference this TOML file does not allow")
    args = ap.parse_args()
    args.mastra_port = args.mastra_port or free_port()
    args.sluicegate_port = args.sluicegate_port or free_port()
    args.mastra_url = f"http://127.0.0.1:{args.mastra_port}"
    args.sluicegate_url = f"http://127.0.0.1:{args.sluicegate_port}"
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    procs = start_servers(args, out)
    try:
        found, rows = run_requests(args, out)
    finally:
        stop(procs)
    (out / "summary.md").write_text("\n".join(rows) + "\n")
    (out / "findings.json").write_text(json.dumps(found, indent=1, ensure_ascii=False) + "\n")
    mastra_only = sum(1 for items in found.values() for f in items if f["kind"] == "mastra-only")
    print(f"{len(rows)} requests; {mastra_only} field paths Mastra sends that sluicegate lacks; wrote {out}")
    if not args.allowlist:
        return 0
    problems = check(found, load_allowlist(Path(args.allowlist)), complete=not args.only)
    for problem in problems:
        print("NOT ALLOWED:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
