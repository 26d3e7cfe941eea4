"""Deterministic corpora for the structured PII recognizers: values of each kind in several
formats, and PII-free prose, code and log lines (seeded, so every run judges the same text)."""

from __future__ import annotations

import hashlib
import ipaddress
import random
import string

import phonenumbers

from sluicegate.guardrails.validators import luhn_valid

_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


def _luhn_complete(prefix: str, length: int, rng: random.Random) -> str:
    body = prefix + "".join(rng.choice(string.digits) for _ in range(length - len(prefix) - 1))
    return next(body + d for d in string.digits if luhn_valid(body + d))


def cards(rng: random.Random, count: int) -> list[str]:
    prefixes = [("4", 16), ("4", 19), ("51", 16), ("55", 16), ("34", 15), ("37", 15), ("6011", 16),
                ("6011", 19), ("35", 16), ("6759", 12), ("6759", 19), ("50", 13), ("62", 17)]  # fmt: skip
    out = []
    for i in range(count):
        prefix, length = prefixes[i % len(prefixes)]
        number = _luhn_complete(prefix, length, rng)
        if i % 3 == 1:
            number = " ".join(number[k : k + 4] for k in range(0, len(number), 4))
        elif i % 3 == 2:
            number = "-".join(number[k : k + 4] for k in range(0, len(number), 4))
        out.append(number)
    return out


_IBAN_SHAPES = {"DE": "18n", "GB": "4a14n", "FR": "10n11c2n", "ES": "20n", "NL": "4a10n", "CH": "5n12c",
                "NO": "11n", "IT": "1a10n12c", "BE": "12n", "PL": "24n"}  # fmt: skip


def _iban(country: str, rng: random.Random) -> str:
    bban, count = "", ""
    for char in _IBAN_SHAPES[country]:
        if char.isdigit():
            count += char
            continue
        pool = {"n": string.digits, "a": string.ascii_uppercase, "c": string.digits + string.ascii_uppercase}
        bban += "".join(rng.choice(pool[char]) for _ in range(int(count)))
        count = ""
    numeric = int("".join(str(int(c, 36)) for c in bban + country + "00"))
    return f"{country}{98 - numeric % 97:02d}{bban}"


def ibans(rng: random.Random, count: int) -> list[str]:
    out = []
    for i in range(count):
        iban = _iban(sorted(_IBAN_SHAPES)[i % len(_IBAN_SHAPES)], rng)
        out.append(" ".join(iban[k : k + 4] for k in range(0, len(iban), 4)) if i % 2 else iban)
    return out


