"""The Python SDK's errors and results in words (docs/guides/errors.md, "In the SDKs"): a request
that got no answer is ConnectionFailed with the network's exception as its cause, and an outage
never leaves the client throttling itself; a client built from the wrong thing is a TypeError
that names the fix; every result and page says its request id and whether it was a replay.

The network failures are real: a local port nothing listens on refuses the connection."""

from __future__ import annotations

import asyncio
import json
import random
import socket
from typing import Any

import httpx
import pytest

from sluice_sdk import (
    AdaptiveThrottle,
    AsyncSluice,
    Config,
    ConnectionFailed,
    ProviderUnavailable,
    ResponseInfo,
    RetryPolicy,
    Sluice,
    Throttled,
    response_of,
)
from sluice_sdk import client as sdk_client

pytestmark = pytest.mark.unit

KEY = "sk_test_" + "a" * 43
CUSTOMER = {"customer_id": "cus_1", "account_type": "individual", "service_user_id": "u-1"}
BODY: Any = {
    "account_type": "individual",
    "email": "ada@example.com",
    "country_code": "US",
    "service_user_id": "u-1",
    "full_name": "Ada Lovelace",
}


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released): connecting is refused."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def no_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sdk_client.time, "sleep", lambda _s: None)
    monkeypatch.setattr("sluice_sdk.core.time.sleep", lambda _s: None)


def test_a_refused_connection_is_connection_failed_with_its_cause(monkeypatch: pytest.MonkeyPatch) -> None:
    no_sleep(monkeypatch)
    config = Config(
        api_key=KEY, base_url=f"http://127.0.0.1:{closed_port()}", retry=RetryPolicy(max_attempts=2)
    )
    with Sluice(config) as sluice, pytest.raises(ConnectionFailed) as info:
        sluice.customers.create(**BODY)
    assert isinstance(info.value.__cause__, httpx.ConnectError)
    assert "ConnectError" in str(info.value) and info.value.code == "connection_failed"
    assert not isinstance(info.value, Throttled)
    assert sluice.stats.unreached == 2 and sluice.stats.refused == 0


