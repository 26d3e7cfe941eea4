"""Mastra's own Studio (`mastra studio`, the CLI pinned in clients/studio) against `sluicegate dev`,
driven in Debian's chromium through Playwright with no browser flags.

It connects, lists the agents, chats with the guarded agent (an email redacted, a tripwire
shown), chats with the memory agent over agent signals (Studio's default) and checks the first
exchange shows once, before and after a reload, runs a processor, opens a run's trace and the
metrics page, lists an eval report as a score, and lists the app's MCP server and runs one of its
tools. Any 4xx/5xx answer from the server fails the
test, as does a route requested more than 20 times in one page load (a refetch loop). Mastra's
own server answers 404 for the thread of a new chat until its first message; that one answer is
expected.
Set SLUICEGATE_SCREENSHOTS=docs to refresh docs/mastra-studio-*.png.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[2]
STUDIO = ROOT / "clients" / "studio"
CLI = STUDIO / "node_modules" / ".bin" / "mastra"
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
REQUIRED = bool(os.environ.get("SLUICEGATE_REQUIRE_SERVICES"))
MAX_PER_LOAD = 20
NEW_THREAD = re.compile(r"^/api/memory/threads/[^/]+$")

missing = [
    name
    for name, present in (
        ("node", shutil.which("node")),
        ("npm", shutil.which("npm")),
        ("chromium", os.path.exists(CHROMIUM)),
    )
    if not present
]
pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        bool(missing) and not REQUIRED,
        reason=f"{', '.join(missing)} not installed (Mastra's Studio needs node/npm and chromium)",
    ),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"{url} exited early:\n{log.read_text()[-3000:]}")
        try:
            httpx.get(url, timeout=2)
            return
        except httpx.HTTPError:
            time.sleep(0.3)
    raise AssertionError(f"{url} did not answer within 60 s:\n{log.read_text()[-3000:]}")


def _start(command: list[str], log: Path, **options: Any) -> subprocess.Popen[bytes]:
    # A session of its own: `sluicegate dev` runs a reloader and a worker, both stopped at the end.
    return subprocess.Popen(
        command, stdout=log.open("wb"), stderr=subprocess.STDOUT, start_new_session=True, **options
    )


def _stop(process: subprocess.Popen[bytes]) -> None:
    """Stop the process and everything it started: `mastra studio`'s server waits on open
    connections after SIGTERM, and `sluicegate dev` runs a worker under its reloader."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        pass
    time.sleep(0.5)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # whatever of the group is still there
    process.wait()


