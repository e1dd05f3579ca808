"""The Python SDK's resources and per-request options against a scripted transport
(httpx.MockTransport) and a fake clock: each test names the broken behaviour that fails it."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
import random
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from sluice_api.api.transfers import post_v1_transfers
from sluice_sdk import (
    AsyncSluice,
    Config,
    DeadlineExceeded,
    IdempotencyConflict,
    InternalError,
    Lenient,
    ProviderUnavailable,
    RateLimited,
    RetryPolicy,
    Sluice,
    Throttled,
    WebhookRefused,
    sign_test_event,
    verify_webhook,
)
from sluice_sdk import core as sdk_core
from sluice_sdk.pages import page_fields
from sluice_sdk.retry import AdaptiveThrottle
from tools.codegen import clients, sdk_resources

pytestmark = pytest.mark.unit

KEY = "sk_test_" + "a" * 43
LIVE = "sk_live_" + "b" * 43
Handler = Callable[[httpx.Request], httpx.Response]


def envelope(data: Any, status: int = 200, **headers: str) -> httpx.Response:
    return httpx.Response(status, json={"success": True, "data": data}, headers=headers)


def error(code: str, status: int, headers: dict[str, str] | None = None, **details: Any) -> httpx.Response:
    body = {"success": False, "error": {"code": code, "message": code, "details": details}}
    return httpx.Response(status, json=body, headers={"X-Request-Id": "req_1", **(headers or {})})


class Script:
    """Answers requests in order (a response, an exception to raise, or a function of the
    request); records each request."""

    def __init__(self, *answers: httpx.Response | Exception | Handler) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer(request) if callable(answer) else answer

    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests if r.content]


class Clock:
    """time.monotonic and time.sleep of sluice_sdk.core: sleeping moves the clock."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []
        monkeypatch.setattr(sdk_core.time, "monotonic", lambda: self.now)
        monkeypatch.setattr(sdk_core.time, "sleep", self.sleep)

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


def sluice(script: Script, **config: Any) -> Sluice:
    config.setdefault("retry", RetryPolicy(max_attempts=4, base_s=0.1, cap_s=1.0))
    client_config = Config(api_key=config.pop("api_key", KEY), base_url="http://gw.test", **config)
    return Sluice(client_config, rng=random.Random(5), transport=httpx.MockTransport(script))


