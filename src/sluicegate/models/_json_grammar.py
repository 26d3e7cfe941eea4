"""A JSON schema as a compact llama.cpp (GBNF) grammar, for the embedded model's structured output.

Why our own: llama.cpp's built-in conversion lets the model indent and break lines freely and
accepts undeclared keys, and a 135M model then tends to pad an unbounded array until
`max_output_tokens` cuts the JSON short. This grammar allows at most one space between JSON
tokens and only the declared keys (in declaration order, required ones always present), which is
how the embedded model has always been constrained.

Covered: `type` (one or a list), `enum`, `const`, `properties` / `required` /
`additionalProperties: false` (the default here), `items`, `minItems` / `maxItems`,
`minLength` / `maxLength`, `anyOf` / `oneOf`, a one-element `allOf`, local `$ref`s
(`#/$defs/...`, `#/definitions/...`), and `{}` / `true` (any JSON value). Annotations
(`title`, `description`, `default`, `format`, `examples`, numeric bounds) do not constrain.
Anything else (`pattern`, `not`, `if`, `prefixItems`, open `additionalProperties`, ...) returns
None and the caller falls back to llama.cpp's own schema conversion.
"""

from __future__ import annotations

import json
import re
from typing import Any

_ANNOTATIONS = {
    "title",
    "description",
    "default",
    "examples",
    "format",
    "$schema",
    "$id",
    "$comment",
    "deprecated",
    "readOnly",
    "writeOnly",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "discriminator",
}
_STRUCTURE = {
    "type",
    "enum",
    "const",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "minLength",
    "maxLength",
    "anyOf",
    "oneOf",
    "allOf",
    "$ref",
    "$defs",
    "definitions",
}
_BASE_RULES = {
    "space": '" "?',
    "char": r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})',
    "string": '"\\"" char* "\\"" space',
    "number": '"-"? ([0-9] | [1-9] [0-9]{0,15}) ("." [0-9]+)? ([eE] [-+]? [0-9]+)? space',
    "integer": '"-"? ([0-9] | [1-9] [0-9]{0,15}) space',
    "boolean": '("true" | "false") space',
    "null": '"null" space',
    "value": "object | array | string | number | boolean | null",
    "object": '"{" space (string ":" space value ("," space string ":" space value)*)? "}" space',
    "array": '"[" space (value ("," space value)*)? "]" space',
}
_MAX_REPEAT = 10_000


class _Unsupported(Exception):
    """The schema uses something this grammar does not express."""


def schema_grammar(schema: Any) -> str | None:
    """The GBNF grammar for `schema`, or None when it uses a keyword not covered here."""
    try:
        return _Builder(schema).build()
    except (_Unsupported, RecursionError):
        return None


def _literal(value: Any) -> str:
    """A GBNF string literal matching `value`'s JSON text."""
    return json.dumps(json.dumps(value))


