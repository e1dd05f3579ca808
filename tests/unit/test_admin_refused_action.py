"""The action name of a refused admin request, as audited: bounded, no NUL or control
characters (PostgreSQL text holds no NUL: the fuzzer's names with one left refusals unaudited)."""

from __future__ import annotations

import json

import pytest

from admin.app import _requested_action

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("action", "audited"),
    [
        ("upsert_tenant", "upsert_tenant"),
        ("bad\x00name\r\n", "bad\ufffdname\ufffd\ufffd"),
        ("x" * 100, "x" * 64),
        ("", "unknown"),
        (7, "unknown"),
    ],
)
def test_the_audited_action_is_printable_and_bounded(action: object, audited: str) -> None:
    assert _requested_action(json.dumps({"action": action}).encode()) == audited


def test_a_body_that_is_not_json_is_unknown() -> None:
    assert _requested_action(b"\xff{") == "unknown"
