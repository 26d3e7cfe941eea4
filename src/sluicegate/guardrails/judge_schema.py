"""The JSON schema a guardrail sends its judge: the verdict's Mastra-shaped schema, tightened so
that every answer the schema allows is short enough to finish within `max_output_tokens`.

Why: a schema-constrained model (the embedded `local/smollm2-135m`, whose answers are bound to
the schema by a llama.cpp grammar) follows the schema's shape but not its spirit — it keeps
appending findings to an open array, or characters to an open string, until the token cap cuts
the JSON short and the guardrail fails closed. Bounding every array (`maxItems`) and string
(`maxLength`, or an `enum`) makes the longest allowed verdict finite; sizing those bounds from
the token cap makes it fit. The tightened schema only narrows the verdict's own (every answer
it allows is a valid verdict, in Mastra's shape), so mock detectors that answer in Mastra's
shape and providers that ignore the extra keywords are unaffected; answers are still parsed and
validated by the verdict's pydantic model, the same path for every provider.

- The decision comes first (`order`) and is required, so a model commits to its verdict before
  any explanation; the other top-level keys may follow or be left out (read as `null`). Making
  them required too backfires: SmolLM2 wants to close `{"findings": []}` with one `]}` token,
  and when the grammar forbids that it fills the array instead. Inside a finding every key is
  required, as in Mastra.
- `null_only` fields must be `null`: values sluicegate computes itself (a redacted copy of the
  text, a redacted value) are not worth the judge's tokens.
- A score between 0 and 1 becomes a choice on a 0.05 grid for grammar-constrained models
  (`score_grid`): llama.cpp grammars ignore `minimum`/`maximum`, so `"score": 7` would otherwise
  be allowed and then rejected as invalid.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

TOKENS_PER_CHAR = 1
"""Tokens one character of compact verdict JSON may cost, at most: tokenizers average 3–4
characters per token on JSON, but digits (card numbers, offsets) often cost one token each."""

SCORE_GRID: tuple[float, ...] = tuple(round(step / 20, 2) for step in range(21))
"""The scores a grammar-constrained judge may give: 0, 0.05, ..., 1."""

_INTEGER_CHARS = 17
"""The longest integer llama.cpp's JSON grammar allows: a sign and 16 digits."""
_NUMBER_CHARS = 52
"""The longest number it allows: a sign, 16 digits, a point, 16 decimals, an exponent of 16."""


class VerdictTooLong(ValueError):
    """`max_output_tokens` cannot hold even the smallest complete verdict."""


@dataclass(frozen=True)
class JudgeLimits:
    """How a guardrail's verdict schema is tightened (property names apply wherever they occur:
    at the top level and in `$defs`)."""

    order: Sequence[str]
    """Top-level properties, decision first (the only required one); the rest keep their place
    after these."""
    findings: Mapping[str, int] = field(default_factory=dict)
    """Arrays of findings and the most items worth reporting in one verdict (fewer when the
    token budget is smaller)."""
    lengths: Mapping[str, int] = field(default_factory=dict)
    """Strings and their `maxLength`."""
    enums: Mapping[str, Sequence[str]] = field(default_factory=dict)
    """Strings limited to these values."""
    null_only: Collection[str] = ()
    """Properties the judge must answer with `null`."""
    free_text: Collection[str] = ()
    """Open text (a rewrite, a translation): unbounded for judges that are only guided by the
    schema; for a grammar-constrained judge it gets what the token budget leaves (at most
    `free_text_chars`) and must be `null` when that is nothing."""
    free_text_chars: int = 4000


def judge_schema(schema: Mapping[str, Any], limits: JudgeLimits) -> dict[str, Any]:
    """`schema` (a pydantic `model_json_schema()`) tightened by `limits`, as sent to every judge:
    each finding array bounded by its natural limit (the token cap then decides, as before,
    whether a long answer is complete)."""
    tight = copy.deepcopy(dict(schema))
    for obj in _objects(tight):
        _tighten_object(obj, limits)
    root_props = tight.get("properties", {})
    ordered = [name for name in limits.order if name in root_props]
    tight["properties"] = {
        name: root_props[name] for name in [*ordered, *(n for n in root_props if n not in ordered)]
    }
    tight["required"] = ordered[:1]
    for name, count in limits.findings.items():
        _set(tight, name, "array", "maxItems", count)
    return tight


