"""Metadata filters for vector queries, in Mastra's (MongoDB-like) syntax.

`{"thread_id": "t1"}` is equality; an operator dict compares: `$eq $ne $gt $gte $lt $lte $in
$nin $exists`; `$and` / `$or` take lists of filters and `$not` one filter. Keys at one level are
ANDed. `matches` evaluates a filter in Python (the reference semantics); `to_postgres` compiles
it to SQL over a JSONB column with the same meaning.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from sluicegate.errors import SluicegateError

Filter = Mapping[str, Any]
COMPARISONS = frozenset(("$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$exists"))
LOGICAL = frozenset(("$and", "$or", "$not"))
_MISSING = object()


class InvalidFilterError(SluicegateError, ValueError):
    """A metadata filter uses an unknown operator or a malformed operand."""


def _is_operator_dict(value: Any) -> bool:
    return (
        isinstance(value, Mapping)
        and bool(value)
        and all(isinstance(k, str) and k.startswith("$") for k in value)
    )


def validate(filter: Filter | None) -> None:
    """Raise `InvalidFilterError` for anything `matches` / `to_postgres` would not understand."""
    if filter is None:
        return
    if not isinstance(filter, Mapping):
        raise InvalidFilterError(f"a filter must be a dict, got {filter!r}")
    for key, value in filter.items():
        if key in ("$and", "$or"):
            if not isinstance(value, list) or not value:
                raise InvalidFilterError(f"{key} takes a non-empty list of filters")
            for item in value:
                validate(item)
        elif key == "$not":
            validate(value)
        elif key.startswith("$"):
            raise InvalidFilterError(f"unknown filter operator {key!r}")
        elif _is_operator_dict(value):
            for op, operand in value.items():
                if op not in COMPARISONS:
                    raise InvalidFilterError(f"unknown comparison {op!r} on {key!r}")
                if op in ("$in", "$nin") and not isinstance(operand, list):
                    raise InvalidFilterError(f"{op} on {key!r} takes a list")


def _same(a: Any, b: Any) -> bool:
    """JSON equality: `true` is not `1` (Python's `True == 1` would say it is)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _compare(op: str, actual: Any, operand: Any) -> bool:
    if op == "$exists":
        return (actual is not _MISSING) == bool(operand)
    if op == "$eq":
        return actual is not _MISSING and _same(actual, operand)
    if op == "$ne":
        return actual is _MISSING or not _same(actual, operand)
    if op == "$in":
        return actual is not _MISSING and any(_same(actual, v) for v in operand)
    if op == "$nin":
        return actual is _MISSING or not any(_same(actual, v) for v in operand)
    if actual is _MISSING or actual is None or isinstance(actual, bool) or isinstance(operand, bool):
        return False
    numeric = isinstance(actual, (int, float)) and isinstance(operand, (int, float))
    if not numeric and not (isinstance(actual, str) and isinstance(operand, str)):
        return False
    if op == "$gt":
        return bool(actual > operand)
    if op == "$gte":
        return bool(actual >= operand)
    if op == "$lt":
        return bool(actual < operand)
    return bool(actual <= operand)


def matches(filter: Filter | None, metadata: Mapping[str, Any]) -> bool:
    """Whether `metadata` satisfies `filter` (None matches everything)."""
    if not filter:
        return True
    for key, value in filter.items():
        if key == "$and":
            if not all(matches(f, metadata) for f in value):
                return False
        elif key == "$or":
            if not any(matches(f, metadata) for f in value):
                return False
        elif key == "$not":
            if matches(value, metadata):
                return False
        else:
            actual = metadata.get(key, _MISSING)
            if _is_operator_dict(value):
                if not all(_compare(op, actual, operand) for op, operand in value.items()):
                    return False
            elif not _compare("$eq", actual, value):
                return False
    return True


def equality_terms(filter: Filter | None, keys: frozenset[str]) -> dict[str, str]:
    """Top-level string equalities on `keys` (what a backend can push into an index lookup)."""
    terms: dict[str, str] = {}
    for key, value in (filter or {}).items():
        if key not in keys:
            continue
        if isinstance(value, str):
            terms[key] = value
        elif _is_operator_dict(value) and isinstance(value.get("$eq"), str):
            terms[key] = value["$eq"]
    return terms


class _Params:
    def __init__(self, start: int) -> None:
        self.values: list[Any] = []
        self.start = start

    def add(self, value: Any) -> str:
        self.values.append(value)
        return f"${self.start + len(self.values) - 1}"


def to_postgres(
    filter: Filter | None, column: str = "metadata", *, first_param: int = 1
) -> tuple[str, list[Any]]:
    """SQL (`TRUE` for no filter) and its parameters, numbered from `first_param`."""
    validate(filter)
    params = _Params(first_param)
    sql = _pg(filter or {}, column, params)
    return sql, params.values


def _pg(filter: Filter, column: str, params: _Params) -> str:
    clauses: list[str] = []
    for key, value in filter.items():
        if key == "$and":
            clauses.append("(" + " AND ".join(_pg(f, column, params) for f in value) + ")")
        elif key == "$or":
            clauses.append("(" + " OR ".join(_pg(f, column, params) for f in value) + ")")
        elif key == "$not":
            clauses.append(f"NOT ({_pg(value, column, params)})")
        else:
            ops = value if _is_operator_dict(value) else {"$eq": value}
            for op, operand in ops.items():
                # SQL's NULL (a missing key) must read as false, so that $not inverts like `matches`.
                clauses.append(f"COALESCE(({_pg_compare(column, key, op, operand, params)}), FALSE)")
    return " AND ".join(clauses) if clauses else "TRUE"


def _pg_compare(column: str, key: str, op: str, operand: Any, params: _Params) -> str:
    orderable = isinstance(operand, (int, float, str)) and not isinstance(operand, bool)
    if op in ("$gt", "$gte", "$lt", "$lte") and not orderable:
        return "FALSE"  # ordering is defined for numbers and strings only
    name = params.add(key)
    field = f"{column}->{name}::text"
    if op == "$exists":
        return f"({column} ? {name}::text)" if operand else f"NOT ({column} ? {name}::text)"
    if op == "$eq":
        if isinstance(operand, str):
            return f"({column}->>{name}::text) = {params.add(operand)}::text"
        return f"({field}) = {params.add(json.dumps(operand))}::text::jsonb"
    if op == "$ne":
        return f"({field}) IS DISTINCT FROM {params.add(json.dumps(operand))}::text::jsonb"
    if op in ("$in", "$nin"):
        values = params.add([json.dumps(v) for v in operand])
        test = f"COALESCE(({field}) = ANY({values}::text[]::jsonb[]), FALSE)"
        return test if op == "$in" else f"NOT {test}"
    sql_op = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}[op]
    if isinstance(operand, (int, float)) and not isinstance(operand, bool):
        # CASE, not AND: PostgreSQL may evaluate the cast before the type test.
        return (
            f"CASE WHEN jsonb_typeof({field}) = 'number' THEN "
            f"({column}->>{name}::text)::double precision {sql_op} "
            f"{params.add(float(operand))}::double precision ELSE FALSE END"
        )
    return (
        f"CASE WHEN jsonb_typeof({field}) = 'string' THEN "
        f'({column}->>{name}::text) COLLATE "C" {sql_op} {params.add(operand)}::text ELSE FALSE END'
    )
