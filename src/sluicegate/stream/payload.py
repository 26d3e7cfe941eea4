"""`Payload`: the attribute bag a chunk carries.

Attributes are snake_case in Python; `to_json` writes them camelCase (Mastra's wire shape).
Only payload attribute names are converted: values that are plain dicts (tool arguments and
results, metadata) are user data and keep their keys.
"""

from __future__ import annotations

from typing import Any

from sluicegate.messages.part import to_camel, to_snake

# Payload fields whose dict values are themselves payloads when read back from JSON.
NESTED_PAYLOAD_KEYS = frozenset(("stepResult", "output", "usage", "totalUsage", "response", "request"))

# Values written as they are: most payload values are one of these exact types, so one set
# lookup spares them `to_json`'s chain of checks (subclasses, such as a `Part`, take the chain).
_PLAIN_TYPES = frozenset((str, int, float, bool, type(None), dict))


class Payload:
    """A mutable record with attribute access; unknown attributes read as `AttributeError`."""

    def __init__(self, **fields: Any) -> None:
        self.__dict__.update(fields)

    def get(self, name: str, default: Any = None) -> Any:
        return self.__dict__.get(name, default)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in self.__dict__.items():
            if value is None and key != "result":
                continue
            out[to_camel(key)] = value if type(value) in _PLAIN_TYPES else to_json(value)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Payload:
        # Filled in place (a durable run reads every chunk back through here): no keyword dict.
        payload = cls.__new__(cls)
        fields = payload.__dict__
        for key, value in data.items():
            if key in NESTED_PAYLOAD_KEYS and isinstance(value, dict):
                value = cls.from_json(value)
            fields[to_snake(key)] = value
        return payload

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Payload) and self.__dict__ == other.__dict__

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{type(self).__name__}({inner})"


def error_to_json(error: BaseException | Any) -> dict[str, Any]:
    if isinstance(error, BaseException):
        name = getattr(error, "name", None)
        data: dict[str, Any] = {
            "message": str(error),
            "name": name if isinstance(name, str) else type(error).__name__,
        }
        for attr in ("status_code", "is_retryable", "url", "response_body"):
            value = getattr(error, attr, None)
            if value is not None:
                data[to_camel(attr)] = value
        return data
    if isinstance(error, dict):
        return error
    return {"message": str(error), "name": "Error"}


def to_json(value: Any) -> Any:
    """A JSON-ready copy of a payload value (plain dicts are user data, returned as they are)."""
    if type(value) in _PLAIN_TYPES:
        return value
    if isinstance(value, Payload):
        return value.to_dict()
    if isinstance(value, BaseException):
        return error_to_json(value)
    if isinstance(value, list):
        return [to_json(v) for v in value]
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    return value
