"""The Python SDK's layer against a scripted transport (httpx.MockTransport): the key chosen
once and reused, which answers are retried and how long it waits, typed errors, the throttle's
arithmetic, pages, configuration, webhook verification."""

from __future__ import annotations

import base64
import json
import random
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from standardwebhooks.webhooks import Webhook

from sluice_api.api.customers import get_v1_customers, post_v1_customers
from sluice_api.api.transfers import post_v1_transfers
from sluice_api.models import (
    IndividualCustomerCreate,
    IndividualCustomerCreateAccountType,
    PartyIn,
    TransferCreate,
)
from sluice_api.models.party_in_payment_rail import PartyInPaymentRail
from sluice_sdk import (
    AdaptiveThrottle,
    Config,
    ConnectionFailed,
    InvalidRequest,
    ProviderUnavailable,
    RetryPolicy,
    Sluice,
    Throttled,
    WebhookRefused,
    verify_webhook,
)
from sluice_sdk import client as sdk_client

pytestmark = pytest.mark.unit

KEY = "sk_test_" + "a" * 43
CUSTOMER = {"customer_id": "cus_1", "provider": "service"}


def envelope(data: Any) -> dict[str, Any]:
    return {"success": True, "data": data}


def error(code: str, status: int, headers: dict[str, str] | None = None, **details: Any) -> httpx.Response:
    body = {"success": False, "error": {"code": code, "message": code, "details": {**details}}}
    return httpx.Response(status, json=body, headers={"X-Request-Id": "req_1", **(headers or {})})


class Script:
    """Answers requests in order; records each request."""

    def __init__(self, *answers: httpx.Response | Exception | Callable[[httpx.Request], httpx.Response]):
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer(request) if callable(answer) else answer


def client(script: Script, sleeps: list[float], monkeypatch: pytest.MonkeyPatch, **retry: Any) -> Sluice:
    monkeypatch.setattr(sdk_client.time, "sleep", sleeps.append)
    config = Config(api_key=KEY, base_url="http://gw.test", retry=RetryPolicy(**retry))
    return Sluice(config, rng=random.Random(7), transport=httpx.MockTransport(script))


def customer() -> IndividualCustomerCreate:
    return IndividualCustomerCreate(
        account_type=IndividualCustomerCreateAccountType.INDIVIDUAL,
        email="ada@example.com",
        country_code="US",
        service_user_id="u-1",
        full_name="Ada Lovelace",
    )