@pytest.fixture(scope="module")
def studio(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    if not CLI.exists():  # the pinned CLI, as .ci/run installs it
        subprocess.run(["bash", str(STUDIO / "run.sh"), "--install-only"], check=True, timeout=600)
    work = tmp_path_factory.mktemp("mastra-studio")
    app = work / "app.py"  # a copy: `dev` watches the app's folder for changes
    shutil.copy(STUDIO / "app.py", app)
    api_port, studio_port = _free_port(), _free_port()
    origin = f"http://localhost:{studio_port}"
    env = {
        **os.environ,
        "SLUICEGATE_CORS_ORIGINS": origin,
        "SLUICEGATE_STUDIO_DB": str(work / "studio.db"),
        "MASTRA_TELEMETRY_DISABLED": "1",
    }
    env.pop("MASTRA_AGENT_SIGNALS", None)  # Studio's default: agent signals on
    env.pop("SLUICEGATE_API_TOKEN", None)
    server = _start(
        [sys.executable, "-m", "sluicegate", "dev", str(app), "--host", "127.0.0.1", "--port", str(api_port)],
        work / "server.log",
        env=env,
        cwd=work,
    )
    command = [str(CLI), "studio", "--port", str(studio_port)]
    ui = _start(
        [*command, "--server-host", "localhost", "--server-port", str(api_port)],
        work / "studio.log",
        env=env,
        cwd=STUDIO,
    )
    try:
        _wait(f"http://127.0.0.1:{api_port}/api", server, work / "server.log")
        _wait(f"http://127.0.0.1:{studio_port}/", ui, work / "studio.log")
        yield {"studio": origin, "api": f"http://127.0.0.1:{api_port}", "api_port": str(api_port)}
    finally:
        _stop(ui)
        _stop(server)


class Recorder:
    """Every answer of the sluicegate server, with per-page-load request counts."""

    def __init__(self, api_port: str) -> None:
        self.api = f":{api_port}/"
        self.load = 0
        self.counts: Counter[tuple[int, str, str]] = Counter()
        self.failures: list[str] = []
        self.expected: list[str] = []

    def __call__(self, response: Any) -> None:
        url = response.url
        if self.api not in url:
            return
        path = "/" + url.split(self.api, 1)[1].split("?", 1)[0]
        method = response.request.method
        self.counts[(self.load, method, path)] += 1
        if response.status >= 400:
            line = f"{response.status} {method} {url}"
            if response.status == 404 and method == "GET" and NEW_THREAD.match(path):
                self.expected.append(line)
            else:
                self.failures.append(line)

    def loops(self) -> list[str]:
        return [
            f"{m} {p}: {n} times in load {load}"
            for (load, m, p), n in self.counts.items()
            if n > MAX_PER_LOAD
        ]


def shot(page: Any, name: str, tmp_path: Path) -> None:
    target = ROOT / "docs" if os.environ.get("SLUICEGATE_SCREENSHOTS") == "docs" else tmp_path
    page.screenshot(path=str(target / f"mastra-studio-{name}.png"))


def test_mastra_studio_drives_sluicegate(studio: dict[str, str], tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    base = studio["studio"]
    record = Recorder(studio["api_port"])
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.set_default_timeout(20_000)
            page.on("response", record)

            def visit(path: str) -> None:
                record.load += 1
                page.goto(base + path)

            # Connect and list the agents.
            visit("/agents")
            page.get_by_text("guarded", exact=True).first.wait_for()
            page.get_by_text("remembering", exact=True).first.wait_for()
            shot(page, "agents", tmp_path)

            # The guarded agent: PIIDetector redacts the email, RegexFilter trips on the word.
            visit("/agents/guarded")
            box = page.get_by_placeholder("Enter your message...")
            box.fill("mail me at ada@example.com please")
            box.press("Enter")
            page.get_by_text("Echo: mail me at [EMAIL] please").wait_for()
            box.fill("this is forbidden")
            box.press("Enter")
            page.get_by_text("blocked content matching patterns: forbidden").wait_for()
            shot(page, "guarded-chat", tmp_path)

            # The memory agent, over agent signals: Studio follows the new thread and sends the
            # message to it; the first exchange shows once, and a reload shows it once.
            visit("/agents/remembering")
            box = page.get_by_placeholder("Enter your message...")
            box.fill("remember the blue door")
            with page.expect_request(re.compile(r"/api/agents/remembering/send-message$")) as sent:
                box.press("Enter")
            thread_id = sent.value.post_data_json["threadId"]
            page.get_by_text("Echo: remember the blue door").wait_for()
            page.wait_for_timeout(500)
            assert page.get_by_text("Echo: remember the blue door").count() == 1
            assert page.get_by_text("remember the blue door", exact=True).count() == 1
            record.load += 1
            page.reload()
            page.get_by_text("Echo: remember the blue door").wait_for()
            page.wait_for_timeout(500)
            assert page.get_by_text("Echo: remember the blue door").count() == 1
            assert page.get_by_text("remember the blue door", exact=True).count() == 1
            shot(page, "memory-reloaded", tmp_path)
            stored = httpx.get(
                f"{studio['api']}/api/memory/threads/{thread_id}/messages", params={"agentId": "remembering"}
            ).json()["messages"]
            shown = page.locator('[data-slot="message"][data-from="assistant"]').first.get_attribute(
                "data-message-id"
            )
            assert shown == next(m["id"] for m in stored if m["role"] == "assistant")

            # Run a processor from its page.
            visit("/processors/pii-detector")
            page.get_by_placeholder("Enter a test message...").fill("write to ada@example.com")
            page.get_by_role("button", name="Run Processor").click()
            page.get_by_text("[EMAIL]").first.wait_for()
            shot(page, "processor", tmp_path)

            # The traces: the tripped run is listed as failed, its spans show every processor.
            visit("/observability")
            page.get_by_text("guarded").first.wait_for()
            shot(page, "traces", tmp_path)
            page.get_by_text("guarded").first.click()
            page.get_by_text("processor regex-filter (input)").first.wait_for()
            page.get_by_text("processor pii-detector (input)").first.wait_for()
            shot(page, "trace", tmp_path)

            # Metrics from the same spans: runs (the tripped one an error), tokens, latency.
            visit("/metrics")
            page.get_by_text("Total Agent Runs").wait_for()
            page.get_by_text("echo-1").first.wait_for()  # token usage by model
            page.wait_for_load_state("networkidle")
            shot(page, "metrics", tmp_path)

            # A guardrail eval report is listed as a score of its chain's scorer.
            dataset = json.dumps(
                {"text": "mail ada@example.com", "spans": [{"start": 5, "end": 20, "label": "EMAIL_ADDRESS"}]}
            )
            evaluated = httpx.post(
                f"{studio['api']}/api/eval", json={"dataset": dataset, "agentId": "guarded"}
            )
            assert evaluated.status_code == 200, evaluated.text
            visit("/scorers")
            page.get_by_text("Guardrail eval of guarded (input)").first.wait_for()
            shot(page, "scorers", tmp_path)
            visit("/scorers/eval%3Aguarded%3Ainput")  # its rows: the report's score, the entity
            page.get_by_text('{"examples":1,"phase":"input"}').wait_for()
            shot(page, "scorer", tmp_path)

            # The app's MCP server is listed, with its tools, and one of them runs from its page.
            visit("/mcps")
            page.get_by_text("desk").first.wait_for()
            visit("/mcps/desk")
            page.get_by_text("ask_guarded", exact=True).first.wait_for()
            page.get_by_text("/api/mcp/desk/sse").first.wait_for()
            visit("/mcps/desk/tools/add")
            numbers = page.locator("form input:visible")
            numbers.nth(0).fill("2")
            numbers.nth(1).fill("40")
            with page.expect_response(re.compile(r"/api/mcp/desk/tools/add/execute")) as executed:
                page.locator('form button[type="submit"]').click()
            assert executed.value.json() == {"result": {"sum": 42}}
            page.locator(".cm-content", has_text='"sum": 42').first.wait_for()
            shot(page, "mcp-tool", tmp_path)

            # Every other view answers, without errors or loops.
            for view in (
                "/agents/guarded/traces",
                "/workflows",
                "/datasets",
                "/experiments",
                "/logs",
            ):
                visit(view)
                page.wait_for_load_state("networkidle")
        finally:
            browser.close()
    assert record.failures == []
    assert record.loops() == []
    assert len(record.expected) <= 3  # a new chat's thread, before its first message
