"""The documents' JSON working-memory template reaches the model with its full shape."""

from __future__ import annotations

import json

from sluicegate.processors.builtin.working_memory import resolve_template, working_memory_instruction

DOCS_TEMPLATE = {
    "format": "json",
    "content": json.dumps(
        {"user": {"name": {"type": "string"}, "preferences": {"type": "object"}, "goals": {"type": "array"}}}
    ),
}


def test_the_documents_json_template_sends_the_full_shape() -> None:
    instruction = working_memory_instruction(resolve_template(DOCS_TEMPLATE), None)
    assert json.dumps({"user": {"name": "", "preferences": {}, "goals": []}}) in instruction


def test_json_schema_style_templates_still_work() -> None:
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "pets": {"type": "object", "properties": {"dog": {}}}},
    }
    instruction = working_memory_instruction(resolve_template({"format": "json", "content": schema}), None)
    assert json.dumps({"city": "", "pets": {"dog": ""}}) in instruction
