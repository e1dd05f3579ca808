"""A revoked access token stops working when admin cannot reach Redis (docs/security.md,
"Round 4"): admin's eviction fails by a failpoint (seen in its log), and the control event makes
the gateways evict. Revocation, the kill switch and their refusals:
tests/inprocess/test_security_kill_switch.py."""

from __future__ import annotations

import time

import httpx
import pytest

from tests.conftest import ADMIN_TOKEN, Stack, make_tenant
from tests.support.admin import access_token, health_statuses
from tools.stack.processes import free_port

pytestmark = pytest.mark.integration


def test_a_token_revocation_holds_when_admin_cannot_reach_redis(stack: Stack) -> None:
    """Admin's eviction fails (failpoint): the control event makes the gateways evict."""
    admin = stack.suite.start(
        "admin", free_port(), extra={"SLUICE_FAILPOINTS": "admin.evict=error"}, instance="admin-no-evict-jwt"
    )
    try:
        stack.suite.wait_ready([admin], timeout=300)
        t = make_tenant(stack)
        jwt, jti = access_token(stack, t)
        assert health_statuses(jwt) == {200}
        r = httpx.post(
            admin.url + "/",
            json={"action": "revoke_access_token", "jti": jti},
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
            timeout=30,
        )
        assert r.status_code == 200, r.text
        deadline = time.monotonic() + 15
        while health_statuses(jwt) != {401}:
            assert time.monotonic() < deadline, "the revoked token still works"
            time.sleep(0.1)
        assert "failpoint admin.evict fired" in admin.log.read_text()
    finally:
        stack.suite.stop_proc(admin)
