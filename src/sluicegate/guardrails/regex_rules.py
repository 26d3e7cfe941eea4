"""The rules a `RegexFilter` matches: `RegexRule` and the built-in presets (PII, secrets,
URLs). Structured PII kinds are found by pattern and confirmed by a check (see
`guardrails.validators`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import phonenumbers
import regex

from sluicegate.guardrails.digit_runs import SEP, run_values
from sluicegate.guardrails.validators import (
    DEFAULT_PHONE_REGIONS,
    card_valid,
    iban_valid,
    ip_valid,
    phone_valid,
    wallet_valid,
)
from sluicegate.guardrails.validators import luhn_valid as luhn_valid

DEFAULT_REPLACEMENT = "[REDACTED]"


_RE_TO_REGEX_FLAGS = (
    (re.IGNORECASE, regex.IGNORECASE),
    (re.MULTILINE, regex.MULTILINE),
    (re.DOTALL, regex.DOTALL),
    (re.VERBOSE, regex.VERBOSE),
    (re.ASCII, regex.ASCII),
)


def compile_pattern(
    pattern: str | re.Pattern[str] | regex.Pattern[str], flags: int = 0
) -> regex.Pattern[str]:
    if isinstance(pattern, regex.Pattern):
        return pattern
    if isinstance(pattern, re.Pattern):
        for re_flag, regex_flag in _RE_TO_REGEX_FLAGS:
            if pattern.flags & re_flag:
                flags |= regex_flag
        pattern = pattern.pattern
    return regex.compile(pattern, flags)


@dataclass(frozen=True)
class RegexRule:
    """One pattern: `name` for reports, `pattern` (a string or compiled pattern), the
    `replacement` used by the redact strategy, and an optional `validate(match_text)` that must
    accept a match for it to count (the credit-card preset checks Luhn).

    `split` (optional, instead of `validate`) finds the values inside a match: `split(match_text)`
    returns their `(start, end)` offsets in it, none when it holds no value. The digit-led
    presets match whole runs of digit groups and split them (see `guardrails.digit_runs`), so
    values side by side are found each on its own.

    `tail` (optional, for patterns the stdlib `re` can also compile) speeds up streaming: a
    stdlib pattern, compiled with the rule's flags, that matches at a position exactly when the
    text from there to the end could still grow into a match, or already is one (the prefix
    closure of the rule's language, ending in `\\Z`). It must be exact: a tail that misses an
    in-progress match lets it leak in pieces; one that matches too much holds text back."""

    name: str
    pattern: str | re.Pattern[str] | regex.Pattern[str]
    replacement: str = DEFAULT_REPLACEMENT
    validate: Callable[[str], bool] | None = None
    flags: int = 0
    tail: str | None = None
    split: Callable[[str], Sequence[tuple[int, int]]] | None = None
    compiled: regex.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "compiled", compile_pattern(self.pattern, self.flags))

    @classmethod
    def of(cls, value: RegexRule | Mapping[str, Any]) -> RegexRule:
        if isinstance(value, RegexRule):
            return value
        if not isinstance(value, Mapping) or "name" not in value or "pattern" not in value:
            raise ValueError(f"a rule needs a `name` and a `pattern`, got {value!r}")
        return cls(
            name=value["name"],
            pattern=value["pattern"],
            replacement=value.get("replacement") or DEFAULT_REPLACEMENT,
            validate=value.get("validate"),
            flags=value.get("flags", 0),
            tail=value.get("tail"),
            split=value.get("split"),
        )


_GROUP = r"(?:\+\d{1,15}|\(\+?\d{1,5}\)|\d{1,15})"
_NOT_AFTER_GROUP = r"(?<!\d[-./])"
_PHONE_WORDS = ("phone", "tel", "call", "mobile", "cell", "fax")
_UNNAMED = "".join(
    f"(?<!{lead})"
    for lead in ("=", "= ", *(f"(?i:{word}{end})" for word in _PHONE_WORDS for end in (" ", ": ", "=")))
)
"""Negative lookbehinds: no field (`=`) or phone word names the number that follows, so a
thousands-grouped one followed by a word is a quantity. (Inside the pattern's negative
lookahead, where the stream's lead screen does not widen its leads with them.)"""
PHONE_PATTERN = (
    # A run of digit groups joined by in-value separators (`guardrails.digit_runs` splits it into
    # the numbers it holds; libphonenumber decides each). After a word character only when that
    # is an escaped newline or tab (`\\n`, JSON); not inside a word or a decimal, nor right
    # after a group and a `-`, `.` or `/` (the run began before). At least six digits. A thousands-grouped
    # number followed by a word is a quantity (`577 884 210 people`), unless a field or a phone
    # word names it (`phone=646 138 343 ok`, `call 646 138 343 now`). Not followed by `:`,
    # `/`, `-` or `.` and a digit (a time, `13:24`, or a date goes on), nor by `:` and a hex
    # digit (an IPv6 address).
    rf"(?:(?<=\\[nrt])|(?<![\w+./]){_NOT_AFTER_GROUP})"
    rf"(?!{_UNNAMED}[1-9]\d{{0,2}}(?:[ \u00a0\u202f]\d{{3}})+ +[a-z])"
    rf"(?=\(?\+?\d(?:[-./()+ \u00a0\u2009\u202f]{{0,3}}\d){{5}}){_GROUP}(?:(?:{SEP}|(?<=\))){_GROUP}){{0,47}}"
    r"(?:\s?(?:x|ext\.?)\s?\d(?:[-.\s]?\d){0,5})?(?!\w|[-.:/]\d|:[0-9A-Fa-f])"
)
CARD_PATTERN = (
    # A run of digit groups with at least 12 digits (split into card numbers by
    # `guardrails.digit_runs`); not after `+` (an international phone number may pass Luhn).
    rf"(?<![+\w]){_NOT_AFTER_GROUP}(?=(?:\d{SEP}?){{11}}\d)\d{{1,19}}(?:{SEP}\d{{1,19}}){{0,47}}(?!\w)"
)


def phone_rule(regions: Sequence[str] = DEFAULT_PHONE_REGIONS) -> RegexRule:
    """The `phone` rule, trying a number without `+country code` in each of `regions` (ISO
    3166 codes, as libphonenumber names them) in turn."""
    chosen = tuple(regions)
    unknown = [r for r in chosen if r not in phonenumbers.SUPPORTED_REGIONS]
    if not chosen or unknown:
        raise ValueError(
            f"phone_regions must be ISO 3166 region codes libphonenumber knows, got {unknown or chosen!r}"
        )
    validate = phone_valid if chosen == DEFAULT_PHONE_REGIONS else partial(phone_valid, regions=chosen)
    return RegexRule(
        "phone",
        PHONE_PATTERN,
        "[PHONE]",
        validate=validate,
        split=partial(run_values, kind="phone", phone_valid=validate),
    )


_NAMING_WORDS = (
    r"(?:tele?phone|phone|tel|mobile|cell(?:phone)?|fax|call|msisdn)(?:[ _-]?(?:no|nos|numbers?|num))?s?"
)
PHONE_LIKE_PATTERN = (
    # A number libphonenumber refuses that the text still presents as a phone: a bare block of
    # ten digits (`1322342321`: no plan's area code starts with 1, yet it is a phone column's
    # value) or a `00` international prefix and digits (`00650277588`, no valid plan behind
    # it), whole, and either named by a phone word earlier on its line (`| phone | ...`,
    # `"kind": "phone", "value": "..."`; the word and the 15 characters after it fit in the 32
    # a stream keeps before held text, so streams and whole texts agree) or alone in a cell:
    # from a line start, `|`, tab, `,`, `;`, `"`, `=`, `: ` or a list bullet to a line end,
    # `|`, tab, `,`, `;` or `"`. The spaces before a cell's end are part of the match (a stream
    # holds `1322342321 ` until it sees whether a cell ends there); the value is only the
    # digits (`split`). Fails closed: an epoch timestamp alone in a cell is redacted as a phone
    # too; in prose (`job 1322342321 took`) it stays text.
    r"(?<![\w+./-])(?:00[1-9]\d{6,14}|\d{10})(?![\w+]|[-./:]\d)"
    r"(?:(?<=(?i:(?<![a-z])" + _NAMING_WORDS + r"(?![a-z]))[^\n]{0,15}\d+)"
    r"|(?<=(?:^|[|\t,;\"=]|^[-*+][ \t]|:[ \t])[ \t]*\d+)[ \t]*(?=[|\t,;\"]|$))"
)


def _digits_only(text: str) -> list[tuple[int, int]]:
    """The value of a `PHONE_LIKE_PATTERN` match: its digits, without the spaces that end a cell."""
    return [(0, len(text.rstrip(" \t")))]


PHONE_RULE = phone_rule()
PII_RULES: tuple[RegexRule, ...] = (
    RegexRule(
        "email",
        # RFC 5321's bounds: a local part of at most 64 characters, a domain of at most 253.
        r"[a-zA-Z0-9._%+-]{1,64}@[a-zA-Z0-9.-]{1,189}\.[a-zA-Z]{2,63}",
        "[EMAIL]",
        # Every prefix of an address is a local part, or a local part, "@" and domain
        # characters ("." and letters are domain characters, so any domain prefix can still
        # end in ".xx"). Possessive, as neither class holds "@" and `\Z` allows nothing after.
        # Bounded as the address is: a longer run of such characters is released as text.
        tail=r"[a-zA-Z0-9._%+-]{1,64}+(?:@[a-zA-Z0-9.-]{0,253}+)?\Z",
    ),
    RegexRule(
        "credit-card",
        CARD_PATTERN,
        "[CREDIT_CARD]",
        validate=card_valid,
        split=partial(run_values, kind="credit-card", phone_valid=phone_valid),
    ),
    RegexRule("ssn", r"\b\d{3}-\d{2}-\d{4}\b", "[SSN]"),
    PHONE_RULE,
    RegexRule("phone", PHONE_LIKE_PATTERN, "[PHONE]", flags=regex.MULTILINE, split=_digits_only),
    RegexRule(
        "iban",
        r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b",
        "[IBAN]",
        validate=iban_valid,
    ),
    RegexRule(
        "ip-address",
        # Not a version: after a word character or `.`, a product token (`Chrome/`), `rv:` or `v`.
        r"(?<![\w.])(?<![A-Za-z]/)(?<!rv:)(?:\d{1,3}\.){3}\d{1,3}(?![\d]|\.\d)",
        "[IP_ADDRESS]",
        validate=ip_valid,
    ),
    RegexRule(
        "ip-address",
        r"(?<![\w:\[])(?:[0-9A-Fa-f]{1,4}:|:){2,7}(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9A-Fa-f]{1,4}|:)?(?![\w:]|\.\d)",
        "[IP_ADDRESS]",
        validate=ip_valid,
    ),
    RegexRule(
        "crypto-wallet",
        r"\b(?:[13][1-9A-HJ-NP-Za-km-z]{25,34}|0x[0-9a-fA-F]{40})\b",
        "[CRYPTO_WALLET]",
        validate=wallet_valid,
    ),
    # Apart from the digit-led kinds: a lead starting with a letter would turn off the screen
    # that skips every digit-led rule on chunks without a digit.
    RegexRule("crypto-wallet", r"\bbc1[02-9ac-hj-np-z]{6,87}\b", "[CRYPTO_WALLET]", validate=wallet_valid),
)
SECRET_RULES: tuple[RegexRule, ...] = (
    RegexRule(
        "api-key",
        r"(?:api[_-]?key|apikey|api[_-]?secret|access[_-]?token|secret[_-]?key)"
        r"\s*[:=]\s*[\"']?[a-zA-Z0-9_\-]{20,}[\"']?",
        "[API_KEY]",
        flags=regex.IGNORECASE,
    ),
    RegexRule(
        "bearer-token", r"\bBearer\s+[a-zA-Z0-9_\-.~+/]{8,}=*", "[BEARER_TOKEN]", flags=regex.IGNORECASE
    ),
    RegexRule("aws-key", r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b", "[AWS_KEY]"),
    RegexRule("openai-key", r"\bsk-(?:proj-|svcacct-)?[A-Za-z0-9_\-]{20,}", "[API_KEY]"),
    RegexRule("anthropic-key", r"\bsk-ant-[A-Za-z0-9_\-]{20,}", "[API_KEY]"),
    RegexRule(
        "github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})", "[GITHUB_TOKEN]"
    ),
    RegexRule("slack-token", r"\bxox[abprs]-[A-Za-z0-9-]{10,}", "[SLACK_TOKEN]"),
    RegexRule("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}", "[API_KEY]"),
    RegexRule("stripe-key", r"\b(?:sk|rk|pk)_(?:live|test)_[0-9A-Za-z]{16,}", "[API_KEY]"),
    RegexRule("jwt", r"\beyJ[A-Za-z0-9_\-]+\.eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+", "[JWT]"),
    RegexRule(
        "private-key",
        r"-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----",
        "[PRIVATE_KEY]",
    ),
)
URL_RULES: tuple[RegexRule, ...] = (
    RegexRule("url", r"https?://[^\s<>\"{}|\\^`\[\]]+", "[URL]", flags=regex.IGNORECASE),
)


def pii_rules(phone_regions: Sequence[str] | None = None) -> tuple[RegexRule, ...]:
    """The `pii` preset, its phone rule trying national numbers in `phone_regions` (default
    `DEFAULT_PHONE_REGIONS`)."""
    if phone_regions is None:
        return PII_RULES
    phone = phone_rule(phone_regions)
    return tuple(phone if rule is PHONE_RULE else rule for rule in PII_RULES)


PRESETS: dict[str, tuple[RegexRule, ...]] = {"pii": PII_RULES, "secrets": SECRET_RULES, "urls": URL_RULES}
