"""The chunks an activity carries to the run log, packed (`names.PACKED_FORMAT`).

The workflow's own chunks reach the log in the input of the next model or tool call
(`workflow_model.Outbox.carry`). A `step-finish` repeats every earlier step, as Mastra's does,
so a run's carried text grows with the square of its steps. Every byte of an activity's input
goes to the server, is stored in the run's history, returns to the worker with the next
workflow task and again with the activity task. On a server that shares the worker's machine,
those copies cost more wall time than the chunks' encoding.

Packed, the carried texts are joined by newlines (a JSON text holds none), compressed with
zlib at level 1 and base64-encoded: about a sixth of the size, for about 15 µs per KB in the
workflow. Short carries travel as they are. The run log receives the same texts either way.
"""

from __future__ import annotations

import base64
import binascii
import zlib
from typing import Any

PACK_FROM = 1024
"""Carried texts this long or longer (in characters, together) travel packed."""

UNPACK_LIMIT = 64 * 1024 * 1024
"""The most a packed carry may unpack to, in bytes (the run log's local publish takes as much)."""


def packed_texts(texts: list[str]) -> str | None:
    """`texts` as one packed string; None when they are too short to gain from it, or when one
    holds a newline (a text that is not compact JSON: it travels as it is)."""
    joined = "\n".join(texts)
    if len(joined) < PACK_FROM or joined.count("\n") != len(texts) - 1:
        return None
    return base64.b64encode(zlib.compress(joined.encode(), 1)).decode("ascii")


def unpacked_texts(packed: str, limit: int = UNPACK_LIMIT) -> list[str]:
    """The texts `packed_texts` packed. `ValueError` for a string that is not such a packing, or
    one that would unpack to more than `limit` bytes."""
    try:
        inflate = zlib.decompressobj()
        raw = inflate.decompress(base64.b64decode(packed, validate=True), limit)
        if inflate.unconsumed_tail:
            raise ValueError(f"packed chunks unpack to more than {limit} bytes")
        if not inflate.eof or inflate.unused_data:
            raise ValueError("packed chunks that are cut short or followed by other data")
        return raw.decode().split("\n")
    except (binascii.Error, zlib.error, UnicodeDecodeError) as exc:
        raise ValueError(f"packed chunks that do not unpack ({exc})") from None


def carried_texts(carry: dict[str, Any]) -> list[Any]:
    """The chunks a call's `carry` holds: its `packed` texts, or its `chunks` (a short carry, or
    a run of an earlier format). `ValueError` when packed texts do not fill the offsets the carry
    names (`offset` to `end`)."""
    if "packed" not in carry:
        chunks: list[Any] = carry["chunks"]
        return chunks
    texts = unpacked_texts(carry["packed"])
    if len(texts) != carry["end"] - carry["offset"]:
        raise ValueError(
            f"the carry names offsets {carry['offset']} to {carry['end']} but holds {len(texts)} chunks"
        )
    return texts
