"""One vocabulary for gold labels and what a chain writes in place of a value.

Datasets use presidio-evaluator's labels (`EMAIL_ADDRESS`, `PHONE_NUMBER`, `PERSON`, ...);
sluicegate's redactions say `[EMAIL]`, `[CREDIT-CARD]`, `[CREDIT_CARD]` or `<EMAIL_1>`. Both
sides are normalised (upper case, `-` as `_`) and then looked up in one table, so a placeholder
and a gold label that mean the same kind meet under one name. A name not in the table is its
own label. Masked or hashed values name no kind: they take the label of the gold span they
cover (see `scores`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

DEFAULT_LABELS: dict[str, str] = {
    # sluicegate's detection types and RegexFilter rule placeholders
    "EMAIL": "EMAIL_ADDRESS",
    "PHONE": "PHONE_NUMBER",
    "SSN": "US_SSN",
    "IBAN": "IBAN_CODE",
    "CRYPTO_WALLET": "CRYPTO",
    "NAME": "PERSON",
    "ADDRESS": "LOCATION",
    "DATE_OF_BIRTH": "DATE_TIME",
    "AWS_KEY": "API_KEY",
    "JWT": "API_KEY",
    "SLACK_TOKEN": "API_KEY",
    "GITHUB_TOKEN": "API_KEY",
    "PRIVATE_KEY": "API_KEY",
    # presidio-evaluator's generator labels that Presidio itself reports under another name
    "GPE": "LOCATION",
    "STREET_ADDRESS": "LOCATION",
    "DOMAIN_NAME": "URL",
}
"""Name → label. Identity entries (`CREDIT_CARD`, `IP_ADDRESS`, `URL`, `PERSON`, ...) are left out."""

_PLACEHOLDER = re.compile(r"\[([A-Za-z][A-Za-z0-9_-]{0,39})\]|<([A-Z][A-Z0-9_]{0,39})_[1-9][0-9]{0,8}>")


def _key(name: str) -> str:
    return name.strip().upper().replace("-", "_").replace(" ", "_")


class LabelMap:
    """`DEFAULT_LABELS` plus the caller's own entries (`{"EMPLOYEE_ID": "ID"}`)."""

    def __init__(self, extra: Mapping[str, str] | None = None) -> None:
        self.table = {**DEFAULT_LABELS, **{_key(k): _key(v) for k, v in (extra or {}).items()}}

    def label(self, name: str) -> str:
        key = _key(name)
        return self.table.get(key, key)

    def of_replacement(self, replacement: str) -> str | None:
        """The label a replacement names (`[EMAIL]` → `EMAIL_ADDRESS`), None when it names none
        (a mask, a hash, an empty removal) or names two different ones."""
        found = {
            self.label(m.group(1) or m.group(2))
            for m in _PLACEHOLDER.finditer(replacement)
            if not (m.group(1) or "").upper().startswith(("HASH", "REDACTED"))
        }
        return found.pop() if len(found) == 1 else None


def without_placeholders(original: str, output: str, labels: LabelMap) -> str:
    """`output` with the placeholders the chain wrote cut out (a NUL in their place): those
    that name a label and are not in `original`. A leak check compares what is left, so the
    "credit" of `[CREDIT-CARD]` is not read as the same six letters of a value beside it
    (`http://www.CreditSplash.se/`); a bracketed word the text already held still counts."""

    def cut(match: re.Match[str]) -> str:
        token = match.group()
        return "\x00" if token not in original and labels.of_replacement(token) is not None else token

    return _PLACEHOLDER.sub(cut, output)


def parse_label_option(value: str) -> tuple[str, str]:
    """`NAME=LABEL` (the command line's `--label`)."""
    name, sep, label = value.partition("=")
    if not sep or not name.strip() or not label.strip():
        raise ValueError(f"--label needs NAME=LABEL (e.g. EMPLOYEE_ID=ID), got {value!r}")
    return name.strip(), label.strip()
