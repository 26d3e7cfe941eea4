"""Checks that confirm a regex candidate is a real value, not just its shape: a pattern finds
candidates cheaply, and a check (Luhn, mod-97, `ipaddress`, libphonenumber, base58check, bech32)
keeps prose, code and logs that merely look alike from being flagged."""

from __future__ import annotations

import hashlib
import ipaddress
import re
from functools import lru_cache

import phonenumbers

DEFAULT_PHONE_REGIONS: tuple[str, ...] = (
    "US",
    "GB",
    "DE",
    "FR",
    "IL",
    "IN",
    "CA",
    "BR",
    "AU",
    "IT",
    "ES",
    "NL",
    "CH",
)
"""Regions a number written without `+country code` is tried in, in order (Presidio's list,
with `UK` as `GB` and France, Australia and the larger European plans added): a national
number counts when it has a full number's length in any of them."""


def luhn_valid(number: str) -> bool:
    """The Luhn checksum that every payment card number satisfies."""
    digits = [int(c) for c in number if c.isdigit()]
    if len(digits) < 12:
        return False
    total = 0
    for index, digit in enumerate(reversed(digits)):
        if index % 2:
            digit *= 2
            if digit > 9:
                digit -= 9
        total += digit
    return total % 10 == 0


_ANY_LENGTH = range(12, 20)
_CARD_RANGES: tuple[tuple[int, int, range | tuple[int, ...]], ...] = (
    # (first IIN, last IIN, of equal width; the lengths issued under them)
    (4, 4, range(13, 20)),  # Visa
    (51, 55, (16,)),  # Mastercard
    (2221, 2720, (16,)),  # Mastercard 2-series
    (2200, 2204, range(16, 20)),  # Mir
    (34, 34, (15,)),  # American Express
    (37, 37, (15,)),
    (300, 305, range(14, 20)),  # Diners Club
    (3095, 3095, range(14, 20)),
    (36, 36, range(14, 20)),
    (38, 39, range(14, 20)),
    (35, 35, range(16, 20)),  # JCB (3528-3589; generators and older tables give it all of 35)
    (1800, 1800, (15,)),  # JCB's original 15-digit ranges
    (2131, 2131, (15,)),
    (50, 50, _ANY_LENGTH),  # Maestro
    (56, 69, _ANY_LENGTH),  # Maestro, Discover (6011, 644-649, 65), UnionPay (62), RuPay (60)
)


def card_issuer_known(digits: str) -> bool:
    """Whether `digits` (of a card's length) start with an issuer range that issues that many:
    epoch milliseconds, ids and phone numbers mostly do not."""
    size = len(digits)
    for low, high, lengths in _CARD_RANGES:
        width = len(str(low))
        if low <= int(digits[:width]) <= high and size in lengths:
            return True
    return False


def card_valid(text: str) -> bool:
    """12 to 19 digits passing Luhn, in an issuer's range (`card_issuer_known`)."""
    digits = "".join(c for c in text if c.isdigit())
    return 12 <= len(digits) <= 19 and card_issuer_known(digits) and luhn_valid(digits)


IBAN_LENGTHS = {
    "AT": 20, "BE": 16, "CH": 21, "CZ": 24, "DE": 22, "DK": 18, "ES": 24, "FI": 18, "FR": 27,
    "GB": 22, "GR": 27, "HU": 28, "IE": 22, "IT": 27, "LU": 20, "NL": 18, "NO": 15, "PL": 28,
    "PT": 25, "RO": 24, "SE": 24, "SK": 24,
}  # fmt: skip
"""The IBAN length of these countries (ISO 13616's registry). Mod 97 alone accepts a whole IBAN
with the digits of a number after it 1 time in 97 (`DE26950151659102920619 309.673.1767`): a
split IBAN's normalization took the number's first digits in and left the rest of it in clear."""