def fit_to_budget(
    schema: Mapping[str, Any], limits: JudgeLimits, max_output_tokens: int | None, *, label: str
) -> dict[str, Any]:
    """`schema` (from `judge_schema`) for a grammar-constrained judge: scores on `SCORE_GRID`
    and, under a token cap, the finding arrays and open text sized so that the longest verdict
    the grammar allows fits `max_output_tokens` (counting one token per character, which holds
    for ASCII text whatever the tokenizer). Raises `VerdictTooLong` when not even one finding
    fits. Without a cap only the natural limits apply (and open text stays open)."""
    fitted = score_grid(schema)
    if max_output_tokens is None:
        return fitted
    budget = max_output_tokens * TOKENS_PER_CHAR
    arrays = [name for name in limits.findings if _branches(fitted, name, "array")]
    free = [name for name in limits.free_text if _branches(fitted, name, "string")]
    for name in arrays:
        _set(fitted, name, "array", "maxItems", 0)
    for name in free:
        _set(fitted, name, "string", "maxLength", 0)
    base = max_verdict_chars(fitted)
    if base > budget:
        raise VerdictTooLong(
            f"{label}: max_output_tokens={max_output_tokens} cannot hold a complete verdict on a "
            f"grammar-constrained model (it needs at least {base})"
        )
    for name in arrays:
        need = base + _item_chars(fitted, name) + 1
        if need > budget:
            raise VerdictTooLong(
                f"{label}: max_output_tokens={max_output_tokens} cannot hold a complete verdict with "
                f"one finding in {name!r} on a grammar-constrained model (it needs at least {need})"
            )
    # The findings come first (they are the decision); open text gets what is left.
    for name in arrays:
        left = budget - max_verdict_chars(fitted)
        count = min(limits.findings[name], left // (_item_chars(fitted, name) + 1))
        _set(fitted, name, "array", "maxItems", count)
        while max_verdict_chars(fitted) > budget:  # separators between items
            count -= 1
            _set(fitted, name, "array", "maxItems", count)
    for name in free:
        left = budget - max_verdict_chars(fitted)
        _set(fitted, name, "string", "maxLength", min(limits.free_text_chars, left // len(free)))
    for name in free:
        if _max_length(fitted, name) < 16:
            _null_only(fitted, name)
    return fitted


def score_grid(schema: Mapping[str, Any]) -> dict[str, Any]:
    """`schema` with every number bounded to [0, 1] limited to `SCORE_GRID` (for judges whose
    sampling grammar cannot enforce `minimum`/`maximum`)."""
    gridded = copy.deepcopy(dict(schema))

    def visit(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "number" and node.get("minimum") == 0 and node.get("maximum") == 1:
                node["enum"] = list(SCORE_GRID)
            for value in node.values():
                visit(value)
        elif isinstance(node, list):
            for value in node:
                visit(value)

    visit(gridded)
    return gridded


def max_verdict_chars(schema: Mapping[str, Any]) -> int:
    """The length of the longest JSON text `schema` allows as llama.cpp's converter writes its
    grammar: strings without escapes, one optional space after every token (`space ::= " "?`),
    integers of up to 17 characters and numbers of up to 52 (its `integer` and `number` rules).
    Raises ValueError for a schema with an unbounded array or string."""
    defs = schema.get("$defs", {})

    def size(node: Mapping[str, Any]) -> int:
        if "$ref" in node:
            return size(defs[node["$ref"].rsplit("/", 1)[-1]])
        if "anyOf" in node:
            return max(size(branch) for branch in node["anyOf"])
        if "enum" in node:
            return max(len(json.dumps(value)) for value in node["enum"]) + 1
        kind = node.get("type")
        if kind == "object":
            props = node.get("properties", {})
            # "{" " " ( "key" " " ":" " " value )* separated by "," " ", then "}" " "
            inner = sum(len(json.dumps(name)) + 3 + size(prop) for name, prop in props.items())
            return 4 + inner + 2 * max(0, len(props) - 1)
        if kind == "array":
            if "maxItems" not in node:
                raise ValueError("an array without maxItems has no longest value")
            count = int(node["maxItems"])
            return 4 + count * size(node["items"]) + 2 * max(0, count - 1)
        if kind == "string":
            if "maxLength" not in node:
                raise ValueError("a string without maxLength has no longest value")
            return 3 + int(node["maxLength"])
        if kind == "integer":
            return _INTEGER_CHARS + 1
        if kind == "number":
            return _NUMBER_CHARS + 1
        if kind == "boolean":
            return 6
        if kind == "null":
            return 5
        raise ValueError(f"no longest value for schema {dict(node)!r}")

    return size(schema)


def _objects(schema: dict[str, Any]) -> list[dict[str, Any]]:
    return [schema, *schema.get("$defs", {}).values()]


def _value_branches(prop: dict[str, Any]) -> list[dict[str, Any]]:
    branches = prop.get("anyOf")
    if branches is None:
        return [prop]
    return [b for b in branches if b.get("type") != "null"]


def _tighten_object(obj: dict[str, Any], limits: JudgeLimits) -> None:
    props: dict[str, Any] = obj.get("properties", {})
    for name, prop in props.items():
        if name in limits.null_only:
            props[name] = _null_schema(prop)
            continue
        for branch in _value_branches(prop):
            if branch.get("type") != "string":
                continue
            if name in limits.enums:
                branch["enum"] = list(limits.enums[name])
            elif name in limits.lengths:
                branch["maxLength"] = limits.lengths[name]
    if props:
        obj["required"] = list(props)


def _null_schema(prop: Mapping[str, Any]) -> dict[str, Any]:
    kept = {k: prop[k] for k in ("title", "description") if k in prop}
    return {**kept, "type": "null"}


def _null_only(schema: dict[str, Any], name: str) -> None:
    for obj in _objects(schema):
        props = obj.get("properties", {})
        if name in props:
            props[name] = _null_schema(props[name])


def _branches(schema: dict[str, Any], name: str, kind: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for obj in _objects(schema):
        prop = obj.get("properties", {}).get(name)
        if prop is not None:
            found.extend(b for b in _value_branches(prop) if b.get("type") == kind)
    return found


def _set(schema: dict[str, Any], name: str, kind: str, keyword: str, value: int) -> None:
    for branch in _branches(schema, name, kind):
        branch[keyword] = value


def _max_length(schema: dict[str, Any], name: str) -> int:
    return min(int(b.get("maxLength", 0)) for b in _branches(schema, name, "string"))


def _item_chars(schema: dict[str, Any], name: str) -> int:
    branch = _branches(schema, name, "array")[0]
    return max_verdict_chars({"$defs": schema.get("$defs", {}), **branch["items"]})
