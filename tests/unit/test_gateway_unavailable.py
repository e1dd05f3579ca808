"""Every 503 the gateway sends names its ``details.reason`` (docs/guides/errors.md, "Reasons"), so a
bench can tell a refusal for overload (``overloaded``: nothing was taken) from a failure of
admitted work (``upstream_timeout``, ``store_unavailable``, ``in_flight``). Each path is driven
here: the door's refusal, a store that fails during the pipeline, a command with no answer in
time, a key whose first request is still being decided; and no 503 is built elsewhere in the
gateway without a reason."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from prometheus_client import REGISTRY
from redis.exceptions import ConnectionError as RedisConnectionError

from common.auth import TenantRecord
from common.cache_mac import CacheMac
from common.errors import ServiceError, Unavailable
from common.keyring import new_key_setting
from common.settings import Settings
from gateway.app import ENDPOINTS
from gateway.auth import Principal
from gateway.door.asgi import Refusals
from gateway.idempotency import IdempotencyStore, Record
from gateway.pipeline import Incoming, Pipeline
from gateway.ratelimit import Window

pytestmark = pytest.mark.unit

GATEWAY = Path(__file__).resolve().parents[2] / "services" / "gateway"
CUSTOMER = {
    "account_type": "individual",
    "email": "ada@example.com",
    "country_code": "US",
    "service_user_id": "u-1",
    "full_name": "Ada Lovelace",
}


def reason(body: bytes) -> str:
    return str(json.loads(body)["error"]["details"]["reason"])


def test_the_door_refuses_as_overloaded_for_every_bound() -> None:
    refusals = Refusals()
    for bound in ("instance", "tenant", "sandbox", "queue"):
        start, body = refusals.messages(bound, b"req_1")
        assert start["status"] == 503
        assert reason(body["body"]) == Unavailable.OVERLOADED


class FakeAuth:
    def __init__(self, fail: BaseException | None = None) -> None:
        self.fail = fail

    async def authenticate(self, authorization: str | None, client_ip: str | None, claim: Any) -> Principal:
        if self.fail is not None:
            raise self.fail
        tenant = TenantRecord(
            tenant_id="ten_1",
            tenant_name="t",
            default_mode="sandbox",
            rate_limit_per_minute=1000,
            live_enabled=False,
        )
        return Principal(tenant=tenant, key_id="key_1", mode="sandbox", scopes=frozenset({"customers:write"}))


class FakeLimiter:
    async def hit(self, tenant_id: str, mode: str, limit: int) -> Window:
        return Window(limit=limit, remaining=limit - 1, reset=0)


class FakeIdem:
    lease_ms = 1000

    @staticmethod
    def key_hash(key: str) -> str:
        return IdempotencyStore.key_hash(key)

    @staticmethod
    def pending(request_fingerprint: str) -> bytes:
        return IdempotencyStore.pending(request_fingerprint)

    @staticmethod
    def name(tenant_id: str, mode: str, key: str) -> str:
        return IdempotencyStore.name(tenant_id, mode, key)

    async def begin(self, name: str, request_fingerprint: str, first: Any = None) -> None:
        return None  # this request owns its key

    async def abandon(self, name: str) -> None:
        return None


class SilentRpc:
    """Publishes, and no answer comes within the gateway timeout."""

    reply_topic = "sluice.replies.test"

    async def call(self, topic: str, command: Any, key: str | None = None) -> Any:
        raise TimeoutError


def pipeline(auth: FakeAuth) -> Pipeline:
    settings = Settings(encryption_keys=new_key_setting())  # type: ignore[arg-type]
    return Pipeline(settings, auth, FakeLimiter(), FakeIdem(), SilentRpc(), None)  # type: ignore[arg-type]


def create_customer() -> tuple[Any, Incoming]:
    ep = next(e for e in ENDPOINTS if (e.method, e.path) == ("POST", "/v1/customers"))
    raw = json.dumps(CUSTOMER).encode()
    headers = {"authorization": "Bearer sk_test_x", "idempotency-key": "key-0123456789"}
    return ep, Incoming(headers, raw, json.loads(raw), {}, {}, "req_1", "127.0.0.1")


@pytest.mark.parametrize(
    "fail",
    [
        RedisConnectionError("down"),
        # asyncpg's command timeout on a hung PostgreSQL (a BEGIN or a lookup that got no
        # answer) reaches the gateway unwrapped: it was an "unhandled error", a 500 (make chaos,
        # the hung primary, 2026-11-27)
        TimeoutError(),
    ],
)
async def test_a_store_that_fails_is_store_unavailable(fail: BaseException) -> None:
    ep, req = create_customer()
    answer = await pipeline(FakeAuth(fail)).handle(ep, req)
    assert answer.status == 503 and answer.headers["Retry-After"] == "1"
    assert reason(answer.body) == Unavailable.STORE_UNAVAILABLE


async def test_no_answer_in_time_is_upstream_timeout() -> None:
    ep, req = create_customer()
    answer = await pipeline(FakeAuth()).handle(ep, req)
    assert answer.status == 503 and answer.headers["Retry-After"] == "1"
    assert reason(answer.body) == Unavailable.UPSTREAM_TIMEOUT


def unavailable_count(why: str) -> float:
    return REGISTRY.get_sample_value("sluice_gateway_unavailable_total", {"reason": why}) or 0.0


@pytest.mark.parametrize(
    ("fail", "why"),
    [(None, Unavailable.UPSTREAM_TIMEOUT), (RedisConnectionError("down"), Unavailable.STORE_UNAVAILABLE)],
)
async def test_each_503_for_admitted_work_is_counted_by_its_reason(
    fail: BaseException | None, why: Unavailable
) -> None:
    """sluice_gateway_unavailable_total: the unanswered-requests alert reads it."""
    ep, req = create_customer()
    before = unavailable_count(why)
    answer = await pipeline(FakeAuth(fail)).handle(ep, req)
    assert reason(answer.body) == why
    assert unavailable_count(why) == before + 1


class StillPending:
    """A Redis where the key's record stays ``pending`` (its first request still running)."""

    def __init__(self, request_fingerprint: str) -> None:
        self.raw = msgspec.json.encode(Record(state="pending", request_fingerprint=request_fingerprint))

    async def set(self, *args: Any, **kwargs: Any) -> bool:
        return False

    async def get(self, name: str) -> bytes:
        return self.raw


async def test_a_key_still_being_decided_is_in_flight() -> None:
    mac = CacheMac.parse(new_key_setting("c1"))
    store = IdempotencyStore(StillPending("fp"), ttl_s=60, wait_s=0.0, ring=None, mac=mac)  # type: ignore[arg-type]
    with pytest.raises(ServiceError) as info:
        await store.begin("name", "fp")
    assert info.value.status == 503 and info.value.headers["Retry-After"] == "1"
    assert info.value.details["reason"] == Unavailable.IN_FLIGHT


def test_no_503_is_built_without_a_reason() -> None:
    """Every provider_unavailable in the gateway's code is one of the paths above: the door's
    prebuilt refusal (with its reason) or :func:`common.errors.unavailable` (which needs one).
    The one other 503 is the hosted signup page's "still working on it" (an HTML page for a
    browser, not the API's envelope)."""
    built = {
        str(path.relative_to(GATEWAY))
        for path in GATEWAY.rglob("*.py")
        if re.search(r"PROVIDER_UNAVAILABLE|status(_code)?=503|[(,]\s*503\s*\)", path.read_text())
    }
    assert built == {"door/asgi.py", "onboarding/signup.py"}, built
    assert "Unavailable.OVERLOADED" in (GATEWAY / "door" / "asgi.py").read_text()
