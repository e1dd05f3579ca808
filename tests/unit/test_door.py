"""The door as an ASGI handler (docs/performance/overload.md), around a fake app: a refusal is the
prebuilt 503 before the app runs (no routing, no body read), exempt paths pass, reads have a
lane of their own, credentials map to tenants once authenticated, a place is given back
however the request ends, and only a success or a 5xx teaches the limit. On the gateway's
real app: a full lane answers even an unknown route 503, so the refusal is before routing."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from common.settings import Settings
from gateway.app import create_app
from gateway.door.admission import READS, Admission
from gateway.door.asgi import Door, Identities

pytestmark = pytest.mark.unit


class FakeApp:
    """Answers ``status`` once ``release`` is set; counts calls and body reads."""

    def __init__(self, status: int = 201) -> None:
        self.status = status
        self.calls = 0
        self.release = asyncio.Event()
        self.release.set()
        self.entered = asyncio.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.calls += 1
        self.entered.set()
        await self.release.wait()
        if self.status < 0:
            raise RuntimeError("the handler failed")
        await send({"type": "http.response.start", "status": self.status, "headers": []})
        await send({"type": "http.response.body", "body": b"{}", "more_body": False})


def scope(method: str = "POST", path: str = "/v1/transfers", **headers: str) -> dict[str, Any]:
    hs = [(k.replace("_", "-").lower().encode(), v.encode()) for k, v in headers.items()]
    return {"type": "http", "method": method, "path": path, "headers": hs}


async def call(handler: Any, sc: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    sent: list[dict[str, Any]] = []
    reads = 0

    async def receive() -> dict[str, Any]:
        nonlocal reads
        reads += 1
        return {"type": "http.request", "body": b"{}", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await asyncio.wait_for(handler(sc, receive, send), 10)  # a request the app holds: a failure
    return sent, reads


def door(ceiling: int = 1, tenant: int = 1, reads: int = 1) -> Door:
    commands = Admission(ceiling, tenant, initial=ceiling, min_limit=1)
    read_lane = Admission(reads, reads, initial=reads, min_limit=1, metrics=READS)
    return Door(commands, read_lane, Identities())


def answer(sent: list[dict[str, Any]]) -> tuple[int, dict[bytes, bytes], dict[str, Any]]:
    start, body = sent
    assert body["more_body"] is False
    return start["status"], dict(start["headers"]), json.loads(body["body"])


async def hold(handler: Any, app: FakeApp, sc: dict[str, Any]) -> asyncio.Task[Any]:
    """Start a request that stays in the app until ``app.release`` is set."""
    app.release.clear()
    app.entered.clear()
    task = asyncio.create_task(call(handler, sc))
    entered = asyncio.create_task(app.entered.wait())
    await asyncio.wait({task, entered}, return_when=asyncio.FIRST_COMPLETED)
    assert app.entered.is_set(), f"not admitted: {task.result()[0]}"
    entered.cancel()
    return task


async def test_beyond_the_limit_the_answer_is_the_prebuilt_503_and_the_app_never_runs() -> None:
    d, app = door(), FakeApp()
    handler = d.around(app)
    held = await hold(handler, app, scope(authorization="Bearer sk_live_a"))
    sent, reads = await call(handler, scope(authorization="Bearer sk_live_b", x_request_id="req-42"))
    status, headers, body = answer(sent)
    assert (status, app.calls, reads) == (503, 1, 0)  # no app, no body read
    assert headers[b"retry-after"] == b"1"
    assert headers[b"content-type"] == b"application/json"
    assert headers[b"x-request-id"] == b"req-42"
    assert int(headers[b"content-length"]) == len(sent[1]["body"])
    assert body == {
        "success": False,
        "error": {
            "code": "provider_unavailable",
            "message": "the gateway is at capacity; nothing was done: retry with the same Idempotency-Key",
            "details": {"reason": "overloaded", "bound": "instance", "request_id": "req-42"},
        },
    }
    app.release.set()
    done, _ = await held
    assert done[0]["status"] == 201
    assert d.commands.in_flight == 0
    sent, _ = await call(handler, scope(authorization="Bearer sk_live_b"))
    assert sent[0]["status"] == 201  # the place is free again


async def test_an_unsafe_request_id_is_replaced_in_the_header_and_the_body() -> None:
    d, app = door(), FakeApp()
    handler = d.around(app)
    held = await hold(handler, app, scope())
    sent, _ = await call(handler, scope(x_request_id="bad id\n"))
    _, headers, body = answer(sent)
    rid = headers[b"x-request-id"].decode()
    assert rid.startswith("req_") and body["error"]["details"]["request_id"] == rid
    sent, _ = await call(handler, scope())
    assert answer(sent)[2]["error"]["details"]["request_id"].startswith("req_")
    app.release.set()
    await held


async def test_health_readiness_and_the_reference_pass_a_full_door() -> None:
    d, app = door(), FakeApp(status=200)
    handler = d.around(app)
    held = await hold(handler, app, scope("GET", "/v1/wallets"))  # the reads lane is full
    held2 = await hold(handler, app, scope())  # and the commands lane
    app.release.set()
    for sc in (scope("GET", "/v1/health"), scope("GET", "/readyz"), scope("GET", "/healthz"),
               scope("GET", "/docs"), scope("OPTIONS", "/v1/transfers")):  # fmt: skip
        app.release.clear()
        app.release.set()
        sent, _ = await call(handler, sc)
        assert sent[0]["status"] == 200, sc
    await held
    await held2


async def test_reads_have_their_own_lane() -> None:
    d, app = door(reads=1), FakeApp(status=200)
    handler = d.around(app)
    held = await hold(handler, app, scope())  # one command holds the commands lane
    app.release.set()
    sent, _ = await call(handler, scope("GET", "/v1/wallets/w1"))
    assert sent[0]["status"] == 200  # a read still gets in
    await held
    app.release.clear()
    held = await hold(handler, app, scope("GET", "/v1/wallets/w1"))
    sent, _ = await call(handler, scope("GET", "/v1/customers"))
    assert answer(sent)[0] == 503  # the reads' own bound
    app.release.set()
    sent, _ = await call(handler, scope("PATCH", "/v1/webhooks/we1"))
    assert sent[0]["status"] == 200  # and commands do not see it
    await held


async def test_a_place_is_given_back_when_the_app_fails_or_is_cancelled() -> None:
    d, app = door(), FakeApp(status=-1)
    handler = d.around(app)
    with pytest.raises(RuntimeError):
        await call(handler, scope())
    assert d.commands.in_flight == 0
    app.status = 201
    task = await hold(handler, app, scope())
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert d.commands.in_flight == 0 and d.commands.per_key[False] == {}


async def test_only_successes_and_server_errors_teach_the_limit() -> None:
    seen: list[float | None] = []
    d = door(ceiling=10, tenant=10)
    original = d.commands.release

    def spy(
        key: str, sandbox: bool, rtt_s: float | None, in_flight: int, now: float, known: bool = True
    ) -> None:
        seen.append(rtt_s)
        original(key, sandbox, rtt_s, in_flight, now, known)

    d.commands.release = spy  # type: ignore[method-assign]
    for status in (201, 200, 400, 401, 409, 429, 503, 500):
        await call(d.around(FakeApp(status)), scope())
    assert [s is not None for s in seen] == [True, True, False, False, False, False, True, True]


async def test_a_credential_counts_as_its_tenant_once_authenticated() -> None:
    ids = Identities(size=2)
    assert ids.of(None) == ("anonymous", False, False)
    test_key, sandbox, known = ids.of(b"Bearer sk_test_xyz")
    assert test_key.startswith("unknown:") and (sandbox, known) == (True, False)
    assert ids.of(b"Bearer sk_test_xyz")[0] == test_key  # the same credential, the same key
    assert ids.of(b"Bearer sk_test_xyw")[0] != test_key
    assert ids.of(b"Bearer sk_live_xyz")[1:] == (False, False)
    assert ids.of(b"Bearer eyJhbGciOi.x.y")[1:] == (False, False)  # a JWT: live until learnt
    assert "xyz" not in test_key  # a digest, not the credential (x, y, z are not hex digits)
    ids.learn("Bearer sk_test_xyz", "ten_1", "sandbox")
    ids.learn("bearer  eyJhbGciOi.x.y ", "ten_1", "sandbox")  # a JWT of the same tenant
    assert ids.of(b"Bearer sk_test_xyz") == ("ten_1:sandbox", True, True)
    assert ids.of(b"Bearer eyJhbGciOi.x.y") == ("ten_1:sandbox", True, True)
    assert all(b"sk_test" not in digest for digest in ids.known)
    ids.learn("Bearer sk_live_x", "ten_2", "production")  # the oldest is forgotten (size 2)
    assert ids.of(b"Bearer sk_live_x") == ("ten_2:production", False, True)
    assert ids.of(b"Bearer sk_test_xyz") == (test_key, True, False)
    ids.learn(None, "ten_3", "sandbox")
    assert len(ids.known) == 2


async def test_unknown_credentials_claim_no_fair_share() -> None:
    d, app = door(ceiling=2, tenant=2), FakeApp()
    d.identities.learn("Bearer sk_live_noisy", "ten_noisy", "production")
    handler = d.around(app)
    noisy = scope(authorization="Bearer sk_live_noisy")
    held = [await hold(handler, app, noisy), await hold(handler, app, noisy)]
    for n in range(3):  # each a stranger with nothing in flight, the noisy tenant over its share
        sent, _ = await call(handler, scope(authorization=f"Bearer sk_live_junk{n}"))
        assert answer(sent)[0] == 503
    app.release.set()
    await asyncio.gather(*held)


async def test_a_quiet_tenant_gets_in_while_a_noisy_one_is_refused() -> None:
    d, app = door(ceiling=2, tenant=2), FakeApp()
    d.identities.learn("Bearer sk_live_noisy", "ten_noisy", "production")
    d.identities.learn("Bearer sk_live_quiet", "ten_quiet", "production")
    handler = d.around(app)
    noisy, quiet = scope(authorization="Bearer sk_live_noisy"), scope(authorization="Bearer sk_live_quiet")
    held = [await hold(handler, app, noisy), await hold(handler, app, noisy)]
    sent, _ = await call(handler, noisy)
    assert answer(sent)[0] == 503
    held.append(await hold(handler, app, quiet))  # admitted past the limit: its fair share
    assert d.commands.per_key[False] == {"ten_noisy:production": 2, "ten_quiet:production": 1}
    app.release.set()
    await asyncio.gather(*held)


async def test_non_http_scopes_pass_through() -> None:
    d, seen = door(), []

    async def app(sc: Any, receive: Any, send: Any) -> None:
        seen.append(sc["type"])

    await d.around(app)({"type": "lifespan"}, None, None)
    assert seen == ["lifespan"]


async def test_the_gateway_refuses_before_routing() -> None:
    app = create_app(Settings(env="development", max_in_flight=1, tenant_max_in_flight=1))
    d: Door = app.state.door
    assert d.commands.admit("someone") is None  # the lane is full
    sent, reads = await call(app, scope("POST", "/no/such/route", x_request_id="req-7"))
    status, headers, body = answer(sent)  # 503 overloaded, not the router's 404
    assert (status, reads, headers[b"x-request-id"]) == (503, 0, b"req-7")
    assert body["error"]["details"]["bound"] == "instance"