def iban_valid(text: str) -> bool:
    """ISO 13616: 15 to 34 characters (its country's length, for those of `IBAN_LENGTHS`) whose
    rearranged number is 1 modulo 97."""
    iban = text.replace(" ", "").upper()
    if not 15 <= len(iban) <= 34 or not iban.isalnum() or not iban.isascii():
        return False
    if len(iban) != IBAN_LENGTHS.get(iban[:2], len(iban)):
        return False
    rearranged = iban[4:] + iban[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def ip_valid(text: str) -> bool:
    """An IPv4 or IPv6 address as `ipaddress` reads it (a dotted quad that is a valid address
    counts, version-like or not); a bare `::` or a time such as `12:30:45` does not."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        return False
    return address.version == 4 or any(c.isalnum() for c in text)


# Shapes of dates, date-times and IPv4 addresses that a phone pattern's digit groups also fit.
_NOT_PHONE = re.compile(
    r"(?:1[6-9]|2\d)\d\d[-./ ](?:0?[1-9]|1[0-2])[-./ ](?:0?[1-9]|[12]\d|3[01])(?!\d)"  # 2010-12-15
    r"|(?:0?[1-9]|[12]\d|3[01])[-./](?:0?[1-9]|1[0-2])[-./](?:1[6-9]|2\d)\d\d\Z"  # 15.12.2010
    r"|(?:0?[1-9]|1[0-2])[-/](?:0?[1-9]|[12]\d|3[01])[-/](?:1[6-9]|2\d)\d\d\Z"  # 12/15/2010
    r"|(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}\Z"  # 69.56.161.185
)


_SHORT_PHONE = re.compile(r"\+|\d{3}[-./\s]\d{4}\b|\d+(?:[-./\s]\d+){2}")
"""Shapes a number of 6 or 7 digits takes when it is a phone number: `+`, `439 4166`, `61 54 78`."""
_CARD_GROUPS = re.compile(r"\d+\Z|\d{4}(?:[-\s]\d{4})+\Z")
_MILLIONS = re.compile(r"\d(?:[ ,]\d{3})+\Z")
_EXTENSION = re.compile(r"\s?(?:x|ext\.?)\s?\d[-.\s\d]*\Z")
# A decimal (`32.096414`) or a version (`15.38.10`): not three or more groups with hundreds
# after the first (`71.438.188` is a number written with dots).
_DOTTED = re.compile(r"\d+\.\d+\Z|\d+(?:\.\d+)*\.\d{1,2}(?:\.\d+)*\Z")


@lru_cache(maxsize=4096)
def phone_valid(text: str, regions: tuple[str, ...] = DEFAULT_PHONE_REGIONS) -> bool:
    """A number libphonenumber holds possible: in its country's plan (`+` numbers), or in one of
    `regions`' (others); an extension (`x990`) is allowed. Shapes of other things are refused
    before libphonenumber is asked (it is the costly part): dates, times, IPv4 addresses,
    versions, thousands, card-grouped digits, and short numbers without a local number's grouping.
    Cached: streams check each value again as it grows, and logs repeat numbers."""
    digits = sum(c.isdigit() for c in text)
    if not 6 <= digits <= 17 or _NOT_PHONE.match(text) is not None:
        return False
    if digits < 8 and _SHORT_PHONE.match(text) is None:
        return False  # `7015 184`, `083 254`: a house number and more, not a local number
    if _MILLIONS.match(text) is not None:
        return False  # `1 234 567`: a count in thousands
    if digits < 9 and _DOTTED.match(text) is not None:
        return False  # a decimal or a version (`32.096414`, `15.38.10`)
    extension = _EXTENSION.search(text)
    if extension is not None:  # `x8 1 6`, as an evasion splits it: libphonenumber wants `x816`
        text = text[: extension.start()] + " x" + "".join(c for c in extension.group() if c.isdigit())
    if text.startswith("+"):
        return _possible(text, None)
    if digits >= 12 and text[0] != "0" and _CARD_GROUPS.match(text) is not None:
        return False  # `4111 1111 1111 1112`: a card number (one failing Luhn, too)
    # A national number only needs the full length of a number in one of the plans: fictional
    # `(555) 123-4567` numbers still leak a shape users fill with real ones. A bare block of 10
    # or more digits without a trunk `0` only in the plans written that way (an id `1447194161`
    # is no British number: those are written `01447 ...`).
    if digits >= 10 and text.isdigit() and text[0] != "0":
        regions = tuple(region for region in regions if _bare(text, region))
    return any(_possible(text, region) for region in regions)


def _bare(digits: str, region: str) -> bool:
    """Whether a plan's numbers are written as `digits` is, with no trunk prefix: North
    American numbers (`4155550132`, `14155550132`), Indian mobiles, Italian mobiles, Spanish
    numbers."""
    size, first = len(digits), digits[0]
    if region in ("US", "CA"):
        return (size == 10 and first in "23456789") or (size == 11 and first == "1")
    if region == "IN":
        return size == 10 and first in "6789"
    if region == "IT":
        return first == "3"
    if region == "ES":
        return size == 9 and first in "6789"
    return False


def _possible(text: str, region: str | None) -> bool:
    try:
        number = phonenumbers.parse(text, region)
    except phonenumbers.NumberParseException:
        return False
    if number.country_code == 1 and str(number.national_number)[:1] not in "23456789":
        return False  # no North American area code starts with 0 or 1
    if number.italian_leading_zero and region is not None and region not in _LEADING_ZERO_REGIONS:
        return False
    reason = phonenumbers.is_possible_number_with_reason(number)
    return bool(reason == phonenumbers.ValidationResult.IS_POSSIBLE)


_LEADING_ZERO_REGIONS = frozenset({"IT"})
"""Plans whose numbers keep a leading 0 (elsewhere it is a trunk prefix `parse` strips)."""


_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
_BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def base58check_valid(text: str) -> bool:
    """A legacy Bitcoin address (P2PKH `1...`, P2SH `3...`): 25 bytes whose last 4 are the
    double SHA-256 of the rest."""
    value = 0
    for char in text:
        index = _BASE58.find(char)
        if index < 0:
            return False
        value = value * 58 + index
    pad = len(text) - len(text.lstrip("1"))
    raw = b"\0" * pad + value.to_bytes((value.bit_length() + 7) // 8, "big")
    if len(raw) != 25:
        return False
    return hashlib.sha256(hashlib.sha256(raw[:-4]).digest()).digest()[:4] == raw[-4:]


def _bech32_polymod(values: list[int]) -> int:
    generators = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)
    checksum = 1
    for value in values:
        top = checksum >> 25
        checksum = (checksum & 0x1FFFFFF) << 5 ^ value
        for i, generator in enumerate(generators):
            if (top >> i) & 1:
                checksum ^= generator
    return checksum


def bech32_valid(text: str) -> bool:
    """A SegWit Bitcoin address (`bc1...`, BIP 173 bech32 or BIP 350 bech32m checksum)."""
    if text.lower() != text and text.upper() != text:
        return False
    address = text.lower()
    hrp, sep, data = address.rpartition("1")
    if hrp != "bc" or not sep or not 6 < len(data) <= 84:
        return False
    values = [_BECH32.find(c) for c in data]
    if min(values) < 0:
        return False
    expanded = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    return _bech32_polymod(expanded + values) in (1, 0x2BC830A3)


def wallet_valid(text: str) -> bool:
    """A Bitcoin address with a valid checksum, or an Ethereum address (`0x` and 40 hex
    digits: EIP-55's mixed-case checksum needs Keccak-256, which `hashlib` lacks, so any case
    is accepted)."""
    if text.startswith("0x"):
        return len(text) == 42
    if text[:3].lower() == "bc1":
        return bech32_valid(text)
    return base58check_valid(text)