def test_resources_send_typed_bodies_and_return_the_inner_object(monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken when a resource answers the envelope (``.data``) or needs generated names."""
    Clock(monkeypatch)
    script = Script(
        envelope({"customer_id": "cus_1", "provider": "service"}, 201),
        envelope({"customer_id": "cus_1", "account_type": "individual", "service_user_id": "u"}),
    )
    s = sluice(script)
    created = s.customers.create(
        account_type="individual",
        email="a@example.com",
        country_code="US",
        service_user_id="u",
        full_name="A",
    )
    assert created == {"customer_id": "cus_1", "provider": "service"}
    got = s.customers.retrieve("cus_1/../x")
    assert got["customer_id"] == "cus_1"
    post, get = script.requests
    assert (post.method, post.url.path) == ("POST", "/v1/customers")
    assert script.bodies()[0]["email"] == "a@example.com" and post.headers["idempotency-key"].startswith(
        "sdk_"
    )
    assert post.headers["x-service-mode"] == "sandbox" and post.headers["authorization"] == f"Bearer {KEY}"
    assert get.url.raw_path == b"/v1/customers/cus_1%2F..%2Fx" and "idempotency-key" not in get.headers


def test_every_operation_of_the_document_is_a_resource_method() -> None:
    """Broken when an operation of the OpenAPI document has no method in either SDK."""
    doc = clients.for_generators(clients.document())
    names = sdk_resources.names(doc)
    assert len(names) == sum(len(ops) for ops in doc["paths"].values()) == len(set(names))
    s = Sluice(Config(api_key=KEY))
    ts = (clients.CLIENTS / clients.TS_RESOURCES).read_text()
    for name in names:
        resource, verb = name.split(".")
        assert callable(getattr(getattr(s, resource), verb)), name
        assert f"this.{sdk_resources.camel(resource)} = new {sdk_resources.pascal(resource)}(core)" in ts
        assert f"  {sdk_resources.camel(verb)}(" in ts, name


def test_list_follows_every_page(monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken when list() returns one page or loses the query."""
    Clock(monkeypatch)
    script = Script(
        envelope({"items": [{"event_id": 1}, {"event_id": 2}], "next_cursor": "evt_2"}),
        envelope({"items": [{"event_id": 3}], "next_cursor": None}),
    )
    events = list(sluice(script).events.list(limit=2, type="transfer.created"))
    assert [e["event_id"] for e in events] == [1, 2, 3]  # type: ignore[typeddict-item]
    first, second = script.requests
    assert "starting_after" not in first.url.params and first.url.params["type"] == "transfer.created"
    assert second.url.params["starting_after"] == "evt_2" and second.url.params["limit"] == "2"


def ids(items: Any) -> list[str]:
    return [str(t["transfer_id"]) for t in items]


def test_list_page_is_one_page_with_its_cursor(monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken when list_page walks every page, drops starting_after, next_page loses the limit,
    or limit means anything but the page size."""
    Clock(monkeypatch)
    more = envelope({"items": [{"transfer_id": "tr_3"}, {"transfer_id": "tr_2"}], "next_cursor": "tr_2"})
    script = Script(
        more,
        envelope({"items": [{"transfer_id": "tr_1"}], "next_cursor": None}),
        envelope({"items": [{"transfer_id": "tr_1"}], "next_cursor": None}),
    )
    s = sluice(script)
    page = s.transfers.list_page(limit=2, starting_after="tr_4")
    assert ids(page.data) == ["tr_3", "tr_2"] and page.has_more and page.next_cursor == "tr_2"
    assert len(script.requests) == 1  # one page, one request
    last = page.next_page()
    assert last is not None and ids(last) == ["tr_1"] and len(last) == 1
    assert not last.has_more and last.next_cursor is None and last.next_page() is None
    assert ids(s.transfers.list(limit=2, starting_after="tr_2")) == ["tr_1"]  # resumed from a cursor
    assert [dict(r.url.params) for r in script.requests] == [
        {"limit": "2", "starting_after": "tr_4"},
        {"limit": "2", "starting_after": "tr_2"},
        {"limit": "2", "starting_after": "tr_2"},
    ]


def test_events_page_both_ways_with_order_and_ending_before(monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken when list_page drops order or ending_before, previous_page is offered by a list
    that pages one way, or a page read backward offers no next page because nothing lies
    before it."""
    Clock(monkeypatch)

    def events(*numbers: int, has_more: bool, cursor: str | None) -> httpx.Response:
        items = [{"id": f"evt_{n}", "sequence": n} for n in numbers]
        return envelope({"items": items, "has_more": has_more, "next_cursor": cursor})

    script = Script(
        events(4, 5, has_more=True, cursor="evt_5"),  # oldest first, after evt_3
        events(2, 3, has_more=True, cursor="evt_3"),  # the page before it
        events(1, has_more=False, cursor="evt_1"),  # and before that: the first
        events(2, 3, has_more=True, cursor="evt_3"),  # after evt_1 again
    )
    s = sluice(script)
    page = s.events.list_page(limit=2, order="asc", starting_after="evt_3")
    assert [e["sequence"] for e in page.data] == [4, 5] and page.previous_cursor == "evt_4"
    before = page.previous_page()
    assert before is not None and [e["sequence"] for e in before.data] == [2, 3]
    first = before.previous_page()
    assert first is not None and [e["sequence"] for e in first.data] == [1]
    assert first.previous_cursor is None and first.previous_page() is None  # nothing before
    again = first.next_page()  # read backward and has_more false: the next page is still there
    assert again is not None and [e["sequence"] for e in again.data] == [2, 3]
    assert [dict(r.url.params) for r in script.requests] == [
        {"limit": "2", "order": "asc", "starting_after": "evt_3"},
        {"limit": "2", "order": "asc", "ending_before": "evt_4"},
        {"limit": "2", "order": "asc", "ending_before": "evt_2"},
        {"limit": "2", "order": "asc", "starting_after": "evt_1"},
    ]
    one_way = Script(envelope({"items": [{"transfer_id": "tr_2"}], "next_cursor": "tr_2"}))
    page_one_way = sluice(one_way).transfers.list_page(limit=1, starting_after="tr_3")
    assert page_one_way.previous_cursor is None and page_one_way.previous_page() is None


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        ({"items": [1], "next_cursor": "c1"}, ([1], True, "c1")),
        ({"items": [1], "next_cursor": None}, ([1], False, None)),
        ({"items": [], "next_cursor": None, "has_more": False}, ([], False, None)),
        ({"items": [1], "next_cursor": "c1", "has_more": False}, ([1], False, "c1")),  # the answer's own
        ("not a page", ([], False, None)),
    ],
)
def test_a_page_reads_has_more_from_the_answer_or_its_cursor(answer: Any, expected: Any) -> None:
    assert page_fields(answer) == expected


