"""Partners manage their webhook endpoints through the gateway with the Python SDK: PATCH moves an
endpoint, narrows its event types and disables or enables it (a new URL vetted as at creation);
DELETE answers the endpoint as deleted, after which it is not found, not listed, and sent
nothing, its pending deliveries ended. The TypeScript SDK's side is in
clients/typescript/test/stack/endpoints.test.ts (run by test_sdk_stack.py)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from sluice_sdk import Config, InvalidRequest, NotFound, Sluice, new_key
from tests.conftest import Stack, Tenant, make_tenant
from tests.support.admin import db
from tests.support.webhooks import Receiver

pytestmark = [pytest.mark.inprocess, pytest.mark.timeout(900)]  # the first test starts the stack


@pytest.fixture
def receivers() -> Iterator[Callable[..., Receiver]]:
    made: list[Receiver] = []

    def start(**kwargs: Any) -> Receiver:
        made.append(Receiver(**kwargs).start())
        return made[-1]

    yield start
    for r in made:
        r.stop()


def sdk(t: Tenant, stack: Stack) -> Sluice:
    return Sluice(Config(api_key=t.key, base_url=stack.gateway))


def customer(sluice: Sluice) -> str:
    made = sluice.customers.create(
        account_type="individual",
        email="ada@example.com",
        country_code="US",
        service_user_id=new_key(),
        full_name="Ada",
    )
    return made["customer_id"]


def wait_until(check: Callable[[], bool], timeout: float = 30.0, what: str = "") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.1)


def got_customer(r: Receiver, customer_id: str) -> bool:
    return any(customer_id.encode() in x.body for x in list(r.received))


def stored_event(stack: Stack, tenant_id: str, customer_id: str) -> bool:
    """The webhooks service has stored (and fanned out) the customer's event."""
    rows = db(
        stack,
        "SELECT 1 FROM webhooks.events WHERE tenant_id = $1 AND type = 'customer.created'"
        " AND convert_from(body, 'UTF8') LIKE $2",
        tenant_id,
        f"%{customer_id}%",
    )
    return bool(rows)


def test_an_endpoint_is_moved_narrowed_disabled_and_enabled(
    stack: Stack, receivers: Callable[..., Receiver]
) -> None:
    t = make_tenant(stack)
    first, second = receivers(), receivers()
    sluice = sdk(t, stack)
    wid = sluice.webhooks.create(endpoint_url=first.url)["webhook_id"]

    moved = sluice.webhooks.update(wid, endpoint_url=second.url, enabled_events=["customer.created"])
    assert (moved["webhook_id"], moved["endpoint_url"], moved["status"]) == (wid, second.url, "enabled")
    assert moved["enabled_events"] == ["customer.created"]
    assert sluice.webhooks.retrieve(wid)["endpoint_url"] == second.url
    c1 = customer(sluice)
    wait_until(lambda: got_customer(second, c1), what="the delivery at the new URL")
    assert first.received == []

    paused = sluice.webhooks.update(wid, status="disabled")
    assert (paused["status"], paused["disabled_reason"]) == ("disabled", "disabled_by_partner")
    c2 = customer(sluice)
    wait_until(lambda: stored_event(stack, t.tenant_id, c2), what="the second event stored")
    time.sleep(2.0)  # a delivery would have come by now (nothing is retried here)
    assert not got_customer(second, c2)

    resumed = sluice.webhooks.update(wid, status="enabled")
    assert resumed["status"] == "enabled" and resumed.get("disabled_reason") is None
    c3 = customer(sluice)
    wait_until(lambda: got_customer(second, c3), what="a delivery once enabled again")
    assert not got_customer(second, c2)  # what happened while disabled is in the Events API only
    assert c2 in {e["data"].get("customer_id") for e in sluice.events.list(type="customer.created")}

    with pytest.raises(InvalidRequest) as refused:  # vetted as at creation: the host must resolve
        sluice.webhooks.update(wid, endpoint_url="http://no-such-host.invalid/hook")
    assert refused.value.field == "endpoint_url" and refused.value.reason == "unresolvable_host"
    with pytest.raises(InvalidRequest) as empty:
        sluice.webhooks.update(wid)
    assert empty.value.field == "body"
    with pytest.raises(InvalidRequest):
        sluice.webhooks.update(wid, enabled_events=[])
    assert sluice.webhooks.retrieve(wid)["endpoint_url"] == second.url  # refusals changed nothing

    other = make_tenant(stack)
    with pytest.raises(NotFound):
        sdk(other, stack).webhooks.update(wid, status="disabled")