def test_after_an_outage_the_next_call_is_sent_not_throttled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Twenty attempts without an answer, then the network is back: the throttle, which counts
    only the gateway's 429 and 503, admits the next call (it used to refuse ~95 % of them as
    Throttled, 'the gateway is shedding', though the gateway had said nothing)."""
    no_sleep(monkeypatch)
    down = [True]
    seen: list[httpx.Request] = []

    def network(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if down[0]:
            raise httpx.ConnectError("[Errno 111] Connection refused", request=request)
        return httpx.Response(
            201, json={"success": True, "data": CUSTOMER}, headers={"X-Request-Id": "req_ok"}
        )

    config = Config(api_key=KEY, base_url="http://gw.test", retry=RetryPolicy(max_attempts=4))
    sluice = Sluice(config, transport=httpx.MockTransport(network), rng=random.Random(1))
    for _ in range(5):
        with pytest.raises(ConnectionFailed) as info:
            sluice.customers.create(**BODY)
        assert isinstance(info.value.__cause__, httpx.ConnectError)
    assert len(seen) == 20 and sluice.throttle is not None and sluice.throttle.probability() == 0.0
    down[0] = False
    for _ in range(5):
        assert sluice.customers.create(**BODY)["customer_id"] == "cus_1"
    assert sluice.stats.throttled == 0


def test_the_throttle_still_holds_back_when_the_gateway_sheds(monkeypatch: pytest.MonkeyPatch) -> None:
    """The other half: 503 answers do count, so a shedding gateway is still spared."""
    no_sleep(monkeypatch)

    def shedding(request: httpx.Request) -> httpx.Response:
        body = {"success": False, "error": {"code": "provider_unavailable", "message": "x", "details": {}}}
        return httpx.Response(503, json=body, headers={"Retry-After": "0"})

    config = Config(api_key=KEY, base_url="http://gw.test", retry=RetryPolicy(max_attempts=4))
    sluice = Sluice(config, transport=httpx.MockTransport(shedding), rng=random.Random(1))
    sluice.throttle = AdaptiveThrottle()
    for _ in range(10):
        with pytest.raises((Throttled, ProviderUnavailable)):
            sluice.customers.create(**BODY)
    assert sluice.stats.throttled > 0


@pytest.mark.parametrize(
    ("given", "words"),
    [
        (KEY, 'Sluice() takes a Config, not the key itself: Sluice(Config(api_key="sk_test_...")'),
        ({"api_key": KEY}, "Sluice() takes a sluice_sdk.Config, not dict"),
        (None, "Sluice() takes a sluice_sdk.Config, not NoneType"),
    ],
)
def test_a_client_built_from_the_wrong_thing_says_how_to_build_it(given: Any, words: str) -> None:
    with pytest.raises(TypeError) as info:
        Sluice(given)
    assert str(info.value).startswith(words)
    with pytest.raises(TypeError, match=r"^AsyncSluice\(\) takes"):
        AsyncSluice(given)


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"api_key": 12345}, "Config.api_key must be str, not int"),
        ({"api_key": KEY, "timeout_s": "30"}, "Config.timeout_s must be int or float, not str"),
        ({"api_key": KEY, "retry": {"max_attempts": 2}}, "Config.retry must be RetryPolicy, not dict"),
        ({"api_key": KEY, "base_url": 8000}, "Config.base_url must be str or None, not int"),
    ],
)
def test_a_config_of_the_wrong_types_is_a_type_error(fields: dict[str, Any], words: str) -> None:
    with pytest.raises(TypeError) as info:
        Config(**fields)
    assert str(info.value) == words


def scripted(*answers: httpx.Response) -> Sluice:
    queue = list(answers)
    config = Config(api_key=KEY, base_url="http://gw.test")
    return Sluice(config, transport=httpx.MockTransport(lambda _r: queue.pop(0)))


def test_every_result_says_its_request_id_and_whether_it_was_replayed() -> None:
    first = httpx.Response(201, json={"success": True, "data": CUSTOMER}, headers={"X-Request-Id": "req_a"})
    again = httpx.Response(
        201,
        json={"success": True, "data": CUSTOMER},
        headers={"X-Request-Id": "req_b", "X-Idempotent-Replay": "true"},
    )
    listing = {"items": [CUSTOMER], "next_cursor": None}
    page = httpx.Response(200, json={"success": True, "data": listing}, headers={"X-Request-Id": "req_c"})
    sluice = scripted(first, again, page)
    created = sluice.customers.create(**BODY)
    assert response_of(created) == ResponseInfo(request_id="req_a", replayed=False, status=201)
    replayed = sluice.customers.create(**BODY, options={"idempotency_key": "order-1"})
    assert response_of(replayed) == ResponseInfo(request_id="req_b", replayed=True, status=201)
    assert replayed == CUSTOMER and json.loads(json.dumps(replayed)) == CUSTOMER  # still the plain JSON
    one = sluice.customers.list_page(limit=1)
    assert response_of(one).request_id == "req_c" and not response_of(one).replayed
    with pytest.raises(TypeError, match=r"response_of\(\) takes a result or page"):
        response_of({"customer_id": "cus_1"})


def test_the_asyncio_client_says_the_same() -> None:
    answer = httpx.Response(
        201,
        json={"success": True, "data": CUSTOMER},
        headers={"X-Request-Id": "req_z", "X-Idempotent-Replay": "true"},
    )

    async def run() -> ResponseInfo:
        config = Config(api_key=KEY, base_url="http://gw.test")
        async with AsyncSluice(config, transport=httpx.MockTransport(lambda _r: answer)) as sluice:
            return response_of(await sluice.customers.create(**BODY))

    assert asyncio.run(run()) == ResponseInfo(request_id="req_z", replayed=True, status=201)
