"""Reversible pseudonymization: stable per-conversation tokens (`<EMAIL_1>`) for detected PII,
the mapping that turns them back into values, and where that mapping is kept.

`PIIDetector(strategy="pseudonymize")` lets a model work with personal data it never sees:
each value becomes a typed, numbered token, the same value always the same token within one
conversation (a `(resource, thread)` pair), and only the tool that needs the value (and, when
asked, the user reading the answer) gets it back.

The mapping of one conversation is a small JSON document sealed with AES-GCM (`cryptography`,
the `pii` extra) under the application's key, with the conversation's resource and thread as
associated data: a mapping read with another key, altered, or copied into another conversation
fails to open (`PseudonymKeyError`) instead of restoring anything. A store keeps only the
sealed bytes and a version number. Runs of one conversation extend its mapping one at a time:
inside a process they queue on a lock per conversation, and across processes the database
stores merge each run's new values into the latest mapping under a row lock (other stores
compare-and-swap on the version, reloading after a lost race). New tokens are numbered from
the latest mapping, so one token never names two values, and a token is stored before it is
used anywhere.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import os
import re
import weakref
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from sluicegate.errors import AccessDeniedError, ConfigurationError, MissingExtraError, StorageError
from sluicegate.guardrails.spans import map_strings
from sluicegate.memory.context import memory_context

TOKEN_PATTERN = re.compile(r"<([A-Z][A-Z0-9_]{0,39})_([1-9][0-9]{0,8})>")
"""A pseudonym: `<`, a type label (`EMAIL`, `CREDIT_CARD`), `_`, a number from 1, `>`."""
TOKEN_MAX_CHARS = 52
"""The longest token `TOKEN_PATTERN` accepts: how much trailing text a restoring stream holds."""
_PARTIAL_TOKEN = re.compile(r"<(?:[A-Z][A-Z0-9_]*)?\Z")
MIN_CONCEAL_CHARS = 3
"""Known values shorter than this are replaced only where a detector found them, not wherever
the characters occur (a two-letter name must not turn every "Al" in "Algebra" into a token)."""
_MAX_SAVE_ATTEMPTS = 8
DEFAULT_MAX_PSEUDONYMS = 10_000
"""Values one conversation's mapping holds at most: it is sealed, stored and searched on every
model call, so a caller sending endless distinct values must not grow it without bound."""
_STATE_KEY = "pseudonyms"
_MAGIC = b"SGP1"
_NONCE_BYTES = 12
_KEY_SIZES = (16, 24, 32)

logger = logging.getLogger("sluicegate.processors.pii")

Scope = tuple[str, str]
"""`(resource_id, thread_id)`: whose mapping."""


class PseudonymKeyError(AccessDeniedError):
    """A stored pseudonym mapping could not be opened: the key is not the one it was sealed
    with, or the stored bytes were altered or copied from another conversation. Nothing is
    restored or passed on in clear; the run ends with this error."""


def new_pseudonym_key() -> str:
    """A fresh random 256-bit key for `PIIDetector(pseudonym_key=...)`, URL-safe base64 (keep
    it with the application's other secrets: losing it makes stored mappings unreadable)."""
    return base64.urlsafe_b64encode(os.urandom(32)).decode("ascii")


def token_label(pii_type: str) -> str:
    """The token label of a PII type: `"credit-card"` -> `CREDIT_CARD`."""
    label = re.sub(r"[^A-Z0-9]+", "_", pii_type.upper()).strip("_")
    if not label or not label[0].isalpha():
        label = f"PII_{label}".rstrip("_")
    return label[:40].rstrip("_")


def is_token(text: str) -> bool:
    return TOKEN_PATTERN.fullmatch(text) is not None


def value_pieces(value: str) -> list[str]:
    """The parts of a detected value that are not tokens already (a detector may report
    `"John <EMAIL_1>"`; only `John` is new)."""
    return [piece.strip() for piece in TOKEN_PATTERN.split(value)[::3] if piece.strip()]


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"


def hold_point(text: str) -> int:
    """Where the trailing text that may still grow into a token starts (`len(text)` when
    none may): a restoring stream releases only what comes before it."""
    start = text.rfind("<", max(0, len(text) - TOKEN_MAX_CHARS + 1))
    if start >= 0 and _PARTIAL_TOKEN.match(text, start):
        return start
    return len(text)


class PseudonymMap:
    """One conversation's tokens and values, both ways. Immutable: `with_new` returns a copy."""

    __slots__ = ("_by_token", "_by_value", "_counters", "_values")

    def __init__(self, tokens: dict[str, str] | None = None) -> None:
        self._by_token: dict[str, str] = dict(tokens or {})
        self._by_value: dict[str, str] = {value: token for token, value in self._by_token.items()}
        self._counters: dict[str, int] = {}
        for token in self._by_token:
            match = TOKEN_PATTERN.fullmatch(token)
            if match is None:
                raise ValueError("not a pseudonym token")
            label, number = match.group(1), int(match.group(2))
            self._counters[label] = max(self._counters.get(label, 0), number)
        if len(self._by_value) != len(self._by_token):
            raise ValueError("a value has two tokens")
        self._values: list[str] | None = None

    def __len__(self) -> int:
        return len(self._by_token)

    def token(self, value: str) -> str | None:
        return self._by_value.get(value)

    def value(self, token: str) -> str | None:
        return self._by_token.get(token)

    def with_new(self, found: Iterable[tuple[str, str]], limit: int | None = None) -> PseudonymMap | None:
        """A copy with a fresh token for each `(value, pii_type)` not mapped yet, up to `limit`
        tokens in all (the values past it get none); None when nothing was added."""
        added: dict[str, str] = {}
        seen: set[str] = set()
        counters = dict(self._counters)
        room = None if limit is None else limit - len(self._by_token)
        for value, pii_type in found:
            if not value or value in self._by_value or value in seen or is_token(value):
                continue
            if room is not None and len(added) >= room:
                break
            seen.add(value)
            label = token_label(pii_type)
            counters[label] = counters.get(label, 0) + 1
            added[f"<{label}_{counters[label]}>"] = value
        if not added:
            return None
        return PseudonymMap({**self._by_token, **added})

    def restore(self, text: str) -> str:
        """`text` with every known token replaced by its value; unknown tokens stay as they are."""
        if not self._by_token or "<" not in text:
            return text
        return TOKEN_PATTERN.sub(lambda m: self._by_token.get(m.group(0), m.group(0)), text)

    def conceal(self, text: str) -> str:
        """`text` with every known value (of `MIN_CONCEAL_CHARS` or more, not inside a longer
        word) replaced by its token; existing tokens are left alone. Where values overlap, the
        leftmost wins, then the longest."""
        values = self._long_values()
        if not values or not text:
            return text
        hits: list[tuple[int, int]] = []
        for value in values:
            size = len(value)
            at = text.find(value)
            while at != -1:
                end = at + size
                if not (_word(value[0]) and at > 0 and _word(text[at - 1])) and not (
                    _word(value[-1]) and end < len(text) and _word(text[end])
                ):
                    hits.append((at, end))
                at = text.find(value, at + 1)
        if not hits:
            return text
        hits.sort(key=lambda hit: (hit[0], hit[0] - hit[1]))
        taken = [(m.start(), m.end()) for m in TOKEN_PATTERN.finditer(text)] if "<" in text else []
        out: list[str] = []
        cursor = 0
        token_index = 0
        for start, end in hits:
            if start < cursor:
                continue
            while token_index < len(taken) and taken[token_index][1] <= start:
                token_index += 1
            if token_index < len(taken) and taken[token_index][0] < end:
                continue  # inside (or across) a token already there
            out.append(text[cursor:start])
            out.append(self._by_value[text[start:end]])
            cursor = end
        out.append(text[cursor:])
        return "".join(out)

    def _long_values(self) -> list[str]:
        if self._values is None:
            self._values = sorted(
                (v for v in self._by_value if len(v) >= MIN_CONCEAL_CHARS), key=len, reverse=True
            )
        return self._values

    def to_json(self) -> bytes:
        return json.dumps({"v": 1, "tokens": self._by_token}, ensure_ascii=False).encode()

    @classmethod
    def from_json(cls, data: bytes) -> PseudonymMap:
        document = json.loads(data)
        tokens = document.get("tokens") if isinstance(document, dict) and document.get("v") == 1 else None
        if not isinstance(tokens, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in tokens.items()
        ):
            raise ValueError("not a pseudonym mapping")
        return cls(tokens)


# ---------------------------------------------------------------------- sealing


def _aesgcm() -> Any:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError as exc:
        raise MissingExtraError(
            "cryptography", extra="pii", feature="PIIDetector(strategy='pseudonymize')"
        ) from exc
    return AESGCM


def parse_key(key: Any) -> bytes:
    """The AES key in `key`: 16, 24 or 32 raw bytes, or their URL-safe base64 (a Fernet key
    works). Errors never repeat the key."""
    if isinstance(key, (bytes, bytearray)):
        raw = bytes(key)
    elif isinstance(key, str):
        try:
            raw = base64.urlsafe_b64decode(key.strip() + "=" * (-len(key.strip()) % 4))
        except (binascii.Error, ValueError):
            raise ConfigurationError("pseudonym_key: a str key must be URL-safe base64") from None
    else:
        raise ConfigurationError(
            f"pseudonym_key must be bytes or a base64 str (see new_pseudonym_key()), got {type(key).__name__}"
        )
    if len(raw) not in _KEY_SIZES:
        raise ConfigurationError(f"pseudonym_key must be 16, 24 or 32 bytes (AES), got {len(raw)} bytes")
    return raw


def _associated_data(scope: Scope) -> bytes:
    return json.dumps(["sluicegate-pseudonyms", scope[0], scope[1]]).encode()


class MappingCipher:
    """Seals a mapping for one conversation (AES-GCM, a random nonce per write)."""

    def __init__(self, key: bytes | str | None) -> None:
        aesgcm = _aesgcm()
        self.ephemeral = key is None
        """No key given: a random one for this process (in-memory mappings only)."""
        self._aead = aesgcm(os.urandom(32) if key is None else parse_key(key))

    def seal(self, plaintext: bytes, scope: Scope) -> bytes:
        nonce = os.urandom(_NONCE_BYTES)
        sealed: bytes = self._aead.encrypt(nonce, plaintext, _associated_data(scope))
        return _MAGIC + nonce + sealed

    def open(self, sealed: bytes, scope: Scope) -> bytes:
        from cryptography.exceptions import InvalidTag

        header = len(_MAGIC) + _NONCE_BYTES
        if len(sealed) <= header or not sealed.startswith(_MAGIC):
            raise PseudonymKeyError(_unreadable(scope, "it is not a sealed pseudonym mapping"))
        try:
            return bytes(
                self._aead.decrypt(sealed[len(_MAGIC) : header], sealed[header:], _associated_data(scope))
            )
        except InvalidTag:
            raise PseudonymKeyError(
                _unreadable(scope, "wrong pseudonym_key, or the stored bytes were altered or moved")
            ) from None


def _unreadable(scope: Scope, why: str) -> str:
    return f"the pseudonym mapping of thread {scope[1]!r} (resource {scope[0]!r}) cannot be opened: {why}"


# ---------------------------------------------------------------------- stores


@dataclass(frozen=True, slots=True)
class SealedMapping:
    data: bytes
    version: int
    """1 for the first write, +1 per write."""


@runtime_checkable
class PseudonymStore(Protocol):
    """Where sealed mappings live. `save` is a compare-and-swap: it writes only when the stored
    version is still `expected_version` (0: nothing stored yet) and says whether it did.

    A store shared by several processes may also offer `async update(scope, change)`: apply
    `change(current: SealedMapping | None) -> bytes | None` (None: keep it) atomically, holding
    the mapping locked meanwhile, and return the stored version. Writers then never lose a race,
    where compare-and-swap alone gives up after repeated lost races."""

    persistent: bool
    """Whether mappings outlive the process (then the application must provide the key)."""

    async def load(self, scope: Scope) -> SealedMapping | None: ...

    async def save(self, scope: Scope, data: bytes, *, expected_version: int) -> bool: ...


class InMemoryPseudonymStore:
    """Sealed mappings in this process's memory (the default): they last as long as the
    processor object, so tokens stay stable across the turns of a conversation while the
    application runs."""

    persistent = False

    def __init__(self) -> None:
        self._rows: dict[Scope, SealedMapping] = {}

    async def load(self, scope: Scope) -> SealedMapping | None:
        return self._rows.get(scope)

    async def save(self, scope: Scope, data: bytes, *, expected_version: int) -> bool:
        current = self._rows.get(scope)
        if (current.version if current is not None else 0) != expected_version:
            return False
        self._rows[scope] = SealedMapping(bytes(data), expected_version + 1)
        return True


class StoragePseudonymStore:
    """Sealed mappings in a memory store's `sluicegate_pseudonyms` table (`SQLiteStore`,
    `PostgresStore`): kept with the conversation and deleted with its thread."""

    persistent = True

    def __init__(self, storage: Any) -> None:
        if not callable(getattr(storage, "load_pseudonyms", None)) or not callable(
            getattr(storage, "save_pseudonyms", None)
        ):
            raise ConfigurationError(
                f"{storage!r} cannot hold pseudonym mappings; use SQLiteStore, PostgresStore or a "
                "PseudonymStore"
            )
        self.storage = storage

    def __repr__(self) -> str:
        return f"StoragePseudonymStore({self.storage!r})"

    async def load(self, scope: Scope) -> SealedMapping | None:
        row = await self.storage.load_pseudonyms(scope[0], scope[1])
        return None if row is None else SealedMapping(bytes(row[0]), int(row[1]))

    async def save(self, scope: Scope, data: bytes, *, expected_version: int) -> bool:
        return bool(await self.storage.save_pseudonyms(scope[0], scope[1], data, expected_version))

    async def update(self, scope: Scope, change: Callable[[SealedMapping | None], bytes | None]) -> int:
        """`PseudonymStore.update`, when the memory store has `update_pseudonyms`."""

        def on_row(row: tuple[bytes, int] | None) -> bytes | None:
            return change(None if row is None else SealedMapping(row[0], row[1]))

        return int(await self.storage.update_pseudonyms(scope[0], scope[1], on_row))


def resolve_store(store: Any) -> PseudonymStore:
    """`pseudonym_store=`: None (in memory), a memory store with a pseudonym table, or any
    `PseudonymStore`."""
    if store is None:
        return InMemoryPseudonymStore()
    if callable(getattr(store, "load_pseudonyms", None)):
        return StoragePseudonymStore(store)
    if isinstance(store, PseudonymStore) and isinstance(getattr(store, "persistent", None), bool):
        return store
    raise ConfigurationError(
        "pseudonym_store must be None (in memory), a SQLiteStore / PostgresStore, or a PseudonymStore "
        f"(async load/save and a bool `persistent`), got {type(store).__name__}"
    )


# ---------------------------------------------------------------------- one processor's mappings


AtomicUpdate = Callable[[Scope, Callable[[SealedMapping | None], bytes | None]], Awaitable[int]]

_CONVERSATION_LOCKS: weakref.WeakValueDictionary[tuple[int, int, str, str], asyncio.Lock] = (
    weakref.WeakValueDictionary()
)
"""One lock per (event loop, store, conversation), alive only while a run holds or awaits it:
conversations come and go without the table growing."""


def _conversation_lock(store: object, scope: Scope) -> asyncio.Lock:
    """The lock the runs of one conversation on one store queue on in this process. Ids are
    safe as keys: an entry lives only while a run holds it, and that run keeps the store and
    its event loop alive."""
    key = (id(asyncio.get_running_loop()), id(store), scope[0], scope[1])
    lock = _CONVERSATION_LOCKS.get(key)
    if lock is None:
        lock = asyncio.Lock()
        _CONVERSATION_LOCKS[key] = lock
    return lock


def _atomic_update(store: PseudonymStore) -> AtomicUpdate | None:
    if isinstance(store, StoragePseudonymStore):
        return store.update if callable(getattr(store.storage, "update_pseudonyms", None)) else None
    update = getattr(store, "update", None)
    return update if callable(update) else None


@dataclass
class _RunMapping:
    """A run's view of its conversation's mapping (kept in the processor's run state)."""

    scope: Scope | None
    mapping: PseudonymMap
    version: int
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)


