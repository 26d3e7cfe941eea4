"""`TokenLimiter(encoding=NAME)` takes any name tiktoken's registry knows, plugins included."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from tiktoken import registry

from sluicegate.processors import TokenLimiter
from sluicegate.tokens import clear_encoding_cache, count_tokens

PLUGIN = textwrap.dedent(
    """
    def tiny():
        ranks = {bytes([b]): b for b in range(256)}
        ranks[b"ab"] = 256
        return {"name": "tiny_test_base", "pat_str": r"\\S+|\\s+", "mergeable_ranks": ranks,
                "special_tokens": {}}

    ENCODING_CONSTRUCTORS = {"tiny_test_base": tiny}
    """
)


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    package = tmp_path / "tiktoken_ext"
    package.mkdir()
    (package / "sluicegate_test_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    import tiktoken_ext

    monkeypatch.setattr(tiktoken_ext, "__path__", [*tiktoken_ext.__path__, str(package)], raising=False)
    registry.list_encoding_names()  # the registry as it was, scanned once
    # tiktoken caches its list of plugin modules for the process (an lru_cache): another test in
    # this process may have scanned before the plugin existed, so the scan must start afresh.
    _forget_plugin_modules()
    registry.ENCODING_CONSTRUCTORS = None  # rescan: the plugin is found now
    clear_encoding_cache()
    yield
    clear_encoding_cache()
    sys.modules.pop("tiktoken_ext.sluicegate_test_plugin", None)
    registry.ENCODINGS.pop("tiny_test_base", None)
    if registry.ENCODING_CONSTRUCTORS is not None:  # keep the scan, minus the test plugin
        registry.ENCODING_CONSTRUCTORS.pop("tiny_test_base", None)
    _forget_plugin_modules()


def _forget_plugin_modules() -> None:
    cached = getattr(registry, "_available_plugin_modules", None)
    if cached is not None and hasattr(cached, "cache_clear"):
        cached.cache_clear()


def test_a_plugin_encoding_is_resolved(plugin: None) -> None:
    limiter = TokenLimiter(limit=10, encoding="tiny_test_base")
    assert limiter.counter().encoding.name == "tiny_test_base"
    assert count_tokens("abab", "tiny_test_base") == 2


def test_unknown_names_fail_at_construction_listing_the_known_ones() -> None:
    with pytest.raises(ValueError, match="r50k_base"):
        TokenLimiter(limit=10, encoding="o300k_base")
    with pytest.raises(ValueError):
        TokenLimiter(limit=10, encoding=42)  # type: ignore[arg-type]
