"""The stdlib `re` module's parse tree: the one private interface of the standard library that
the guardrails use, kept here so that nothing else reaches it.

Python has no public parser for regular expressions; `re._parser` (`sre_parse` before 3.11,
deprecated since) is what `re.compile` itself uses, and it has kept its tree shape (opcodes
from `re._constants` with their arguments) across releases. `lead_screen` derives its cheap
pre-screens from that tree. Every name it uses is checked when this module is imported: a
Python whose parser lacks one fails here naming it (`ImportError`), instead of screening
wrongly; `tests/processors/guardrails/test_re_syntax.py` also parses known patterns and checks the tree.
"""

from __future__ import annotations

import importlib
from typing import Any

parser: Any = importlib.import_module("re._parser")
"""`parse(pattern, flags)`: a pattern's tree, a sequence of `(opcode, argument)`."""
constants: Any = importlib.import_module("re._constants")
"""The opcodes and categories of the tree."""

OPCODES = (
    "ASSERT",
    "ASSERT_NOT",
    "AT",
    "ATOMIC_GROUP",
    "AT_BOUNDARY",
    "AT_NON_BOUNDARY",
    "BRANCH",
    "CATEGORY",
    "CATEGORY_DIGIT",
    "CATEGORY_NOT_DIGIT",
    "CATEGORY_NOT_SPACE",
    "CATEGORY_NOT_WORD",
    "CATEGORY_SPACE",
    "CATEGORY_WORD",
    "IN",
    "LITERAL",
    "MAX_REPEAT",
    "MIN_REPEAT",
    "NEGATE",
    "NOT_LITERAL",
    "POSSESSIVE_REPEAT",
    "RANGE",
    "SUBPATTERN",
)
"""The names of `re._constants` that `lead_screen` reads."""

_missing = [name for name in OPCODES if not hasattr(constants, name)]
if _missing or not callable(getattr(parser, "parse", None)):
    raise ImportError(
        "this Python's re parser lacks what sluicegate's lead screens read: "
        + ", ".join(_missing or ["re._parser.parse"])
    )