class Pseudonymizer:
    """The mappings of one `PIIDetector`: which conversation a run belongs to, loading its
    mapping once per run, and adding tokens for new values (stored before they are used)."""

    def __init__(
        self,
        *,
        key: bytes | str | None,
        store: Any,
        label: str = "PIIDetector",
        max_values: int = DEFAULT_MAX_PSEUDONYMS,
    ) -> None:
        if type(max_values) is not int or max_values < 1:
            raise ConfigurationError(f"{label}: max_pseudonyms must be a positive int, got {max_values!r}")
        self.max_values = max_values
        self.store = resolve_store(store)
        if key is None and self.store.persistent:
            raise ConfigurationError(
                f"{label}: a persistent pseudonym_store needs pseudonym_key= (bytes, or base64 from "
                "new_pseudonym_key()); mappings are never stored in clear"
            )
        self.cipher = MappingCipher(key)
        self.label = label
        self._update = _atomic_update(self.store)
        self._lock_owner = self.store.storage if isinstance(self.store, StoragePseudonymStore) else self.store
        """Whose lock: Pseudonymizers on one memory store share it, whatever wraps it."""

    def scope(self, request_context: Any) -> Scope | None:
        """The run's conversation; None without a thread (the mapping then lives for one run)."""
        where = memory_context(request_context)
        if not where.thread_id:
            return None
        if not where.resource_id:
            raise ConfigurationError(
                f"{self.label}: pseudonymizing thread {where.thread_id!r} needs its resource id too "
                "(memory={'thread': ..., 'resource': ...}), so two owners never share a mapping"
            )
        return (str(where.resource_id), str(where.thread_id))

    async def current(self, args: Any) -> PseudonymMap:
        """The mapping as this run knows it (loaded on first use)."""
        return (await self._run(args)).mapping

    async def assign(self, args: Any, found: Iterable[tuple[str, str]]) -> PseudonymMap:
        """The mapping with a token for every `(value, pii_type)` in `found`, stored first."""
        wanted = [(piece, kind) for value, kind in found for piece in value_pieces(value)]
        run = await self._run(args)
        if run.scope is None:
            async with run.lock:
                run.mapping = run.mapping.with_new(wanted, self.max_values) or run.mapping
        elif self._lacks(run.mapping, wanted):
            async with _conversation_lock(self._lock_owner, run.scope):
                await self._extend(run, run.scope, wanted)
        self._warn_if_full(run, wanted)
        return run.mapping

    def _lacks(self, mapping: PseudonymMap, wanted: list[tuple[str, str]]) -> bool:
        """Whether `wanted` has a value `mapping` would give a new token (a full mapping gives
        none, and mappings only grow)."""
        return len(mapping) < self.max_values and any(
            value and mapping.token(value) is None and not is_token(value) for value, _ in wanted
        )

    async def _extend(self, run: _RunMapping, scope: Scope, wanted: list[tuple[str, str]]) -> None:
        """Store `wanted` into the conversation's latest mapping and make that the run's."""
        if self._update is not None:
            latest: list[tuple[PseudonymMap, int]] = []

            def merge(current: SealedMapping | None) -> bytes | None:
                # Runs under the store's lock, possibly on its worker thread: no run state here.
                base = PseudonymMap() if current is None else self._open(scope, current)
                version = 0 if current is None else current.version
                updated = base.with_new(wanted, self.max_values)
                latest[:] = [(base, version) if updated is None else (updated, version + 1)]
                return None if updated is None else self.cipher.seal(updated.to_json(), scope)

            await self._update(scope, merge)
            if not latest:
                raise StorageError(
                    f"{self.label}: {self.store!r} returned from update() without applying the change "
                    f"to the pseudonym mapping of thread {scope[1]!r}; nothing was passed on"
                )
            run.mapping, run.version = latest[0]
            return
        for _ in range(_MAX_SAVE_ATTEMPTS):
            updated = run.mapping.with_new(wanted, self.max_values)
            if updated is None:
                return
            sealed = self.cipher.seal(updated.to_json(), scope)
            if await self.store.save(scope, sealed, expected_version=run.version):
                run.mapping, run.version = updated, run.version + 1
                return
            run.mapping, run.version = await self._load(scope)  # another process won: merge again
        raise StorageError(
            f"{self.label}: the pseudonym mapping of thread {scope[1]!r} kept changing under "
            f"{_MAX_SAVE_ATTEMPTS} attempts to extend it; nothing was passed on"
        )

    def _warn_if_full(self, run: _RunMapping, wanted: list[tuple[str, str]]) -> None:
        """Values past `max_values` get no token: they are redacted for good (`<EMAIL>`),
        never passed on in clear. Said loudly, as the conversation has lost reversibility."""
        missing = sum(1 for value, _ in wanted if run.mapping.token(value) is None and not is_token(value))
        if missing:
            thread = run.scope[1] if run.scope is not None else None
            logger.warning(
                "%s: the pseudonym mapping of thread %r holds its limit of %d values; %d new "
                "value(s) were redacted without a token and cannot be restored",
                self.label,
                thread,
                self.max_values,
                missing,
            )

    async def _run(self, args: Any) -> _RunMapping:
        run: _RunMapping | None = args.state.get(_STATE_KEY)
        if run is None:
            scope = self.scope(args.request_context)
            mapping, version = await self._load(scope)
            run = args.state.setdefault(_STATE_KEY, _RunMapping(scope, mapping, version))
        return run

    async def _load(self, scope: Scope | None) -> tuple[PseudonymMap, int]:
        if scope is None:
            return PseudonymMap(), 0
        sealed = await self.store.load(scope)
        if sealed is None:
            return PseudonymMap(), 0
        return self._open(scope, sealed), sealed.version

    def _open(self, scope: Scope, sealed: SealedMapping) -> PseudonymMap:
        plaintext = self.cipher.open(sealed.data, scope)
        try:
            return PseudonymMap.from_json(plaintext)
        except ValueError:
            raise PseudonymKeyError(_unreadable(scope, "its content is not a mapping")) from None


