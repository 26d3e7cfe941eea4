"""The `sluicegate` command: loading an application file, `run`, and `serve` argument checks."""

from __future__ import annotations

from pathlib import Path

import pytest

from sluicegate import Agent, Sluicegate
from sluicegate.cli import main
from sluicegate.errors import ConfigurationError
from sluicegate.server.loader import load_registry, split_target

EXAMPLE = str(Path(__file__).parent / "example_app.py")


def test_run_streams_the_answer(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", f"{EXAMPLE}:echo", "hello cli"]) == 0
    assert capsys.readouterr().out.startswith("Echo: hello cli")


def test_run_shows_a_tripwire_and_exits_3(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", f"{EXAMPLE}:echo", "forbidden"]) == 3
    assert "[tripwire] block-word: The word 'forbidden' is not allowed" in capsys.readouterr().out


def test_run_unknown_agent(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", f"{EXAMPLE}:nobody", "hi"]) == 2
    assert "no agent 'nobody'" in capsys.readouterr().err


def test_serve_rejects_a_missing_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert main(["serve", str(tmp_path / "missing.py")]) == 2
    assert "no such application file" in capsys.readouterr().err
    assert main(["serve", EXAMPLE, "--workers", "0"]) == 2


def test_loader_finds_a_registry_or_module_level_agents(tmp_path: Path) -> None:
    registry = load_registry(EXAMPLE)
    assert sorted(registry.agents) == ["echo", "plain"]
    bare = tmp_path / "bare.py"
    bare.write_text(
        "from sluicegate import Agent\n"
        "from sluicegate.testing.echo_model import EchoModel\n"
        "one = Agent(name='one', model=EchoModel())\n"
        "two = Agent(name='two', id='second', model=EchoModel())\n"
    )
    assert sorted(load_registry(str(bare)).agents) == ["one", "second"]
    assert sorted(load_registry(f"{bare}:two").agents) == ["second"]
    with pytest.raises(ConfigurationError, match="not a Sluicegate registry or an Agent"):
        load_registry(f"{bare}:nothing")
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    with pytest.raises(ConfigurationError, match="no Sluicegate registry and no Agent"):
        load_registry(str(empty))


def test_split_target() -> None:
    assert split_target("app.py") == (Path("app.py"), None)
    assert split_target("dir/app.py:registry") == (Path("dir/app.py"), "registry")


def test_registry_lookups() -> None:
    from sluicegate.testing.echo_model import EchoModel

    agent = Agent(name="Support Bot", id="support", model=EchoModel())
    registry = Sluicegate(agents={"helpdesk": agent})
    assert registry.get_agent("helpdesk") is agent
    assert registry.get_agent("support") is agent
    assert registry.get_agent("Support Bot") is agent
    assert registry.get_agent("other") is None
    with pytest.raises(ConfigurationError):
        Sluicegate(agents={"x": "not an agent"})  # type: ignore[dict-item]