def phones(rng: random.Random, count: int) -> list[str]:
    regions = ["US", "GB", "DE", "FR", "ES", "IT", "NL", "IN", "BR", "AU", "JP", "CA", "MX", "CH", "SE"]
    kinds = [phonenumbers.PhoneNumberType.FIXED_LINE, phonenumbers.PhoneNumberType.MOBILE]
    formats = [phonenumbers.PhoneNumberFormat.INTERNATIONAL, phonenumbers.PhoneNumberFormat.E164]
    out: list[str] = ["+1-938-677-4964x990", "(415) 555-2671", "415.555.2671", "+1 415 555 2671 ext. 12"]
    while len(out) < count:
        i = len(out)
        if i % 4 == 0:
            area, exchange = rng.randint(201, 989), rng.randint(200, 999)
            out.append(f"({area}) {exchange}-{rng.randint(0, 9999):04d}")
            continue
        example = phonenumbers.example_number_for_type(regions[i % len(regions)], kinds[i % 2])
        assert example is not None
        text = phonenumbers.format_number(example, formats[(i // 2) % 2])
        out.append(text + (f" x{rng.randint(1, 9999)}" if i % 5 == 0 else ""))
    return out


def ips(rng: random.Random, count: int) -> list[str]:
    out = ["::1", "fe80::1ff:fe23:4567:890a", "2001:db8::", "::ffff:192.0.2.1"]
    while len(out) < count:
        if len(out) % 2:
            out.append(str(ipaddress.IPv4Address(rng.randint(0x01000000, 0xDFFFFFFF))))
        else:
            address = ipaddress.IPv6Address(
                rng.getrandbits(128) & ~(0xFFFF << 64 if rng.random() < 0.5 else 0)
            )
            out.append(address.compressed if len(out) % 4 else address.exploded)
    return out


def urls(rng: random.Random, count: int) -> list[str]:
    words = ["shop", "docs", "api", "blog", "example", "acme", "portal"]
    out = []
    for i in range(count):
        host = f"{rng.choice(words)}{rng.randint(1, 99)}.{rng.choice(['com', 'org', 'io', 'de'])}"
        path = "/".join(rng.choice(words) for _ in range(rng.randint(0, 3)))
        query = f"?id={rng.randint(1, 10**6)}&ref={rng.choice(words)}" if i % 2 else ""
        out.append(f"{'https' if i % 3 else 'http'}://{host}/{path}{query}")
    return out


def emails(rng: random.Random, count: int) -> list[str]:
    return [
        f"user.{rng.randint(1, 10**5)}@{rng.choice(['example.com', 'mail.co.uk', 'corp.io'])}"
        for _ in range(count)
    ]


def ssns(rng: random.Random, count: int) -> list[str]:
    return [f"{rng.randint(100, 899)}-{rng.randint(10, 99)}-{rng.randint(1000, 9999)}" for _ in range(count)]


def _base58(raw: bytes) -> str:
    value, out = int.from_bytes(raw, "big"), ""
    while value:
        value, digit = divmod(value, 58)
        out = _BASE58[digit] + out
    return "1" * (len(raw) - len(raw.lstrip(b"\0"))) + out


def wallets(rng: random.Random, count: int) -> list[str]:
    out = ["bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq", "0x52908400098527886E0F7030069857D2E4169EE7"]
    while len(out) < count:
        payload = bytes([0 if len(out) % 2 else 5]) + rng.randbytes(20)
        out.append(_base58(payload + hashlib.sha256(hashlib.sha256(payload).digest()).digest()[:4]))
    return out


KINDS = {
    "email": emails,
    "phone": phones,
    "credit-card": cards,
    "ssn": ssns,
    "ip-address": ips,
    "iban": ibans,
    "url": urls,
    "crypto-wallet": wallets,
}
TEMPLATES = [
    "Please reach me at {} tomorrow.",
    "{}",
    "Details: {}; thanks!",
    "The value was ({}) in the form.",
]


def positives(kind: str, count: int = 200, seed: int = 7) -> list[tuple[str, int, int]]:
    """Sentences holding one value of `kind`, with the value's span."""
    rng = random.Random(f"{kind}-{seed}")
    out = []
    for i, value in enumerate(KINDS[kind](rng, count)):
        before, after = TEMPLATES[i % len(TEMPLATES)].split("{}")
        out.append((before + value + after, len(before), len(before) + len(value)))
    return out


_WORDS = [
    "report",
    "team",
    "growth",
    "region",
    "product",
    "customer",
    "quarter",
    "system",
    "service",
    "release",
    "build",
    "deploy",
    "latency",
    "budget",
    "forecast",
    "meeting",
    "review",
    "design",
    "feature",
    "branch",
]


def pii_free(count: int = 2400, seed: int = 11) -> list[str]:
    """Prose, code and log lines full of numbers, versions, dates, times and hashes, and no PII."""
    rng = random.Random(seed)
    r = rng.randint
    makers = [
        lambda: (
            f"In {r(1990, 2030)}, the {rng.choice(_WORDS)} team shipped {r(1, 99999)} units at "
            f"{r(1, 99)}.{r(0, 9)}% margin, up from {r(1, 9999)} in {r(1990, 2030)}."
        ),
        lambda: (
            f"Version {r(0, 20)}.{r(0, 40)}.{r(0, 99)} was released on {r(2000, 2030)}-{r(1, 12):02d}-"
            f"{r(1, 28):02d}; see section {r(1, 12)}.{r(1, 9)}."
        ),
        lambda: (
            f"The {rng.choice(_WORDS)} review is at {r(0, 23)}:{r(0, 59):02d} on May {r(1, 31)}, room "
            f"{r(100, 999)}, floor {r(1, 40)}."
        ),
        lambda: (
            f"Order #{r(100000, 999999)} totals ${r(1, 99999):,}.{r(0, 99):02d} for {r(1, 500)} items "
            f"({r(1, 999)} kg)."
        ),
        lambda: f"for i in range({r(1, 10000)}): total += values[i] * {r(2, 999)} - offset[{r(0, 64)}]",
        lambda: (
            f"x = np.zeros(({r(1, 4096)}, {r(1, 4096)}), dtype=np.float32)  # shape {r(1, 99)}x{r(1, 99)}"
        ),
        lambda: f"sha = '{rng.randbytes(20).hex()}'  # commit {rng.randbytes(4).hex()}",
        lambda: (
            f"{r(2020, 2030)}-{r(1, 12):02d}-{r(1, 28):02d}T{r(0, 23):02d}:{r(0, 59):02d}:{r(0, 59):02d}."
            f"{r(0, 999):03d}Z INFO worker-{r(1, 64)} processed {r(1, 10**6)} jobs in {r(1, 99999)}ms "
            f"(p99={r(1, 999)}.{r(0, 9)}ms) pid={r(100, 99999)}"
        ),
        lambda: (
            f"[{r(1_600_000_000_000, 1_800_000_000_000)}] GET /api/v{r(1, 3)}/items/{r(1, 10**7)} "
            f"{rng.choice([200, 201, 304, 404, 500])} {r(10, 10**6)}B {r(1, 5000)}ms"
        ),
        lambda: f"uuid={rng.randbytes(16).hex()} retries={r(0, 9)} elapsed={r(0, 3600)}.{r(0, 999):03d}s",
        lambda: (
            f"Population grew from {r(1, 999)} {r(100, 999)} {r(100, 999)} to {r(1, 999)},{r(100, 999)},"
            f"{r(100, 999)} people between {r(1900, 1999)} and {r(2000, 2030)}."
        ),
        lambda: (
            f"Chapter {r(1, 30)}, pages {r(1, 400)}-{r(401, 900)}, figure {r(1, 20)}.{r(1, 20)} and "
            f"table {r(1, 9)}; ISBN-style ref {r(100, 999)}-{r(1, 9)}."
        ),
    ]
    return [makers[i % len(makers)]() for i in range(count)]