def test_one_key_per_operation_reused_on_every_retry_and_retry_after_honoured(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    overloaded = error("provider_unavailable", 503, {"Retry-After": "1"}, reason="overloaded")
    script = Script(
        overloaded,
        httpx.RemoteProtocolError("Server disconnected without sending a response."),
        httpx.Response(201, json=envelope(CUSTOMER)),
        httpx.Response(201, json=envelope({**CUSTOMER, "customer_id": "cus_2"})),
    )
    sleeps: list[float] = []
    sluice = client(script, sleeps, monkeypatch)
    first = sluice.call(post_v1_customers.sync_detailed, body=customer())
    assert first.data.customer_id == "cus_1"
    keys = [r.headers["idempotency-key"] for r in script.requests]
    assert len(set(keys)) == 1 and keys[0].startswith("sdk_")
    assert sleeps[0] >= 1.0  # never before Retry-After
    assert sleeps[0] <= 1.0 + 0.25  # plus full jitter of the first backoff step
    assert sleeps[1] <= 0.5  # no Retry-After on a dropped connection: jitter only
    assert sluice.stats.attempts == 3 and sluice.stats.retries == 2
    assert sluice.stats.refused == 1 and sluice.stats.unreached == 1  # a dropped connection: not refused
    second = sluice.call(post_v1_customers.sync_detailed, body=customer())
    assert second.data.customer_id == "cus_2"
    assert script.requests[-1].headers["idempotency-key"] != keys[0]  # the next operation: a new key
    assert script.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert script.requests[0].headers["x-service-mode"] == "sandbox"


def test_a_transfer_uses_its_body_key_in_the_header() -> None:
    body = TransferCreate(
        source=PartyIn(payment_rail=PartyInPaymentRail.PROVIDER_WALLET, currency="USDC", amount="1"),
        destination=PartyIn(payment_rail=PartyInPaymentRail.PROVIDER_WALLET, currency="USDC"),
        idempotency_key="order-42-payment",
    )
    kwargs = sdk_client.with_key(post_v1_transfers.sync_detailed, {"body": body})
    assert kwargs["idempotency_key"] == "order-42-payment"
    with pytest.raises(ValueError):
        sdk_client.with_key(post_v1_transfers.sync_detailed, {"body": body, "idempotency_key": "other-key"})
    assert "idempotency_key" not in sdk_client.with_key(get_v1_customers.sync_detailed, {"limit": 5})


def test_non_retryable_answers_stop_at_once_with_a_typed_error(monkeypatch: pytest.MonkeyPatch) -> None:
    script = Script(error("invalid_request", 400, field="email", request_id="req_9"))
    sleeps: list[float] = []
    sluice = client(script, sleeps, monkeypatch)
    with pytest.raises(InvalidRequest) as info:
        sluice.call(post_v1_customers.sync_detailed, body=customer())
    assert info.value.code == "invalid_request" and info.value.field == "email"
    assert info.value.status == 400 and info.value.request_id == "req_1"
    assert len(script.requests) == 1 and sleeps == []


def test_retries_are_bounded_and_the_last_error_is_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    overloaded = error("provider_unavailable", 503, {"Retry-After": "0"}, reason="overloaded", bound="tenant")
    script = Script(*[overloaded] * 3)
    sleeps: list[float] = []
    sluice = client(script, sleeps, monkeypatch, max_attempts=3)
    sluice.throttle = AdaptiveThrottle(k=1e9)  # this test counts attempts, not the throttle
    with pytest.raises(ProviderUnavailable) as info:
        sluice.call(post_v1_customers.sync_detailed, body=customer())
    assert info.value.reason == "overloaded" and info.value.details["bound"] == "tenant"
    assert len(script.requests) == 3 and len(sleeps) == 2


def test_a_proxy_page_and_a_network_failure_are_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    html = httpx.Response(503, text="<html>bad gateway</html>", headers={"Retry-After": "0"})
    script = Script(html, httpx.ConnectError("refused"), httpx.Response(201, json=envelope(CUSTOMER)))
    sleeps: list[float] = []
    sluice = client(script, sleeps, monkeypatch)
    sluice.throttle = AdaptiveThrottle(k=1e9)
    assert sluice.call(post_v1_customers.sync_detailed, body=customer()).data.customer_id == "cus_1"
    script = Script(*[httpx.ConnectError("refused")] * 2)
    sluice = client(script, sleeps, monkeypatch, max_attempts=2)
    with pytest.raises(ConnectionFailed):
        sluice.call(post_v1_customers.sync_detailed, body=customer())


def test_the_throttle_follows_the_sre_formula() -> None:
    now = [0.0]
    throttle = AdaptiveThrottle(k=2, window_s=120, clock=lambda: now[0])
    rng = random.Random(1)
    assert throttle.probability() == 0.0
    for _ in range(10):  # 10 requests, 10 accepted: nothing refused
        assert throttle.admit(rng)
        throttle.record(accepted=True)
    for _ in range(30):  # then 30 refused by the gateway
        throttle.admit(random.Random(0)) or None
        throttle.record(accepted=False)
    requests, accepts = 40, 10
    assert throttle.probability() == pytest.approx((requests - 2 * accepts) / (requests + 1))
    refused = sum(not throttle.admit(rng) for _ in range(1000))
    assert refused > 400  # most attempts are now refused locally
    now[0] += 121  # the window moves on: all forgotten
    assert throttle.probability() == 0.0


def test_a_throttled_attempt_sends_nothing_and_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    script = Script(httpx.Response(201, json=envelope(CUSTOMER)))
    sleeps: list[float] = []
    sluice = client(script, sleeps, monkeypatch)

    class RefuseOnce(AdaptiveThrottle):
        calls = 0

        def admit(self, rng: random.Random) -> bool:
            self.calls += 1
            return self.calls > 1

    sluice.throttle = RefuseOnce()
    assert sluice.call(post_v1_customers.sync_detailed, body=customer()).data.customer_id == "cus_1"
    assert len(script.requests) == 1 and sluice.stats.throttled == 1 and len(sleeps) == 1
    sluice.throttle = AdaptiveThrottle()
    sluice.config = Config(api_key=KEY, retry=RetryPolicy(max_attempts=1))

    class RefuseAll(AdaptiveThrottle):
        def admit(self, rng: random.Random) -> bool:
            return False

    sluice.throttle = RefuseAll()
    with pytest.raises(Throttled):
        sluice.call(post_v1_customers.sync_detailed, body=customer())


def test_pages_follow_next_cursor(monkeypatch: pytest.MonkeyPatch) -> None:
    def item(n: int) -> dict[str, Any]:
        return {"customer_id": f"cus_{n}", "account_type": "individual", "service_user_id": f"u-{n}"}

    pages = [
        envelope({"items": [item(1), item(2)], "next_cursor": "cus_2"}),
        envelope({"items": [item(3)], "next_cursor": None}),
    ]
    script = Script(*[httpx.Response(200, json=p) for p in pages])
    sluice = client(script, [], monkeypatch)
    ids = [c.customer_id for c in sluice.pages(get_v1_customers.sync_detailed, limit=2)]
    assert ids == ["cus_1", "cus_2", "cus_3"]
    assert "starting_after" not in script.requests[0].url.params
    assert script.requests[1].url.params["starting_after"] == "cus_2"


def test_sandbox_and_live_keys_by_configuration() -> None:
    env = {"SLUICE_SANDBOX_KEY": KEY, "SLUICE_LIVE_KEY": "sk_live_" + "b" * 43, "SLUICE_API_URL": "https://x"}
    assert Config.from_env(env).api_key == KEY
    live = Config.from_env({**env, "SLUICE_MODE": "live"})
    assert live.mode == "live" and live.api_key.startswith("sk_live_") and live.base_url == "https://x"
    with pytest.raises(ValueError):
        Config(api_key=KEY, mode="live")
    with pytest.raises(ValueError):
        Config(api_key="sk_live_" + "b" * 43, mode="sandbox")
    with pytest.raises(ValueError):
        Config.from_env({"SLUICE_MODE": "live", "SLUICE_SANDBOX_KEY": KEY})


SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()


def signed(body: bytes, at: float, secret: str = SECRET, event_id: str = "evt_1") -> dict[str, str]:
    from datetime import UTC, datetime

    sig = Webhook(secret).sign(event_id, datetime.fromtimestamp(at, UTC), body.decode())
    return {
        "X-Service-Webhook-Id": event_id,
        "X-Service-Timestamp": str(int(at)),
        "X-Service-Signature": sig,
    }


def test_webhook_verification_accepts_its_own_and_refuses_the_rest() -> None:
    body = json.dumps({"id": "evt_1", "type": "customer.created", "data": {}}).encode()
    now = time.time()
    assert verify_webhook(body, signed(body, now), SECRET)["type"] == "customer.created"
    with pytest.raises(WebhookRefused):
        verify_webhook(body.replace(b"customer", b"wallet"), signed(body, now), SECRET)  # tampered
    with pytest.raises(WebhookRefused):
        verify_webhook(body, signed(body, now - 301), SECRET)  # stale: a replayed old delivery
    with pytest.raises(WebhookRefused):
        verify_webhook(body, signed(body, now + 301), SECRET)  # from the future
    other = "whsec_" + base64.b64encode(b"o" * 32).decode()
    with pytest.raises(WebhookRefused):
        verify_webhook(body, signed(body, now, other), SECRET)
    headers = signed(body, now)
    headers["X-Service-Signature"] += " " + signed(body, now, other)["X-Service-Signature"]
    assert verify_webhook(body, headers, other)["id"] == "evt_1"  # one of two during a rotation
    assert verify_webhook(body, signed(body, now, other), [SECRET, other])["id"] == "evt_1"
    with pytest.raises(WebhookRefused):
        verify_webhook(body, {"X-Service-Signature": "garbage"}, SECRET)
    with pytest.raises(WebhookRefused):
        verify_webhook(body, {**signed(body, now), "X-Service-Signature": "v1"}, SECRET)


async def test_the_async_client_follows_the_same_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    from sluice_sdk import AsyncSluice

    sleeps: list[float] = []

    async def sleep(delay: float) -> None:
        sleeps.append(delay)

    monkeypatch.setattr(sdk_client.asyncio, "sleep", sleep)
    overloaded = error("provider_unavailable", 503, {"Retry-After": "2"}, reason="overloaded")
    item = {"customer_id": "cus_1", "account_type": "individual", "service_user_id": "u-1"}
    script = Script(
        overloaded,
        httpx.Response(201, json=envelope(CUSTOMER)),
        httpx.Response(200, json=envelope({"items": [item], "next_cursor": None})),
    )
    config = Config(api_key=KEY, base_url="http://gw.test")
    async with AsyncSluice(config, rng=random.Random(3), transport=httpx.MockTransport(script)) as sluice:
        created = await sluice.call(post_v1_customers.asyncio_detailed, body=customer())
        listed = [c.customer_id async for c in sluice.pages(get_v1_customers.asyncio_detailed)]
    assert created.data.customer_id == "cus_1" and listed == ["cus_1"]
    assert script.requests[0].headers["idempotency-key"] == script.requests[1].headers["idempotency-key"]
    assert len(sleeps) == 1 and sleeps[0] >= 2.0


def test_a_plain_body_becomes_the_union_case_its_tag_names() -> None:
    """Broken when ``Sluice.call`` cannot read a mapping into a union body (a customer is one
    model per account_type): it raised TypeError before sending anything."""
    from sluice_api.models import BusinessCustomerCreate
    from sluice_sdk.client import with_body

    op = post_v1_customers.sync_detailed
    base = {"email": "e@example.com", "country_code": "US", "service_user_id": "u"}
    person = with_body(op, {"body": {**base, "account_type": "individual", "full_name": "A"}})["body"]
    firm = with_body(op, {"body": {**base, "account_type": "business", "company_name": "C"}})["body"]
    assert isinstance(person, IndividualCustomerCreate) and isinstance(firm, BusinessCustomerCreate)
    unread = with_body(op, {"body": {**base, "account_type": "individual"}})["body"]  # no full_name
    assert unread.to_dict() == {**base, "account_type": "individual"}  # sent as given: the gateway refuses it
