"""The door (docs/performance/overload.md) on a real gateway process whose limit is two commands in
flight and whose commands are held after their publish (failpoint ``rpc.after_send``): a
command beyond the limit gets the prebuilt 503 (Retry-After, the contract's envelope, the
request id), even on a route that does not exist (refused before routing); two refusals on one
kept-alive connection are both answered and the connection stays usable; a quiet tenant is
admitted while the noisy one that holds the limit is refused; and a live credential is let in
(to be refused by authentication, 401) where a sandbox one is shed. Behaviour only: nothing
here measures speed."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.conftest import Stack, Tenant, make_tenant
from tests.support.flows import book, funded
from tools.stack.processes import free_port
from tools.stack.suite import Proc

pytestmark = pytest.mark.integration

HOLD_S = 3.0  # each command waits this long after its publish: long enough to look at the door


def _in_flight(metrics_url: str) -> float:
    text = httpx.get(metrics_url + "/metrics", timeout=10).text
    m = re.search(r"^sluice_admission_in_flight ([0-9.e+]+)$", text, re.M)
    return float(m.group(1)) if m else 0.0


def _wait_in_flight(metrics_url: str, n: int, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while _in_flight(metrics_url) < n:
        assert time.monotonic() < deadline, f"never {n} commands in flight"
        time.sleep(0.05)


def _overloaded(r: httpx.Response, bound: str) -> None:
    assert r.status_code == 503, r.text
    assert r.headers["retry-after"] == "1"
    assert r.headers["content-type"] == "application/json"
    assert r.json() == {
        "success": False,
        "error": {
            "code": "provider_unavailable",
            "message": "the gateway is at capacity; nothing was done: retry with the same Idempotency-Key",
            "details": {"reason": "overloaded", "bound": bound, "request_id": r.headers["x-request-id"]},
        },
    }


@pytest.fixture
def door_gateway(stack: Stack) -> Iterator[Proc]:
    assert stack.suite is not None
    gw = stack.suite.start(
        "gateway",
        free_port(),
        extra={
            "SLUICE_MAX_IN_FLIGHT": "2",
            "SLUICE_TENANT_MAX_IN_FLIGHT": "2",
            "SLUICE_ADMISSION_INITIAL_LIMIT": "2",
            "SLUICE_FAILPOINTS": f"rpc.after_send=sleep({HOLD_S})",
        },
        instance="gateway-door",
    )
    try:
        stack.suite.wait_ready([gw], timeout=120)
        yield gw
    finally:
        stack.suite.stop_proc(gw)


def _raw_twice(url: str, key: str) -> list[bytes]:
    """Two refused commands on one kept-alive connection, each with a body the door never
    reads: both answered, in order, on the same socket."""
    host, port = url.removeprefix("http://").split(":")
    body = b'{"x": 1}'
    request = (
        f"POST /v1/transfers HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/json\r\nIdempotency-Key: {uuid.uuid4().hex}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    ).encode() + body

    async def run() -> list[bytes]:
        reader, writer = await asyncio.open_connection(host, int(port))
        heads = []
        try:
            for _ in range(2):
                writer.write(request)
                head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
                found = re.search(rb"content-length: (\d+)", head, re.I)
                assert found is not None, head
                await reader.readexactly(int(found.group(1)))
                heads.append(head)
        finally:
            writer.close()
        return heads

    return asyncio.run(run())


def _auth(t: Tenant, key: str | None = None) -> dict[str, str]:
    return {"Authorization": f"Bearer {t.key}", **({"Idempotency-Key": key} if key else {})}


def _transfer(c: httpx.AsyncClient, t: Tenant, w: list[str], amount: str) -> asyncio.Task[httpx.Response]:
    k = uuid.uuid4().hex
    return asyncio.create_task(c.post("/v1/transfers", json=book(w[0], w[1], amount, k), headers=_auth(t, k)))


def test_the_door_refuses_before_routing_keeps_quiet_tenants_and_live_before_sandbox(
    stack: Stack, door_gateway: Proc
) -> None:
    url, metrics_url = door_gateway.url, door_gateway.metrics_url
    noisy, quiet = make_tenant(stack, rate_limit=100000), make_tenant(stack, rate_limit=100000)
    noisy_w = [funded(noisy, "100.00")["wallet_id"], funded(noisy, "1.00")["wallet_id"]]
    quiet_w = [funded(quiet, "100.00")["wallet_id"], funded(quiet, "1.00")["wallet_id"]]
    for t in (noisy, quiet):  # authenticated once here: the door knows whose keys they are
        assert httpx.get(url + "/v1/health", headers=_auth(t), timeout=30).status_code == 200
    live_key, test_key = "Bearer sk_live_" + "x" * 43, "Bearer sk_test_" + "x" * 43

    async def noisy_holds_the_limit() -> dict[str, httpx.Response]:
        async with httpx.AsyncClient(base_url=url, timeout=60) as c:
            held = [_transfer(c, noisy, noisy_w, "1.00"), _transfer(c, noisy, noisy_w, "2.00")]
            await asyncio.to_thread(_wait_in_flight, metrics_url, 2)  # the limit is taken
            out: dict[str, httpx.Response] = {}
            k = uuid.uuid4().hex
            out["noisy"] = await c.post(
                "/v1/transfers",
                json=book(noisy_w[0], noisy_w[1], "3.00", k),
                headers={**_auth(noisy, k), "X-Request-Id": "req-door-1"},
            )
            out["no_route"] = await c.post("/v1/no-such-route", json={}, headers=_auth(noisy, k))
            heads = await asyncio.to_thread(_raw_twice, url, noisy.key)
            out["raw"] = httpx.Response(200, content=b"".join(heads))
            out["quiet"] = await _transfer(c, quiet, quiet_w, "1.00")  # under its fair share
            out["read"] = await c.get("/v1/events", headers=_auth(noisy))  # a lane of their own
            out["first"], out["second"] = await asyncio.gather(*held)
            return out

    async def equal_shares() -> dict[str, httpx.Response]:
        async with httpx.AsyncClient(base_url=url, timeout=60) as c:
            held = [_transfer(c, noisy, noisy_w, "1.00"), _transfer(c, quiet, quiet_w, "1.00")]
            await asyncio.to_thread(_wait_in_flight, metrics_url, 2)
            out: dict[str, httpx.Response] = {}
            # Nobody is over a share: a new sandbox credential is shed, a live one passes the
            # door (authentication then refuses it: the door decides before it).
            out["sandbox"] = await c.post("/v1/customers", json={}, headers={"Authorization": test_key})
            out["live"] = await c.post("/v1/customers", json={}, headers={"Authorization": live_key})
            out["first"], out["second"] = await asyncio.gather(*held)
            return out

    out = asyncio.run(noisy_holds_the_limit())
    _overloaded(out["noisy"], "instance")
    assert out["noisy"].headers["x-request-id"] == "req-door-1"
    _overloaded(out["no_route"], "instance")  # the router would have said 404
    heads = out["raw"].content.split(b"HTTP/1.1 ")[1:]
    assert len(heads) == 2 and all(h.startswith(b"503 ") for h in heads), heads
    assert all(b"connection: close" not in h.lower() for h in heads)
    assert out["quiet"].status_code == 201, out["quiet"].text
    assert out["read"].status_code == 200, out["read"].text
    assert out["first"].status_code == 201 and out["second"].status_code == 201

    # The refused command did nothing: its retry with the same key runs normally, once.
    k = out["noisy"].request.headers["idempotency-key"]
    retry = httpx.post(
        url + "/v1/transfers",
        json=book(noisy_w[0], noisy_w[1], "3.00", k),
        headers=_auth(noisy, k),
        timeout=60,
    )
    assert retry.status_code == 201 and retry.headers.get("x-idempotent-replay") != "true", retry.text

    out = asyncio.run(equal_shares())
    _overloaded(out["sandbox"], "instance")
    assert out["live"].status_code == 401, out["live"].text
    assert out["first"].status_code == 201 and out["second"].status_code == 201

    metrics = httpx.get(metrics_url + "/metrics", timeout=10).text
    assert 'sluice_admission_shed_total{reason="instance"}' in metrics
    assert 'sluice_admission_limit{scope="instance"} 2.0' in metrics
    assert noisy.tenant_id not in metrics and quiet.tenant_id not in metrics
