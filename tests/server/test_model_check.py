"""Model mistakes found when the app loads, not at the first request: an unknown provider (with
a suggestion), a malformed model string, a missing API key and a missing `local/` file are one
line naming the file and the agent's line, exit status 2; model objects (mocks, custom adapters)
and models chosen per call are left alone. What still fails at run time is the server's 503."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from sluicegate import Agent, Sluicegate
from sluicegate.cli import main
from sluicegate.errors import UnknownModelError
from sluicegate.models.registry import resolve_model
from sluicegate.server import ServerSettings, create_app
from sluicegate.server.loader import AppLoadError, load_registry

HEADER = "from sluicegate import Agent, Sluicegate\nfrom sluicegate.testing import MockModel, text_step\n\n"


def _app(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "app.py"
    path.write_text(HEADER + body, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("openia/gpt-5-mini", "did you mean 'openai'?"),
        ("gpt-5-mini", "must look like 'provider/model-id'"),
        ("openai/gpt-5-mini", "OPENAI_API_KEY"),
        ("local/missing.gguf", "models folder"),
    ],
)
def test_a_model_that_cannot_be_used_fails_the_load_with_file_and_line(
    model: str,
    expected: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("SLUICEGATE_MODELS_DIR", str(tmp_path))
    app = _app(
        tmp_path,
        f'helper = Agent("helper", model=MockModel([]))\n\n'
        f'support = Agent(\n    "support",\n    model="{model}",\n)\n',
    )
    with pytest.raises(AppLoadError) as caught:
        load_registry(str(app))
    assert caught.value.line == 6  # the `Agent(` call of the agent at fault
    assert "agent 'support'" in str(caught.value) and expected in str(caught.value)
    if model.startswith("local/"):
        assert str(tmp_path) in str(caught.value)
    assert main(["run", f"{app}:support", "hi"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sluicegate: {app}:6: agent 'support'") and err.count("\n") == 1


def test_an_inline_agent_in_a_registry_and_a_fallback_list_are_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    app = _app(
        tmp_path,
        "app = Sluicegate(\n    agents=[\n"
        "        Agent(name='desk', model=[MockModel([]), 'anthropic/claude-haiku-4-5']),\n"
        "    ]\n)\n",
    )
    with pytest.raises(AppLoadError) as caught:
        load_registry(str(app))
    assert caught.value.line == 6
    assert "model[1] 'anthropic/claude-haiku-4-5'" in str(caught.value) and "ANTHROPIC_API_KEY" in str(
        caught.value
    )


def test_mock_models_and_set_keys_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    app = _app(tmp_path, 'a = Agent("a", model=MockModel([]))\nb = Agent("b", model="openai/gpt-5-mini")\n')
    assert sorted(load_registry(str(app)).agents) == ["a", "b"]


def test_a_guardrail_detector_without_its_key_fails_the_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    app = _app(
        tmp_path,
        "from sluicegate.processors import PromptInjectionDetector\n\n"
        "a = Agent('a', model=MockModel([]),\n"
        "          input_processors=[PromptInjectionDetector(model='openai/gpt-5-mini')])\n",
    )
    with pytest.raises(AppLoadError) as caught:
        load_registry(str(app))
    assert caught.value.line == 6 and "OPENAI_API_KEY" in str(caught.value)


def test_unknown_provider_suggests_the_closest() -> None:
    with pytest.raises(UnknownModelError, match="did you mean 'anthropic'"):
        resolve_model("antropic/claude")
    with pytest.raises(UnknownModelError) as caught:
        resolve_model("zzzz/x")
    assert "did you mean" not in str(caught.value)


async def test_a_model_that_fails_at_run_time_is_the_servers_503(monkeypatch: pytest.MonkeyPatch) -> None:
    """Built past the load check (the key was removed after it): the server's fault, 503."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    app = create_app(Sluicegate(agents=[Agent("a", model="openai/gpt-5-mini")]), ServerSettings())
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        response = await client.post("/api/agents/a/generate", json={"messages": "hi"})
    assert response.status_code == 503, response.text
    assert "OPENAI_API_KEY" in response.json()["error"]


async def test_an_unknown_provider_in_the_request_stays_the_clients_400() -> None:
    from sluicegate.testing import MockModel

    settings = ServerSettings(allow_client_overrides=True)
    app = create_app(Sluicegate(agents=[Agent("a", model=MockModel([]))]), settings)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
        response = await client.post("/api/agents/a/generate", json={"messages": "hi", "model": "nope/x"})
    assert response.status_code == 400, response.text