def test_the_routed_form_patches_and_deletes(stack: Stack, tenant: Tenant) -> None:
    made = tenant.post("/v1/webhooks", {"endpoint_url": "http://127.0.0.1:9/hook"})
    assert made.status_code == 201, made.text
    wid = made.json()["data"]["webhook_id"]

    def routed(body: dict[str, object]) -> httpx.Response:
        headers = tenant.headers(uuid.uuid4().hex, **{"x-service-route": f"/v1/webhooks/{wid}"})
        return httpx.post(stack.gateway + "/", json=body, headers=headers, timeout=30)

    patched = routed({"method": "PATCH", "status": "disabled"})
    assert patched.status_code == 200 and patched.json()["data"]["status"] == "disabled", patched.text
    deleted = routed({"method": "delete"})
    assert deleted.status_code == 200 and deleted.json()["data"]["status"] == "deleted", deleted.text
    assert routed({"method": "DELETE"}).status_code == 404
    no_key = httpx.delete(
        f"{stack.gateway}/v1/webhooks/{wid}", headers={"Authorization": f"Bearer {tenant.key}"}, timeout=30
    )
    assert no_key.status_code == 400 and no_key.json()["error"]["code"] == "idempotency_key_required"


def test_a_deleted_endpoint_is_gone_and_receives_nothing(
    stack: Stack, receivers: Callable[..., Receiver]
) -> None:
    t = make_tenant(stack)
    failing, kept = receivers(default=500), receivers()
    sluice = sdk(t, stack)
    wid = sluice.webhooks.create(endpoint_url=failing.url)["webhook_id"]
    keep = sluice.webhooks.create(endpoint_url=kept.url)["webhook_id"]
    c1 = customer(sluice)
    wait_until(lambda: got_customer(failing, c1), what="a first, failed attempt")
    # Retried every second (the stack's schedule) until it is deleted, however long that takes.
    db(stack, "UPDATE webhooks.deliveries SET max_attempts = 1000 WHERE webhook_id = $1", wid)

    key = new_key()
    deleted = sluice.webhooks.delete(wid, options={"idempotency_key": key})
    assert (deleted["webhook_id"], deleted["status"]) == (wid, "deleted")
    assert sluice.webhooks.delete(wid, options={"idempotency_key": key}) == deleted  # replayed
    with pytest.raises(NotFound):
        sluice.webhooks.retrieve(wid)
    with pytest.raises(NotFound):
        sluice.webhooks.delete(wid)
    with pytest.raises(NotFound):
        sluice.webhooks.update(wid, status="enabled")
    assert [w["webhook_id"] for w in sluice.webhooks.list()] == [keep]
    assert stack.admin_call("enable_webhook", webhook_id=wid).status_code == 404

    time.sleep(1.5)  # an attempt already on its way when the endpoint was deleted may still land
    seen = len(failing.received)
    rows = db(stack, "SELECT status, last_error FROM webhooks.deliveries WHERE webhook_id = $1", wid)
    assert [(r["status"], r["last_error"]) for r in rows] == [("dead", "endpoint_deleted")]
    c2 = customer(sluice)
    wait_until(lambda: got_customer(kept, c2), what="the kept endpoint's delivery")
    time.sleep(3.0)  # three retries' worth of the stack's schedule
    assert len(failing.received) == seen
    assert len(db(stack, "SELECT id FROM webhooks.deliveries WHERE webhook_id = $1", wid)) == 1


def test_a_deleted_endpoint_frees_its_place_among_the_sixteen(stack: Stack) -> None:
    t = make_tenant(stack, rate_limit=100000)
    sluice = sdk(t, stack)
    made = [sluice.webhooks.create(endpoint_url=f"http://127.0.0.1:9/h{n}")["webhook_id"] for n in range(16)]
    with pytest.raises(InvalidRequest) as full:
        sluice.webhooks.create(endpoint_url="http://127.0.0.1:9/h16")
    assert full.value.reason == "too_many_endpoints"
    sluice.webhooks.update(made[0], status="disabled")  # a disabled endpoint still counts
    with pytest.raises(InvalidRequest):
        sluice.webhooks.create(endpoint_url="http://127.0.0.1:9/h16")
    sluice.webhooks.delete(made[0])
    again = sluice.webhooks.create(endpoint_url="http://127.0.0.1:9/h16")["webhook_id"]
    assert sorted(w["webhook_id"] for w in sluice.webhooks.list(limit=100)) == sorted([*made[1:], again])