# ---------------------------------------------------------------------- the V2 prompt


def map_prompt(prompt: list[dict[str, Any]], fn: Callable[[str], str]) -> list[dict[str, Any]]:
    """`prompt` (V2 messages) with `fn` applied to every text the model reads: system and
    text/reasoning content, tool-call inputs and tool-result outputs; ids, names and types are
    left alone. Changed messages and parts are copies; the rest is shared."""
    out: list[dict[str, Any]] = []
    for message in prompt:
        content = message.get("content")
        if isinstance(content, str):
            new_content: Any = fn(content)
        elif isinstance(content, list):
            new_content = [_map_part(part, fn) for part in content]
        else:
            new_content = content
        out.append(message if new_content == content else {**message, "content": new_content})
    return out


def _map_part(part: Any, fn: Callable[[str], str]) -> Any:
    if not isinstance(part, dict):
        return part
    kind = part.get("type")
    if kind in ("text", "reasoning") and isinstance(part.get("text"), str):
        return {**part, "text": fn(part["text"])}
    if kind == "tool-call" and "input" in part:
        return {**part, "input": map_strings(part["input"], fn)}
    if kind == "tool-result" and "output" in part:
        output = part["output"]
        if isinstance(output, dict) and "value" in output:
            return {**part, "output": {**output, "value": map_strings(output["value"], fn)}}
        return {**part, "output": map_strings(output, fn)}
    return part
