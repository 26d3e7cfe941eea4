"""The command line a new user meets first: `--version`, `agents`, `run` on a tool that waits
for approval (a distinct exit status, the run id and the commands that decide it), `approve` and
`decline` from another process, `--thread/--resource`, the `chat` loop, and `serve --temporal`
refusing an in-process run log."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from sluicegate.cli import main
from sluicegate.cli.run import WAITING

ROOT = Path(__file__).resolve().parents[2]

# The model answers from what it was sent, so a second process (which starts the script afresh)
# continues the run: a tool result in the prompt -> the final text, else the tool call.
BANK_APP = """\
import json
from pathlib import Path

from sluicegate import Agent, tool
from sluicegate.memory import Memory
from sluicegate.storage import SQLiteStore
from sluicegate.testing import MockModel
from sluicegate.testing.mock_model import text_step, tool_call_step

HERE = Path(__file__).resolve().parent
storage = SQLiteStore(str(HERE / "bank.db"))


@tool(require_approval=True)
def transfer(amount: int) -> dict:
    \"\"\"Move money.

    Args:
        amount: How much.
    \"\"\"
    with open(HERE / "ran.txt", "a") as out:
        out.write(f"{amount}\\n")
    return {"moved": amount}


def answer(options):
    sent = json.dumps(options.prompt, default=str)
    last = json.dumps(options.prompt[-1], default=str)
    if "tool-result" in last:
        return text_step("Moved." if "moved" in last else "Not moved.")
    if "remember" in last and "blue" in sent:
        return text_step("You said blue.")
    if "Move" in last:
        return tool_call_step(("call_1", "transfer", {"amount": 100}))
    return text_step("Hello.")


memory = Memory(storage=storage)
banker = Agent(name="banker", model=MockModel([answer] * 20), tools=[transfer], memory=memory)
forgetful = Agent(name="forgetful", model=MockModel([answer] * 20), tools=[transfer])
"""


def _sluicegate(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_COLOR": "1", "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "sluicegate", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def bank(tmp_path: Path) -> Path:
    (tmp_path / "app.py").write_text(BANK_APP, encoding="utf-8")
    return tmp_path


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0
    assert capsys.readouterr().out.startswith("sluicegate 0.")


def test_agents_lists_what_the_app_serves(bank: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["agents", str(bank / "app.py")]) == 0
    out = capsys.readouterr().out
    banker, forgetful = out.split("\nforgetful")
    assert banker.startswith("banker: model mock-provider/mock-model-id (MockModel)")
    assert "tools: transfer" in banker and "memory: yes" in banker and "memory: no" in forgetful


def test_a_waiting_run_is_decided_from_another_process(bank: Path) -> None:
    started = _sluicegate(
        "run", "app.py:banker", "Move 100", "--thread", "t-1", "--resource", "ada", cwd=bank
    )
    assert started.returncode == WAITING == 4, started.stderr
    assert "[waiting] transfer" in started.stdout and "needs approval" in started.stdout
    line = next(x for x in started.stderr.splitlines() if x.strip().startswith("sluicegate approve"))
    run_id = line.split()[-1]
    assert f"sluicegate decline app.py:banker {run_id}" in started.stderr
    assert "in this process only" not in started.stderr  # kept in bank.db: decidable elsewhere
    assert not (bank / "ran.txt").exists()

    approved = _sluicegate("approve", "app.py", run_id, cwd=bank)  # the agent is found by the run
    assert approved.returncode == 0, approved.stderr
    assert "Moved." in approved.stdout
    assert (bank / "ran.txt").read_text() == "100\n"

    again = _sluicegate("approve", "app.py", run_id, cwd=bank)
    assert again.returncode == 2 and "has a waiting run" in again.stderr and again.stderr.count("\n") == 1


def test_decline_with_a_reason(bank: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = str(bank / "app.py")
    assert main(["run", f"{app}:banker", "Move 100"]) == WAITING
    err = capsys.readouterr().err
    run_id = next(x for x in err.splitlines() if "sluicegate approve" in x).split()[-1]
    assert main(["decline", f"{app}:banker", run_id, "--reason", "not today"]) == 0
    assert "Not moved." in capsys.readouterr().out
    assert not (bank / "ran.txt").exists()


def test_a_run_kept_in_process_says_it_cannot_be_decided_later(
    bank: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", f"{bank / 'app.py'}:forgetful", "Move 100"]) == WAITING
    assert "keeps waiting runs in this process only" in capsys.readouterr().err


def test_thread_and_resource_carry_the_conversation(bank: Path, capsys: pytest.CaptureFixture[str]) -> None:
    app = f"{bank / 'app.py'}:banker"
    assert main(["run", app, "my colour is blue", "--thread", "t-2", "--resource", "ada"]) == 0
    assert main(["run", app, "remember my colour?", "--thread", "t-2", "--resource", "ada"]) == 0
    assert "You said blue." in capsys.readouterr().out
    assert main(["run", f"{bank / 'app.py'}:forgetful", "hi", "--thread", "t-2", "--resource", "ada"]) == 2
    assert "has no memory" in capsys.readouterr().err
    assert main(["run", app, "hi", "--thread", "t-2"]) == 2
    assert "go together" in capsys.readouterr().err


def test_chat_keeps_the_history_and_asks_at_the_prompt(
    bank: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    typed = iter(["my colour is blue", "remember my colour?", "Move 100", "y", "/exit"])
    asked: list[str] = []

    def fake_input(prompt: str) -> str:
        asked.append(prompt)
        return next(typed)

    monkeypatch.setattr("builtins.input", fake_input)
    assert main(["chat", f"{bank / 'app.py'}:forgetful"]) == 0
    out = capsys.readouterr().out
    assert "You said blue." in out  # the loop kept the history (the agent has no memory)
    assert "approve transfer? [y/N] " in asked and "Moved." in out
    assert (bank / "ran.txt").read_text() == "100\n"


def test_chat_ends_at_end_of_input(bank: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def eof(prompt: str) -> str:
        raise EOFError

    monkeypatch.setattr("builtins.input", eof)
    assert main(["chat", f"{bank / 'app.py'}:banker"]) == 0


def test_an_app_with_several_agents_needs_one_named(bank: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", str(bank / "app.py"), "hi"]) == 2
    assert "name one as" in capsys.readouterr().err


def test_serve_temporal_refuses_an_in_process_run_log(
    bank: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SLUICEGATE_TEMPORAL", "")  # restored after the test: serve sets it
    assert main(["serve", str(bank / "app.py"), "--temporal", "127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert "'banker', 'forgetful'" in err and "RedisRunLog" in err and err.count("\n") == 1


def test_resume_data_must_be_json(bank: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["resume", str(bank / "app.py"), "run-1", "{nope"]) == 2
    assert "not JSON" in capsys.readouterr().err


def test_the_waiting_hint_is_shell_quoted(tmp_path: Path) -> None:
    from sluicegate import Agent
    from sluicegate.cli.run import Outcome, Pending, how_to_decide
    from sluicegate.testing import MockModel

    agent = Agent(name="a b", model=MockModel([]))
    hint = how_to_decide("my app.py", agent, Outcome(run_id="r-1", pending=[Pending("c", "t", "input")]))
    assert "sluicegate resume 'my app.py:a b' r-1" in hint
    command = next(line for line in hint.splitlines() if "sluicegate resume" in line)
    assert shlex.split(command.split("#")[0])[-1] == '{"confirmed": true}'
