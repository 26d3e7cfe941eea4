"""The texts of structured values (tool arguments and results) a guard checks and rewrites."""

from __future__ import annotations

from sluicegate.agent.step import UnparsedArgs
from sluicegate.guardrails.spans import map_texts, value_texts


def test_value_texts_include_keys_and_numbers_but_not_flags() -> None:
    value = {"to": "ann", "card": 4111111111111111, "ok": True, "rate": 1.5, "ann@x.io": [" ", "b"]}
    assert value_texts(value) == [
        "to",
        "ann",
        "card",
        "4111111111111111",
        "ok",
        "rate",
        "1.5",
        "ann@x.io",
        "b",
    ]


def test_map_texts_keeps_the_same_object_when_nothing_changes() -> None:
    value = {"a": ["b", {"c": 1}], "d": (2, "e")}
    assert map_texts(value, lambda text: text) is value


def test_map_texts_renames_keys_without_losing_entries_and_numbers_become_text() -> None:
    def hide(text: str) -> str:
        return "[X]" if text.startswith("secret") or text == "42" else text

    value = {"secret1": 1, "secret2": 2, "[X]": 3, "n": 42, "list": ("secret3", 7)}
    assert map_texts(value, hide) == {"[X]_2": 1, "[X]_3": 2, "[X]": 3, "n": "[X]", "list": ("[X]", 7)}


def test_map_texts_keeps_a_str_subclass_and_its_attributes() -> None:
    raw = UnparsedArgs('{"to": "secret"')
    raw.reason = "is not valid JSON"
    out = map_texts(raw, lambda text: text.replace("secret", "[X]"))
    assert isinstance(out, UnparsedArgs) and out == '{"to": "[X]"' and out.reason == "is not valid JSON"
