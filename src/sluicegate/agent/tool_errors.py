"""How a failed tool call is described to the model: the error's own message, without the
documentation links some libraries append (they are noise to the model and leak which
libraries the tool uses)."""

from __future__ import annotations

import re

import pydantic

_DOCS_LINK = re.compile(r"\s*For further information visit https?://\S+")


def error_text(error: object) -> str:
    """What the model reads about a failed call: the error's message without the documentation
    links libraries append (pydantic's "For further information visit https://errors...")."""
    if isinstance(error, pydantic.ValidationError):
        problems = "; ".join(
            f"{'/'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}"
            for e in error.errors(include_url=False, include_context=False)
        )
        return f"{error.title}: {problems}"
    return _DOCS_LINK.sub("", str(error))
