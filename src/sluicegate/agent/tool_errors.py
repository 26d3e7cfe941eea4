"""How a failed tool call is described to the model: the error's own message, without the
documentation links some libraries append (they are noise to the model and leak which
libraries the tool uses)."""

from __future__ import annotations

import re
import sys

from sluicegate.errors import APICallError

_DOCS_LINK = re.compile(r"\s*For further information visit https?://\S+")


def error_text(error: object, *, details: bool = False) -> str:
    """What the model reads about a failed call: the error's message without the documentation
    links libraries append (pydantic's "For further information visit https://errors..."). A
    provider error (a tool that called a model) is its public summary unless `details`: its
    own text is stored in memory with the call and may echo another conversation's prompt."""
    if isinstance(error, APICallError) and not details:
        return error.public_message
    # pydantic's ValidationError is pydantic_core's; not imported here, as none exists before it is
    pydantic_core = sys.modules.get("pydantic_core")
    if pydantic_core is not None and isinstance(error, pydantic_core.ValidationError):
        problems = "; ".join(
            f"{'/'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}"
            for e in error.errors(include_url=False, include_context=False)
        )
        return f"{error.title}: {problems}"
    return _DOCS_LINK.sub("", str(error))
