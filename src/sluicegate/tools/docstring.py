"""Reading a tool function's docstring: the description the model sees and, from its `Args:`
section (Google style; `:param name:` lines work too), one description per parameter, which go
into the input schema instead of being repeated in the tool description."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Returns|Return|Yields|Raises|"
    r"Examples|Example|Notes|Note|See Also|Warnings|Warning|Attributes|References):\s*$"
)
_ARG_SECTIONS = frozenset(("Args", "Arguments", "Parameters", "Params", "Keyword Args", "Keyword Arguments"))
_GOOGLE_ARG = re.compile(r"^\*{0,2}(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*(\([^)]*\))?\s*:\s*(?P<text>.*)$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(?P<name>[A-Za-z_][A-Za-z0-9_]*)\s*:\s*(?P<text>.*)$")
_SPHINX_OTHER = re.compile(r"^:(returns?|rtype|raises?|type)\b")


@dataclass
class Docstring:
    description: str = ""
    params: dict[str, str] = field(default_factory=dict)


def parse_docstring(doc: str) -> Docstring:
    """`doc` (already dedented) split into its description and its parameter descriptions.

    The description is the text before the first section header; the `Returns:`/`Raises:`...
    sections are dropped too, since the model only needs what the tool does and what each
    argument means."""
    description: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    base_indent: int | None = None
    for raw in doc.splitlines():
        line = raw.strip()
        header = _SECTION.match(line)
        if header and not raw.startswith((" ", "\t")):
            section, current, base_indent = header.group(1), None, None
            continue
        sphinx = _SPHINX_PARAM.match(line)
        if sphinx:
            section, current = ":param", sphinx.group("name")
            params[current] = sphinx.group("text").strip()
            continue
        if _SPHINX_OTHER.match(line):
            section, current = ":other", None
            continue
        if section is None:
            description.append(raw)
        elif section in _ARG_SECTIONS:
            if not line:
                current = None
                continue
            indent = len(raw) - len(raw.lstrip())
            if base_indent is None:
                base_indent = indent
            match = _GOOGLE_ARG.match(line)
            if match and indent <= base_indent:
                current = match.group("name")
                params[current] = match.group("text").strip()
            elif current is not None:
                params[current] = f"{params[current]} {line}".strip()
        elif section == ":param" and current is not None and line:
            params[current] = f"{params[current]} {line}".strip()
    return Docstring("\n".join(description).strip(), {k: v for k, v in params.items() if v})