class _Builder:
    def __init__(self, root: Any) -> None:
        self.root = root
        self.rules: dict[str, str] = {}
        self.refs: dict[str, str] = {}

    def build(self) -> str:
        root = self.visit(self.root, "root")
        if root != "root":
            self.rules["root"] = root
        used = dict(_BASE_RULES)
        used.update(self.rules)
        return "".join(f"{name} ::= {body}\n" for name, body in used.items())

    def add(self, name: str, body: str) -> str:
        base = re.sub(r"[^A-Za-z0-9-]+", "-", name).strip("-") or "r"
        if base in _BASE_RULES:
            base += "-x"
        candidate, index = base, 1
        while candidate in self.rules:
            index += 1
            candidate = f"{base}-{index}"
        self.rules[candidate] = body
        return candidate

    def visit(self, schema: Any, name: str) -> str:
        """A rule name (or an inline expression) for `schema`."""
        if schema is True or schema == {}:
            return "value"
        if not isinstance(schema, dict):
            raise _Unsupported(name)
        unknown = set(schema) - _ANNOTATIONS - _STRUCTURE
        if unknown:
            raise _Unsupported(", ".join(sorted(unknown)))
        if "$ref" in schema:
            return self.ref(str(schema["$ref"]))
        if "const" in schema:
            return self.add(name, f"{_literal(schema['const'])} space")
        if "enum" in schema:
            values = schema["enum"]
            if not isinstance(values, list) or not values:
                raise _Unsupported("enum")
            return self.add(name, "(" + " | ".join(_literal(v) for v in values) + ") space")
        for key in ("anyOf", "oneOf"):
            if key in schema:
                options = schema[key]
                if not isinstance(options, list) or not options:
                    raise _Unsupported(key)
                merged = [{**{k: v for k, v in schema.items() if k != key}, **o} for o in options]
                return self.add(name, " | ".join(self.visit(o, f"{name}-{i}") for i, o in enumerate(merged)))
        if "allOf" in schema:
            parts = schema["allOf"]
            if not isinstance(parts, list) or len(parts) != 1:
                raise _Unsupported("allOf")
            rest = {k: v for k, v in schema.items() if k != "allOf"}
            return self.visit({**rest, **parts[0]}, name)
        kind = schema.get("type")
        if isinstance(kind, list):
            if not kind:
                raise _Unsupported("type")
            return self.add(name, " | ".join(self.visit({**schema, "type": k}, f"{name}-{k}") for k in kind))
        if kind is None:
            if "properties" in schema:
                kind = "object"
            elif "items" in schema:
                kind = "array"
            else:
                return "value"
        if kind == "object":
            return self.object(schema, name)
        if kind == "array":
            return self.array(schema, name)
        if kind == "string":
            return self.string(schema, name)
        if kind in ("number", "integer", "boolean", "null"):
            return str(kind)
        raise _Unsupported(f"type {kind!r}")

    def ref(self, ref: str) -> str:
        if ref in self.refs:
            return self.refs[ref]
        match = re.fullmatch(r"#/(\$defs|definitions)/([^/]+)", ref)
        defs = self.root.get(match.group(1)) if match and isinstance(self.root, dict) else None
        if not isinstance(defs, dict) or match is None or match.group(2) not in defs:
            raise _Unsupported(ref)
        # Reserve the name first so recursive schemas refer to themselves.
        name = self.add(f"def-{match.group(2)}", "")
        self.refs[ref] = name
        body = self.visit(defs[match.group(2)], f"{name}-body")
        self.rules[name] = body
        return name

    def object(self, schema: dict[str, Any], name: str) -> str:
        properties = schema.get("properties") or {}
        extra = schema.get("additionalProperties")
        if not isinstance(properties, dict):
            raise _Unsupported("properties")
        if not properties:
            return self.add(name, '"{" space "}" space') if extra is False else "object"
        if extra not in (None, False):
            raise _Unsupported("additionalProperties")
        required = [k for k in properties if k in set(schema.get("required") or [])]
        optional = [k for k in properties if k not in required]
        pairs = {
            key: self.add(
                f"{name}-{key}-kv",
                f'{_literal(key)} space ":" space {self.visit(properties[key], f"{name}-{key}")}',
            )
            for key in properties
        }
        if required:
            body = ' "," space '.join(pairs[k] for k in required)
            body += "".join(f' ("," space {pairs[k]})?' for k in optional)
        elif optional:
            alternatives = []
            for index, key in enumerate(optional):
                tail = "".join(f' ("," space {pairs[k]})?' for k in optional[index + 1 :])
                alternatives.append(pairs[key] + tail)
            body = "(" + " | ".join(alternatives) + ")?"
        else:
            body = ""
        return self.add(name, f'"{{" space {body} "}}" space')

    def array(self, schema: dict[str, Any], name: str) -> str:
        item = self.visit(schema.get("items", True), f"{name}-item")
        low = _bound(schema.get("minItems")) or 0
        high = _bound(schema.get("maxItems"))
        if high is not None and high < low:
            raise _Unsupported("minItems > maxItems")
        if high == 0:
            return self.add(name, '"[" space "]" space')
        more_low = max(low - 1, 0)
        more = f"{more_low}," if high is None else f"{more_low},{high - 1}"
        items = f'{item} ("," space {item}){{{more}}}'
        if low == 0:
            items = f"({items})?"
        return self.add(name, f'"[" space {items} "]" space')

    def string(self, schema: dict[str, Any], name: str) -> str:
        low = _bound(schema.get("minLength")) or 0
        high = _bound(schema.get("maxLength"))
        if low == 0 and high is None:
            return "string"
        if high is not None and high < low:
            raise _Unsupported("minLength > maxLength")
        repeat = f"{{{low},}}" if high is None else f"{{{low},{high}}}"
        return self.add(name, f'"\\"" char{repeat} "\\"" space')


def _bound(value: Any) -> int | None:
    """A `minItems`-style count (None when absent); a negative, huge or non-integer one is
    not expressed."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0 or value > _MAX_REPEAT:
        raise _Unsupported("bound")
    return value
