"""How `PIIDetector` masks a value (`redaction_method="mask"`): asterisks, or with
`preserve_format` the shape that keeps a masked value recognisable."""

from __future__ import annotations

import re


def _keep_last_four(value: str, mask: str) -> str:
    """Mask each digit except those in the last four characters."""
    cutoff = len(value) - 4
    return "".join(mask if c.isdigit() and i < cutoff else c for i, c in enumerate(value))


def mask_value(value: str, pii_type: str, preserve_format: bool) -> str:
    """`value` masked with asterisks; with `preserve_format`, keeping the shape that makes a
    masked value recognisable (`j******e@*******.com`, `***-**-6789`, `DE**************3000`)."""
    if not preserve_format:
        return "*" * min(len(value), 8)
    if pii_type == "email":
        local, at, domain = value.partition("@")
        if at and "@" not in domain:
            masked_local = local[0] + "*" * (len(local) - 2) + local[-1] if len(local) > 2 else "***"
            head, dot, tail = domain.partition(".")
            masked_domain = "*" * len(head) + "." + tail if dot else "***"
            return f"{masked_local}@{masked_domain}"
        return "*" * min(len(value), 8)
    if pii_type == "phone":
        return _keep_last_four(value, "X")
    if pii_type in ("credit-card", "ssn"):
        return _keep_last_four(value, "*")
    if pii_type == "uuid":
        return re.sub(r"[0-9a-fA-F]", "*", value)
    if pii_type == "crypto-wallet":
        return value[:4] + "*" * (len(value) - 8) + value[-4:] if len(value) > 8 else "*" * len(value)
    if pii_type == "iban":
        return value[:2] + "*" * (len(value) - 6) + value[-4:] if len(value) > 6 else "*" * len(value)
    if len(value) <= 3:
        return "*" * len(value)
    return value[0] + "*" * (len(value) - 2) + value[-1]
