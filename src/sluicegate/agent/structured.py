"""Structured output: the schema sent to the model, validation of its answer, the feedback
that asks it to try again, and partial objects read from an unfinished answer.

A pydantic model validates into an instance; a JSON-schema dict is checked with `jsonschema`
and validates into the parsed JSON. What fails is described one line per problem, without
library documentation links, because that text goes back to the model as feedback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sluicegate.errors import ConfigurationError, SluicegateError, StructuredOutputError

if TYPE_CHECKING:
    import jsonschema
    import pydantic

# pydantic is imported by the functions that need it: `import sluicegate` does not load it.

DEFAULT_OUTPUT_RETRIES = 1
"""How many times the model is asked again when its answer does not match (pydantic-ai's
default)."""

RETRY_FEEDBACK = (
    "Your previous answer did not match the required JSON schema:\n{errors}\n"
    "Answer again with only a JSON value that fixes these problems."
)


def check_output_retries(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ConfigurationError(f"output_retries must be a non-negative integer, got {value!r}")
    return value


@dataclass(frozen=True)
class OutputSchema:
    """A `structured_output` value, read once: its JSON schema and how to validate against it."""

    json_schema: dict[str, Any]
    model: type[pydantic.BaseModel] | None
    validator: jsonschema.protocols.Validator | None

    def parse(self, text: str) -> Any:
        """The validated value of the model's answer `text`; `StructuredOutputError` otherwise."""
        stripped = strip_code_fence(text)
        try:
            value = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise StructuredOutputError(
                f"structured output: the model's answer is not JSON: {exc}",
                text=text,
                errors=[f"(root): not valid JSON ({exc.msg} at position {exc.pos})"],
            ) from exc
        if self.model is not None:
            import pydantic  # loaded already: `self.model` is a pydantic model

            try:
                return self.model.model_validate(value)
            except pydantic.ValidationError as exc:
                errors = pydantic_errors(exc)
                raise StructuredOutputError(
                    "structured output does not match the schema: " + "; ".join(errors),
                    text=text,
                    errors=errors,
                ) from exc
        assert self.validator is not None
        problems = sorted(self.validator.iter_errors(value), key=lambda e: list(map(str, e.path)))
        if problems:
            errors = [f"{'/'.join(map(str, e.path)) or '(root)'}: {e.message}" for e in problems]
            raise StructuredOutputError(
                "structured output does not match the schema: " + "; ".join(errors), text=text, errors=errors
            )
        return value


def output_schema(structured_output: Any) -> OutputSchema:
    """`structured_output` (a pydantic model, a JSON-schema dict or `{"schema": ...}`) read."""
    schema = structured_output
    if isinstance(schema, dict) and "schema" in schema:
        # {"schema": ...}; a dict without the key is the JSON schema itself
        unknown = set(schema) - {"schema"}
        if unknown:
            raise SluicegateError(
                f"structured_output: unknown option(s) {sorted(unknown)}; known: ['schema']"
            )
        schema = schema["schema"]
    import pydantic

    if isinstance(schema, type) and issubclass(schema, pydantic.BaseModel):
        return OutputSchema(schema.model_json_schema(), schema, None)
    if isinstance(schema, dict):
        import jsonschema  # only dict schemas need it; kept off `import sluicegate`

        try:
            validator_class = jsonschema.validators.validator_for(
                schema, default=jsonschema.Draft202012Validator
            )
            validator_class.check_schema(schema)
        except jsonschema.SchemaError as exc:
            raise ConfigurationError(f"structured_output is not a valid JSON schema: {exc.message}") from exc
        return OutputSchema(schema, None, validator_class(schema))
    raise SluicegateError(
        "structured_output must be a pydantic model, a JSON-schema dict, or {'schema': ...}"
    )


def pydantic_errors(exc: pydantic.ValidationError) -> list[str]:
    """One line per validation problem, without the documentation URLs of `str(exc)`."""
    lines = []
    for error in exc.errors(include_url=False, include_context=False):
        where = "/".join(str(part) for part in error["loc"]) or "(root)"
        lines.append(f"{where}: {error['msg']}")
    return lines


def retry_feedback(error: StructuredOutputError) -> str:
    return RETRY_FEEDBACK.format(errors="\n".join(f"- {line}" for line in error.errors))


def strip_code_fence(text: str) -> str:
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`").strip()
        if stripped.startswith("json"):
            stripped = stripped[4:]
    return stripped.strip()


_MISSING: Any = object()
_MAX_TRIM = 256


def parse_partial_json(text: str) -> Any:
    """The value of a JSON document cut off anywhere, with open strings and containers closed
    and an unfinished trailing member dropped; `None` when nothing can be read yet."""
    text = strip_code_fence(text) if text.lstrip().startswith("```") else text.strip()
    if not text or text[0] not in "[{":
        return None
    value = _loads(text)
    if value is not _MISSING:
        return value
    end = len(text)
    # Each retry drops one more character of the unfinished tail (a partial key, literal,
    # number or a dangling `,` / `:`); documents are only cut at the end, so this stays short.
    lowest = max(0, end - _MAX_TRIM)
    while end > lowest:
        closed = _close(text[:end])
        if closed is not None:
            value = _loads(closed)
            if value is not _MISSING:
                return value
        end -= 1
    return None


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return _MISSING


def _close(text: str) -> str | None:
    """`text` with its open string and containers closed, or None when it ends mid-escape."""
    stack: list[str] = []
    in_string = False
    escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            stack.append("]" if char == "[" else "}")
        elif char in "]}":
            if not stack:
                return None
            stack.pop()
    if escaped:
        return None
    tail = text + ('"' if in_string else "")
    stripped = tail.rstrip()
    if stripped.endswith((",", ":")):
        return None
    return stripped + "".join(reversed(stack))
