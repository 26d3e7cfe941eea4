"""A model string cannot load arbitrary files, and errors never echo a caller's path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from sluicegate import Agent
from sluicegate.errors import ConfigurationError
from sluicegate.models import local_paths
from sluicegate.models.local import resolve_model_path
from sluicegate.testing import MockModel, text_step

HOSTILE = [
    "/etc/passwd.gguf",
    "../../../etc/secret.gguf",
    "~/models/private.gguf",
    "sub/dir/model.gguf",
    "..gguf",
    ".hidden.gguf",
    "x\x00.gguf",
    "C:\\windows\\model.gguf",
]


@pytest.fixture
def models_dir(tmp_path: Path) -> Iterator[Path]:
    directory = tmp_path / "models"
    directory.mkdir()
    (directory / "tiny.gguf").write_bytes(b"GGUF")
    (tmp_path / "outside.gguf").write_bytes(b"GGUF")
    (directory / "escape.gguf").symlink_to(tmp_path / "outside.gguf")
    local_paths.set_models_dir(directory)
    yield directory
    local_paths.set_models_dir(None)


@pytest.mark.parametrize("name", HOSTILE)
def test_paths_are_refused_without_being_echoed(models_dir: Path, name: str) -> None:
    with pytest.raises(ConfigurationError) as caught:
        resolve_model_path(name)
    message = str(caught.value)
    for fragment in ("etc", "secret", "private", "~", "sub/dir", "windows", str(models_dir)):
        assert fragment not in message


def test_files_in_the_models_directory_load(models_dir: Path) -> None:
    assert resolve_model_path("tiny.gguf") == (models_dir / "tiny.gguf").resolve()
    with pytest.raises(ConfigurationError, match="no such"):
        resolve_model_path("missing.gguf")
    with pytest.raises(ConfigurationError, match="no such"):
        resolve_model_path("escape.gguf")  # a symlink out of the directory


def test_without_a_models_directory_gguf_files_are_disabled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(local_paths.MODELS_DIR_ENV, raising=False)
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigurationError, match="disabled"):
        resolve_model_path("m.gguf")
    monkeypatch.setenv(local_paths.MODELS_DIR_ENV, str(tmp_path))
    assert resolve_model_path("m.gguf") == (tmp_path / "m.gguf").resolve()


async def test_the_per_call_model_option_cannot_reach_a_path(models_dir: Path) -> None:
    pytest.importorskip("xllamacpp")
    model = MockModel([text_step("ok")])
    agent = Agent(name="a", model=model)
    with pytest.raises(ConfigurationError) as caught:
        await agent.generate("hi", model="local//etc/shadow.gguf")
    assert "shadow" not in str(caught.value) and model.calls == []