async def test_the_async_page_walks_on_from_itself() -> None:
    script = Script(
        envelope({"items": [{"transfer_id": "tr_2"}], "next_cursor": "tr_2"}),
        envelope({"items": [{"transfer_id": "tr_1"}], "next_cursor": None}),
    )
    client_config = Config(api_key=KEY, base_url="http://gw.test")
    async with AsyncSluice(client_config, transport=httpx.MockTransport(script)) as s:
        page = await s.transfers.list_page(limit=1)
        assert ids(page) == ["tr_2"] and page.has_more
        walked = [t["transfer_id"] async for t in page.auto_paging_iter()]
    assert walked == ["tr_2", "tr_1"] and len(script.requests) == 2


def test_update_and_delete_send_patch_and_delete_each_with_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken when update loses its body, delete sends one, or either goes without a key."""
    Clock(monkeypatch)
    hook = {"webhook_id": "wh_1", "endpoint_url": "https://a.example/h"}
    script = Script(envelope({**hook, "status": "disabled"}), envelope({**hook, "status": "deleted"}))
    s = sluice(script)
    assert s.webhooks.update("wh_1", status="disabled")["status"] == "disabled"
    assert s.webhooks.delete("wh_1")["status"] == "deleted"
    patch, delete = script.requests
    assert (patch.method, patch.url.path, json.loads(patch.content)) == (
        "PATCH",
        "/v1/webhooks/wh_1",
        {"status": "disabled"},
    )
    assert (delete.method, delete.url.path, delete.content) == ("DELETE", "/v1/webhooks/wh_1", b"")
    keys = {patch.headers["idempotency-key"], delete.headers["idempotency-key"]}
    assert len(keys) == 2 and all(k.startswith("sdk_") for k in keys)


def book(key: str | None = None) -> dict[str, Any]:
    party = {"payment_rail": "provider_wallet", "currency": "USDC"}
    body: dict[str, Any] = {
        "source": {**party, "amount": "1.50", "provider_wallet_id": "w_1"},
        "destination": {**party, "provider_wallet_id": "w_2"},
    }
    if key:
        body["idempotency_key"] = key
    return body


def test_a_transfer_carries_one_key_in_header_and_body_on_every_attempt(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Broken when a retry sends a new key, or the body's key is not the header's (500, 502 and
    504 are retried: every POST carries its key)."""
    Clock(monkeypatch)
    created = envelope({"transfer_id": "tr_1", "state": "completed", "provider": "service"}, 201)
    script = Script(
        error("internal_error", 500), httpx.Response(502, text="bad gateway"), httpx.Response(504), created
    )
    s = sluice(script)
    assert s.transfers.create(**book())["transfer_id"] == "tr_1"  # type: ignore[typeddict-item]
    keys = {r.headers["idempotency-key"] for r in script.requests}
    assert len(script.requests) == 4 and len(keys) == 1
    assert {b["idempotency_key"] for b in script.bodies()} == keys
    mine = Script(created)
    sluice(mine).transfers.create(**book(), options={"idempotency_key": "order-42-transfer"})  # type: ignore[typeddict-item]
    assert (
        mine.requests[0].headers["idempotency-key"]
        == mine.bodies()[0]["idempotency_key"]
        == "order-42-transfer"
    )
    with pytest.raises(ValueError):
        sluice(Script()).transfers.create(**book("a-key-123"), options={"idempotency_key": "another-key"})  # type: ignore[typeddict-item]


