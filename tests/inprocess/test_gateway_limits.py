"""Rate limits shared by both gateways (docs/guides/sandbox-and-live.md, "Limits") and the
timeout path: a command the pipeline does not answer in time is 503 provider_unavailable with
Retry-After, and the outcome that arrives later is what a retry with the same key gets."""

from __future__ import annotations

import time
import uuid
from datetime import datetime

import httpx
import pytest

from tests.conftest import Stack, customer_body, make_tenant
from tests.support.gateway import assert_error, call, fetchval, routed
from tools.stack.processes import free_port

pytestmark = pytest.mark.inprocess


def _fresh_window(margin: float = 20.0) -> None:
    """Start well inside a one-minute window so the test never straddles two."""
    left = 60 - time.time() % 60
    if left < margin:
        time.sleep(left + 0.2)


def test_rate_limit_is_shared_by_both_gateways_and_both_forms(stack: Stack) -> None:
    t = make_tenant(stack, rate_limit=6)
    _fresh_window()
    seen = []
    for i in range(6):
        fn = routed if i % 2 else call
        r = (
            fn(stack, "GET", "/v1/health", key=t.key, gateway=i % 2)
            if i < 5
            else t.post("/v1/customers", customer_body(), gateway=1)
        )
        assert r.status_code in (200, 201), r.text
        assert r.headers["x-ratelimit-limit"] == "6"
        seen.append(int(r.headers["x-ratelimit-remaining"]))
    assert seen == [5, 4, 3, 2, 1, 0]
    health = r.headers
    for gw in (0, 1):
        r = call(stack, "GET", "/v1/health", key=t.key, gateway=gw)
        err = assert_error(r, 429, "rate_limited")
        retry = int(r.headers["retry-after"])
        assert 1 <= retry <= 60
        assert r.headers["x-ratelimit-remaining"] == "0"
        assert r.headers["x-ratelimit-reset"] == health["x-ratelimit-reset"]
        assert err["details"]["limit"] == 6
    r = routed(stack, "POST", "/v1/customers", key=t.key, body=customer_body(), idem=uuid.uuid4().hex)
    assert_error(r, 429, "rate_limited")
    # another tenant is not affected
    assert make_tenant(stack, rate_limit=6).get("/v1/health", gateway=1).status_code == 200


def test_health_reports_the_shared_counter(stack: Stack) -> None:
    t = make_tenant(stack, rate_limit=50)
    _fresh_window()
    a = t.get("/v1/health", gateway=0)
    b = t.get("/v1/health", gateway=1)
    da, db = a.json()["data"], b.json()["data"]
    assert (da["remaining"], db["remaining"]) == (49, 48)
    assert da["rate_limit_per_minute"] == 50
    assert int(b.headers["x-ratelimit-remaining"]) == db["remaining"]
    reset = datetime.fromisoformat(db["reset_at"].replace("Z", "+00:00")).timestamp()
    assert int(reset) == int(b.headers["x-ratelimit-reset"])
    assert 0 < reset - time.time() <= 60


def test_timeout_is_503_and_the_late_outcome_is_replayed(stack: Stack) -> None:
    t = make_tenant(stack)
    gw = stack.suite.start(
        "gateway", free_port(), {"SLUICE_GATEWAY_TIMEOUT_S": "0.005"}, instance="gateway-impatient"
    )
    try:
        stack.suite.wait_ready([gw], timeout=120)
        key = "idem-" + uuid.uuid4().hex
        body = customer_body()
        r = httpx.post(gw.url + "/v1/customers", json=body, headers=t.headers(key), timeout=30)
        err = assert_error(r, 503, "provider_unavailable")
        assert err["details"]["reason"] == "upstream_timeout"  # docs/guides/errors.md, "Reasons"
        assert r.headers["retry-after"].isdigit()
        assert "Idempotency-Key" in err["message"]
        deadline = time.monotonic() + 30
        while True:
            again = httpx.post(gw.url + "/v1/customers", json=body, headers=t.headers(key), timeout=30)
            if again.status_code != 503 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert again.status_code == 201, again.text
        assert again.headers["x-idempotent-replay"] == "true"
        # the same record is visible from the regular gateways, and nothing ran twice
        third = call(stack, "POST", "/v1/customers", key=t.key, body=body, idem=key, gateway=1)
        assert third.content == again.content
        n = fetchval(stack, "SELECT count(*) FROM ledger.customers WHERE tenant_id = $1", t.tenant_id)
        assert n == 1
    finally:
        stack.suite.stop_proc(gw)
