"""Exact token counts with tiktoken, offline.

tiktoken downloads its BPE rank files on first use; sluicegate never does. The rank files of
`cl100k_base` and `o200k_base` come from the `quicktok-v1` package, which ships them in a compact
binary form. We rebuild tiktoken's text form from it and check its SHA-256 against the hash
tiktoken itself pins for the official file, so the encodings are byte-for-byte OpenAI's.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import importlib.util
import struct
import threading
from pathlib import Path
from typing import Any

import tiktoken

ENDOFTEXT = "<|endoftext|>"
ENDOFPROMPT = "<|endofprompt|>"

_CL100K_PATTERN = r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""  # noqa: E501 - tiktoken's pattern
_O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

# name -> (file in quicktok/data, SHA-256 of the official .tiktoken file, pattern, special tokens)
_ENCODINGS: dict[str, tuple[str, str, str, dict[str, int]]] = {
    "cl100k_base": (
        "cl100k.vocab",
        "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
        _CL100K_PATTERN,
        {
            ENDOFTEXT: 100257,
            "<|fim_prefix|>": 100258,
            "<|fim_middle|>": 100259,
            "<|fim_suffix|>": 100260,
            ENDOFPROMPT: 100276,
        },
    ),
    "o200k_base": (
        "o200k.vocab",
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
        _O200K_PATTERN,
        {ENDOFTEXT: 199999, ENDOFPROMPT: 200018},
    ),
}

ENCODING_NAMES: tuple[str, ...] = tuple(_ENCODINGS)
DEFAULT_ENCODING = "o200k_base"

# Model-id prefixes (after any "provider/") whose tokenizer is cl100k_base; the rest of OpenAI's
# current families (gpt-4o, gpt-4.1, gpt-5, o1/o3/o4, chatgpt-*) use o200k_base. Other vendors'
# tokenizers are not public; o200k_base is the closest widely used stand-in for current models.
_CL100K_PREFIXES = (
    "gpt-4-",
    "gpt-4",
    "gpt-3.5",
    "gpt-35",
    "text-embedding-3",
    "text-embedding-ada",
    "davinci-002",
    "babbage-002",
)
_O200K_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt", "gpt-oss")


class EncodingUnavailableError(RuntimeError):
    """The bundled rank file is missing or does not hash to the official one."""


def encoding_name_for_model(model_id: str | None) -> str:
    """The tiktoken encoding for a model id such as `gpt-4o`, `openai/gpt-4` or `claude-3-5-sonnet`."""
    if not model_id:
        return DEFAULT_ENCODING
    name = model_id.rsplit("/", 1)[-1].lower()
    if name.startswith(_O200K_PREFIXES):
        return "o200k_base"
    if name.startswith(_CL100K_PREFIXES):
        return "cl100k_base"
    return DEFAULT_ENCODING


def _data_dir() -> Path:
    # Locate the package without importing it: its __init__ loads a native extension we do not need.
    spec = importlib.util.find_spec("quicktok")
    if spec is None or not spec.submodule_search_locations:
        raise EncodingUnavailableError(
            "the `quicktok-v1` package (which ships the BPE rank files) is not installed"
        )
    return Path(next(iter(spec.submodule_search_locations))) / "data"


def _read_ranks(path: Path, expected_sha256: str) -> dict[bytes, int]:
    """Decode quicktok's vocab file (u32 count, then u16 length, bytes, u32 rank per token) and
    verify it against the official `.tiktoken` file's hash."""
    data = path.read_bytes()
    (count,) = struct.unpack_from("<I", data, 0)
    offset = 4
    ranks: dict[bytes, int] = {}
    for _ in range(count):
        (length,) = struct.unpack_from("<H", data, offset)
        offset += 2
        token = data[offset : offset + length]
        offset += length
        (rank,) = struct.unpack_from("<I", data, offset)
        offset += 4
        ranks[token] = rank
    digest = hashlib.sha256()
    for token, rank in sorted(ranks.items(), key=lambda item: item[1]):
        digest.update(base64.b64encode(token) + b" " + str(rank).encode() + b"\n")
    if digest.hexdigest() != expected_sha256:
        raise EncodingUnavailableError(f"{path} does not match the official rank file (hash mismatch)")
    return ranks


_LOAD_LOCK = threading.Lock()


def get_encoding(name: str = DEFAULT_ENCODING) -> tiktoken.Encoding:
    """A `tiktoken.Encoding` by name (built once; a caller arriving while another thread builds
    it waits for that build instead of repeating it).

    The bundled encodings (`cl100k_base`, `o200k_base`) are built from their rank files here and
    never touch the network. Any other name is looked up in tiktoken's registry, which includes
    encodings that installed `tiktoken_ext` plugins register; tiktoken may download and cache the
    rank file of such an encoding on first use (see its `TIKTOKEN_CACHE_DIR`)."""
    with _LOAD_LOCK:
        return _build_encoding(name)


def prefetch_encoding(name: str) -> None:
    """Build `name` in a background thread, so that the first request needing it does not spend
    a second of CPU on the event loop reading and checking rank files."""

    def build() -> None:
        try:
            get_encoding(name)
        except Exception:  # reported when the encoding is actually needed
            pass

    threading.Thread(target=build, name=f"sluicegate-encoding-{name}", daemon=True).start()


def clear_encoding_cache() -> None:
    with _LOAD_LOCK:
        _build_encoding.cache_clear()


@functools.cache
def _build_encoding(name: str) -> tiktoken.Encoding:
    bundled = _ENCODINGS.get(name)
    if bundled is None:
        return _registry_encoding(name)
    filename, sha256, pattern, special = bundled
    ranks = _read_ranks(_data_dir() / filename, sha256)
    return tiktoken.Encoding(name=name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=special)


def _registry_encoding(name: str) -> tiktoken.Encoding:
    from tiktoken import registry

    known = registry.list_encoding_names()
    if name not in known:
        raise ValueError(
            f"unknown encoding {name!r}; known encodings: {', '.join(sorted({*ENCODING_NAMES, *known}))}"
        )
    try:
        return registry.get_encoding(name)
    except Exception as exc:  # a plugin that fails, a rank file that cannot be fetched
        raise ValueError(f"encoding {name!r} could not be loaded: {exc}") from exc


def resolve_encoding(
    encoding: str | tiktoken.Encoding | None, model_id: str | None = None
) -> tiktoken.Encoding:
    """An encoding given by name or object, or the default for `model_id`."""
    if isinstance(encoding, tiktoken.Encoding):
        return encoding
    return get_encoding(encoding or encoding_name_for_model(model_id))


def count_tokens(text: str, encoding: str | tiktoken.Encoding | None = None) -> int:
    """Tokens in `text` (special-token strings count as ordinary text)."""
    return len(resolve_encoding(encoding).encode_ordinary(text))


def model_id_of(model: Any) -> str | None:
    """The model id of a LanguageModel, a `provider/model` string, or None."""
    if model is None:
        return None
    if isinstance(model, str):
        return model
    model_id = getattr(model, "model_id", None)
    return model_id if isinstance(model_id, str) else None
