"""The admin service authenticates before it reads a body, and refuses a body nested deeper
than 32 levels with 400 (it raised RecursionError, a 500, before): docs/security.md, "Admin
reads no body before authentication"."""

from __future__ import annotations

import httpx
import pytest

from common.validation import nesting_depth
from tests.conftest import ADMIN_TOKEN, Stack

pytestmark = pytest.mark.inprocess


def _deep(n: int) -> bytes:
    return b'{"action": "list_tenants", "x": ' + b"[" * n + b"]" * n + b"}"


@pytest.mark.unit
@pytest.mark.parametrize(
    ("raw", "depth"),
    [
        (b"{}", 1),
        (b'{"a": [1, {"b": []}]}', 4),
        (b'{"a": "[[[[{{{{"}', 1),
        (b'["\\"[["]', 1),
        (_deep(40), 41),
    ],
)
def test_nesting_depth_ignores_brackets_in_strings(raw: bytes, depth: int) -> None:
    assert nesting_depth(raw) == depth


def test_a_deep_body_is_400_for_an_operator_and_401_before_authentication(stack: Stack) -> None:
    ok = httpx.post(
        stack.admin + "/", content=_deep(30), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=30
    )
    assert ok.status_code != 500 and ok.json()["error"]["details"].get("reason") != "too_deep", ok.text
    deep = httpx.post(
        stack.admin + "/", content=_deep(5000), headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}, timeout=30
    )
    assert deep.status_code == 400, deep.text
    err = deep.json()["error"]
    assert err["code"] == "invalid_request" and err["details"]["reason"] == "too_deep", err
    anonymous = httpx.post(stack.admin + "/", content=_deep(5000), timeout=30)
    assert anonymous.status_code == 401, anonymous.text  # refused on the missing token, body unread
