"""Fuzzing the API from its own OpenAPI schema: no input may produce a 500 or a response that
contradicts the schema."""

from __future__ import annotations

import importlib
from typing import Any

import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from sluicegate.server import ServerSettings, create_app


def _app() -> Any:
    import tests.server.example_app as example

    example = importlib.reload(example)
    return create_app(example.registry, ServerSettings(request_timeout=5))


schema = schemathesis.openapi.from_asgi("/openapi.json", _app())

CHECKS = (not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance)


@schema.parametrize()
@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
def test_api_never_fails(case: Any) -> None:
    case.call_and_validate(checks=CHECKS)
