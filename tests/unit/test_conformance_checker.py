"""The conformance checker (tests/support/conformance.py) on the gateway's own document: it
matches answers to operations in both forms and refuses an undeclared property, a missing
required one and an undeclared status."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gateway.app import ENDPOINTS
from gateway.openapi.document import build_document
from tests.support.conformance import Answer, Checker, closed, report

pytestmark = pytest.mark.unit

CHECKER = Checker(build_document(ENDPOINTS))
WEBHOOK = {
    "webhook_id": "wh_1",
    "endpoint_url": "https://example.com/hook",
    "status": "enabled",
    "disabled_reason": None,
    "created_at": "2026-01-01T00:00:00Z",
    "enabled_events": ["transfer.created"],
}


def answer(
    method: str, path: str, status: int, data: Any, route: str | None = None, sent: Any = None
) -> Answer:
    body = json.dumps({"success": True, "data": data}).encode()
    return Answer(method, path, route, json.dumps(sent).encode() if sent is not None else b"", status, body)


def test_a_declared_answer_conforms_in_both_forms() -> None:
    assert CHECKER.problems(answer("GET", "/v1/webhooks/wh_1", 200, WEBHOOK)) == (
        ("GET", "/v1/webhooks/{webhook_id}"),
        [],
    )
    routed = answer("POST", "/", 200, WEBHOOK, route="/v1/webhooks/wh_1", sent={"method": "get"})
    assert CHECKER.problems(routed) == (("GET", "/v1/webhooks/{webhook_id}"), [])
    listed = answer("GET", "/v1/webhooks", 200, {"items": [WEBHOOK], "next_cursor": None})
    assert CHECKER.problems(listed)[1] == []


def test_an_undeclared_property_is_an_error_where_it_sits() -> None:
    op, problems = CHECKER.problems(answer("GET", "/v1/webhooks/wh_1", 200, {**WEBHOOK, "secret_hint": "x"}))
    assert op == ("GET", "/v1/webhooks/{webhook_id}")
    assert len(problems) == 1 and "$.data" in problems[0] and "secret_hint" in problems[0], problems
    nested = answer("GET", "/v1/webhooks", 200, {"items": [{**WEBHOOK, "extra": 1}], "next_cursor": None})
    assert "$.data.items[0]" in report(CHECKER, [nested])[0]
    envelope = Answer(
        "GET",
        "/v1/health",
        None,
        b"",
        404,
        b'{"success": false, "error": {"code": "not_found", "message": "m"}, "hint": 1}',
    )
    assert "hint" in CHECKER.problems(envelope)[1][0]


def test_a_missing_field_and_an_undeclared_status_are_errors() -> None:
    partial = {k: v for k, v in WEBHOOK.items() if k != "status"}
    assert (
        "'status' is a required property"
        in CHECKER.problems(answer("GET", "/v1/webhooks/wh_1", 200, partial))[1][0]
    )
    assert CHECKER.problems(answer("GET", "/v1/webhooks/wh_1", 418, WEBHOOK))[1] == [
        "status 418 is not declared for GET /v1/webhooks/{webhook_id}"
    ]


def test_paths_the_document_does_not_describe_are_not_held_to_it() -> None:
    assert CHECKER.problems(answer("GET", "/schema/openapi.json", 200, {})) == (None, [])
    assert CHECKER.template("/v1/webhooks/wh_1/rotate-secret") == "/v1/webhooks/{webhook_id}/rotate-secret"


def test_closing_leaves_free_form_objects_open() -> None:
    schema = closed({"type": "object", "properties": {"a": {"type": "object"}}})
    assert schema == {
        "type": "object",
        "properties": {"a": {"type": "object"}},
        "additionalProperties": False,
    }
