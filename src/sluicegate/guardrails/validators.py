"""Checks that confirm a regex candidate is a real value, not just its shape: a pattern finds
candidates cheaply, and a check (Luhn, mod-97, `ipaddress`, libphonenumber, base58check, bech32)
keeps prose, code and logs that merely look alike from being flagged."""

from __future__ import annotations

import hashlib
import ipaddress

import phonenumbers

DEFAULT_PHONE_REGION = "US"
"""Region assumed for a number written without `+country code` (as Presidio does)."""


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


def card_valid(text: str) -> bool:
    """12 to 19 digits passing Luhn, starting as issued cards do (2 to 6: Mastercard, Visa,
    Amex, Diners, JCB, Discover, Maestro, UnionPay): epoch milliseconds and most ids start with 1."""
    digits = "".join(c for c in text if c.isdigit())
    return 12 <= len(digits) <= 19 and digits[0] in "23456" and luhn_valid(digits)


def iban_valid(text: str) -> bool:
    """ISO 13616: 15 to 34 characters whose rearranged number is 1 modulo 97."""
    iban = text.replace(" ", "").upper()
    if not 15 <= len(iban) <= 34 or not iban.isalnum() or not iban.isascii():
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


def phone_valid(text: str) -> bool:
    """A number libphonenumber holds valid in its country's plan (`+` numbers), or of a full
    number's length in `DEFAULT_PHONE_REGION`'s (others); an extension (`x990`) is allowed."""
    international = text.startswith("+")
    try:
        number = phonenumbers.parse(text, None if international else DEFAULT_PHONE_REGION)
    except phonenumbers.NumberParseException:
        return False
    if international:
        return bool(phonenumbers.is_valid_number(number))
    # A national number only needs the full length of a number in that plan: fictional
    # `(555) 123-4567` numbers still leak a shape users fill with real ones.
    # (A North American area code never starts with 0 or 1.)
    reason = phonenumbers.is_possible_number_with_reason(number)
    area_ok = not number.italian_leading_zero and str(number.national_number)[:1] in "23456789"
    return bool(reason == phonenumbers.ValidationResult.IS_POSSIBLE) and area_ok


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