def test_a_2xx_is_never_an_error_and_unknown_values_are_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken when a created transfer whose answer has a value newer than the SDK (an enum value,
    a field) is raised as SluiceError code=http_201: the transfer was made."""
    Clock(monkeypatch)
    newer = {"transfer_id": "tr_1", "state": "settling", "provider": "another", "fx_rate": "1.0001"}
    script = Script(envelope(newer, 201), envelope(newer, 201), httpx.Response(201, text="<html>"))
    s = sluice(script)
    assert s.transfers.create(**book("k-12345678")) == newer  # type: ignore[typeddict-item]
    legacy = s.call(
        post_v1_transfers.sync_detailed, body=book("k-12345678")
    )  # the generated model refuses it
    assert (
        isinstance(legacy, Lenient)
        and legacy.data.transfer_id == "tr_1"
        and legacy.data.provider == "another"
    )
    assert s.transfers.create(**book("k-12345678")) == {}  # type: ignore[typeddict-item]


def test_errors_409_is_final_429_waits_for_retry_after_as_seconds_or_a_date(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Broken when a 409 is retried, or a 429's Retry-After (seconds or an HTTP date) is not
    waited for."""
    clock = Clock(monkeypatch)
    conflict = Script(error("idempotency_replay_mismatch", 409))
    with pytest.raises(IdempotencyConflict) as info:
        sluice(conflict).customers.create(
            account_type="individual", email="e", country_code="US", service_user_id="u"
        )
    assert len(conflict.requests) == 1 and info.value.request_id == "req_1" and clock.sleeps == []
    at = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    script = Script(
        error("rate_limited", 429, {"Retry-After": "2"}),
        error("rate_limited", 429, {"Retry-After": at}),
        envelope({"customer_id": "cus_1", "provider": "service"}, 201),
    )
    sluice(script).customers.create(
        account_type="individual", email="e", country_code="US", service_user_id="u"
    )
    assert clock.sleeps[0] >= 2 and 20 < clock.sleeps[1] < 32, clock.sleeps


def test_a_retry_after_above_60_s_is_raised_carrying_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken when the SDK sleeps through a Retry-After of minutes, or loses it."""
    clock = Clock(monkeypatch)
    at = format_datetime(datetime.now(UTC) + timedelta(seconds=600), usegmt=True)
    for after in ("120", at):
        script = Script(error("rate_limited", 429, {"Retry-After": after}))
        with pytest.raises(RateLimited) as info:
            sluice(script).health.retrieve()
        assert info.value.retry_after is not None and info.value.retry_after > 60 and clock.sleeps == []


def test_timeout_is_an_overall_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken when timeout bounds one attempt only: an operation keeps retrying past it, or
    waits a Retry-After that ends after it."""
    clock = Clock(monkeypatch)
    script = Script(error("provider_unavailable", 503, {"Retry-After": "5"}))
    with pytest.raises(DeadlineExceeded) as info:
        sluice(script).health.retrieve(options={"timeout": 3})
    assert isinstance(info.value.__cause__, ProviderUnavailable) and clock.sleeps == []

    def slow(request: httpx.Request) -> httpx.Response:
        clock.now += 3.0  # the attempt took 3 s
        return error("internal_error", 500)

    script = Script(slow, slow, slow)
    with pytest.raises(DeadlineExceeded):
        sluice(script, timeout_s=30).health.retrieve(options={"timeout": 6})
    assert len(script.requests) == 2  # a third would start past the deadline
    sent = script.requests[1].extensions["timeout"]
    assert sent["read"] <= 6 - 3.0  # the attempt's own timeout is what is left, not 30 s


