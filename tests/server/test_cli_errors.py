"""First-hour mistakes at the command line: one line naming the file, line and fix (the
traceback only with `--debug`), a studio URL, `--help` with examples, and a dev server that
serves an error page while `app.py` does not load, then the app once it is fixed."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from tests.server.live import free_port

from sluicegate.cli import build_parser, main
from sluicegate.cli.serving import studio_url
from sluicegate.server.loader import APP_ENV, DEV_ENV, AppLoadError, app_from_env, load_registry

TYPO_APP = """\
from sluicegate import Agent
from sluicegate.processors import RegexFilter
from sluicegate.testing import MockModel, text_step

agent = Agent(
    "support",
    model=MockModel([text_step("hi")]),
    input_processors=[RegexFilter(presets=["pii"], stratgy="block")],
)
"""
GOOD_APP = """\
from sluicegate import Agent
from sluicegate.testing import MockModel, text_step

agent = Agent("support", model=MockModel([text_step("hi")] * 5))
"""
NAME_ERROR_APP = "from sluicegate import Agent\n\nagent = Agent('a', model=undefined_model)\n"
SYNTAX_ERROR_APP = "from sluicegate import Agent\n\nagent = Agent('a',\n"


def _app(tmp_path: Path, source: str) -> Path:
    path = tmp_path / "app.py"
    path.write_text(source, encoding="utf-8")
    return path


@pytest.mark.parametrize("command", ["run", "serve"])
def test_a_misspelled_option_is_one_line_naming_file_line_and_fix(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = _app(tmp_path, TYPO_APP)
    argv = ["run", f"{app}:support", "hi"] if command == "run" else ["serve", str(app)]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1, err
    assert f"{app}:8: " in err and "unknown option 'stratgy' (did you mean 'strategy'?)" in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("source", "where", "what"),
    [
        (NAME_ERROR_APP, ":3: ", "NameError: name 'undefined_model' is not defined"),
        (SYNTAX_ERROR_APP, ":3: ", "SyntaxError: '(' was never closed"),
    ],
)
def test_any_error_raised_by_the_app_file_is_one_line(
    source: str, where: str, what: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    app = _app(tmp_path, source)
    assert main(["run", f"{app}:a", "hi"]) == 2
    err = capsys.readouterr().err
    assert err == f"sluicegate: {app}{where}{what}\n"


def test_debug_prints_the_traceback(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = _app(tmp_path, TYPO_APP)
    assert main(["run", f"{app}:support", "hi", "--debug"]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "UnknownOptionError" in err


def test_a_keyless_guardrail_is_one_line_before_any_model_call(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    app = _app(
        tmp_path,
        "from sluicegate import Agent\nfrom sluicegate.processors import ModerationProcessor\n"
        "from sluicegate.testing import MockModel\n\n"
        "agent = Agent('a', model=MockModel([]),\n"
        "              output_processors=[ModerationProcessor(model='openai/gpt-5-nano')])\n",
    )
    assert main(["run", f"{app}:a", "hi"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'moderation'" in err and "OPENAI_API_KEY" in err


def test_the_load_error_keeps_file_and_line(tmp_path: Path) -> None:
    app = _app(tmp_path, NAME_ERROR_APP)
    with pytest.raises(AppLoadError) as caught:
        load_registry(str(app))
    assert (caught.value.file, caught.value.line) == (str(app), 3)
    assert caught.value.detail.startswith("NameError")


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


@pytest.mark.parametrize("name", sorted(_subcommands()))
def test_help_explains_every_option_with_an_example(name: str) -> None:
    command = _subcommands()[name]
    assert command.epilog and f"sluicegate {name}" in command.epilog, f"{name}: no example in --help"
    for action in command._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        label = action.option_strings or [action.dest]
        assert action.help, f"{name} {label}: no help"
        assert "e.g." in action.help, f"{name} {label}: no example in its help"
    assert "examples:" in command.format_help() or "example:" in command.format_help()


def test_the_studio_url_is_one_a_browser_can_open() -> None:
    assert studio_url("127.0.0.1", 4111) == "http://127.0.0.1:4111/studio"
    assert studio_url("0.0.0.0", 8000) == "http://127.0.0.1:8000/studio"
    assert studio_url("::", 8000) == "http://[::1]:8000/studio"
    assert studio_url("fe80::1", 80) == "http://[fe80::1]:80/studio"


async def test_the_dev_loader_serves_an_error_page_until_the_file_is_fixed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app_file = _app(tmp_path, NAME_ERROR_APP)
    monkeypatch.setenv(APP_ENV, str(app_file))
    monkeypatch.setenv(DEV_ENV, "1")
    broken = app_from_env()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=broken), base_url="http://dev") as client:
        for path in ("/", "/studio", "/anything/at/all"):
            page = await client.get(path)
            assert page.status_code == 500 and page.headers["content-type"].startswith("text/html")
            assert f"{app_file}:3" in page.text and "NameError: name &#x27;undefined_model&#x27;" in page.text
            assert 'http-equiv="refresh"' in page.text
        api = await client.get("/api/agents")
        assert api.status_code == 500
        assert api.json()["error"] | {"message": ""} == {"message": "", "file": str(app_file), "line": 3}
    app_file.write_text(GOOD_APP, encoding="utf-8")
    fixed = app_from_env()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=fixed), base_url="http://dev") as client:
        assert (await client.get("/api/agents")).json().keys() == {"support"}


def test_outside_dev_the_loader_still_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(APP_ENV, str(_app(tmp_path, NAME_ERROR_APP)))
    monkeypatch.delenv(DEV_ENV, raising=False)
    with pytest.raises(AppLoadError):
        app_from_env()


def _get(url: str) -> httpx.Response | None:
    try:
        return httpx.get(url, timeout=2)
    except httpx.TransportError:
        return None


def _wait_for(url: str, ok: object, timeout: float = 40) -> httpx.Response:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = _get(url)
        if last is not None and callable(ok) and ok(last):
            return last
        time.sleep(0.2)
    raise AssertionError(f"{url}: not ready in {timeout}s (last: {last and last.status_code})")


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_sluicegate_dev_reloads_from_an_error_page_to_the_app(tmp_path: Path) -> None:
    app_file = _app(tmp_path, NAME_ERROR_APP)
    port = free_port()
    env = {**os.environ, "NO_COLOR": "1", "PYTHONUNBUFFERED": "1"}
    env.pop(APP_ENV, None)
    process = subprocess.Popen(
        [sys.executable, "-m", "sluicegate", "dev", str(app_file), "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        page = _wait_for(base + "/studio", lambda r: r.status_code == 500)
        assert f"{app_file}:3" in page.text and "undefined_model" in page.text
        app_file.write_text(GOOD_APP, encoding="utf-8")
        # The reloader compares modification times: move it past any the first write could share.
        later = time.time() + 5
        os.utime(app_file, (later, later))
        agents = _wait_for(base + "/api/agents", lambda r: r.status_code == 200)
        assert agents.json().keys() == {"support"}
        assert (
            _wait_for(base + "/studio", lambda r: r.status_code == 200)
            .headers["content-type"]
            .startswith("text/html")
        )
    finally:
        process.terminate()
        try:
            output, _ = process.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
    assert f"sluicegate studio: http://127.0.0.1:{port}/studio" in output
    assert f"{app_file}:3: NameError" in output


def test_dev_stops_on_a_file_that_does_not_exist(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["dev", str(tmp_path / "apps.py")]) == 2
    assert "no such application file" in capsys.readouterr().err
