"""A revocation holds on every gateway within seconds when admin cannot reach Redis (docs/security.md,
"OWASP API Security Top 10", API2): admin's eviction fails by a failpoint (seen in its log), and
the control event makes the gateways evict. The races, the cache step by step and the floods:
tests/inprocess/test_security_revocation.py."""

from __future__ import annotations

import time

import httpx
import pytest

from gateway.auth import CACHE_TTL_S
from tests.conftest import ADMIN_TOKEN, Stack, make_tenant
from tools.stack.processes import free_port

pytestmark = pytest.mark.integration


def test_a_revocation_holds_when_admin_cannot_reach_redis(stack: Stack) -> None:
    """Admin's own eviction fails (failpoint: Redis unreachable at that moment): the control
    event in its outbox makes the gateways evict the key, so the revoked key stops working
    within seconds, not after the cache's 300 s."""
    admin = stack.suite.start(
        "admin", free_port(), extra={"SLUICE_FAILPOINTS": "admin.evict=error"}, instance="admin-no-evict"
    )
    try:
        stack.suite.wait_ready([admin], timeout=300)
        t = make_tenant(stack, rate_limit=1_000_000)
        for gw in (0, 1):
            assert t.get("/v1/health", gateway=gw).status_code == 200  # cached on both
        r = httpx.post(
            admin.url + "/",
            json={"action": "revoke_api_key", "key_id": t.key_id},
            headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
            timeout=30,
        )
        assert r.status_code == 200, r.text
        revoked_at = time.monotonic()
        # The control event's way, not the cache expiring: the bound is the cache's TTL (the
        # setting), a tenth of it as the margin; waited on the answers, not slept.
        bound_s = CACHE_TTL_S / 10
        while time.monotonic() - revoked_at < bound_s:
            if {t.get("/v1/health", gateway=gw).status_code for gw in (0, 1)} == {401}:
                break
            time.sleep(0.1)
        took = time.monotonic() - revoked_at
        assert {t.get("/v1/health", gateway=gw).status_code for gw in (0, 1)} == {401}, took
        print(f"\nrevoked through the control event in {took:.1f} s (bound {bound_s:.0f} s)")
        assert "failpoint admin.evict fired" in admin.log.read_text()  # the eviction did fail
    finally:
        stack.suite.stop_proc(admin)