def test_max_attempts_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken when per-call max_attempts is ignored (the client's policy applies)."""
    Clock(monkeypatch)
    script = Script(error("internal_error", 500))
    with pytest.raises(InternalError):
        sluice(script).wallets.retrieve("w_1", options={"max_attempts": 1})
    assert len(script.requests) == 1


async def test_cancellation_is_honoured_during_back_off() -> None:
    """Broken when a cancelled task keeps retrying (a back-off that ignores cancellation)."""
    answered = asyncio.Event()

    def shed(request: httpx.Request) -> httpx.Response:
        answered.set()
        return error("provider_unavailable", 503, {"Retry-After": "30"})

    script = Script(shed, envelope({}))
    client_config = Config(api_key=KEY, base_url="http://gw.test")
    async with AsyncSluice(client_config, transport=httpx.MockTransport(script)) as s:
        task = asyncio.create_task(s.health.retrieve())
        await answered.wait()
        await asyncio.sleep(0.05)  # in its 30 s back-off now
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert len(script.requests) == 1


def test_the_throttle_can_be_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken when Config(throttle=False) still refuses attempts locally."""
    Clock(monkeypatch)

    class RefuseAll(AdaptiveThrottle):
        def admit(self, rng: random.Random) -> bool:
            return False

    s = sluice(Script(envelope({})), retry=RetryPolicy(max_attempts=1))
    s.throttle = RefuseAll()
    with pytest.raises(Throttled):
        s.health.retrieve()
    off = Script(*[error("provider_unavailable", 503)] * 30, envelope({"tenant_id": "t"}))
    quiet = sluice(off, throttle=False, retry=RetryPolicy(max_attempts=31, base_s=0.0))
    assert quiet.throttle is None and quiet.health.retrieve() == {"tenant_id": "t"}
    assert len(off.requests) == 31 and quiet.stats.throttled == 0  # 30 refusals, never throttled
    assert Sluice(Config(api_key=KEY), throttle=False).throttle is None


def jwt(claims: dict[str, Any]) -> str:
    part = base64.urlsafe_b64encode(json.dumps(claims).encode()).decode().rstrip("=")
    return f"eyJhbGciOiJIUzI1NiJ9.{part}.c2ln"


def test_live_mode_comes_from_the_credential_and_needs_https() -> None:
    """Broken when a live key may go over plain http to a remote host, or to a default
    localhost URL, or a JWT's mode claim is ignored."""
    assert Config(api_key=LIVE, base_url="https://api.example.com").mode == "live"
    assert Config(api_key=LIVE, base_url="http://127.0.0.1:8000").mode == "live"  # loopback
    assert Config(api_key=LIVE, base_url="http://[::1]:8000").mode == "live"
    for refused in ("http://api.example.com", "http://10.0.0.5:8000"):
        with pytest.raises(ValueError, match="https"):
            Config(api_key=LIVE, base_url=refused)
    with pytest.raises(ValueError, match="base_url"):
        Config(api_key=LIVE)  # no plain-http localhost default for live
    assert Config(api_key=KEY).base_url == "http://127.0.0.1:8000"
    token = jwt({"sub": "t_1", "mode": "production", "scopes": []})
    assert Config(api_key=token, base_url="https://api.example.com").mode == "live"
    with pytest.raises(ValueError, match="https"):
        Config(api_key=token, base_url="http://api.example.com")
    assert Config(api_key=jwt({"mode": "sandbox"})).mode == "sandbox"
    with pytest.raises(ValueError):
        Config(api_key=token, base_url="https://api.example.com", mode="sandbox")
    s = Sluice(Config(api_key=token, base_url="https://api.example.com"))
    assert s.api.get_httpx_client().headers["x-service-mode"] == "production"


def test_hooks_and_debug_logging_never_show_the_key(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Broken when on_request/on_response are not called, or a log line carries the key."""
    Clock(monkeypatch)
    seen: list[str] = []
    script = Script(
        error("internal_error", 500),
        httpx.Response(200, json={"data": {"tenant_id": "t"}}, headers={"X-Request-Id": "req_9"}),
    )
    client_config = Config(api_key=KEY, base_url="http://gw.test")
    s = Sluice(
        client_config,
        transport=httpx.MockTransport(script),
        on_request=lambda r: seen.append(f"> {r.method} {r.url.path}"),
        on_response=lambda r: seen.append(f"< {r.status_code}"),
    )
    with caplog.at_level(logging.DEBUG, logger="sluice_sdk"):
        s.health.retrieve()
    assert seen == ["> GET /v1/health", "< 500", "> GET /v1/health", "< 200"]
    lines = [r.getMessage() for r in caplog.records if r.name == "sluice_sdk"]
    assert any("attempt 2: 200 request_id=req_9" in line for line in lines), lines
    assert not any(KEY in line for line in lines)


SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()
OTHER = "whsec_" + base64.b64encode(b"o" * 32).decode()


def test_a_test_event_signed_by_the_helper_verifies_as_a_typed_event() -> None:
    """Broken when the helper's delivery does not verify with the SDK's own check (header
    names, signed content), or a stale signature time is not refused."""
    transfer = {"transfer_id": "tr_1", "state": "completed", "previous_state": "pending"}
    delivery = sign_test_event(SECRET, {"type": "transfer.updated", "data": transfer})
    event = verify_webhook(delivery.body, delivery.headers, SECRET)
    assert event["type"] == "transfer.updated" and event["id"].startswith("evt_test_")
    if event["type"] == "transfer.updated":  # narrowed: data is TransferUpdatedData
        assert event["data"]["previous_state"] == "pending"
    both = sign_test_event([SECRET, OTHER], {"type": "customer.created", "data": {}})
    assert len(both.headers["x-service-signature"].split()) == 2
    assert verify_webhook(both.body, both.headers, OTHER)["type"] == "customer.created"
    stale = sign_test_event(
        SECRET, {"type": "customer.created", "data": {}}, at=datetime.now(UTC) - timedelta(minutes=10)
    )
    with pytest.raises(WebhookRefused):
        verify_webhook(stale.body, stale.headers, SECRET)
    with pytest.raises(WebhookRefused):
        verify_webhook(delivery.body, delivery.headers, OTHER)


TYPED_OK = """
from sluice_sdk import Config, Sluice
s = Sluice(Config(api_key="sk_test_x"))
c = s.customers.create(
    account_type="individual", email="e", country_code="US", service_user_id="u", full_name="A"
)
b = s.customers.create(
    account_type="business", email="e", country_code="US", service_user_id="u", company_name="B"
)
state: str = s.transfers.retrieve("tr_1")["state"]
created_at: str = c["created_at"]
t = s.transfers.create(
    source={"payment_rail": "provider_wallet", "currency": "USDC", "provider_wallet_id": "w", "amount": "10"},
    destination={"payment_rail": "provider_wallet", "currency": "USDC", "provider_wallet_id": "w2"},
    developer_fee={"percentage": 1.5},
)
w = s.wallets.retrieve("w_1", options={"timeout": 5.0, "max_attempts": 2, "idempotency_key": "k"})
"""
TYPED_WRONG = {
    "a misspelt field": 's.customers.create(account_type="individual", emial="e", country_code="US", '
    'service_user_id="u")',
    "an enum value the gateway refuses": 's.customers.create(account_type="person", email="e", '
    'country_code="US", service_user_id="u")',
    "a required field left out": 's.customers.create(account_type="individual", email="e", '
    'country_code="US")',
    "an individual without full_name": 's.customers.create(account_type="individual", email="e", '
    'country_code="US", service_user_id="u")',
    "a business without company_name": 's.customers.create(account_type="business", email="e", '
    'country_code="US", service_user_id="u", full_name="A")',
    "an id that is not a string": "s.wallets.retrieve(123)",
    "an option that does not exist": 's.health.retrieve(options={"timeout_s": 5})',
    "a misspelt answer field": 's.transfers.retrieve("tr_1")["stat"]',
    "a misspelt client option": 'Sluice(Config(api_key="sk_test_x"), throtle=False)',
}


def test_parameters_and_answers_are_typed_for_mypy_strict(tmp_path: Path) -> None:
    """Broken when a resource takes **kwargs: Any (bodyy=, wallet=123 passed mypy --strict) or
    answers Any: each wrong line must be an error, the right ones none."""
    (tmp_path / "good.py").write_text(TYPED_OK)
    for n, line in enumerate(TYPED_WRONG.values()):
        (tmp_path / f"wrong_{n}.py").write_text(TYPED_OK.split("c = ")[0] + line + "\n")
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-incremental",
            *sorted(p.name for p in tmp_path.glob("*.py")),
        ],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(clients.CLIENTS / "python")},
        capture_output=True,
        text=True,
        check=False,
    )
    errors = {line.split(":")[0] for line in run.stdout.splitlines() if ": error:" in line}
    assert "good.py" not in errors, run.stdout
    missed = [why for n, why in enumerate(TYPED_WRONG) if f"wrong_{n}.py" not in errors]
    assert missed == [], run.stdout


async def test_the_async_client_has_the_same_resources(monkeypatch: pytest.MonkeyPatch) -> None:
    """Broken when AsyncSluice's resources are not awaitable, or its list() is not an async
    iterator over every page, or a retry sends another key."""
    sleeps: list[float] = []

    async def sleep(seconds: float) -> None:
        sleeps.append(seconds)

    monkeypatch.setattr(sdk_core.asyncio, "sleep", sleep)
    script = Script(
        error("provider_unavailable", 503, {"Retry-After": "1"}),
        envelope({"customer_id": "cus_1", "provider": "service"}, 201),
        envelope({"items": [{"customer_id": "cus_1"}], "next_cursor": "cus_1"}),
        envelope({"items": [{"customer_id": "cus_0"}], "next_cursor": None}),
    )
    client_config = Config(api_key=KEY, base_url="http://gw.test")
    async with AsyncSluice(client_config, transport=httpx.MockTransport(script)) as s:
        made = await s.customers.create(
            account_type="business", email="e", country_code="US", service_user_id="u"
        )
        listed = [c["customer_id"] async for c in s.customers.list(limit=1)]
    assert made["customer_id"] == "cus_1" and listed == ["cus_1", "cus_0"] and sleeps[0] >= 1
    assert script.requests[0].headers["idempotency-key"] == script.requests[1].headers["idempotency-key"]
