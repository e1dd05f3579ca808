"""The events API, per-endpoint event types and secrets rotated several times a day
(docs/guides/webhooks.md, "The Events API"), through the gateway and the webhooks service on
the real stack."""

from __future__ import annotations

import asyncio
import json

import pytest
from standardwebhooks import Webhook

from tests.conftest import Stack, Tenant, make_tenant
from tests.support.webhooks import Receiver, create_customer, endpoint, standard_headers

pytestmark = [pytest.mark.inprocess, pytest.mark.timeout(900)]  # the first test starts the stack


def _data(r: object) -> dict:  # type: ignore[type-arg]
    assert r.status_code == 200, r.text  # type: ignore[attr-defined]
    return r.json()["data"]  # type: ignore[attr-defined, no-any-return]


def _register(tenant: Tenant, url: str, **fields: object) -> dict:  # type: ignore[type-arg]
    r = tenant.post("/v1/webhooks", {"endpoint_url": url, **fields})
    assert r.status_code == 201, r.text
    return r.json()["data"]  # type: ignore[no-any-return]


async def test_events_are_listed_with_the_id_and_body_that_were_delivered(stack: Stack) -> None:
    tenant = make_tenant(stack)
    receiver = Receiver().start()
    try:
        hook = _register(tenant, receiver.url)
        assert "customer.created" in hook["enabled_events"]  # default: every type
        customers = [await create_customer(tenant) for _ in range(3)]
        got = await receiver.wait_for(3)
        assert len(got) == 3
        delivered = {r.headers["x-service-webhook-id"]: json.loads(r.body) for r in got}

        first = _data(await asyncio.to_thread(tenant.get, "/v1/events?limit=2"))
        rest = _data(
            await asyncio.to_thread(tenant.get, f"/v1/events?limit=2&starting_after={first['next_cursor']}")
        )
        listed = first["items"] + rest["items"]
        assert rest["next_cursor"] is None
        ids = [e["id"] for e in listed]
        numbers = [e["sequence"] for e in listed]
        assert numbers == sorted(set(numbers), reverse=True)  # newest first, by sequence
        assert first["has_more"] and not rest["has_more"]
        oldest = _data(await asyncio.to_thread(tenant.get, "/v1/events?order=asc&limit=10"))
        assert [e["id"] for e in oldest["items"]] == ids[::-1]
        back = _data(await asyncio.to_thread(tenant.get, f"/v1/events?limit=2&ending_before={ids[2]}"))
        assert [e["id"] for e in back["items"]] == ids[:2] and not back["has_more"]
        for query, status, field, reason in (
            ("order=newest", 400, "order", None),
            (f"starting_after={ids[0]}&ending_before={ids[1]}", 400, "ending_before", "conflicting_cursors"),
            ("starting_after=evt_000000000000", 404, "starting_after", "unknown_cursor"),
        ):
            refused = await asyncio.to_thread(tenant.get, f"/v1/events?{query}")
            details = refused.json()["error"]["details"]
            assert refused.status_code == status and details["field"] == field, refused.text
            assert reason is None or details["reason"] == reason, refused.text
        assert {e["id"]: e for e in listed} == delivered  # same ids, same bodies
        assert sorted(e["data"]["customer_id"] for e in listed) == sorted(customers)

        one = _data(await asyncio.to_thread(tenant.get, f"/v1/events/{ids[0]}"))
        assert one == delivered[ids[0]]
        typed = _data(await asyncio.to_thread(tenant.get, "/v1/events?type=customer.created&limit=10"))
        assert len(typed["items"]) == 3
        none = _data(await asyncio.to_thread(tenant.get, "/v1/events?type=wallet.created"))
        assert none["items"] == []
        bad = await asyncio.to_thread(tenant.get, "/v1/events?type=customer.deleted")
        assert bad.status_code == 400 and bad.json()["error"]["details"]["field"] == "type", bad.text

        other = make_tenant(stack)  # another tenant sees none of them
        assert (await asyncio.to_thread(other.get, f"/v1/events/{ids[0]}")).status_code == 404
        assert _data(await asyncio.to_thread(other.get, "/v1/events"))["items"] == []
        missing = await asyncio.to_thread(tenant.get, "/v1/events/evt_000000000000")
        assert missing.status_code == 404
    finally:
        receiver.stop()


async def test_an_endpoint_receives_only_its_enabled_event_types(stack: Stack) -> None:
    tenant = make_tenant(stack)
    only_wallets, everything = Receiver().start(), Receiver().start()
    try:
        hook = _register(tenant, only_wallets.url, enabled_events=["wallet.created"])
        assert hook["enabled_events"] == ["wallet.created"]
        got = _data(await asyncio.to_thread(tenant.get, f"/v1/webhooks/{hook['webhook_id']}"))
        assert got["enabled_events"] == ["wallet.created"]
        _register(tenant, everything.url)
        customer_id = await create_customer(tenant)
        assert len(await everything.wait_for(1)) == 1
        # the positive control: a wallet.created, after the customer.created, must arrive
        r = await asyncio.to_thread(
            tenant.post, "/v1/wallets", {"customer_id": customer_id, "symbol": "USDC", "chain": "ETH"}
        )
        assert r.status_code == 201, r.text
        assert len(await everything.wait_for(2)) == 2
        got_wallets = await only_wallets.wait_for(1)
        types = [json.loads(g.body)["type"] for g in only_wallets.received]
        assert got_wallets and types == ["wallet.created"], types  # and never the customer's

        for wrong in (["customer.deleted"], [], "customer.created"):
            r = await asyncio.to_thread(
                tenant.post, "/v1/webhooks", {"endpoint_url": only_wallets.url, "enabled_events": wrong}
            )
            assert r.status_code == 400, (wrong, r.text)
            assert r.json()["error"]["details"]["field"].startswith("enabled_events"), r.text
    finally:
        only_wallets.stop()
        everything.stop()


async def test_every_secret_rotated_within_a_day_still_verifies(stack: Stack) -> None:
    async with endpoint(stack) as (tenant, receiver, wh, created):
        webhook_id = created.data["webhook_id"]
        secrets = [created.data["signing_secret"]]
        for _ in range(3):
            rotated = await wh.rotate(tenant.tenant_id, webhook_id)
            assert rotated.status == 200, rotated
            secrets.append(rotated.data["signing_secret"])
        assert len(set(secrets)) == 4
        await create_customer(tenant)
        (r,) = await receiver.wait_for(1)
        assert len(r.headers["x-service-signature"].split(" ")) == 4
        for secret in secrets:  # the current one and all three rotated out today
            Webhook(secret).verify(r.body, standard_headers(r))

        for _ in range(7):  # ten rotated out within 24 h still sign: the bound
            assert (await wh.rotate(tenant.tenant_id, webhook_id)).status == 200
        refused = await wh.rotate(tenant.tenant_id, webhook_id)
        assert refused.status == 400, refused
        assert refused.error.details["reason"] == "too_many_rotations"
